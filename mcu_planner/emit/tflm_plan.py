"""Our arena plan inside TensorFlow Lite Micro: a copy of the model whose
`OfflineMemoryAllocation` metadata holds our offsets.

TFLM's offline plan (tensorflow/lite/micro/docs/memory_management.md,
micro_allocation_info.cc) is one metadata entry named OfflineMemoryAllocation
whose buffer is an int32 array [version 1, subgraph index, number of offsets,
offset per tensor...]: one entry for every tensor of every subgraph, -1 for a
tensor TFLM plans itself.  Its GreedyMemoryPlanner places the offline buffers
where they say, without checking them, and fits the rest (its kernels' scratch
buffers, tensors we fold away) around them.

What TFLM can represent: each tensor its own bytes while it is alive in TFLM's
schedule (the model's op order, every op run, an output alive to the end).
Our aliasing, in-place ops and outputs written partly over their dying
inputs share bytes between tensors alive together (TFLM's kernels make no
such promise), and our folding and op order change when tensors are alive,
so each candidate plan is checked against TFLM's own lifetimes by the
verifier; the smallest that passes is written.  The candidates: our plan in
the model's order as --alias says, with --alias off (no bytes shared), and
our planners run on TFLM's lifetimes themselves (which always passes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InputError
from ..frontend.reader import OFFLINE_PLAN_METADATA, read_model
from ..graph import Graph
from ..memory.planning import plan_within
from ..memory.problem import Buffer, Problem, align_up, problem_from_intervals
from ..memory.verify import verify
from ..pipeline import PlanOptions, analyse_model, plan_analysed

# MicroArenaBufferAlignment(): TFLM rounds every planned buffer up to this.
TFLM_BUFFER_ALIGNMENT = 16
OFFLINE_PLAN_VERSION = 1
ONLINE = -1  # the offline plan's "TFLM plans this tensor itself"


@dataclass(frozen=True)
class TflmPlan:
    offsets: tuple[int, ...]  # one per tensor of subgraph 0; ONLINE where TFLM plans it
    arena_bytes: int  # the offline buffers' extent in TFLM's arena
    source: str  # which of our plans it is, for the report


def tflm_problem(graph: Graph) -> Problem:
    """The buffers TFLM plans for subgraph 0 of the model as read (before
    folding), with TFLM's lifetimes: graph inputs alive from the start,
    graph outputs to the end, every other tensor from the op that writes it
    to the last op that reads it; constants and variable tensors (allocated
    once, outside the plan) and empty tensors are not planned.  Step s is
    TFLM's allocation scope s: 0 before the first op, op i at i + 1.

    Our kernels' scratch tensors are buffers too, alive at their op alone:
    TFLM's kernels ask for their own scratch at run time and plan it online,
    so a plan that keeps a hole of our scratch's size there leaves TFLM room
    to put its scratch inside the arena rather than above it."""
    num_ops = len(graph.operators)
    first: dict[int, int] = {t: 0 for t in graph.inputs}
    last: dict[int, int] = dict(first)
    for i, op in enumerate(graph.operators):
        for t in op.outputs:
            if t >= 0:
                first[t] = i + 1  # TFLM records the producing op, even for a graph output
                last[t] = max(last.get(t, i + 1), i + 1)
        for t in op.inputs:
            if t >= 0 and t in first:
                last[t] = i + 1
    for t in graph.outputs:
        first.setdefault(t, 0)
        last[t] = num_ops + 1
    for i, op in enumerate(graph.operators):
        for t in op.scratch:
            first[t] = last[t] = i + 1
    buffers = []
    for t, start in first.items():
        tensor = graph.tensors[t]
        if tensor.is_constant or tensor.is_variable or tensor.nbytes == 0:
            continue
        buffers.append(Buffer(t, tensor.nbytes, start, last[t] + 1))
    # Sizes rounded as TFLM rounds them; no time renumbering is needed, the
    # steps are already dense, but problem_from_intervals keeps the op structure right.
    return problem_from_intervals(
        [Buffer(b.id, align_up(b.size, TFLM_BUFFER_ALIGNMENT), b.start, b.end) for b in buffers],
        alignment=TFLM_BUFFER_ALIGNMENT,
    )


def _offline_extent(problem: Problem, offsets: dict[int, int]) -> int:
    sizes = {b.id: b.size for b in problem.buffers}
    return max((offsets[t] + sizes[t] for t in offsets if t in sizes), default=0)


def choose_tflm_plan(model: str, options: PlanOptions) -> TflmPlan:
    """The smallest of our plans that TFLM can hold as an offline plan."""
    original = read_model(model)
    problem = tflm_problem(original)
    planned_ids = {b.id for b in problem.buffers}
    candidates: list[tuple[int, str, dict[int, int]]] = []
    alignment = max(options.alignment, TFLM_BUFFER_ALIGNMENT)
    for alias in (True, False) if options.alias else (False,):
        ours = PlanOptions(
            planner=options.planner if options.planner != "all" else "auto",
            alignment=alignment,
            alias=alias,
            time_limit=options.search_seconds(),
            order="model",
            patches="off",  # TFLM runs every op whole
            deadline=options.deadline,
        )
        planned = plan_analysed(analyse_model(model, ours), ours)
        lifetimes = planned.lifetimes
        offsets = {
            t: lifetimes.tensor_offset(planned.plan.offsets, t) for t in lifetimes.placements if t in planned_ids
        }
        # Tensors TFLM plans that ours does not (their ops were folded) stay online.
        subset = Problem(
            tuple(b for b in problem.buffers if b.id in offsets), problem.alignment, problem.steps, problem.step_times
        )
        if not verify(subset, offsets):
            what = "--alias on" if alias else "--alias off: no bytes shared"
            candidates.append((_offline_extent(problem, offsets), f"{planned.plan.planner}, {what}", offsets))
    own = plan_within(problem, "auto", options.search_seconds(), None)
    candidates.append((own.arena_bytes, f"{own.planner} on TFLM's lifetimes", dict(own.offsets)))
    arena, source, offsets = min(candidates, key=lambda c: c[0])  # ties: the earlier candidate
    # Scratch tensors are no tensors of the flatbuffer: only their holes remain.
    return TflmPlan(tuple(offsets.get(t, ONLINE) for t in range(_flatbuffer_tensor_count(original))), arena, source)


def _flatbuffer_tensor_count(graph: Graph) -> int:
    return sum(1 for t in graph.tensors if not t.is_scratch)


# ---- writing the metadata ---------------------------------------------------------
#
# The copy keeps every byte of the model and puts a new root table in front
# of it: a flatbuffer's references (uoffset) point only forward, so a new
# Model table placed before the old bytes can refer to all of the old
# tables, and to a new metadata entry and buffer placed between the two.  The
# old root table stays, unreferenced.  The prefix is a multiple of 16 bytes,
# so every old buffer keeps its alignment.

# Fields of the Model table in schema order (tensorflow/lite/schema/schema.fbs).
_MODEL_FIELDS = (
    "version",
    "operator_codes",
    "subgraphs",
    "description",
    "buffers",
    "metadata_buffer",
    "metadata",
    "signature_defs",
)
_BUFFERS, _METADATA = _MODEL_FIELDS.index("buffers"), _MODEL_FIELDS.index("metadata")
_PREFIX_ALIGNMENT = 16


class _Reader:
    def __init__(self, data: bytes):
        self.data = data

    def u16(self, at: int) -> int:
        return int(struct.unpack_from("<H", self.data, at)[0])

    def u32(self, at: int) -> int:
        return int(struct.unpack_from("<I", self.data, at)[0])

    def i32(self, at: int) -> int:
        return int(struct.unpack_from("<i", self.data, at)[0])

    def fields(self, table: int) -> list[int | None]:
        """Absolute position of each field of the table at `table` (None: absent)."""
        vtable = table - self.i32(table)
        vtable_bytes = self.u16(vtable)
        return [
            table + self.u16(vtable + 4 + 2 * k) if self.u16(vtable + 4 + 2 * k) else None
            for k in range((vtable_bytes - 4) // 2)
        ]

    def target(self, at: int) -> int:
        return at + self.u32(at)

    def vector(self, at: int) -> list[int]:
        """Absolute positions of the tables a vector of offsets refers to."""
        start = self.target(at)
        return [self.target(start + 4 + 4 * k) for k in range(self.u32(start))]

    def string(self, at: int) -> bytes:
        start = self.target(at)
        return self.data[start + 4 : start + 4 + self.u32(start)]


class _Prefix:
    """Bytes laid out front to back; references are patched in once the
    prefix's length (where the old model starts) is known."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.references: list[tuple[int, int, bool]] = []  # (at, target, target in the old model)

    def align(self, alignment: int, extra: int = 0) -> None:
        while (len(self.data) + extra) % alignment:
            self.data.append(0)

    def put(self, fmt: str, *values: int) -> int:
        self.align(4)
        at = len(self.data)
        self.data += struct.pack(fmt, *values)
        return at

    def reference(self, at: int, target: int, in_old: bool) -> None:
        self.references.append((at, target, in_old))

    def table(self, field_count: int, present: dict[int, tuple[str, int]]) -> tuple[int, dict[int, int]]:
        """A vtable and a table with one 4-byte slot per present field
        (`present`: field number -> (struct format, value)); returns the
        table's position and each field's slot position."""
        slots = sorted(present)
        vtable = self.put("<" + "H" * (2 + field_count), 0, 0, *([0] * field_count))
        self.align(4)
        table = len(self.data)
        self.data += struct.pack("<i", table - vtable)
        positions = {}
        for field in slots:
            fmt, value = present[field]
            positions[field] = len(self.data)
            self.data += struct.pack(fmt, value)
        struct.pack_into("<HH", self.data, vtable, 4 + 2 * field_count, len(self.data) - table)
        for field in slots:
            struct.pack_into("<H", self.data, vtable + 4 + 2 * field, positions[field] - table)
        return table, positions

    def finish(self) -> bytes:
        self.align(_PREFIX_ALIGNMENT)
        shift = len(self.data)
        for at, target, in_old in self.references:
            struct.pack_into("<I", self.data, at, target + (shift if in_old else 0) - at)
        return bytes(self.data)


def with_offline_plan(model: bytes, offsets: tuple[int, ...] | list[int], tensor_count: int) -> bytes:
    """`model` with its OfflineMemoryAllocation metadata (replaced if present)
    holding `offsets` for subgraph 0, padded with -1 to `tensor_count` (the
    tensors of all subgraphs, as TFLM counts them)."""
    old = _Reader(model)
    root = old.u32(0)
    fields = old.fields(root)
    if len(fields) > len(_MODEL_FIELDS) and any(f is not None for f in fields[len(_MODEL_FIELDS) :]):
        raise InputError("the model's root table has fields newer than the TFLite schema this tool writes")
    fields += [None] * (len(_MODEL_FIELDS) - len(fields))
    buffers_field, metadata_field = fields[_BUFFERS], fields[_METADATA]
    buffers = old.vector(buffers_field) if buffers_field is not None else []
    metadata = []
    for entry in old.vector(metadata_field) if metadata_field is not None else []:
        name_field = old.fields(entry)[0]
        if name_field is None or old.string(name_field) != OFFLINE_PLAN_METADATA.encode():
            metadata.append(entry)
    values = [OFFLINE_PLAN_VERSION, 0, tensor_count] + list(offsets) + [ONLINE] * (tensor_count - len(offsets))

    out = _Prefix()
    out.put("<I", 0)  # root reference, patched below
    out.data += model[4:8]  # the file identifier (TFL3)
    present: dict[int, tuple[str, int]] = {}
    for k, position in enumerate(fields):
        if position is not None or k in (_BUFFERS, _METADATA):
            present[k] = ("<I", old.u32(position) if k == 0 and position is not None else 0)
    table, slots = out.table(len(_MODEL_FIELDS), present)
    struct.pack_into("<I", out.data, 0, table)
    for k, position in enumerate(fields):
        if k in (0, _BUFFERS, _METADATA) or position is None:
            continue
        out.reference(slots[k], old.target(position), in_old=True)

    buffer_vector = out.put("<I", len(buffers) + 1)
    out.data += bytes(4 * (len(buffers) + 1))
    out.reference(slots[_BUFFERS], buffer_vector, in_old=False)
    for k, entry in enumerate(buffers):
        out.reference(buffer_vector + 4 + 4 * k, entry, in_old=True)
    metadata_vector = out.put("<I", len(metadata) + 1)
    out.data += bytes(4 * (len(metadata) + 1))
    out.reference(slots[_METADATA], metadata_vector, in_old=False)
    for k, entry in enumerate(metadata):
        out.reference(metadata_vector + 4 + 4 * k, entry, in_old=True)

    entry, entry_slots = out.table(2, {0: ("<I", 0), 1: ("<I", len(buffers))})  # name, buffer
    out.reference(metadata_vector + 4 + 4 * len(metadata), entry, in_old=False)
    buffer, buffer_slots = out.table(1, {0: ("<I", 0)})  # data
    out.reference(buffer_vector + 4 + 4 * len(buffers), buffer, in_old=False)
    name = out.put("<I", len(OFFLINE_PLAN_METADATA))
    out.data += OFFLINE_PLAN_METADATA.encode() + b"\0"
    out.reference(entry_slots[0], name, in_old=False)
    out.align(_PREFIX_ALIGNMENT, extra=4)  # the int32 array itself 16-byte aligned, as TFLite's buffers are
    data = out.put("<I", 4 * len(values))
    out.data += struct.pack(f"<{len(values)}i", *values)
    out.reference(buffer_slots[0], data, in_old=False)
    return out.finish() + model


def tflm_plan_model(model: str, options: PlanOptions) -> tuple[bytes, TflmPlan]:
    """The model's bytes with our plan as its offline plan, and the plan.
    `model` is one the reader accepts (the command has planned it already)."""
    import tflite

    from ..frontend.model_file import read_model_file

    data = read_model_file(model)
    read_model(data, label=model)  # one line for a file that is not a model, before it is parsed here
    parsed = tflite.Model.GetRootAsModel(data, 0)
    for k in range(parsed.BuffersLength()):
        if parsed.Buffers(k).Offset() > 1:
            raise InputError(
                f"{model}: --tflm-plan does not handle buffers stored after the flatbuffer (models over 2 GB)"
            )
    called = [s for s in range(1, parsed.SubgraphsLength()) if parsed.Subgraphs(s).OperatorsLength()]
    if called:
        # TFLM numbers its allocation scopes through the subgraphs a control
        # flow op runs, so subgraph 0's lifetimes would no longer be its own.
        raise InputError(
            f"{model}: --tflm-plan handles models whose operators are all in subgraph 0 "
            f"(subgraph {called[0]} has operators too)"
        )
    tensor_count = sum(parsed.Subgraphs(s).TensorsLength() for s in range(parsed.SubgraphsLength()))
    plan = choose_tflm_plan(model, options)
    return with_offline_plan(data, plan.offsets, tensor_count), plan


# ---- measuring TFLM ---------------------------------------------------------------

# Enough for every model meant for a microcontroller: TFLM reports what it used of it.
TFLM_MEASURE_ARENA = 8 * 1024 * 1024


def tflm_arena(path: str) -> tuple[int, int] | None:
    """(head, total) bytes as TFLM's RecordingMicroAllocator reports them for
    the model at `path` (head: the planned non-persistent section; total:
    head and the persistent tail), measured with the `tflite-micro` package;
    None when it is not installed or TFLM refuses the model.  The report
    goes to file descriptor 2, so that is captured."""
    import os
    import re
    import sys
    import tempfile

    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        return None
    try:
        interpreter = runtime.Interpreter.from_file(str(path), arena_size=TFLM_MEASURE_ARENA)
    except Exception:  # TFLM rejects the model (unsupported op or type)
        return None
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            interpreter.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    head = re.search(r"Arena allocation head (\d+) bytes", text)
    total = re.search(r"Arena allocation total (\d+) bytes", text)
    if not head or not total:
        return None
    return int(head.group(1)), int(total.group(1))
