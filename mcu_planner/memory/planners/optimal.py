"""`optimal`: the smallest arena for the fixed op order, by exhaustive search.

The decision question "do all buffers fit below C?" is answered by a branch and
bound over canonical placements (MiniMalloc's method; the core is C, in
mcu_planner/_solver.c, built by `pip install .`).  This module turns it into
minimisation: start from a largest-first first-fit plan, ask for the live-peak
lower bound first (most real models reach it), then bisect between the highest
capacity proven impossible and the best plan found.  A plan is reported
proven optimal only when it equals the lower bound or the search proved that
one unit less cannot be done.

Overlaps (an output partly over the input its op reads for the last time,
`Problem.overlap_limits`) are searched exactly: the solver takes them as
pairs whose lower buffer (the output) needs only the overlap's distance
below the upper one (the input).  In-place pairs are ignored: every other two
buffers alive at a common step get disjoint bytes, which is always valid
(in-place reuse is the seed planners' business).  Sizes and offsets are
handled in units of the problem's alignment, so every offset is aligned.
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DoesNotFit, McuPlanError
from ..problem import Budget, PlannerResult, Problem, align_down
from . import register

DEFAULT_TIME_LIMIT = 10.0
# Share of the time (or work) the first question (can the lower bound be
# met?) may use; the rest goes to bisection when it cannot be answered.
LOWER_BOUND_SHARE = 0.5
# A search bounded by work (`work_limit` solver nodes: the same plan on
# every machine) solves each window of the lower bound in at most
# WINDOW_NODES nodes (the clock-bounded one gives each 0.02 s, some 90,000
# nodes on a 2026 laptop core), and the windows together in at most
# WINDOW_SHARE of the work.
WINDOW_NODES = 50_000
WINDOW_SHARE = 0.25


class SolverNotBuilt(McuPlanError):
    """The C extension is missing (installed without a C compiler)."""


def _solver_module() -> Any:
    try:
        return importlib.import_module("mcu_planner._solver")
    except ImportError as exc:
        raise SolverNotBuilt(
            "the optimal planner needs its C extension mcu_planner._solver, which is not built: "
            "run `pip install .` (in a source checkout `python setup.py build_ext --inplace`) "
            "or choose another planner"
        ) from exc


@dataclass
class SearchReport:
    offsets: dict[int, int]  # buffer id -> byte offset
    arena_bytes: int
    lower_bound: int  # bytes: the live peak, less what overlaps could share
    proven_optimal: bool
    proven_infeasible_below: int  # bytes: no plan has a smaller arena (>= lower_bound)
    questions: list[tuple[int, str, float]]  # (capacity bytes, answer, seconds) in the order asked
    nodes: int
    clock_cut_bound: bool = False  # the lower bound itself depended on the clock
    work_bounded: bool = False  # bounded by solver nodes alone (the clock stopped nothing)

    @property
    def reproducible(self) -> bool:
        """Bounded by work, or finished with no question out of time: any
        machine asks the same questions, gets the same answers and the same
        plan."""
        if self.work_bounded:
            return True
        return (
            self.proven_optimal
            and not self.clock_cut_bound
            and all(answer != "timeout" for _, answer, _ in self.questions)
        )


class _Allowance:
    """What a search may still spend: the clock up to `time_limit` seconds,
    or (`work_limit`) solver nodes, so that every machine finds the same
    plan however busy it is.  A work-bounded search still stops at the
    clock's limit (the command's deadline), but then says so
    (`clock_cut`): its plan is no longer the same everywhere."""

    def __init__(self, time_limit: float, work_limit: int | None):
        self.work_limit = work_limit
        self.deadline = time.monotonic() + time_limit
        self.nodes = 0  # spent so far (counted in both modes)
        self.clock_cut = False  # a work-bounded search was stopped by the clock

    @property
    def by_work(self) -> bool:
        return self.work_limit is not None

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    def remaining(self) -> float:
        """Seconds, or nodes, left."""
        if self.work_limit is not None:
            return float(self.work_limit - self.nodes)
        return self.seconds_left()

    def exhausted(self) -> bool:
        if self.work_limit is None:
            return self.seconds_left() <= 0.001
        if self.seconds_left() <= 0.001:
            self.clock_cut = True
            return True
        return self.nodes >= self.work_limit

    def windows_exhausted(self) -> bool:
        """Whether the lower bound's windows must stop: the deadline, or (by
        work) their share of the work."""
        if self.seconds_left() <= 0:
            self.clock_cut = self.by_work
            return True
        return self.work_limit is not None and self.nodes >= self.work_limit * WINDOW_SHARE

    def limits(self, share: float) -> tuple[float, int]:
        """(seconds, max_nodes) of one solver call given `share` (seconds or
        nodes) of what is left; max_nodes 0: no node bound."""
        if self.work_limit is not None:
            return max(self.seconds_left(), 0.0), max(1, int(share))
        return max(share, 0.0), 0

    def window_limits(self, seconds: float) -> tuple[float, int]:
        if self.by_work:
            return max(self.seconds_left(), 0.0), WINDOW_NODES
        return seconds, 0

    def answered(self, answer: str) -> None:
        """Notes a solver answer: a work-bounded call the clock stopped."""
        if answer == "timeout" and self.by_work:
            self.clock_cut = True


class _Instance:
    """The buffers the search must place, in alignment units."""

    def __init__(self, problem: Problem, allowance: _Allowance | None = None):
        # What the lower bound's windows may spend (None: all they need).
        self.allowance = allowance if allowance is not None else _Allowance(math.inf, None)
        self.unit = max(1, problem.alignment)
        self.fixed = [b.id for b in problem.buffers if b.size <= 0 or b.end <= b.start]
        active = [b for b in problem.buffers if b.size > 0 and b.end > b.start]
        self.ids = [b.id for b in active]
        self.sizes = [-(-b.size // self.unit) for b in active]
        # Lifetimes in the source's own time scale when the problem was
        # renumbered: the same overlaps, but the real widths, which the
        # search's buffer order ranks by.  On instances whose time axis is
        # metric (minimalloc's are cut from a square) that finds plans orders
        # of magnitude sooner.
        times = problem.step_times
        self.starts = [times[b.start] if times else b.start for b in active]
        self.ends = [times[b.end] if times else b.end for b in active]
        # (output, input, height): the output may sit `height` units below the
        # input; heights of at least one unit keep the two apart by one, so an
        # overlap that would let the output start at or above the input's
        # start is searched as one unit below it (not exact then).
        index = {buffer_id: i for i, buffer_id in enumerate(self.ids)}
        self.pairs: list[tuple[int, int, int]] = []
        self.exact = True
        for (out_id, in_id), limit in sorted(problem.overlap_limits().items()):
            if out_id not in index or in_id not in index:
                continue
            out, inp = index[out_id], index[in_id]
            height = -align_down(limit, self.unit) // self.unit
            if height < 1:
                height, self.exact = 1, False
            if height < self.sizes[out]:
                self.pairs.append((out, inp, height))
        self.lower_bound = self._live_peak()
        self.window_timed_out = False  # a window's bound was cut short by the clock (or work)
        if self.pairs:
            self.lower_bound = max(self.lower_bound, self._window_bound())

    def _live_peak(self) -> int:
        """Live units at the busiest time, less what the overlap pairs alive
        then could share: no plan the search allows goes below it."""
        events: dict[int, int] = {}
        for size, start, end in zip(self.sizes, self.starts, self.ends, strict=True):
            events[start] = events.get(start, 0) + size
            events[end] = events.get(end, 0) - size
        for lower, upper, height in self.pairs:
            together = max(self.starts[lower], self.starts[upper])
            apart = min(self.ends[lower], self.ends[upper])
            events[together] = events.get(together, 0) - (self.sizes[lower] - height)
            events[apart] = events.get(apart, 0) + (self.sizes[lower] - height)
        peak = running = 0
        for step in sorted(events):
            running += events[step]
            peak = max(peak, running)
        return peak

    def _window_bound(self, steps: int = 3, seconds: float = 0.02) -> int:
        """The most units any `steps` consecutive steps need on their own
        (every buffer cut to the window), each window solved exactly: a
        lower bound the per-step count misses where overlaps chain, as when
        a buffer sits over its input at one step and its output sits under it
        at the next.  A window the solver cannot settle in `seconds` (or
        WINDOW_NODES) counts its per-step bound only; so do the windows left
        when the search's deadline passes (or their share of its work).
        Only windows holding an overlap pair are solved, each from the
        buffers alive in it (linear in the model per window)."""
        solver = _solver_module()
        best = 0
        last = max(self.ends, default=0)
        starts_at = np.asarray(self.starts, dtype=np.int64)
        ends_at = np.asarray(self.ends, dtype=np.int64)
        # Window start -> the pairs whose two buffers both meet that window.
        pairs_in: dict[int, list[tuple[int, int, int]]] = {}
        for a, b, h in self.pairs:
            low = max(0, self.starts[a] - steps + 1, self.starts[b] - steps + 1)
            high = min(max(1, last - steps + 1), self.ends[a], self.ends[b])
            for first in range(low, high):
                pairs_in.setdefault(first, []).append((a, b, h))
        for first in sorted(pairs_in):
            if self.allowance.windows_exhausted():
                self.window_timed_out = True
                break
            end = first + steps
            keep = [int(i) for i in np.flatnonzero((starts_at < end) & (ends_at > first))]
            where = {i: k for k, i in enumerate(keep)}
            sizes = [self.sizes[i] for i in keep]
            starts = [max(self.starts[i], first) for i in keep]
            ends = [min(self.ends[i], end) for i in keep]
            pairs = [(where[a], where[b], h) for a, b, h in pairs_in[first]]
            low, high = 0, sum(sizes)  # low: proven impossible below; high: a plan fits
            while low < high:
                middle = (low + high) // 2
                window_seconds, window_nodes = self.allowance.window_limits(seconds)
                answer, _, used = solver.fit(
                    sizes, starts, ends, middle, window_seconds, "WAT,TAW,TWA", pairs, window_nodes
                )
                self.allowance.nodes += used
                self.allowance.answered(answer)
                if answer == "found":
                    high = middle
                elif answer == "infeasible":
                    low = middle + 1
                else:
                    self.window_timed_out = True
                    break
            best = max(best, low)
        return best

    def height(self, offsets: list[int]) -> int:
        return max((o + s for o, s in zip(offsets, self.sizes, strict=True)), default=0)

    def byte_offsets(self, offsets: list[int]) -> dict[int, int]:
        placed = {i: o * self.unit for i, o in zip(self.ids, offsets, strict=True)}
        placed.update({i: 0 for i in self.fixed})
        return placed


def search(
    problem: Problem,
    time_limit: float | None = None,
    capacity: int | None = None,
    stop_when_fits: bool = False,
    work_limit: int | None = None,
) -> SearchReport:
    """Smallest arena found within `time_limit` seconds, or with
    `work_limit`, within that many solver nodes whatever the clock says (the
    same plan on every machine).  With `capacity` (bytes), fitting it is
    asked first and gets all the time (work) it needs; with `stop_when_fits`
    too, the search ends as soon as a plan fits."""
    solver = _solver_module()
    limit = DEFAULT_TIME_LIMIT if time_limit is None else max(0.0, float(time_limit))
    allowance = _Allowance(limit, None if work_limit is None else max(0, int(work_limit)))
    inst = _Instance(problem, allowance)
    unit = inst.unit
    questions: list[tuple[int, str, float]] = []

    best = solver.first_fit(inst.sizes, inst.starts, inst.ends)
    best_height = inst.height(best)
    proven_floor = inst.lower_bound  # lowest height not proven impossible
    next_try = proven_floor  # lowest height still worth asking about

    def ask(target: int, share: float) -> str:
        nonlocal best, best_height, proven_floor, next_try
        started = time.monotonic()
        seconds, max_nodes = allowance.limits(share)
        answer, offsets, used = solver.fit(
            inst.sizes, inst.starts, inst.ends, target, seconds, "WAT,TAW,TWA", inst.pairs, max_nodes
        )
        allowance.nodes += used
        allowance.answered(answer)
        questions.append((target * unit, answer, time.monotonic() - started))
        if answer == "found":
            height = inst.height(offsets)
            if height < best_height:
                best, best_height = offsets, height
        elif answer == "infeasible":
            proven_floor = max(proven_floor, target + 1)
            next_try = max(next_try, target + 1)
        else:  # unknown (out of time or work): look higher, but prove nothing
            next_try = max(next_try, target + 1)
        return str(answer)

    capacity_units = None if capacity is None else capacity // unit
    if capacity_units is not None and best_height > capacity_units >= next_try:
        ask(capacity_units, allowance.remaining())
    fits = capacity_units is None or best_height <= capacity_units
    if not (stop_when_fits and fits):
        asked_lower_bound = False
        while proven_floor < best_height:
            if allowance.exhausted():
                break
            remaining = allowance.remaining()
            if next_try >= best_height:
                # Every height left unproven timed out: go round again with the time left.
                next_try = proven_floor
            if not asked_lower_bound:
                target, budget = next_try, remaining * LOWER_BOUND_SHARE
                asked_lower_bound = True
            else:
                target = (next_try + best_height - 1) // 2
                budget = remaining / max(1, (best_height - next_try).bit_length())
            ask(target, budget)

    return SearchReport(
        offsets=inst.byte_offsets(best),
        arena_bytes=best_height * unit,
        lower_bound=inst.lower_bound * unit,
        proven_optimal=best_height <= proven_floor and inst.exact,
        # What the search proved holds for real plans only when it searched every overlap exactly.
        proven_infeasible_below=proven_floor * unit if inst.exact else 0,
        questions=questions,
        nodes=allowance.nodes,
        clock_cut_bound=allowance.clock_cut if allowance.by_work else inst.window_timed_out,
        work_bounded=allowance.by_work and not allowance.clock_cut,
    )


@register("optimal", clock_bounded=True)
def plan_optimal(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    """The smallest arena found in `budget.time_limit`; with a capacity, any
    plan within it is looked for first, then the search tightens while time
    remains, unless `budget.stop_at_fit` (when nothing fits, the smallest plan
    found is still the answer)."""
    report = search(
        problem,
        budget.time_limit,
        capacity=budget.capacity,
        stop_when_fits=budget.stop_at_fit,
        work_limit=budget.work_limit,
    )
    # Optimal among plans giving every live buffer its own bytes; with in-place
    # pairs a plan sharing bytes may be smaller, so claim nothing then.
    proven = report.proven_optimal and not problem.in_place_pairs()
    return PlannerResult(report.offsets, proven_optimal=proven, reproducible=report.reproducible)


def fit_within(
    problem: Problem,
    capacity: int,
    time_limit: float | None = None,
    tighten: bool = False,
) -> SearchReport:
    """A plan within `capacity` bytes (then, with `tighten`, as small as time
    allows).  Raises DoesNotFit when none exists or none was found in time."""
    report = search(problem, time_limit, capacity=capacity, stop_when_fits=not tighten)
    if report.arena_bytes <= capacity:
        return report
    if report.proven_infeasible_below > capacity:
        raise DoesNotFit(
            f"no plan fits {capacity:,} B: the search proved at least {report.proven_infeasible_below:,} B are needed"
        )
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    raise DoesNotFit(
        f"no plan within {capacity:,} B found in {limit:g} s (best found {report.arena_bytes:,} B, "
        f"lower bound {report.lower_bound:,} B); a longer time limit may find one"
    )
