"""`greedy`: TensorFlow Lite Micro's GreedyMemoryPlanner method.

Largest buffer first (ties: earliest first use, then id); each goes at the
lowest offset where it overlaps no already placed buffer that is alive at a
common step.  Fast and usually good; the baseline every other planner is
measured against.  An output that may partly overlap the input its op reads
for the last time (`Problem.overlap_limits`) may also start inside, or less
far below, that input.
"""

from __future__ import annotations

import numpy as np

from ..problem import Budget, PlannerResult, Problem, forbidden_starts
from . import register


@register("greedy")
def plan_greedy(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    order = sorted(problem.buffers, key=lambda b: (-b.size, b.start, b.id))
    limits = problem.overlap_limits()
    # Lifetimes in placing order, so that the buffers placed before b that
    # are alive with it come from one vector comparison (no Python loop over
    # every placed buffer: a 10,000-op chain took 25 s).
    starts = np.fromiter((b.start for b in order), dtype=np.int64, count=len(order))
    ends = np.fromiter((b.end for b in order), dtype=np.int64, count=len(order))
    offsets: dict[int, int] = {}
    for k, b in enumerate(order):
        alive_with = np.flatnonzero((starts[:k] < b.end) & (ends[:k] > b.start))
        # Starts b may not take beside each placed buffer alive with it, by their lowest end.
        windows = sorted(
            forbidden_starts(b, order[i], offsets[order[i].id], limits, problem.alignment)
            for i in alive_with.tolist()
            if order[i].size > 0
        )
        candidate = 0
        for low, high in windows:
            if candidate <= low:
                break
            candidate = max(candidate, high)
        offsets[b.id] = candidate
    return PlannerResult(offsets)
