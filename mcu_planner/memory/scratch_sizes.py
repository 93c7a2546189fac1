"""Scratch sizes: ops whose kernels also run in less scratch, on slower paths.

An int8 CONV_2D is lowered with the columns its fastest path needs (the M4
DSP blocks' eight widened pixels); its facts offer the compact columns of the
paths without the blocks (`KernelFacts.smaller_scratch`, lowering/conv.py),
and the kernel picks its path by the `column_bytes` it is given.  The choice
is the planner's, like a slower walk's (pipeline.plan_analysed):

- `with_smaller_scratch(program)` is the Program with every such op on its
  smaller scratch (the scratch tensor resized, or at 0 bytes no longer the
  op's scratch: the kernel gets NULL), its call and facts as the lowering
  offers them;
- `regrow_scratch(lifetimes, offsets, arena_bytes)` takes a plan of such a
  Program and gives each op its full scratch back wherever the bytes free
  at its step hold it (a scratch lives at its op's step only, so moving it
  there moves nothing else): the same arena, only the ops at its peak keep
  the slower paths.
"""

from __future__ import annotations

from dataclasses import replace

from ..graph import DTYPE_BITS
from ..lowering import ScratchAlternative
from ..lowering.program import LoweredOp, Program
from .lifetimes import Lifetimes, compute_lifetimes
from .problem import align_up
from .verify import check_plan


def smaller_scratch_ops(program: Program) -> tuple[int, ...]:
    """The ops (steps) that may run on a smaller scratch than they have."""
    return tuple(index for index, lowered in enumerate(program.ops) if lowered.facts.smaller_scratch is not None)


def smaller_scratch_taken(program: Program) -> tuple[int, ...]:
    """The ops (steps) that run on a smaller scratch than their full one."""
    return tuple(index for index, lowered in enumerate(program.ops) if lowered.facts.larger_scratch is not None)


def with_smaller_scratch(program: Program, tensors: frozenset[int] | None = None) -> Program:
    """`program` with every op that may run on a smaller scratch running on
    it (with `tensors`: those whose scratch tensor is one of them)."""
    changes = {index: program.facts(index).smaller_scratch for index in smaller_scratch_ops(program)}
    return _resized(
        program,
        {i: alt for i, alt in changes.items() if alt is not None and (tensors is None or alt.tensor in tensors)},
    )


def _resized(program: Program, changes: dict[int, ScratchAlternative]) -> Program:
    """`program` with each op of `changes` on that scratch size (its tensor
    resized, first in the op's scratch; none at 0 bytes) and the call and
    facts the lowering gives for it."""
    if not changes:
        return program
    graph = program.graph
    tensors, operators, ops = list(graph.tensors), list(graph.operators), list(program.ops)
    for index, alternative in changes.items():
        call, facts = alternative.lowered()
        op, tensor = operators[index], tensors[alternative.tensor]
        others = tuple(t for t in op.scratch if t != alternative.tensor)
        if alternative.nbytes:
            tensors[alternative.tensor] = replace(tensor, shape=(alternative.nbytes * 8 // DTYPE_BITS[tensor.dtype],))
            operators[index] = replace(op, scratch=(alternative.tensor,) + others)
        else:
            operators[index] = replace(op, scratch=others)
        ops[index] = LoweredOp(call, facts)
    resized = replace(graph, tensors=tuple(tensors), operators=tuple(operators))
    return replace(program, graph=resized, ops=tuple(ops))


def regrow_scratch(
    lifetimes: Lifetimes, offsets: dict[int, int], arena_bytes: int, alias: bool = True
) -> tuple[Lifetimes, dict[int, int]] | None:
    """The plan (`offsets`, `arena_bytes`) of `lifetimes` with every op that
    runs on a smaller scratch given its full one back where the bytes free
    at its step hold it, at the lowest such offset: (lifetimes, offsets), or
    None when no op gets it back.  The other buffers stay where they are, and
    the problem keeps the overlaps `lifetimes` allowed."""
    program, problem = lifetimes.program, lifetimes.problem
    new_offsets = dict(offsets)
    grown: dict[int, ScratchAlternative] = {}
    for index in smaller_scratch_taken(program):
        alternative = program.facts(index).larger_scratch
        assert alternative is not None
        size = align_up(alternative.nbytes, problem.alignment)
        busy = sorted(
            (offsets[b.id], offsets[b.id] + b.size)
            for b in problem.buffers
            if b.start <= index < b.end and b.id != alternative.tensor and b.id in offsets
        )
        at = _lowest_gap(busy, size, arena_bytes, problem.alignment)
        if at is not None:
            grown[index] = alternative
            new_offsets[alternative.tensor] = at
    if not grown:
        return None
    regrown = compute_lifetimes(_resized(program, grown), alignment=problem.alignment, alias=alias)
    # The same problem but for the scratch sizes: the overlaps a plan was
    # made without (slower walks left out) stay left out.
    steps = tuple(
        replace(step, overlaps=kept.overlaps) for step, kept in zip(regrown.problem.steps, problem.steps, strict=True)
    )
    regrown = replace(regrown, problem=replace(regrown.problem, steps=steps))
    check_plan(regrown.problem, new_offsets, arena_bytes)
    return regrown, new_offsets


def _lowest_gap(busy: list[tuple[int, int]], size: int, arena_bytes: int, alignment: int) -> int | None:
    """The lowest aligned offset where `size` bytes fit below `arena_bytes`
    clear of every (start, end) of `busy` (sorted)."""
    at = 0
    for start, end in busy:
        if start - at >= size:
            break
        at = max(at, align_up(end, alignment))
    return at if at + size <= arena_bytes else None
