"""`greedy`: TensorFlow Lite Micro's GreedyMemoryPlanner method.

Largest buffer first (ties: earliest first use, then id); each goes at the
lowest offset where it overlaps no already placed buffer that is alive at a
common step.  Fast and usually good; the baseline every other planner is
measured against.
"""

from __future__ import annotations

from ..problem import Budget, Buffer, PlannerResult, Problem
from . import register


@register("greedy")
def plan_greedy(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    order = sorted(problem.buffers, key=lambda b: (-b.size, b.start, b.id))
    placed: list[tuple[int, Buffer]] = []  # (offset, buffer), kept sorted by offset
    offsets: dict[int, int] = {}
    for b in order:
        candidate = 0
        for off, other in placed:
            if not b.overlaps_in_time(other) or other.size == 0:
                continue
            if candidate + b.size <= off:
                break
            candidate = max(candidate, off + other.size)
        offsets[b.id] = candidate
        placed.append((candidate, b))
        placed.sort(key=lambda item: (item[0], item[1].id))
    return PlannerResult(offsets)
