"""Per layer (op step): what it computes and what it costs in flash and in
the arena.  The plan JSON's `layers` and the HTML report (`--report`) both
read these rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..graph import Graph
from ..lowering import NotLowerable
from ..lowering.control_flow import kernel_calls
from ..memory.lifetimes import Lifetimes
from ..memory.planning import ArenaPlan
from ..memory.problem import Buffer
from ..targets.flash import table_bytes


@dataclass(frozen=True)
class Layer:
    step: int  # position in run order
    op: int  # the operator's index in the model (after folding), as the plan JSON's op_order lists it
    opcode: str
    output_shape: tuple[int, ...]
    macs: int
    weight_bytes: int  # constant tensors this op's kernel is the first to read
    table_bytes: int | None  # derived parameter arrays; None: the runtime has no kernel for it
    live_bytes: int  # arena bytes held by the buffers alive at this step
    arena_top: int  # the highest arena byte in use at this step, + 1

    def as_json(self) -> dict[str, Any]:
        entry = asdict(self)
        entry["output_shape"] = list(self.output_shape)
        return entry


def layer_rows(
    graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan, op_order: tuple[int, ...] | None = None
) -> list[Layer]:
    uses = arena_uses(lifetimes.problem.buffers, plan.offsets, len(graph.operators))
    program = lifetimes.program
    seen: set[int] = set()
    rows = []
    # Ops run patch by patch recompute their halos: their MACs count them.
    stage = program.patch_stage
    extra_macs = dict(zip(stage.ops, stage.op_extra_macs, strict=True)) if stage is not None else {}
    for step, op in enumerate(graph.operators):
        tables: int | None
        if op.index in lifetimes.elided_ops:
            read: tuple[int, ...] = ()  # the plan made it a no-op (its output shares its input's bytes)
            tables = 0
        else:
            lowered = program.ops[op.index]
            call = lowered.call
            if lowered.error is not None and not isinstance(lowered.error, NotLowerable):
                raise lowered.error  # a model the rules reject, not a kernel the runtime lacks
            if call is None:
                read, tables = op.inputs, None
            else:
                inner = list(kernel_calls(call))  # an IF's or WHILE's: the calls of its subgraphs
                read = tuple(t for each in inner for t in each.args)
                tables = sum(table_bytes(each) for each in inner)
        weights = 0
        for t in read:  # the constants the kernel reads (a RESHAPE's shape tensor, say, it does not)
            if t >= 0 and graph.tensors[t].is_constant and t not in seen:
                seen.add(t)
                weights += graph.tensors[t].nbytes
        live, top = uses[step]
        output = op.outputs[0] if op.outputs and op.outputs[0] >= 0 else None
        rows.append(
            Layer(
                step=step,
                op=op_order[step] if op_order is not None else op.index,
                opcode=op.opcode,
                output_shape=graph.tensors[output].shape if output is not None else (),
                macs=program.facts(op.index).macs + extra_macs.get(op.index, 0),
                weight_bytes=weights,
                table_bytes=tables,
                live_bytes=live,
                arena_top=top,
            )
        )
    return rows


def arena_use(buffers: tuple[Buffer, ...], offsets: dict[int, int], step: int) -> tuple[int, int]:
    """(live bytes, one past the highest byte in use) at `step`: the union of
    the byte ranges of the buffers alive then, at `offsets`."""
    return arena_uses(buffers, offsets, step + 1)[step]


def arena_uses(buffers: tuple[Buffer, ...], offsets: dict[int, int], steps: int) -> list[tuple[int, int]]:
    """arena_use at each step 0 .. steps-1, in one sweep over the buffers
    (each step looks at the buffers alive then, not at all of them: a
    10,000-op chain's report took 37 s)."""
    starting: list[list[Buffer]] = [[] for _ in range(steps)]
    for b in buffers:
        if b.size and b.start < steps and b.end > b.start:
            starting[max(0, b.start)].append(b)
    uses = []
    active: list[Buffer] = []
    for step in range(steps):
        active = [b for b in active if b.end > step] + starting[step]
        alive = sorted((offsets[b.id], offsets[b.id] + b.size) for b in active)
        live, covered_to, top = 0, 0, 0
        for start, end in alive:
            live += max(0, end - max(start, covered_to))
            covered_to = max(covered_to, end)
            top = max(top, end)
        uses.append((live, top))
    return uses
