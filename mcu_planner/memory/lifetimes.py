"""Lifetimes: which activation bytes must be kept at which op step.

An activation lives from the op that produces it (graph inputs: step 0) to
the last op that reads it (graph outputs: the last op).  Constants live in
flash and variable tensors in their own persistent region; neither is planned
in the arena of activations.

With aliasing on, two graph rewrites shrink the problem before any planner
sees it (seed 001's in-place reuse):
- an op that only reinterprets its input (RESHAPE, SQUEEZE, EXPAND_DIMS;
  their KernelFacts say which, `reinterprets_input`) gives its output the input's bytes when the input dies there;
- a CONCATENATION (or PACK, a concatenation along a new axis) whose inputs
  are contiguous slices of its output (every dimension before the axis is 1),
  with identical quantization and no fused activation, has its producers
  write straight into those slices;
- a SPLIT, SPLIT_V, UNPACK or SLICE (facts `cuts_input_into_pieces`) whose
  every output is a contiguous run of its input's bytes
  (slicing.contiguous_pieces) gives each output those bytes when the input
  dies there.
Ops whose whole work is done by such aliasing are listed in `elided_ops`:
the generated code runs nothing for them.

Elementwise ops (facts `elementwise`) may also write their output over
an input that dies there (`Step.in_place`); whether that happens is the planner's choice.
Convolutions, pooling and FULLY_CONNECTED, whose kernels declare a raster
walk (facts `access`), may start their output inside (or just
before) the input that dies there, as far as overlap.py derives from the
walk (`Step.overlaps`).

A patched stage (patches.py, `Program.patch_stage`) keeps its input alive to
its last op and its output from its first; the tensors in between are one
patch in size, and the output may overlap the input across the stage.  A
grid's gather and scatter buffers are scratch tensors of the stage's first
and last op, planned as any scratch is.

Scratch tensors (scratch.py: an op's working memory, `Operator.scratch`) are
activations alive at their op's step only, written by that step; they never
alias anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..graph import DTYPE_BITS, Graph, Operator, PatchStage
from ..lowering.program import Program, as_program
from ..slicing import contiguous_pieces
from .overlap import kernel_walk, max_output_offset
from .patches import stage_access
from .problem import Buffer, Overlap, Problem, Step, align_up


@dataclass(frozen=True)
class TensorPlacement:
    buffer: int  # id of the planned buffer holding the tensor's bytes
    offset: int  # byte offset of the tensor inside that buffer


@dataclass(frozen=True)
class Lifetimes:
    problem: Problem
    placements: dict[int, TensorPlacement]  # every activation tensor -> where its bytes are
    first_op: dict[int, int]  # activation tensor -> first op step it is alive (inclusive)
    last_op: dict[int, int]  # activation tensor -> last op step it is alive (inclusive)
    aliases: dict[int, int] = field(default_factory=dict)  # tensor -> tensor whose bytes it shares
    elided_ops: frozenset[int] = frozenset()
    variable_tensors: tuple[int, ...] = ()
    variable_bytes: int = 0
    # Variable tensor -> byte offset in the persistent state region (each
    # aligned like the arena's buffers); variable_bytes is the region's size.
    variable_offsets: dict[int, int] = field(default_factory=dict)
    # The Program these lifetimes are of: its calls and facts, for every
    # stage after planning (layers, report, codegen).
    lowered: Program | None = field(default=None, compare=False, repr=False)

    @property
    def program(self) -> Program:
        assert self.lowered is not None, "lifetimes come from compute_lifetimes"
        return self.lowered

    def tensor_offset(self, offsets: dict[int, int], tensor: int) -> int:
        placement = self.placements[tensor]
        return offsets[placement.buffer] + placement.offset


def activation_tensors(graph: Graph) -> list[int]:
    """Tensors whose bytes change at run time and are not persistent state."""
    used = set(graph.inputs) | set(graph.outputs)
    for op in graph.operators:
        used.update(t for t in op.inputs if t >= 0)
        used.update(t for t in op.outputs if t >= 0)
        used.update(op.scratch)
    return sorted(t for t in used if not graph.tensors[t].is_constant and not graph.tensors[t].is_variable)


def _live_ranges(graph: Graph, activations: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    last_step = max(len(graph.operators) - 1, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for op in graph.operators:
        for t in op.outputs:
            if t >= 0 and t not in first:
                first[t] = op.index
    for t in graph.inputs:
        first[t] = 0
    for op in graph.operators:
        for t in op.scratch:
            first[t] = op.index
    consumers = graph.consumers()
    for t in activations:
        first.setdefault(t, 0)  # read but produced by nobody: treat like a graph input
        readers = consumers.get(t, [])
        last[t] = max([first[t]] + readers)
    for t in graph.outputs:
        last[t] = last_step
    return first, last


class _AliasBuilder:
    """Union of tensors into shared buffers, tracking each tensor's root."""

    def __init__(self, program: Program, activations: list[int], first: dict[int, int], last: dict[int, int]):
        graph = program.graph
        self.program = program
        self.graph = graph
        self.activation_set = set(activations)
        self.first, self.last = first, last
        self.root = {t: t for t in activations}
        self.offset = {t: 0 for t in activations}
        self.members = {t: [t] for t in activations}
        self.aliases: dict[int, int] = {}
        self.elided: set[int] = set()
        self.consumers = graph.consumers()
        self.graph_io = set(graph.inputs) | set(graph.outputs)
        self.produced = {t for op in graph.operators for t in op.outputs if t >= 0}

    def _dies_at(self, t: int, op: Operator) -> bool:
        return self.consumers.get(t, []) == [op.index] and t not in self.graph.outputs

    def try_reinterpret(self, op: Operator) -> None:
        data_inputs = [t for t in op.inputs[:1] if t >= 0]
        if len(data_inputs) != 1 or len(op.outputs) != 1:
            return
        src, dst = data_inputs[0], op.outputs[0]
        if src not in self.activation_set or dst not in self.activation_set or dst in self.graph.inputs:
            return
        if self.graph.tensors[src].nbytes != self.graph.tensors[dst].nbytes:
            return
        if not self._dies_at(src, op):
            return
        self._merge(dst, into=src, offset=0)
        self.aliases[dst] = src
        self.elided.add(op.index)

    def try_write_over_input(self, op: Operator) -> None:
        """A depthwise convolution run channel by channel over its own input
        (in_place_depthwise.py) writes its output into the input's bytes.
        The op still runs."""
        src, dst = op.inputs[0], op.outputs[0]
        if src not in self.activation_set or dst not in self.activation_set or dst in self.graph.inputs:
            return
        if self.graph.tensors[dst].nbytes > self.graph.tensors[src].nbytes or not self._dies_at(src, op):
            return
        self._merge(dst, into=src, offset=0)
        self.aliases[dst] = src

    def try_share_pieces(self, op: Operator) -> None:
        """Outputs that are contiguous runs of the dying input take its bytes."""
        offsets = contiguous_pieces(op, self.graph)
        if offsets is None or len(offsets) != len(op.outputs):
            return
        src = op.inputs[1] if op.opcode == "SPLIT" else op.inputs[0]
        if src not in self.activation_set or not self._dies_at(src, op):
            return
        for dst in op.outputs:
            if dst not in self.activation_set or dst in self.graph.inputs or dst == src:
                return
            if self.graph.tensors[dst].dtype != self.graph.tensors[src].dtype:
                return
        for dst, offset in zip(op.outputs, offsets, strict=True):
            self._merge(dst, into=src, offset=offset)
            self.aliases[dst] = src
        self.elided.add(op.index)

    def try_concatenate_in_place(self, op: Operator) -> None:
        if len(op.outputs) != 1 or op.options.get("fused_activation_function", "NONE") != "NONE":
            return
        out = op.outputs[0]
        inputs = list(op.inputs)
        if out not in self.activation_set or out in self.graph.inputs or len(set(inputs)) != len(inputs):
            return
        shape = self.graph.tensors[out].shape
        axis = op.options.get("axis", 0)
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape) or any(d != 1 for d in shape[:axis]):
            return
        for t in inputs:
            if t < 0 or t not in self.activation_set or not self._dies_at(t, op):
                return
            if not self.graph.tensors[t].same_quantization(self.graph.tensors[out]):
                return
            if not self._movable_into_slice(t):
                return
        if sum(self.graph.tensors[t].nbytes for t in inputs) != self.graph.tensors[out].nbytes:
            return
        offset = 0
        for t in inputs:
            # The group's root now lives in the slice; its members keep
            # pointing at the root.
            self.aliases[self.root[t]] = out
            self._merge(t, into=out, offset=offset)
            offset += self.graph.tensors[t].nbytes
        self.elided.add(op.index)

    def _movable_into_slice(self, t: int) -> bool:
        """`t`, with every tensor already sharing its bytes (a RESHAPE's input,
        say), can be written straight into a slice of another buffer: each of
        them is produced by an op, none is a graph input or output, and together
        they occupy exactly t's bytes."""
        group = self.members[self.root[t]]
        size = self.graph.tensors[t].nbytes
        return self.offset[t] == 0 and all(
            m in self.produced
            and m not in self.graph_io
            and self.offset[m] == 0
            and self.graph.tensors[m].nbytes == size
            for m in group
        )

    def _merge(self, tensor: int, *, into: int, offset: int) -> None:
        """Move `tensor`'s whole group into `into`'s buffer, `tensor` at `offset` from `into`."""
        root = self.root[into]
        shift = self.offset[into] + offset - self.offset[tensor]
        for member in self.members.pop(self.root[tensor]):
            self.offset[member] += shift
            self.root[member] = root
            self.members[root].append(member)

    def run(self) -> None:
        for op in self.graph.operators:
            facts = self.program.facts(op.index)
            if facts.writes_over_input:
                self.try_write_over_input(op)
            elif facts.reinterprets_input:
                self.try_reinterpret(op)
            elif facts.concatenates_inputs:
                self.try_concatenate_in_place(op)
            elif facts.cuts_input_into_pieces:
                self.try_share_pieces(op)


def compute_lifetimes(model: Program | Graph, alignment: int = 16, alias: bool = True) -> Lifetimes:
    """The lifetimes of `model`'s activations (a Graph is lowered first, lower_program)."""
    program = as_program(model)
    graph = program.graph
    activations = activation_tensors(graph)
    first, last = _live_ranges(graph, activations)
    nbytes = {t: graph.tensors[t].nbytes for t in activations}
    stage = program.patch_stage
    if stage is not None:
        # Patch by patch: the stage input is read and the output written by
        # every patch, from the stage's first op to its last; the tensors in
        # between hold one patch, alive from producer to consumer within it
        # (a plan valid for one patch is valid for each, as they run in turn).
        last[stage.input] = max(last[stage.input], stage.ops[-1])
        first[stage.output] = stage.ops[0]
        nbytes.update(zip(stage.intermediates, stage.patch_bytes, strict=True))
    builder = _AliasBuilder(program, activations, first, last)
    if alias:
        builder.run()

    # One buffer per alias root, spanning every member's lifetime and bytes.
    buffers: dict[int, Buffer] = {}
    for root, members in builder.members.items():
        start = min(first[m] for m in members)
        end = max(last[m] for m in members) + 1
        extent = max(builder.offset[m] + nbytes[m] for m in members)
        buffers[root] = Buffer(root, align_up(extent, alignment), start, end)

    placements = {t: TensorPlacement(builder.root[t], builder.offset[t]) for t in activations}
    steps = _steps(program, placements, buffers, builder.elided, alias, alignment)
    if stage is not None and alias:
        steps = _with_stage_overlap(program, stage, steps, placements, buffers)
    problem = Problem(tuple(buffers[r] for r in sorted(buffers)), alignment, steps)

    variables = tuple(t.index for t in graph.tensors if t.is_variable)
    variable_offsets: dict[int, int] = {}
    variable_bytes = 0
    for t in variables:
        variable_offsets[t] = variable_bytes
        variable_bytes += align_up(graph.tensors[t].nbytes, alignment)
    return Lifetimes(
        problem=problem,
        placements=placements,
        first_op={t: first[t] for t in activations},
        last_op={t: last[t] for t in activations},
        aliases=dict(builder.aliases),
        elided_ops=frozenset(builder.elided),
        variable_tensors=variables,
        variable_bytes=variable_bytes,
        variable_offsets=variable_offsets,
        lowered=program,
    )


def _with_stage_overlap(
    program: Program,
    stage: PatchStage,
    steps: tuple[Step, ...],
    placements: dict[int, TensorPlacement],
    buffers: dict[int, Buffer],
) -> tuple[Step, ...]:
    """The stage's output may start inside its input when the input dies at
    the stage's end: rows of patches run top to bottom, each patch reading
    its input window before writing its output (patches.stage_access: one
    group of the walk per row of patches, so a grid's patches of a row,
    reading and writing in turn, stay within the walk the bound and the
    verifier both derive)."""
    graph = program.graph
    src, dst = stage.input, stage.output
    src_buf, dst_buf = buffers[placements[src].buffer], buffers[placements[dst].buffer]
    first_step, last_step = stage.ops[0], stage.ops[-1]
    if (
        src_buf.id == dst_buf.id
        or src_buf.end != last_step + 1
        or dst_buf.start != first_step
        or any(t in graph.outputs for t, p in placements.items() if p.buffer == src_buf.id)
    ):
        return steps
    access = stage_access(program, stage)
    input_at, output_at = placements[src].offset, placements[dst].offset
    limit = input_at + max_output_offset(access) - output_at
    overlap = Overlap(
        dst_buf.id, src_buf.id, limit, access, output_at=output_at, input_at=input_at, span=len(stage.ops)
    )
    result = list(steps)
    result[first_step] = replace(result[first_step], overlaps=result[first_step].overlaps + (overlap,))
    return tuple(result)


def _steps(
    program: Program,
    placements: dict[int, TensorPlacement],
    buffers: dict[int, Buffer],
    elided: set[int],
    in_place: bool,
    alignment: int,
) -> tuple[Step, ...]:
    graph = program.graph
    steps = []
    # Inside a patched stage nothing runs in place or overlaps: its tensors
    # hold patches, which the kernels' whole-tensor walks do not describe.
    staged = set(program.patch_stage.ops) if program.patch_stage is not None else set()
    # Buffers holding a graph output (kept to the end): one set, not a scan per op.
    output_buffers = frozenset(placements[t].buffer for t in graph.outputs if t in placements)
    for op in graph.operators:
        ins = _unique(placements[t].buffer for t in op.inputs if t in placements)
        outs = _unique(placements[t].buffer for t in op.outputs + op.scratch if t in placements)
        pairs: list[tuple[int, int]] = []
        if (
            in_place
            and program.facts(op.index).elementwise
            and op.index not in elided
            and op.index not in staged
            and len(op.outputs) == 1
        ):
            out = op.outputs[0]
            for t in op.inputs:
                if (
                    t in placements
                    and out in placements
                    and _may_overwrite(graph, op, t, out, placements, buffers, output_buffers)
                ):
                    pair = (placements[out].buffer, placements[t].buffer)
                    if pair not in pairs:
                        pairs.append(pair)
        runs_whole = op.index not in elided and op.index not in staged
        overlaps = (
            _overlaps(program, op, placements, buffers, alignment, output_buffers) if in_place and runs_whole else ()
        )
        steps.append(Step(ins, outs, tuple(pairs), overlaps))
    return tuple(steps)


def _overlaps(
    program: Program,
    op: Operator,
    placements: dict[int, TensorPlacement],
    buffers: dict[int, Buffer],
    alignment: int,
    output_buffers: frozenset[int],
) -> tuple[Overlap, ...]:
    """The output of a kernel with a raster walk over the data input that
    dies at this op: how far into it the output may start.  Buffers start at
    multiples of `alignment`, so the shifts a plan can give the output from
    the input differ by multiples of it from output_at - input_at."""
    if len(op.outputs) != 1 or not op.inputs:
        return ()
    src, dst = op.inputs[0], op.outputs[0]
    if src not in placements or dst not in placements:
        return ()
    src_buf, dst_buf = buffers[placements[src].buffer], buffers[placements[dst].buffer]
    others = [t for t in op.inputs[1:] if t in placements]
    if (
        src_buf.id == dst_buf.id
        or src_buf.end != op.index + 1  # the input's bytes die at this op
        or dst_buf.start != op.index
        or any(placements[t].buffer == src_buf.id for t in others)
        or src_buf.id in output_buffers
    ):
        return ()
    walk = kernel_walk(program, op.index)
    if walk is None:
        return ()
    access, slower = walk
    input_at, output_at = placements[src].offset, placements[dst].offset
    pixel = access.input_pixel_bytes
    whole_pixels = pixel > 0 and alignment % pixel == 0 and (output_at - input_at) % pixel == 0
    limit = input_at + max_output_offset(access, whole_pixels) - output_at
    return (Overlap(dst_buf.id, src_buf.id, limit, access, output_at=output_at, input_at=input_at, slower=slower),)


def _may_overwrite(
    graph: Graph,
    op: Operator,
    src: int,
    dst: int,
    placements: dict[int, TensorPlacement],
    buffers: dict[int, Buffer],
    output_buffers: frozenset[int],
) -> bool:
    s, d = graph.tensors[src], graph.tensors[dst]
    src_buf, dst_buf = buffers[placements[src].buffer], buffers[placements[dst].buffer]
    # Graph outputs stay alive to the end however early their last reader
    # runs; graph inputs may be overwritten (the application writes them
    # before every invoke, as the header says).
    return (
        src_buf.id not in output_buffers
        and placements[src].offset == 0
        and placements[dst].offset == 0
        and src_buf.id != dst_buf.id
        and s.shape == d.shape
        and DTYPE_BITS[s.dtype] == DTYPE_BITS[d.dtype]
        and src_buf.size == dst_buf.size
        and src_buf.end == op.index + 1  # the input's bytes die at this op
        and dst_buf.start == op.index
    )


def _unique(ids: Iterable[int]) -> tuple[int, ...]:
    seen: list[int] = []
    for i in ids:
        if i not in seen:
            seen.append(i)
    return tuple(seen)
