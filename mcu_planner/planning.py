"""Running planners: every plan is verified before anyone sees it, and
`auto` keeps the smallest verified plan of several planners."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .planners import load_all
from .planners.optimal import SolverNotBuilt
from .problem import PlannerResult, Problem, arena_bytes, peak_live
from .verify import PlanInvalid, check_plan

# Planners `auto` tries before the exact one, cheapest first.  Each runs
# without a time limit: they are bounded by counts, not the clock, so the
# same problem gets the same plan on any machine.
FAST_PLANNERS = ("greedy", "shared-blocks", "best-fit", "first-fit", "bidirectional", "search")


@dataclass
class ArenaPlan:
    planner: str  # the planner whose plan this is
    offsets: dict[int, int]  # buffer id -> byte offset
    arena_bytes: int
    proven_optimal: bool
    seconds: float
    reproducible: bool = True  # see PlannerResult.reproducible
    chosen_by_auto: bool = False
    # Planners `auto` ran, with their arena bytes (None: that planner failed), in order.
    tried: list[tuple[str, int | None]] = field(default_factory=list)


def planner_names() -> list[str]:
    return list(load_all()) + ["auto"]


def run_planner(
    problem: Problem, name: str, time_limit: float | None = None, capacity: int | None = None
) -> ArenaPlan:
    """The named planner's verified plan.  With a `capacity` (bytes), the exact
    planner first looks for any plan within it, then tightens as time allows;
    the other planners do not take one."""
    if name == "auto":
        return plan_auto(problem, time_limit if time_limit is not None else 10.0, capacity)
    planners = load_all()
    if name not in planners:
        raise KeyError(name)
    started = time.perf_counter()
    if name == "optimal" and capacity is not None:
        result = _fit_capacity(problem, capacity, time_limit)
    else:
        result = planners[name](problem, time_limit)
    seconds = time.perf_counter() - started
    size = arena_bytes(problem, result.offsets)
    check_plan(problem, result.offsets, size)
    return ArenaPlan(
        name,
        dict(result.offsets),
        size,
        result.proven_optimal or _meets_bound(problem, size),
        seconds,
        reproducible=result.reproducible,
    )


def plan_within(problem: Problem, name: str, time_limit: float | None, capacity: int | None) -> ArenaPlan:
    """The plan `mcu-plan --planner NAME --time-limit T --ram R` makes: the
    exact planner (alone or inside auto) first looks for one within
    `capacity` (R less the variable tensors); the caller reports a plan over
    it as not fitting.  The time limit is the exact planner's alone: the
    others are bounded by counts, and so give the same plan on every
    machine."""
    limit = time_limit if name in ("optimal", "auto") else None
    return run_planner(problem, name, limit, capacity)


def _meets_bound(problem: Problem, size: int) -> bool:
    # With in-place pairs a plan may go below the live peak, so reaching it proves nothing.
    return not problem.in_place_pairs() and size == peak_live(problem).bytes


def _fit_capacity(problem: Problem, capacity: int, time_limit: float | None) -> PlannerResult:
    """Fit `capacity` first, then tighten while time remains; when nothing
    fits, the smallest plan found (and what was proven) is still the answer."""
    from .planners.optimal import search

    report = search(problem, time_limit, capacity=capacity)
    return PlannerResult(
        report.offsets, report.proven_optimal and not problem.in_place_pairs(), report.reproducible
    )


def plan_auto(problem: Problem, time_limit: float = 10.0, capacity: int | None = None) -> ArenaPlan:
    """Fast planners first, then the exact one while the best plan is above the
    lower bound (or the capacity, when one is given) and time remains."""
    started = time.perf_counter()
    planners = load_all()
    bound = peak_live(problem).bytes
    best: ArenaPlan | None = None
    tried: list[tuple[str, int | None]] = []

    def remaining() -> float:
        return time_limit - (time.perf_counter() - started)

    # Below the live peak only in-place reuse can go, and only the seed planners try it.
    may_beat_bound = bool(problem.in_place_pairs())
    for name in FAST_PLANNERS:
        if best is not None and best.arena_bytes <= bound and not may_beat_bound:
            break
        if name not in planners:
            continue
        try:
            plan = run_planner(problem, name, None)
        except PlanInvalid:
            tried.append((name, None))
            continue
        tried.append((name, plan.arena_bytes))
        if best is None or plan.arena_bytes < best.arena_bytes:
            best = plan
    # The exact planner runs only while it can still help: above the live
    # peak, and not for a capacity below the peak, which nothing can meet.
    hopeless = capacity is not None and capacity < bound
    fit_capacity = capacity is not None and best is not None and best.arena_bytes > capacity
    if "optimal" in planners and best.arena_bytes > bound and not hopeless and remaining() > 0:
        try:
            plan = run_planner(problem, "optimal", remaining(), capacity if fit_capacity else None)
        except SolverNotBuilt:
            tried.append(("optimal", None))
        else:
            tried.append(("optimal", plan.arena_bytes))
            if best is None or plan.arena_bytes < best.arena_bytes or (
                plan.arena_bytes == best.arena_bytes and plan.proven_optimal
            ):
                best = plan
    assert best is not None, "greedy always produces a plan"
    best.chosen_by_auto = True
    best.tried = tried
    best.seconds = time.perf_counter() - started
    return best
