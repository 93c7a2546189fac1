"""The Program: a graph in its run order with every op lowered once.

`lower_program(graph)` runs right after constant folding (the op order is a
Program-to-Program rewrite, `reorder_program`): it calls each op's lowering
once and keeps its `KernelCall` with the `KernelFacts` the lowering module
declares for it (lowering/__init__.py).  Every later stage reads them here --
lifetimes (aliasing, in-place pairs, overlaps), in-place depthwise, patches,
layers, regions, the report and codegen -- and none lowers an op again.

The planner's choices are rewrites of a Program, not of the model's graph:
a depthwise convolution run over its own input (in_place_depthwise.py) gets
the call its facts offer for that and a scratch tensor; a stage run patch by
patch (patches.py) is the Program's `patch_stage`, with its patch buffers as
scratch tensors of its first and last op; a kernel whose output the plan
overlaps with its input walks in raster order (`in_raster_order`, applied
by codegen to the planned Program).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import McuPlanError
from ..graph import Graph, PatchStage
from . import KernelCall, KernelFacts, NotLowerable, kernel_facts, lower

_NO_FACTS = KernelFacts()


@dataclass(frozen=True)
class LoweredOp:
    """One op's kernel call and facts; or, when it does not lower, why
    (NotLowerable: a variant the runtime lacks; another McuPlanError: a model
    the rules reject, reported when code is generated) and no facts."""

    call: KernelCall | None
    facts: KernelFacts = _NO_FACTS
    error: McuPlanError | NotLowerable | None = None


@dataclass(frozen=True)
class Program:
    graph: Graph
    ops: tuple[LoweredOp, ...]  # by op step: ops[op.index]
    # The first stage run patch by patch (patches.py), or None.
    patch_stage: PatchStage | None = None

    def call(self, index: int) -> KernelCall | None:
        return self.ops[index].call

    def facts(self, index: int) -> KernelFacts:
        return self.ops[index].facts

    @property
    def in_place_depthwise(self) -> tuple[int, ...]:
        """The ops run channel by channel over their own input (in_place_depthwise.py)."""
        return tuple(index for index, lowered in enumerate(self.ops) if lowered.facts.writes_over_input)

    @property
    def model_macs(self) -> int:
        return sum(lowered.facts.macs for lowered in self.ops)


def lower_op(graph: Graph, index: int) -> LoweredOp:
    op = graph.operators[index]
    try:
        call = lower(op, graph)
    except (NotLowerable, McuPlanError) as exc:
        return LoweredOp(None, error=exc)
    return LoweredOp(call, kernel_facts(op, graph, call))


def lower_program(graph: Graph) -> Program:
    """Every op of `graph` lowered once, in its run order."""
    for position, op in enumerate(graph.operators):
        assert op.index == position, "ops are numbered in run order"
    return Program(graph, tuple(lower_op(graph, index) for index in range(len(graph.operators))))


def reorder_program(program: Program, reordered: Graph, order: tuple[int, ...]) -> Program:
    """`program` running its ops in `order` (order.reorder's `reordered`
    graph): an op's call names tensors, not steps, so it stays as lowered."""
    if reordered is program.graph:
        return program
    return replace(program, graph=reordered, ops=tuple(program.ops[old] for old in order))


def in_raster_order(program: Program, steps: set[int]) -> Program:
    """`program` with the ops at `steps` (those whose output the plan starts
    inside the input they read last) walking in the raster order their facts
    declare, where their kernels otherwise take a faster walk."""
    ops = list(program.ops)
    for index in sorted(steps):
        rewrite = ops[index].facts.in_raster_order
        if rewrite is not None:
            ops[index] = replace(ops[index], call=rewrite())
    return replace(program, ops=tuple(ops))


def as_program(graph_or_program: Graph | Program) -> Program:
    """A Program as it is, a Graph lowered (for callers that start from a graph)."""
    return graph_or_program if isinstance(graph_or_program, Program) else lower_program(graph_or_program)
