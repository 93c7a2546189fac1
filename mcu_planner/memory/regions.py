"""Memory regions (`--region NAME=SIZE[@SECTION]`, fastest first): every
planned buffer goes into one region, at an offset inside that region's array.

The assignment is greedy and explainable: when the whole arena fits the first
region, everything goes there.  Otherwise the buffers are ranked by the
multiply-accumulates of the ops that read them (most first; smaller first on
a tie), and each region but the last takes, in that order, every buffer that
still lets a plan of its buffers fit the region (checked with the greedy
planner: a plan of what is already there plus the candidate).  The last
region takes the rest.  Each region is then planned on its own with the
chosen planner (falling back to the greedy plan that proved it fits) and
verified on its own.  Variable tensors (state kept between invocations) go
into the last region, after its arena.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..emit.c_literals import c_identifier, validate_section_name
from ..errors import InputError
from ..graph import Graph
from ..sizes import format_bytes, parse_size
from .lifetimes import Lifetimes
from .planning import ArenaPlan, plan_within, run_planner
from .problem import Problem, Step, peak_live
from .verify import check_plan

_REGION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([^@]+)(?:@(.+))?$")


@dataclass(frozen=True)
class Region:
    name: str
    size: int
    section: str | None = None


def parse_region(text: str) -> Region:
    """NAME=SIZE[@SECTION], e.g. dtcm=32K@.dtcm_bss; InputError otherwise."""
    match = _REGION.match(text.strip())
    if not match:
        raise InputError(f"--region {text!r} is not NAME=SIZE[@SECTION] (e.g. dtcm=32K@.dtcm_bss)")
    name, size_text, section = match.groups()
    try:
        size = parse_size(size_text)
    except ValueError as exc:
        raise InputError(f"--region {text!r}: {exc}") from None
    if size < 1:
        raise InputError(f"--region {text!r}: the size must be at least 1 byte")
    if section is not None:
        validate_section_name(section)
    return Region(name, size, section)


def check_regions(regions: tuple[Region, ...]) -> None:
    names = [r.name.lower() for r in regions]
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"--region {name} is given twice; every region needs its own name")
    if any(name != c_identifier(name) for name in names):  # pragma: no cover - the pattern allows only these
        raise InputError("region names must be C identifiers")


@dataclass
class RegionPlans:
    """Where every planned buffer lives: its region and its offset there."""

    regions: tuple[Region, ...]
    region_of: dict[int, int]  # buffer id -> index into regions
    plans: tuple[ArenaPlan, ...]  # per region: offsets of its buffers inside it
    variable_bytes: int = 0  # state in the last region, after its arena

    @property
    def state_region(self) -> int:
        return len(self.regions) - 1

    def arena_bytes(self, region: int) -> int:
        return self.plans[region].arena_bytes

    def used_bytes(self, region: int) -> int:
        """The region's arena, plus the state in the last region."""
        return self.arena_bytes(region) + (self.variable_bytes if region == self.state_region else 0)

    def fits(self) -> bool:
        return all(self.used_bytes(r) <= region.size for r, region in enumerate(self.regions))

    def offset_of(self, buffer: int) -> int:
        return self.plans[self.region_of[buffer]].offsets[buffer]

    def tensor_place(self, lifetimes: Lifetimes, tensor: int) -> tuple[int, int]:
        """(region index, byte offset in that region) of an activation tensor."""
        placement = lifetimes.placements[tensor]
        return self.region_of[placement.buffer], self.offset_of(placement.buffer) + placement.offset


def subproblem(problem: Problem, ids: set[int]) -> Problem:
    """The buffers `ids` of `problem` alone, with the op structure among them
    (in-place pairs and partial overlaps whose two buffers are both kept)."""
    steps = tuple(
        Step(
            tuple(b for b in step.inputs if b in ids),
            tuple(b for b in step.outputs if b in ids),
            tuple(pair for pair in step.in_place if pair[0] in ids and pair[1] in ids),
            tuple(o for o in step.overlaps if o.output in ids and o.input in ids),
        )
        for step in problem.steps
    )
    return Problem(tuple(b for b in problem.buffers if b.id in ids), problem.alignment, steps, problem.step_times)


def buffer_macs(graph: Graph, lifetimes: Lifetimes) -> dict[int, int]:
    """Per planned buffer: the multiply-accumulates of the ops that read it."""
    weight = {b.id: 0 for b in lifetimes.problem.buffers}
    for op in graph.operators:
        macs = lifetimes.program.facts(op.index).macs
        read = {lifetimes.placements[t].buffer for t in op.inputs if t in lifetimes.placements}
        for buffer in read:
            weight[buffer] += macs
    return weight


def _fits_greedy(problem: Problem, capacity: int) -> ArenaPlan | None:
    if peak_live(problem).bytes > capacity and not problem.may_go_below_live_peak():
        return None
    plan = run_planner(problem, "greedy")
    return plan if plan.arena_bytes <= capacity else None


def plan_regions(
    graph: Graph,
    lifetimes: Lifetimes,
    regions: tuple[Region, ...],
    *,
    planner: str,
    time_limit: float | None,
    stop_at_fit: bool = False,
    work_limit: int | None = None,
) -> RegionPlans:
    """Assign and plan every buffer (module docstring).  The result may not
    fit (RegionPlans.fits): the last region gets whatever is left."""
    problem = lifetimes.problem
    capacities = [r.size for r in regions]
    capacities[-1] -= lifetimes.variable_bytes
    all_ids = {b.id for b in problem.buffers}
    region_of: dict[int, int] = {}
    proven: dict[int, ArenaPlan] = {}

    whole = plan_within(problem, planner, time_limit, capacities[0], stop_at_fit, work_limit)
    if len(regions) == 1 or whole.arena_bytes <= capacities[0]:
        region_of = dict.fromkeys(all_ids, 0)
        plans = [whole] + [_empty_plan(planner) for _ in regions[1:]]
        return _checked(RegionPlans(regions, region_of, tuple(plans), lifetimes.variable_bytes), problem)

    weight = buffer_macs(graph, lifetimes)
    sizes = {b.id: b.size for b in problem.buffers}
    ranked = sorted(all_ids, key=lambda b: (-weight[b], sizes[b], b))
    remaining = list(ranked)
    for index in range(len(regions) - 1):
        members: set[int] = set()
        fitting: ArenaPlan | None = None
        for buffer in list(remaining):
            if sizes[buffer] > capacities[index]:
                continue
            trial = _fits_greedy(subproblem(problem, members | {buffer}), capacities[index])
            if trial is not None:
                members.add(buffer)
                fitting = trial
                remaining.remove(buffer)
        for buffer in members:
            region_of[buffer] = index
        if fitting is not None:
            proven[index] = fitting
    for buffer in remaining:
        region_of[buffer] = len(regions) - 1

    plans = []
    for index in range(len(regions)):
        ids = {b for b, r in region_of.items() if r == index}
        if not ids:
            plans.append(_empty_plan(planner))
            continue
        plan = plan_within(subproblem(problem, ids), planner, time_limit, capacities[index], stop_at_fit, work_limit)
        if plan.arena_bytes > capacities[index] and index in proven:
            plan = proven[index]  # the greedy plan that admitted these buffers fits
        plans.append(plan)
    return _checked(RegionPlans(regions, region_of, tuple(plans), lifetimes.variable_bytes), problem)


def _empty_plan(planner: str) -> ArenaPlan:
    return ArenaPlan(planner, {}, 0, True, 0.0)


def _checked(result: RegionPlans, problem: Problem) -> RegionPlans:
    """Every buffer in exactly one region, each region's plan verified on
    its own buffers (within the region when it fits)."""
    assert set(result.region_of) == {b.id for b in problem.buffers}
    for index, plan in enumerate(result.plans):
        ids = {b for b, r in result.region_of.items() if r == index}
        assert set(plan.offsets) == ids, f"region {result.regions[index].name}: plan and assignment differ"
        check_plan(subproblem(problem, ids), plan.offsets, plan.arena_bytes)
    return result


def regions_shortfall(regions: RegionPlans) -> str:
    """One line: which region overflows, by how much, after the faster ones took what fits."""
    index = next(r for r in range(len(regions.regions)) if regions.used_bytes(r) > regions.regions[r].size)
    region = regions.regions[index]
    used = regions.used_bytes(index)
    return (
        f"does not fit: region {region.name} needs {format_bytes(used)} but holds {format_bytes(region.size)}, "
        f"{format_bytes(used - region.size)} short (the regions before it took every buffer that fits them)"
    )
