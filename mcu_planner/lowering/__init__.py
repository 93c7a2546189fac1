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

from dataclasses import dataclass, field
from typing import Callable, Union

from ..graph import Graph, Operator, operator_name
from ..quant import InvalidRescale, UnsupportedQuantization
from ..registry import Registry, package_modules


@dataclass(frozen=True)
class CArray:
    c_type: str  # element type, e.g. "int32_t"
    values: tuple  # ints or floats


ParamValue = Union[int, float, str, CArray, tuple]


@dataclass(frozen=True)
class KernelCall:
    function: str  # C function, e.g. "mcu_conv_2d_s8"
    params_type: str  # C struct type of the first argument, e.g. "mcu_conv_2d_params"
    params: dict[str, ParamValue] = field(default_factory=dict)  # struct fields in declaration order
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


class NotLowerable(Exception):
    """This variant of the operator is not implemented by the runtime."""


LowerFn = Callable[[Operator, Graph], KernelCall]
_REGISTRY: Registry[LowerFn] = Registry("lowering", package_modules(__name__, __path__))
LOWERINGS = _REGISTRY.entries
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


def load_all() -> dict[str, LowerFn]:
    """Every registered lowering; imports the lowering modules on first use
    (which also fills SCRATCH_NEEDS)."""
    return _REGISTRY.load()


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
        from ..validate import InvalidModel

        raise InvalidModel(f"op {op.index} ({op.opcode}): rule rescale-finite: {exc}") from None
