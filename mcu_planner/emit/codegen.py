"""Codegen: graph + lifetimes + verified plan -> C99 sources, in memory.

Everything C comes from the Jinja templates in templates/; this module only
decides *what* goes in them (which arrays, which calls, which offsets) and
formats numbers as C literals.  The generated directory is self-contained: it
also carries the runtime files from firmware/runtime that the model's kernel
calls need.

Memory discipline of the generated code (seed 001, reference-counted release):
every planned buffer has a count of the ops that still have to read it; after
each op the counts of the buffers it read drop by one and a buffer is released
at zero.  A normal build only keeps the counters; a build with -DMCU_PLAN_CHECK
poisons released bytes and, before each op, checks that the buffers the op
starts writing overlap no live buffer other than an in-place partner the
problem allows.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import __version__
from ..errors import InputError, UnsupportedModel, unsupported_model_error
from ..graph import DTYPE_C_TYPE, Graph, Operator, PatchStage, Tensor, operator_dtype_key, operator_name
from ..lowering import CArray, KernelCall, NotLowerable
from ..lowering.control_flow import BranchNotLowerable, ControlFlowCall, op_calls
from ..lowering.program import Program, as_program, in_raster_order
from ..lowering.runtime_contract import check_call, check_kernel_call, runtime_declarations
from ..memory.lifetimes import Lifetimes, activation_tensors
from ..memory.patches import patch_call, pixel_bytes, window_copy_calls
from ..memory.planning import ArenaPlan
from ..memory.regions import RegionPlans
from ..shown import shown
from .c_literals import (
    PREFIX_RULE,
    VALUES_PER_LINE,
    c_comment,
    c_float,
    c_identifier,
    c_prefix,
    c_string,
    element_bytes,
    format_values,
    validate_section_name,
    value_lines,
)
from .identity import sources_sha256
from .output_dir import MANIFEST_NAME, ModelInterface
from .resources import firmware_dir, template_environment

# Graph dtypes -> how their stored little-endian bytes decode.
_NUMPY_DTYPE = {
    "bool": "<u1",
    "int8": "<i1",
    "uint8": "<u1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "float32": "<f4",
}
# Activation dtypes the runtime has kernels for; everything else is refused up front.
ACTIVATION_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64", "float32", "bool"})

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# Fill value for released bytes in check builds: an unlikely, recognisable byte.
POISON_BYTE = 0xA5
# The runtime file that checks a plan's memory discipline in check builds.
PLAN_CHECK_RUNTIME = "mcu_plan_check"

# ---------------------------------------------------------------- the model as the templates see it


@dataclass
class CArrayDef:
    symbol: str
    c_type: str
    count: int
    lines: list[str]
    comment: str = ""
    mutable: bool = False


@dataclass
class VariableDef:
    """One variable tensor in the persistent state region, and how
    NAME_reset() gives it its initial value: every byte `fill`, or a copy of
    the `initial` array (flash) when the model stores values that differ."""

    tensor: int
    offset: int
    nbytes: int
    comment: str
    fill: int = 0
    initial: CArrayDef | None = None


@dataclass
class Slot:
    """One planned buffer as the generated code tracks it."""

    index: int  # position in the generated tables
    buffer: int  # buffer id (root tensor index)
    offset: int
    size: int
    consumers: int  # reads still due at invoke start (+1 for graph outputs: never released)
    live_at_start: bool
    region: int = 0  # index into the memory regions (--region); 0 with one arena


@dataclass(frozen=True)
class KernelArg:
    """One pointer argument of a kernel call, as the template renders it:
    `kind` is "null", "arena" (slot, inner: bytes into the slot), "variable"
    (inner: bytes into the state region) or "constant" (symbol: the array's
    name)."""

    kind: str
    c_type: str = ""
    const: bool = True
    slot: int = 0
    inner: int = 0
    symbol: str = ""
    # In a patched stage: the table of per-patch byte offsets added to `inner`.
    patch_offset: str = ""

    @property
    def wider_than_bytes(self) -> bool:
        """An arena or state pointer (uint8_t *) to this type is cast through
        void *: _Builder.arg has checked that its address suits the type."""
        return element_bytes(self.c_type) > 1


@dataclass
class OpCode:
    index: int
    opcode: str
    comment: str
    call: KernelCall | None  # None: the plan made this op a no-op (alias)
    params: list[tuple[str, str]] = field(default_factory=list)
    arrays: list[CArrayDef] = field(default_factory=list)
    args: list[KernelArg] = field(default_factory=list)
    claims: list[int] = field(default_factory=list)  # slots this op writes first
    releases: list[int] = field(default_factory=list)  # slots whose count drops after it
    returns_status: bool = False  # the kernel can fail: invoke stops on a status other than MCU_STATUS_OK
    tensors_type: str = ""  # the struct the kernel takes its tensor arguments in ("": one parameter each)
    # In a patched stage: one parameter block per distinct patch geometry
    # (`params` is then unused) and, per patch, the block it runs with.
    param_sets: list[list[tuple[str, str]]] = field(default_factory=list)
    patch_params: list[int] = field(default_factory=list)
    repeats: int = 1  # runs per invoke: the patches of its stage
    # In a patched stage, per buffer the op writes first: the reads it serves
    # in each patch, its count set again before every patch.
    rearms: list[tuple[int, int]] = field(default_factory=list)
    loop: StageLoop | None = None  # the op opens its stage's loop over patches
    loop_end: StageLoop | None = None  # the op closes it
    # In a grid of patches: the window copies run before the op (its input
    # window gathered from the stage input) and after it (its patch scattered
    # into the stage output), each with its own tables under its own symbol.
    gather: OpCode | None = None
    scatter: OpCode | None = None
    symbol: str = ""  # prefix of the op's parameter tables; "" -> op<index>
    # An IF or WHILE: its calls and control statements, in order (lowering/control_flow.py).
    body: list[BodyItem] = field(default_factory=list)

    @property
    def body_parts(self) -> list[OpCode]:
        return [item.part for item in self.body if item.part is not None]

    def __post_init__(self) -> None:
        self.symbol = self.symbol or f"op{self.index}"


@dataclass
class BodyItem:
    """One line of an IF's or WHILE's code: a call (`part`), or a control
    statement ("if", "else", "end", "loop", "break_unless") testing the bool
    at `arg`; `depth`: its indentation in invoke."""

    kind: str
    depth: int
    part: OpCode | None = None
    arg: KernelArg | None = None


@dataclass
class StageLoop:
    """A patched stage's loop (patches.py): `patches` runs of its ops, the
    first (or, in a grid, its gather) reading its input `input_offsets[patch]`
    bytes into the stage input, the last (or its scatter) writing
    `output_offsets[patch]` bytes into the stage output; `claims` (the stage
    output) before the loop, `releases` (the stage input) after it."""

    symbol: str
    patches: int
    input_offsets: list[int]
    output_offsets: list[int]
    claims: list[int] = field(default_factory=list)
    releases: list[int] = field(default_factory=list)


@dataclass
class IoInfo:
    index: int
    tensor: int
    name: str
    c_type: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    elements: int
    scale: str
    zero_point: int
    slot: int
    inner: int


def buffer_enum_name(model_name: str, tensor: Tensor) -> str:
    """The enum constant naming a planned buffer in generated code, from its
    root tensor: NAME_T<index>_<TENSOR NAME>, the index keeping it unique."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", tensor.name).strip("_").upper()[:32].rstrip("_")
    return f"{model_name.upper()}_T{tensor.index}" + (f"_{words}" if words else "")


def zero_point_of(tensor: Tensor) -> int:
    q = tensor.quantization
    return q.zero_points[0] if q and q.zero_points else 0


def _tensor_c_type(tensor: Tensor) -> str:
    if tensor.dtype == "int4" and tensor.is_constant:
        return "int8_t"  # the packed bytes, two weights each (int4_weights.py)
    try:
        return DTYPE_C_TYPE[tensor.dtype]
    except KeyError:
        raise UnsupportedModel(
            f"unsupported tensor type: {tensor.dtype} (tensor {tensor.index} '{shown(tensor.name)}')"
        ) from None


def lower_all(model: Program | Graph, elided: frozenset[int] = frozenset()) -> dict[int, KernelCall]:
    """A KernelCall for every op that runs (the Program's; a Graph is lowered
    first), or one UnsupportedModel naming every operator and dtype
    combination and every tensor type the runtime lacks, each once with its
    count."""
    program = as_program(model)
    graph = program.graph
    calls: dict[int, KernelCall] = {}
    unsupported: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for op in graph.operators:
        if op.index in elided:
            continue
        lowered = program.ops[op.index]
        try:
            if lowered.error is not None:
                raise lowered.error
            assert lowered.call is not None
            calls[op.index] = lowered.call
        except BranchNotLowerable as exc:
            # Ops inside an IF's or WHILE's subgraphs are listed as themselves.
            unsupported.update(exc.combinations)
            for key, reason in exc.reasons.items():
                reasons.setdefault(key, reason)
            continue
        except NotLowerable as exc:
            key = operator_dtype_key(op, graph.tensors)
            unsupported[key] += 1
            reason = str(exc).strip()
            if key not in reasons and reason and reason != operator_name(op):
                reasons[key] = reason
            continue
        for runs_for, call in op_calls(op, calls[op.index]):
            check_kernel_call(graph, runs_for, call)
    bad_types: Counter[str] = Counter()
    for t in activation_tensors(graph):
        # A scratch tensor's dtype is its kernel's choice, not the model's.
        if graph.tensors[t].dtype not in ACTIVATION_DTYPES and not graph.tensors[t].is_scratch:
            bad_types[graph.tensors[t].dtype] += 1
    if unsupported or bad_types:
        raise unsupported_model_error(dict(unsupported), reasons, dict(bad_types))
    return calls


def counter_slots(num_buffers: int) -> int:
    """Length of the generated NAME_refcount array: a multiple of 4 counters
    (8 bytes of uint16_t), so that its size is a multiple of any alignment
    the compiler gives it (ram_budget.COUNTER_BYTES)."""
    return -(-max(num_buffers, 1) // 4) * 4


class _Builder:
    def __init__(
        self, graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan, name: str, regions: RegionPlans | None = None
    ):
        self.graph = graph
        self.lifetimes = lifetimes
        self.program: Program = lifetimes.program
        self.plan = plan  # with regions: offsets in one address space, regions side by side
        self.regions = regions
        self.name = name
        self.constants: dict[int, CArrayDef] = {}
        self.variables: dict[int, VariableDef] = {}
        # Steps whose overlap bounds hold as compiled (ops() fills it): those
        # whose kernels walk in raster order, and a patched stage's.
        self.raster_steps: set[int] = set()
        buffers = sorted(lifetimes.problem.buffers, key=lambda b: b.id)
        self.slot_of = {b.id: i for i, b in enumerate(buffers)}
        self.buffers = buffers
        # While an IF's or WHILE's calls are rendered: value -> (its sub-arena tensor, byte offset there).
        self.sub_arena_places: dict[int, tuple[int, int]] = {}

    # -- addresses

    def tensor_slot(self, t: int) -> tuple[int, int]:
        placement = self.lifetimes.placements[t]
        return self.slot_of[placement.buffer], placement.offset

    def tensor_address(self, t: int) -> int:
        return self.lifetimes.tensor_offset(self.plan.offsets, t)

    def arg(self, t: int, writes: bool) -> KernelArg:
        if t < 0:
            return KernelArg("null")
        tensor = self.graph.tensors[t]
        c_type = _tensor_c_type(tensor)
        if t in self.sub_arena_places:
            # A value an IF's or WHILE's subgraph computes: inside that op's sub-arena.
            sub_arena, offset = self.sub_arena_places[t]
            base = self.arg(sub_arena, writes=True)
            self._check_aligned(tensor, c_type, "arena", self.tensor_address(sub_arena) + offset)
            return KernelArg("arena", c_type, not writes, slot=base.slot, inner=base.inner + offset)
        if t in self.lifetimes.placements:
            slot, inner = self.tensor_slot(t)
            self._check_aligned(tensor, c_type, "arena", self.tensor_address(t))
            return KernelArg("arena", c_type, not writes, slot=slot, inner=inner)
        if tensor.is_variable:
            # Ops read variable tensors as inputs and update them in place.
            offset = self.variable(tensor).offset
            self._check_aligned(tensor, c_type, "state region", offset)
            return KernelArg("variable", c_type, False, inner=offset)
        if tensor.is_constant:
            if writes:
                raise UnsupportedModel(f"operator writes constant tensor {t} '{shown(tensor.name)}'")
            return KernelArg("constant", c_type, True, symbol=self.constant(tensor).symbol)
        raise UnsupportedModel(f"tensor {t} '{shown(tensor.name)}' has no data and no place in the arena")

    def _check_aligned(self, tensor: Tensor, c_type: str, region: str, address: int) -> None:
        """The arena and the state region are 16-byte aligned, so a pointer
        into them suits `c_type` when its offset is a multiple of the size."""
        size = element_bytes(c_type)
        if address % size:
            raise InputError(
                f"tensor {tensor.index} '{c_comment(tensor.name)}' ({tensor.dtype}) would start at byte {address} "
                f"of the {region}, not a multiple of {size}: plan with --align {size} or more"
            )

    def _array_of(self, tensor: Tensor, symbol: str, mutable: bool) -> CArrayDef:
        c_type = _tensor_c_type(tensor)
        count = tensor.nbytes if tensor.dtype == "int4" else tensor.num_elements
        if tensor.data is not None and tensor.dtype == "int4":
            values = np.frombuffer(tensor.data, dtype="<i1", count=count).tolist()
        elif tensor.data is not None:
            values = np.frombuffer(tensor.data, dtype=_NUMPY_DTYPE[tensor.dtype], count=count).tolist()
        else:
            values = [0] * count
        if not values:  # C has no empty arrays
            values = [0]
        return CArrayDef(
            symbol=symbol,
            c_type=c_type,
            count=len(values),
            lines=value_lines(format_values(values, c_type), VALUES_PER_LINE[element_bytes(c_type)]),
            comment=f"tensor {tensor.index} {c_comment(tensor.name)} {list(tensor.shape)} {tensor.dtype}",
            mutable=mutable,
        )

    def constant(self, tensor: Tensor) -> CArrayDef:
        if tensor.index not in self.constants:
            self.constants[tensor.index] = self._array_of(tensor, f"const_t{tensor.index}", mutable=False)
        return self.constants[tensor.index]

    def variable(self, tensor: Tensor) -> VariableDef:
        """The variable's place in the state region and initial value: the
        model's stored values if it has any, else what TFLite's
        ResetVariableTensor writes (every byte the zero point for int8, 0
        otherwise)."""
        if tensor.index not in self.variables:
            fill = zero_point_of(tensor) & 0xFF if tensor.dtype == "int8" else 0
            initial = None
            if tensor.data is not None and any(byte != fill for byte in tensor.data[: tensor.nbytes]):
                initial = self._array_of(tensor, f"{self.name}_initial_t{tensor.index}", mutable=False)
            self.variables[tensor.index] = VariableDef(
                tensor=tensor.index,
                offset=self.lifetimes.variable_offsets[tensor.index],
                nbytes=tensor.nbytes,
                comment=f"tensor {tensor.index} {c_comment(tensor.name)} {list(tensor.shape)} {tensor.dtype}",
                fill=fill,
                initial=initial,
            )
        return self.variables[tensor.index]

    # -- ops

    def ops(self, calls: dict[int, KernelCall]) -> list[OpCode]:
        graph = self.graph
        produced: set[int] = set()
        for t in graph.inputs:
            if t in self.lifetimes.placements:
                produced.add(self.tensor_slot(t)[0])
        written_by_ops = {t for op in graph.operators for t in op.outputs + op.scratch if t >= 0}
        for t in self.lifetimes.placements:
            if t not in written_by_ops:  # read but produced by nobody: the application's to fill
                produced.add(self.tensor_slot(t)[0])
        self.live_at_start = set(produced)

        stage = self.program.patch_stage
        staged = set(stage.ops) if stage is not None else set()
        self.raster_steps = self.overlapping_steps() | staged
        loop: StageLoop | None = None
        result = []
        for op in graph.operators:
            call = calls.get(op.index)
            if call is not None and self.program.facts(op.index).reinterprets_input and self._output_shares_input(op):
                call = None
            code = OpCode(op.index, op.opcode, c_comment(f"op {op.index}: {op.opcode}"), call)
            if stage is not None and op.index == stage.ops[0]:
                loop = self._stage_loop(stage, produced)
                code.loop = loop
            if isinstance(call, ControlFlowCall):
                self._render_control_flow(op, call, code)
            elif call is not None:
                if stage is not None and op.index in staged:
                    assert loop is not None
                    self._render_patches(op, call, code, stage, loop)
                else:
                    self._render_call(op, call, code)
            for t in op.outputs + op.scratch:
                if t in self.lifetimes.placements:
                    slot = self.tensor_slot(t)[0]
                    if slot not in produced:
                        produced.add(slot)
                        code.claims.append(slot)
            for t in op.inputs:
                if t in self.lifetimes.placements:
                    slot = self.tensor_slot(t)[0]
                    if stage is not None and loop is not None and op.index in staged and t == stage.input:
                        if slot not in loop.releases:
                            loop.releases.append(slot)  # read by every patch: released after the last
                    elif slot not in code.releases:
                        code.releases.append(slot)
            if stage is not None and op.index == stage.ops[-1]:
                code.loop_end = loop
            result.append(code)
        return result

    def _stage_loop(self, stage: PatchStage, produced: set[int]) -> StageLoop:
        """The loop of a patched stage; its output is claimed before it."""
        graph = self.graph
        inp, out = graph.tensors[stage.input], graph.tensors[stage.output]
        in_pixel, out_pixel = pixel_bytes(graph, stage.input), pixel_bytes(graph, stage.output)
        loop = StageLoop(
            symbol=f"stage{stage.ops[0]}",
            patches=len(stage.windows),
            input_offsets=[
                (w[0].in_first * inp.shape[2] + (w[0].columns.in_first if w[0].columns else 0)) * in_pixel
                for w in stage.windows
            ],
            output_offsets=[
                (w[-1].out_first * out.shape[2] + (w[-1].columns.out_first if w[-1].columns else 0)) * out_pixel
                for w in stage.windows
            ],
        )
        if stage.output in self.lifetimes.placements:
            slot = self.tensor_slot(stage.output)[0]
            if slot not in produced:
                produced.add(slot)
                loop.claims.append(slot)
        return loop

    def _render_patches(self, op: Operator, call: KernelCall, code: OpCode, stage: PatchStage, loop: StageLoop) -> None:
        """A stage op: one parameter block per distinct patch geometry, each
        checked against the runtime's struct like any call.  In a grid the
        first op reads its gathered window and the last writes its patch
        into the scatter buffer, around window copies of their own."""
        position = stage.ops.index(op.index)
        first, last = position == 0, position == len(stage.ops) - 1
        grid = stage.cols > 1
        swap = {stage.input: stage.gather} if first else {}
        if last:
            swap[stage.output] = stage.scatter
        calls = []
        for windows in stage.windows:
            patched = patch_call(self.program, op.index, windows[position])
            if grid:
                patched = dataclasses.replace(patched, args=tuple(swap.get(t, t) for t in patched.args))
            calls.append(patched)
        self._render_variants(op, calls, code)
        code.repeats = len(stage.windows)
        if grid:
            if first:
                code.gather = self._window_copies(op, stage, True, code, loop)
            if last:
                code.scatter = self._window_copies(op, stage, False, code, loop)
            for t in (stage.gather if first else -1, stage.scatter if last else -1):
                if t in self.lifetimes.placements:
                    code.releases.append(self.tensor_slot(t)[0])  # read by its copy or op: free in each patch
            return
        for k, t in enumerate(call.args):
            if first and t == stage.input:
                code.args[k] = dataclasses.replace(code.args[k], patch_offset=f"{loop.symbol}_input_offset")
            if last and t == stage.output:
                code.args[k] = dataclasses.replace(code.args[k], patch_offset=f"{loop.symbol}_output_offset")

    def _window_copies(self, op: Operator, stage: PatchStage, gather: bool, code: OpCode, loop: StageLoop) -> OpCode:
        """The gather from the stage input or the scatter into the stage
        output of every patch of a grid, its offset into the whole tensor per
        patch from the loop's table."""
        calls = window_copy_calls(self.graph, stage, gather)
        role = "gather" if gather else "scatter"
        copies = OpCode(op.index, op.opcode, code.comment, calls[0], symbol=f"op{op.index}_{role}")
        self._render_variants(op, calls, copies)
        offsets = f"{loop.symbol}_{'input' if gather else 'output'}_offset"
        k = 0 if gather else 1
        copies.args[k] = dataclasses.replace(copies.args[k], patch_offset=offsets)
        return copies

    def _render_variants(self, op: Operator, calls: list[KernelCall], code: OpCode) -> None:
        """`code`'s parameter blocks for one call per patch: one per distinct call, and the one each patch runs."""
        variants: list[KernelCall] = []
        for patched in calls:
            if patched not in variants:
                variants.append(patched)
            code.patch_params.append(variants.index(patched))
        arrays: dict[tuple[str, CArray], str] = {}
        for variant in variants:
            rendered = OpCode(op.index, op.opcode, code.comment, variant)
            self._render_call(op, variant, rendered, arrays)
            code.param_sets.append(rendered.params)
            code.arrays += rendered.arrays
            code.args, code.returns_status = rendered.args, rendered.returns_status

    def overlapping_steps(self) -> set[int]:
        """Op steps whose output the plan starts inside the input they read
        for the last time (a partial overlap): their kernels must walk in the
        raster order their facts declare, not their faster orders."""
        sizes = {b.id: b.size for b in self.buffers}
        offsets = self.plan.offsets
        steps = set()
        stage = self.program.patch_stage
        staged = set(stage.ops) if stage is not None else set()
        for index, step in enumerate(self.lifetimes.problem.steps):
            if index in staged:
                continue  # the stage's own overlap: strips in order, whatever each kernel's walk
            for o in step.overlaps:
                out_at, in_at = offsets[o.output], offsets[o.input]
                if out_at < in_at + sizes[o.input] and in_at < out_at + sizes[o.output]:
                    steps.add(index)
        return steps

    def _output_shares_input(self, op: Operator) -> bool:
        src, dst = op.inputs[0], op.outputs[0]
        placements = self.lifetimes.placements
        return src in placements and dst in placements and self.tensor_address(src) == self.tensor_address(dst)

    def _render_control_flow(self, op: Operator, call: ControlFlowCall, code: OpCode) -> None:
        """`code.body`: an IF's or WHILE's steps, each call rendered as an
        op of its own (its parameter tables named after the op and step)."""
        self.sub_arena_places = {t: (call.sub_arena, offset) for t, offset in call.places}
        depth = 1
        for position, step in enumerate(call.steps):
            if step.kind in ("else", "end"):
                depth -= 1
            item = BodyItem(step.kind, depth)
            if step.call is not None and step.op is not None:
                # Named op<N>_<step> in the tables, writing what the inner op writes.
                runs_for = SimpleNamespace(
                    index=f"{op.index}_{position}",
                    opcode=step.op.opcode,
                    outputs=step.op.outputs,
                    scratch=step.op.scratch,
                )
                part = OpCode(op.index, step.op.opcode, "", step.call, symbol=f"op{op.index}_{position}")
                self._render_call(runs_for, step.call, part)
                item.part = part
            elif step.tensor >= 0:
                item.arg = self.arg(step.tensor, writes=False)
            code.body.append(item)
            if step.kind in ("if", "else", "loop"):
                depth += 1
        self.sub_arena_places = {}

    def _render_call(
        self,
        op: Operator | SimpleNamespace,  # an op, or a step inside an IF/WHILE named after its op
        call: KernelCall,
        code: OpCode,
        arrays: dict[tuple[str, CArray], str] | None = None,
    ) -> None:
        """`code`'s parameter block, arrays and arguments for `call`; with
        `arrays` (a stage's patch geometries), an array already defined under
        a symbol there is reused, and new ones are numbered after them."""
        params_struct = check_call(call, f"op {op.index} {op.opcode}")
        function = runtime_declarations().functions[call.function]
        code.returns_status = function.returns_status
        code.tensors_type = function.tensors_type or ""
        for f in params_struct.fields:
            value = call.params[f.name]
            if isinstance(value, CArray) and arrays is not None and (f.name, value) in arrays:
                code.params.append((f.name, arrays[(f.name, value)]))
            elif isinstance(value, CArray):
                symbol = f"op{op.index}_{f.name}"
                if arrays is not None:
                    symbol += f"_{sum(1 for name, _ in arrays if name == f.name)}"
                    arrays[(f.name, value)] = symbol
                values = list(value.values) or [0]  # C has no empty arrays
                code.arrays.append(
                    CArrayDef(
                        symbol=symbol,
                        c_type=value.c_type,
                        count=len(values),
                        lines=value_lines(
                            format_values(values, value.c_type), VALUES_PER_LINE[element_bytes(value.c_type)]
                        ),
                    )
                )
                code.params.append((f.name, symbol))
            elif f.opaque:  # NULL or a runtime macro naming an object (check_call)
                assert isinstance(value, str), f"{f.name}: check_call admits only a string here"
                code.params.append((f.name, value))
            elif f.pointer:  # NULL
                code.params.append((f.name, "NULL"))
            elif f.length is not None:
                assert isinstance(value, tuple), f"{f.name}: check_call admits only a tuple for an array field"
                code.params.append((f.name, "{ " + ", ".join(format_values(value, f.c_type)) + " }"))
            else:
                assert isinstance(value, (int, float)), f"{f.name}: check_call admits only a number here"
                code.params.append((f.name, format_values([value], f.c_type)[0]))
        outputs = set(op.outputs) | set(op.scratch)
        code.args = [self.arg(t, writes=t in outputs) for t in call.args]

    # -- slots and I/O

    def slots(self, ops: list[OpCode]) -> list[Slot]:
        consumers: Counter[int] = Counter()
        for code in ops:
            for slot in code.releases + (code.loop_end.releases if code.loop_end is not None else []):
                consumers[slot] += 1
        held = {self.tensor_slot(t)[0] for t in self.graph.outputs if t in self.lifetimes.placements}
        # A buffer nobody reads is released right after the op that wrote it.
        for code in ops:
            for slot in code.claims:
                if consumers[slot] == 0 and slot not in held:
                    code.releases.append(slot)
                    consumers[slot] += 1
        for code in ops:
            # A stage's patch buffers and its ops' own scratch: released in
            # every patch, counted again in the next.
            if code.repeats > 1:
                code.rearms = [(slot, consumers[slot]) for slot in code.claims if consumers[slot]]
        # So is a graph input nobody reads (one read only by folded ops, say):
        # the plan lets op 1 onwards reuse its bytes.
        for slot in sorted(self.live_at_start):
            if ops and consumers[slot] == 0 and slot not in held:
                ops[0].releases.append(slot)
                consumers[slot] += 1
        regions = self.regions
        return [
            Slot(
                index=i,
                buffer=b.id,
                offset=self.plan.offsets[b.id] if regions is None else regions.offset_of(b.id),
                size=b.size,
                consumers=consumers[i] + (1 if i in held else 0),
                live_at_start=i in self.live_at_start,
                region=0 if regions is None else regions.region_of[b.id],
            )
            for i, b in enumerate(self.buffers)
        ]

    def io(self, tensors: tuple[int, ...]) -> list[IoInfo]:
        infos = []
        for i, t in enumerate(tensors):
            tensor = self.graph.tensors[t]
            if t not in self.lifetimes.placements:
                raise UnsupportedModel(f"graph input/output tensor {t} '{shown(tensor.name)}' is not an activation")
            q = tensor.quantization
            slot, inner = self.tensor_slot(t)
            infos.append(
                IoInfo(
                    index=i,
                    tensor=t,
                    name=c_comment(tensor.name),
                    c_type=_tensor_c_type(tensor),
                    dtype=tensor.dtype,
                    shape=tensor.shape or (1,),
                    nbytes=tensor.nbytes,
                    elements=tensor.num_elements,
                    scale=c_float(q.scales[0]) if q and q.scales else "0.0f",
                    zero_point=q.zero_points[0] if q and q.zero_points else 0,
                    slot=slot,
                    inner=inner,
                )
            )
        return infos


def _in_place_table(lifetimes: Lifetimes, slot_of: dict[int, int]) -> list[tuple[int, int, int]]:
    table = []
    for step_index, step in enumerate(lifetimes.problem.steps):
        for out_id, in_id in step.in_place:
            table.append((step_index, slot_of[out_id], slot_of[in_id]))
    return table


def _overlap_table(
    lifetimes: Lifetimes, slot_of: dict[int, int], raster_steps: set[int]
) -> list[tuple[int, int, int, int]]:
    """(op, output slot, input slot, max offset): the op may write its output
    over that input when the output starts at most max offset bytes after it.
    A bound only the slower raster walk keeps (Overlap.slower) is listed only
    at the steps compiled with that walk (`raster_steps`, raster_walk = 1):
    the fast walk allows no overlap, so the check build must allow none."""
    table = []
    for step_index, step in enumerate(lifetimes.problem.steps):
        for o in step.overlaps:
            if o.slower and step_index not in raster_steps:
                continue
            table.append((step_index, slot_of[o.output], slot_of[o.input], o.max_offset))
    return table


def _runtime_files(stems: list[str]) -> dict[str, bytes]:
    """The runtime sources the calls name, plus every header they include
    (and the .c beside such a header), transitively."""
    runtime = firmware_dir() / "runtime"
    files: dict[str, bytes] = {}
    pending = []
    for stem in stems:
        for suffix in (".c", ".h"):
            pending.append(stem + suffix)
    while pending:
        file_name = pending.pop()
        if file_name in files:
            continue
        path = runtime / file_name
        if not path.is_file():
            if file_name.endswith(".h"):
                raise FileNotFoundError(f"runtime file {path} is missing")
            continue  # a header-only part of the runtime
        data = path.read_bytes()
        files[file_name] = data
        for included in _INCLUDE.findall(data.decode("utf-8", "replace")):
            if (runtime / included).is_file():
                pending.append(included)
                if included.endswith(".h"):
                    pending.append(included[:-2] + ".c")
    return files


def render(template: str, **context: Any) -> bytes:
    return template_environment().get_template(template).render(**context).encode("utf-8")


def _section_macros(named: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Per (macro, section) of the arena's arrays: the section's name for any
    compiler, and with its NOBITS type for gcc on Arm and x86 ELF ('@' and '#'
    start comments in their assemblers)."""
    return [
        dict(
            macro=macro,
            plain=c_string(section),
            arm=c_string(section + ',"aw",%nobits @'),
            x86=c_string(section + ',"aw",@nobits #'),
        )
        for macro, section in named
    ]


def _region_context(name: str, regions: RegionPlans, slots: list[Slot], inputs: list[IoInfo]) -> list[dict[str, Any]]:
    """Per memory region, what the templates need: its array, size macro,
    section, plan-check tables (a buffer of another region has size 0 there)
    and the graph inputs it holds."""
    result: list[dict[str, Any]] = []
    for index, region in enumerate(regions.regions):
        own = [slot.region == index for slot in slots]
        size = max(regions.arena_bytes(index), max((s.offset + s.size for s in slots if s.region == index), default=0))
        result.append(
            dict(
                index=index,
                name=region.name,
                symbol=f"{name}_arena_{region.name}",
                size_macro=f"{name.upper()}_REGION_{region.name.upper()}_SIZE",
                size=max(size, 1),
                section=c_string(region.section) if region.section else None,
                section_name=region.section,
                section_macro=f"{name.upper()}_REGION_{region.name.upper()}_SECTION",
                plan=f"{name}_plan_{region.name}",
                offsets=[slot.offset if mine else 0 for slot, mine in zip(slots, own, strict=True)],
                sizes=[slot.size if mine else 0 for slot, mine in zip(slots, own, strict=True)],
                live_at_start=[1 if mine and slot.live_at_start else 0 for slot, mine in zip(slots, own, strict=True)],
                inputs=[io for io in inputs if slots[io.slot].region == index],
            )
        )
    return result


# Several models in one OUTDIR: the arena they share (mcu_models_arena.c/.h),
# and the one library (CMake target, Make fragment) holding them all.
SHARED_ARENA = "mcu_models_arena"
MODELS_LIBRARY = "mcu_models"


@dataclass(frozen=True)
class SharedArena:
    """A model's part of the arena that several models share: `base` bytes into it."""

    base: int
    header: str = f"{SHARED_ARENA}.h"
    symbol: str = SHARED_ARENA


def generate_shared_arena(
    models: list[str],
    size: int,
    *,
    concurrent: bool,
    alignment: int = 16,
    arena_section: str | None = None,
    extern_arena: bool = False,
) -> dict[str, bytes]:
    """The shared arena's header, its definition (unless the application
    defines it: extern_arena) and the build files of all models together."""
    context = dict(
        stem=SHARED_ARENA,
        models=models,
        concurrent=concurrent,
        symbol=SHARED_ARENA,
        size_macro=f"{SHARED_ARENA.upper()}_SIZE",
        size=max(size, 1),
        alignment=max(alignment, 16) if alignment & (alignment - 1) == 0 else 16,
        extern_arena=extern_arena,
        sections=_section_macros([(f"{SHARED_ARENA.upper()}_SECTION", arena_section)] if arena_section else []),
    )
    files = {f"{SHARED_ARENA}.h": render("models_arena.h.j2", **context)}
    if not extern_arena:
        files[f"{SHARED_ARENA}.c"] = render("models_arena.c.j2", **context)
    return files


def drop_in_build_files(name: str, files: dict[str, bytes], aliases: tuple[str, ...] = ()) -> dict[str, bytes]:
    """CMakeLists.txt (a static library `name`, and one alias per entry of
    `aliases`) and NAME.mk for the C sources in `files`."""
    context = dict(
        name=name,
        aliases=aliases,
        sources=sorted(file_name for file_name in files if file_name.endswith(".c")),
        needs_libm=any(b"<math.h>" in data for data in files.values()),
    )
    return {DROP_IN_CMAKE: render("CMakeLists.txt.j2", **context), f"{name}.mk": render("model.mk.j2", **context)}


# The CMake drop-in of every OUTDIR (a static library target named after the model).
DROP_IN_CMAKE = "CMakeLists.txt"


class GeneratedSources(dict[str, bytes]):
    """File name -> contents of a generated directory (a plain dict to every
    caller), with the model's `interface` alongside."""

    def __init__(self, files: dict[str, bytes], interface: ModelInterface):
        super().__init__(files)
        self.interface = interface


# The largest array C may declare on a 32-bit core (PTRDIFF_MAX): the arena,
# and with it the variables, must stay below it or the C does not compile.
MAX_ARENA_BYTES = 2**31 - 1


def generate(
    graph: Graph,
    lifetimes: Lifetimes,
    plan: ArenaPlan,
    *,
    name: str,
    arena_section: str | None = None,
    extern_arena: bool = False,
    regions: RegionPlans | None = None,
    arena_alignment: int = 16,
    shared_arena: SharedArena | None = None,
    model_sha256: str = "",
) -> GeneratedSources:
    """File name -> contents of the self-contained generated directory;
    `model_sha256` (hex) names the model file in the header.  With `regions`
    (more than one), every region is an array of its own, in its own
    section; `plan` then holds the regions side by side in one address
    space.  `arena_alignment` above 16 aligns the arena array(s) to it."""
    if name != c_identifier(name):
        raise InputError(f"model name {name!r} is not a C identifier (try {c_identifier(name)!r})")
    if name != c_prefix(name):
        raise InputError(f"model name {name!r} is not usable as the C prefix ({PREFIX_RULE})")
    if arena_section is not None:
        validate_section_name(arena_section)
    if regions is not None and len(regions.regions) == 1:
        regions = None  # one region is the plain arena
    if regions is not None and (arena_section or extern_arena or shared_arena):
        raise InputError(
            "--region gives each region its section: drop --arena-section and --extern-arena "
            "(and plan several models with --ram)"
        )
    if shared_arena is not None:
        arena_section, extern_arena = None, False  # both belong to the shared arena
    builder = _Builder(graph, lifetimes, plan, name, regions)
    builder.program = in_raster_order(builder.program, builder.overlapping_steps())
    calls = lower_all(builder.program, lifetimes.elided_ops)
    ops = builder.ops(calls)
    slots = builder.slots(ops)
    inputs = builder.io(graph.inputs)
    outputs = builder.io(graph.outputs)
    region_context = None
    if regions is None:
        arena_size = max(plan.arena_bytes, max((s.offset + s.size for s in slots), default=0), 1)
    else:
        region_context = _region_context(name, regions, slots, inputs)
        arena_size = sum(region["size"] for region in region_context)
    if arena_size + lifetimes.variable_bytes > MAX_ARENA_BYTES:
        raise InputError(
            f"the arena and variables need {arena_size + lifetimes.variable_bytes:,} B: generated C declares "
            f"arrays of at most {MAX_ARENA_BYTES:,} B (a 32-bit core's largest object)"
        )

    stems: list[str] = []
    for code in ops:
        for part in (code.gather, code, code.scatter, *code.body_parts):
            if part is not None and part.call is not None:
                for stem in part.call.sources:
                    if stem not in stems:
                        stems.append(stem)
    # Every model carries the plan checker its -DMCU_PLAN_CHECK build calls.
    runtime = _runtime_files(stems + [PLAN_CHECK_RUNTIME])
    shared_names = (f"{SHARED_ARENA}.c", f"{SHARED_ARENA}.h", f"{MODELS_LIBRARY}.mk")
    if name in (SHARED_ARENA, MODELS_LIBRARY):
        raise InputError(f"model name {name!r} is the shared arena's; choose another --name")
    for generated_name in (f"{name}.c", f"{name}.h", f"{name}.mk", DROP_IN_CMAKE, MANIFEST_NAME, *shared_names):
        if generated_name in runtime:
            raise InputError(f"model name {name!r} collides with runtime file {generated_name}")

    releases = [slot for code in ops for slot in code.releases + (code.loop_end.releases if code.loop_end else [])]
    context = dict(
        name=name,
        guard=name.upper() + "_H",
        arena_size=arena_size,
        arena_section=c_string(arena_section) if arena_section else None,
        extern_arena=extern_arena,
        regions=region_context,
        # aligned() takes powers of two; other alignments keep the 16-byte arena.
        arena_alignment=arena_alignment if arena_alignment & (arena_alignment - 1) == 0 else 16,
        sections=_section_macros(
            ([(f"{name.upper()}_ARENA_SECTION", arena_section)] if arena_section else [])
            + [(r["section_macro"], r["section_name"]) for r in region_context or () if r["section_name"]]
        ),
        shared_arena=shared_arena,
        headers=sorted(stem + ".h" for stem in stems),
        constants=[builder.constants[t] for t in sorted(builder.constants)],
        variables=[builder.variables[t] for t in sorted(builder.variables)],
        state_size=max(lifetimes.variable_bytes, 1),
        state_bytes=lifetimes.variable_bytes if builder.variables else 0,
        ops=ops,
        slots=slots,
        # Cut: a literal past 4,095 bytes breaks the strict build (-Woverlength-strings).
        slot_names=[c_string(f"{s.buffer}:{shown(graph.tensors[s.buffer].name)}") for s in slots],
        buffer_enum=[buffer_enum_name(name, graph.tensors[s.buffer]) for s in slots],
        op_names=[c_string(op.opcode) for op in graph.operators],
        op_macs=[lifetimes.program.facts(op.index).macs for op in graph.operators],
        count_type="uint16_t" if max((s.consumers for s in slots), default=0) < 65536 else "uint32_t",
        refcount_length=counter_slots(len(slots)),
        offset_type="uint32_t",
        in_place=_in_place_table(lifetimes, builder.slot_of),
        overlaps=_overlap_table(lifetimes, builder.slot_of, builder.raster_steps),
        num_releases=len(releases),
        inputs=inputs,
        outputs=outputs,
        poison_byte=f"0x{POISON_BYTE:02X}u",
        planner=plan.planner,
        num_ops=len(graph.operators),
        model_sha256=model_sha256,
        tool_version=__version__,
        sources_sha256=sources_sha256(),
    )
    files = {
        f"{name}.h": render("model.h.j2", **context),
        f"{name}.c": render("model.c.j2", **context),
    }
    files.update(runtime)
    # Drop-in build files: the sources to compile and the flags they need.
    if shared_arena is None:
        files.update(drop_in_build_files(name, files))
    interface = ModelInterface(
        name=name,
        num_inputs=len(inputs),
        num_outputs=len(outputs),
        arena_bytes=arena_size,
        arena_section=arena_section,
        extern_arena=extern_arena,
        variable_bytes=lifetimes.variable_bytes,
        region_sections=sorted({r.section for r in regions.regions if r.section}) if regions else [],
        num_buffers=len(slots),
        arena_alignment=max(arena_alignment, 16),
        kernel_functions=sorted(
            {
                inner.function
                for op in graph.operators
                if op.index in calls
                for _, inner in op_calls(op, calls[op.index])
            }
        ),
    )
    return GeneratedSources(dict(sorted(files.items())), interface)


# ---------------------------------------------------------------- OUTDIR
