"""`greedy`: TensorFlow Lite Micro's GreedyMemoryPlanner method.

Largest buffer first (ties: earliest first use, then id); each goes at the
lowest offset where it overlaps no already placed buffer that is alive at a
common step.  Fast and usually good; the baseline every other planner is
measured against.  An output that may partly overlap the input its op reads
for the last time (`Problem.overlap_limits`) may also start inside, or less
far below, that input.
"""

from __future__ import annotations

from ..problem import Budget, Buffer, PlannerResult, Problem, forbidden_starts
from . import register


@register("greedy")
def plan_greedy(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    order = sorted(problem.buffers, key=lambda b: (-b.size, b.start, b.id))
    limits = problem.overlap_limits()
    placed: list[tuple[int, Buffer]] = []  # (offset, buffer)
    offsets: dict[int, int] = {}
    for b in order:
        # Starts b may not take beside each placed buffer alive with it, by their lowest end.
        windows = sorted(
            forbidden_starts(b, other, off, limits, problem.alignment)
            for off, other in placed
            if b.overlaps_in_time(other) and other.size > 0
        )
        candidate = 0
        for low, high in windows:
            if candidate <= low:
                break
            candidate = max(candidate, high)
        offsets[b.id] = candidate
        placed.append((candidate, b))
    return PlannerResult(offsets)
