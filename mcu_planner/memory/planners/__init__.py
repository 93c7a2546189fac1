"""Planners: Problem in, offsets out.  Each registers itself under the name
users select with `--planner NAME`.

A planner is a function `plan(problem: Problem, budget: Budget) ->
PlannerResult` (budget: time limit and capacity; each planner uses what
applies to it).  It must place every buffer at a multiple of
`problem.alignment`; it need not check its own plan (verify.py does that for
every plan before anyone sees it).  A planner registered `clock_bounded`
stops at the budget's time limit, so its plan may depend on the machine; the
others are bounded by counts and get no time limit from the command line.
"""

from __future__ import annotations

from collections.abc import Callable

from ...registry import Registry
from ..problem import Budget, PlannerResult, Problem

PlannerFn = Callable[[Problem, Budget], PlannerResult]

SEED_FILES: dict[str, str] = {}
CLOCK_BOUNDED: set[str] = set()

# Modules that register planners on import.
_MODULES = ["greedy", "bidirectional", "best_fit", "first_fit", "search", "shared_blocks", "optimal"]
_REGISTRY: Registry[PlannerFn] = Registry("planner", lambda: [f"{__name__}.{m}" for m in _MODULES])
PLANNERS = _REGISTRY.entries


def register(name: str, seed: str | None = None, clock_bounded: bool = False) -> Callable[[PlannerFn], PlannerFn]:
    def wrap(fn: PlannerFn) -> PlannerFn:
        _REGISTRY.add(name, fn)
        if seed:
            SEED_FILES[name] = seed
        if clock_bounded:
            CLOCK_BOUNDED.add(name)
        return fn

    return wrap


def load_all() -> dict[str, PlannerFn]:
    return _REGISTRY.load()
