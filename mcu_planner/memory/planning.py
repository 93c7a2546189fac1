"""Running planners: every plan is verified before anyone sees it, and
`auto` keeps the smallest verified plan of several planners."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .planners import CLOCK_BOUNDED, load_all
from .planners.optimal import SolverNotBuilt
from .problem import Budget, Problem, arena_bytes, sharing_lower_bound
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
    problem: Problem,
    name: str,
    time_limit: float | None = None,
    capacity: int | None = None,
    stop_at_fit: bool = False,
    work_limit: int | None = None,
) -> ArenaPlan:
    """The named planner's verified plan, given the budget `time_limit`
    (seconds; or `work_limit` solver nodes, Budget.work_limit) and
    `capacity` (bytes; the planners that take one, such as the exact
    planner, look for a plan within it first and, with `stop_at_fit`, stop
    there)."""
    if name == "auto":
        return plan_auto(problem, time_limit if time_limit is not None else 10.0, capacity, stop_at_fit, work_limit)
    planners = load_all()
    if name not in planners:
        raise KeyError(name)
    started = time.perf_counter()
    budget = Budget(time_limit=time_limit, capacity=capacity, stop_at_fit=stop_at_fit, work_limit=work_limit)
    result = planners[name](problem, budget)
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


def plan_within(
    problem: Problem,
    name: str,
    time_limit: float | None,
    capacity: int | None,
    stop_at_fit: bool = False,
    work_limit: int | None = None,
) -> ArenaPlan:
    """The plan `mcu-plan --planner NAME --time-limit T --ram R` makes: the
    exact planner (alone or inside auto) first looks for one within
    `capacity` (R less the variable tensors; with `stop_at_fit` the first
    plan within it is kept); the caller reports a plan over it as not
    fitting.  The time limit (or `work_limit`) goes to clock-bounded
    planners alone: the others are bounded by counts, and so give the same
    plan on every machine."""
    limit = time_limit if name == "auto" or name in CLOCK_BOUNDED else None
    return run_planner(problem, name, limit, capacity, stop_at_fit=stop_at_fit, work_limit=work_limit)


def _meets_bound(problem: Problem, size: int) -> bool:
    # The live peak less all that overlaps and in-place pairs could share: no plan goes below it.
    return size <= sharing_lower_bound(problem)


def _preference(plan: ArenaPlan) -> tuple[int, bool, int]:
    """auto's choice among plans, smallest key first: fewest bytes, then a
    proven optimum, then the order auto runs the planners in."""
    order = list(FAST_PLANNERS) + ["optimal"]
    rank = order.index(plan.planner) if plan.planner in order else len(order)
    return (plan.arena_bytes, not plan.proven_optimal, rank)


# One row of `--planner all`: the planner's plan, or why it has none.
PlanRow = tuple[str, "ArenaPlan | str"]


def compare_planners(
    problem: Problem,
    time_limit: float | None,
    capacity: int | None,
    stop_at_fit: bool = False,
    work_limit: int | None = None,
) -> tuple[list[PlanRow], ArenaPlan]:
    """Every planner's plan (or why it has none) and the one auto's rule
    prefers among them, without planning anything twice."""
    rows: list[PlanRow] = []
    for name in load_all():
        try:
            rows.append((name, plan_within(problem, name, time_limit, capacity, stop_at_fit, work_limit)))
        except PlanInvalid as exc:
            rows.append((name, f"invalid plan: {exc}"))
        except SolverNotBuilt:
            rows.append((name, "not built (pip install . with a C compiler)"))
    best = min((plan for _, plan in rows if not isinstance(plan, str)), key=_preference)
    best.chosen_by_auto = True
    return rows, best


def plan_auto(
    problem: Problem,
    time_limit: float = 10.0,
    capacity: int | None = None,
    stop_at_fit: bool = False,
    work_limit: int | None = None,
) -> ArenaPlan:
    """Fast planners first, then the exact one while the best plan is above the
    lower bound (or the capacity, when one is given) and time (or, with
    `work_limit`, its solver nodes) remains.  With `stop_at_fit` and a
    capacity, a plan within the capacity ends the search."""
    started = time.perf_counter()
    bound = sharing_lower_bound(problem)  # no plan goes below it
    # Nor does the exact planner's go below this (it shares no bytes in place).
    exact_bound = sharing_lower_bound(problem, in_place=False)
    best: ArenaPlan | None = None
    tried: list[tuple[str, int | None]] = []

    def remaining() -> float:
        if work_limit is not None:
            return time_limit  # the exact search stops on its work, not on the clock
        return time_limit - (time.perf_counter() - started)

    def good_enough(plan: ArenaPlan) -> bool:
        if stop_at_fit and capacity is not None and plan.arena_bytes <= capacity:
            return True
        return plan.arena_bytes <= bound

    for name in FAST_PLANNERS:
        if best is not None and good_enough(best):
            break
        try:
            plan = run_planner(problem, name, None)
        except PlanInvalid:
            tried.append((name, None))
            continue
        tried.append((name, plan.arena_bytes))
        if best is None or _preference(plan) < _preference(best):
            best = plan
    assert best is not None, "greedy always produces a plan"
    # The exact planner runs only while it can still help: above its bound.
    # A capacity below that bound it cannot meet: it then makes the arena
    # (and the shortfall the command reports) as small as it can.
    hopeless = capacity is not None and capacity < exact_bound
    fit_capacity = capacity is not None and best.arena_bytes > capacity and not hopeless
    if best.arena_bytes > exact_bound and not good_enough(best) and remaining() > 0:
        try:
            if stop_at_fit and fit_capacity:
                plan = run_planner(problem, "optimal", remaining(), capacity, True, work_limit)
            else:
                plan = run_planner(
                    problem, "optimal", remaining(), capacity if fit_capacity else None, False, work_limit
                )
        except SolverNotBuilt:
            tried.append(("optimal", None))
        else:
            tried.append(("optimal", plan.arena_bytes))
            if _preference(plan) < _preference(best):
                best = plan
    best.chosen_by_auto = True
    best.tried = tried
    best.seconds = time.perf_counter() - started
    return best
