"""Planners: Problem in, offsets out.  Each registers itself under the name
users select with `--planner NAME`.

A planner is a function `plan(problem: Problem, time_limit: float | None) ->
PlannerResult`.  It must place every buffer at a multiple of
`problem.alignment`; it need not check its own plan (verify.py does that for
every plan before anyone sees it).
"""

from __future__ import annotations

import importlib
from typing import Callable

from ..problem import PlannerResult, Problem

PlannerFn = Callable[[Problem, "float | None"], PlannerResult]

PLANNERS: dict[str, PlannerFn] = {}
SEED_FILES: dict[str, str] = {}

# Modules that register planners on import; order = order of `--planner all` rows.
_MODULES = ["greedy", "bidirectional", "best_fit", "first_fit", "search", "shared_blocks", "optimal"]


def register(name: str, seed: str | None = None):
    def wrap(fn: PlannerFn) -> PlannerFn:
        PLANNERS[name] = fn
        if seed:
            SEED_FILES[name] = seed
        return fn

    return wrap


def load_all() -> dict[str, PlannerFn]:
    for module in _MODULES:
        try:
            importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as exc:  # a planner not written yet
            if exc.name != f"{__name__}.{module}":
                raise
    return PLANNERS
