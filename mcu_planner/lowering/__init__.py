"""Lowering: one TFLite operator -> one call into the C runtime.

This is the contract between codegen (which owns the arena, the offset table,
weights and the order of calls) and the kernels in firmware/runtime (which own
the arithmetic).  For every builtin operator the runtime implements, a module
here registers a function

    @lowers("CONV_2D")
    def lower_conv_2d(op: Operator, graph: Graph) -> KernelCall

that computes everything that is constant for the op (shapes, padding,
quantized multipliers and shifts, ...) in Python, once, at generation time, so
that the generated C carries only constants and the kernels do no float math
for int8 ops.  It raises `NotLowerable("why")` for variants the runtime does
not implement (dtype, option, rank ...).

Codegen renders each KernelCall through templates/ as

    static const PARAMS_TYPE opN_params = { .field = value, ... };
    FUNCTION(&opN_params, arg0, arg1, ...);

Kernels that need working memory beyond their inputs and outputs (SVDF,
LSTM, TRANSPOSE_CONV ...) also register, next to their lowering,

    @scratch_for("SVDF")
    def svdf_scratch(op: Operator, graph: Graph) -> tuple[ScratchNeed, ...]

Beside each lowering, a module declares what the planner may assume about
the call it made, one `KernelFacts` record per op:

    @facts_for("CONV_2D")
    def conv_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts

(or `declare_facts(KernelFacts(...), "RESHAPE", ...)` when they do not depend
on the call).  program.py lowers every op once, right after the op order is
chosen, and keeps each call with its facts: every later stage (lifetimes,
overlaps, in-place depthwise, patches, layers, codegen) reads them there.
Every lowered opcode must declare facts (tests/test_program.py).

scratch.py turns each need into a scratch tensor of the graph, listed in
`op.scratch` in the same order, which lives in the arena at that op's step
only; the lowering passes `op.scratch[i]` in `args` like an output.

The params dict names exactly the fields of PARAMS_TYPE as declared in
firmware/runtime (the one declaration of each struct): codegen checks every
call against the header at generation time (runtime_contract.py), so a missing
or extra field, or a value its C type cannot hold, is an error naming the
kernel, field and op, never a field C silently zero-initialises.  `CArray`
fields become their own `static const` arrays that the struct field points at;
the string "NULL" is a null pointer field; a tuple fills an array field.  `args` are tensor indices (-1 -> NULL); codegen passes each as a
pointer of the tensor's C element type (see graph.DTYPE_C_TYPE), `const` for
operator inputs and constants, non-const for outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import InvalidModel
from ..graph import Graph, Operator, PatchWindow, Window, operator_name
from ..memory.problem import WindowAccess
from ..quant import InvalidRescale, UnsupportedQuantization
from ..registry import Registry, package_modules


@dataclass(frozen=True)
class CArray:
    c_type: str  # element type, e.g. "int32_t"
    values: tuple[int | float, ...]


# A struct field's value: a number, "NULL" (or another C expression), a
# CArray the field points at, or a tuple filling an array field.
ParamValue = int | float | str | CArray | tuple[int | float, ...]


@dataclass(frozen=True)
class KernelCall:
    function: str  # C function, e.g. "mcu_conv_2d_s8_pointwise_blocks"
    params_type: str  # C struct type of the first argument, e.g. "mcu_conv_2d_params"
    params: Mapping[str, ParamValue] = field(default_factory=dict)  # struct fields in declaration order
    args: tuple[int, ...] = ()  # tensor indices after the params pointer; -1 -> NULL
    # Runtime file stems this call needs: "mcu_conv" means firmware/runtime/mcu_conv.c and .h.
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScratchNeed:
    """Working memory a kernel needs during one op: `elements` values of
    `dtype` (a graph dtype; it gives the kernel's pointer type)."""

    name: str  # what it holds, e.g. "feature_activations"
    dtype: str
    elements: int


@dataclass(frozen=True)
class ScratchAlternative:
    """Another size of an op's scratch tensor `tensor` that its kernel also
    runs in: `nbytes` (0: no scratch at all, the kernel gets NULL), and the
    op's call and facts with it (`lowered`), from the module that lowered
    the op.  The planner chooses between the sizes (memory/scratch_sizes.py)."""

    tensor: int
    nbytes: int
    lowered: Callable[[], tuple[KernelCall, KernelFacts]] = field(compare=False)


@dataclass(frozen=True)
class KernelFacts:
    """What the memory plan may assume about one op's kernel call, declared
    by the module that lowered it (beside the code that chose the kernel and
    its parameter fields).  The default assumes nothing."""

    # The output is the input's bytes under another shape (the kernel is a
    # copy): when the plan gives both the same bytes, no code runs at all.
    reinterprets_input: bool = False
    # Elementwise: the kernel reads element i of every input before it
    # writes element i of the output (and no other element after it), so
    # the output may take the bytes of a same-size input that dies here.
    elementwise: bool = False
    # The output is the inputs laid end to end along an axis: inputs that are
    # contiguous slices of it may be written there by their producers.
    concatenates_inputs: bool = False
    # The outputs are consecutive runs of the input along one axis: when each
    # is contiguous (slicing.contiguous_pieces) it may be the input's bytes.
    cuts_input_into_pieces: bool = False
    # Multiply-accumulates one run performs (the products its dot products sum).
    macs: int = 0
    # The kernel's raster walk over input 0 and output 0 (overlap.py derives
    # how far the output may start inside the input from it); None: no walk.
    access: WindowAccess | None = None
    # The walk costs the kernel its faster one: planning takes such overlaps
    # only when the budget needs them.
    raster_walk_is_slower: bool = False
    # The call walking in the order `access` declares, for a kernel that
    # otherwise takes a faster walk (program.in_raster_order, where the plan
    # overlaps its output with its input); None: it always walks so.
    in_raster_order: Callable[[], KernelCall] | None = field(default=None, compare=False)
    # The op's window along height and width, when the kernel reads its input
    # only through it (so one patch of rows and columns is an ordinary call,
    # patches.py); `for_window` is that call for one patch.
    window: Window | None = None
    for_window: Callable[[PatchWindow], KernelCall] | None = field(default=None, compare=False)
    # This call runs a depthwise convolution channel by channel over its own
    # input through one scratch buffer (in_place_depthwise.py): the output
    # takes the input's bytes.
    writes_over_input: bool = False
    # The call of the same op run that way, given the scratch tensor; None: it cannot.
    over_input: Callable[[int], KernelCall] | None = field(default=None, compare=False)
    # Static working buffers of the kernel outside the arena: (name, bytes).
    static_buffers: tuple[tuple[str, int], ...] = ()
    # The kernel also runs with less scratch, on slower paths (an int8
    # CONV_2D without the M4 DSP blocks' columns): planning takes it like a
    # slower walk, when the budget needs it or the cost model allows it.
    smaller_scratch: ScratchAlternative | None = None
    # This call runs with such less scratch: the call with the full one.
    larger_scratch: ScratchAlternative | None = None


class NotLowerable(Exception):
    """This variant of the operator is not implemented by the runtime."""


LowerFn = Callable[[Operator, Graph], KernelCall]
_REGISTRY: Registry[LowerFn] = Registry("lowering", package_modules(__name__, __path__))
LOWERINGS = _REGISTRY.entries
FactsFn = Callable[[Operator, Graph, KernelCall], KernelFacts]
_FACTS: Registry[FactsFn] = Registry("kernel facts", package_modules(__name__, __path__))
FACTS = _FACTS.entries
ScratchFn = Callable[[Operator, Graph], tuple[ScratchNeed, ...]]
_SCRATCH: Registry[ScratchFn] = Registry("scratch need", package_modules(__name__, __path__))
SCRATCH_NEEDS = _SCRATCH.entries


def lowers(*opcodes: str) -> Callable[[LowerFn], LowerFn]:
    def wrap(fn: LowerFn) -> LowerFn:
        for opcode in opcodes:
            _REGISTRY.add(opcode, fn)
        return fn

    return wrap


def scratch_for(*opcodes: str) -> Callable[[ScratchFn], ScratchFn]:
    """Registers the function saying what scratch memory `opcodes` need."""

    def wrap(fn: ScratchFn) -> ScratchFn:
        for opcode in opcodes:
            _SCRATCH.add(opcode, fn)
        return fn

    return wrap


def facts_for(*opcodes: str) -> Callable[[FactsFn], FactsFn]:
    """Registers the function giving the KernelFacts of `opcodes`' calls."""

    def wrap(fn: FactsFn) -> FactsFn:
        for opcode in opcodes:
            _FACTS.add(opcode, fn)
        return fn

    return wrap


def declare_facts(facts: KernelFacts, *opcodes: str) -> None:
    """Registers `facts` for every call of `opcodes`, whatever its parameters."""
    for opcode in opcodes:
        _FACTS.add(opcode, lambda op, graph, call: facts)
        _DECLARED_FACTS[opcode] = facts


# The facts declared for every call of an opcode (declare_facts), for the one
# decision made before lowering: resource_variables.py's write-back.
_DECLARED_FACTS: dict[str, KernelFacts] = {}


def declared_facts(opcode: str) -> KernelFacts | None:
    """The facts every call of `opcode` has, or None when they depend on the
    call (`facts_for`) or the opcode does not lower."""
    load_all()
    return _DECLARED_FACTS.get(opcode)


def load_all() -> dict[str, LowerFn]:
    """Every registered lowering; imports the lowering modules on first use
    (which also fills SCRATCH_NEEDS and FACTS)."""
    return _REGISTRY.load()


def kernel_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """The facts the module that lowered `op` declares for `call`."""
    load_all()
    return FACTS[op.opcode](op, graph, call)


def lower(op: Operator, graph: Graph) -> KernelCall:
    """KernelCall for `op`, or NotLowerable naming what is missing."""
    fn = load_all().get(op.opcode)
    if fn is None:
        raise NotLowerable(operator_name(op))
    try:
        return fn(op, graph)
    except UnsupportedQuantization as exc:
        raise NotLowerable(str(exc)) from exc
    except InvalidRescale as exc:
        raise InvalidModel(f"op {op.index} ({op.opcode}): rule rescale-finite: {exc}") from None
