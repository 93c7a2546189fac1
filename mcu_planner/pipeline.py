"""The one pipeline every front end runs: read -> validate -> fold -> op order ->
lifetimes -> plan within the budget -> (generate).  The command line, `mcu-plan check` and bench/ all go
through here, and ram_budget.py is the one rule for whether a model fits.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from .deadline import Deadline
from .errors import InputError
from .frontend.folding import fold_constants
from .frontend.int4_weights import unpack_int4_weights
from .frontend.model_file import read_model_file
from .frontend.order import best_order, reorder
from .frontend.validate import load_model
from .graph import Graph, PatchStage
from .lowering.program import Program, lower_program, reorder_program
from .memory.cost_model import (
    SlowerWalks,
    cheap_smaller_scratch,
    raster_walk_extra,
    slower_walks,
    with_smaller_scratch_cost,
)
from .memory.in_place_depthwise import candidates as in_place_candidates
from .memory.in_place_depthwise import with_in_place_depthwise
from .memory.lifetimes import Lifetimes, compute_lifetimes
from .memory.patches import candidate_stages, grid_options, make_stage, strip_options, with_stage
from .memory.planners.optimal import DEFAULT_TIME_LIMIT as DEFAULT_TIME_LIMIT  # `mcu-plan --time-limit`'s default
from .memory.planning import ArenaPlan, PlanRow, compare_planners, plan_within
from .memory.problem import peak_live, sharing_lower_bound
from .memory.ram_budget import FirmwareTarget, RamBudget, kernel_functions, lifetimes_budget, ram_budget
from .memory.regions import Region, RegionPlans, plan_regions, regions_shortfall
from .memory.scratch_sizes import regrow_scratch, smaller_scratch_ops, with_smaller_scratch

if TYPE_CHECKING:
    from .emit.codegen import GeneratedSources, SharedArena

# A patch search candidate: (its sharing lower bound, the stage, the program run with it, its lifetimes).
PatchCandidate = tuple[int, PatchStage, Program, Lifetimes]


def budget_of(
    lifetimes: Lifetimes, arena_bytes: int, options: PlanOptions, functions: frozenset[str] | None = None
) -> RamBudget:
    """The RAM (ram_budget.py) of the model of `lifetimes` generated with an arena of `arena_bytes`."""
    return lifetimes_budget(
        lifetimes, arena_bytes, target=options.target, alignment=options.alignment, functions=functions
    )


# The share of the time left before the deadline one exact search may take.
DEADLINE_SHARE_PER_SEARCH = 0.5


@dataclass(frozen=True)
class PlanOptions:
    planner: str = "auto"  # a planner name, "auto", or "all" (every planner; auto's choice is used)
    alignment: int = 16
    alias: bool = True
    time_limit: float = DEFAULT_TIME_LIMIT
    ram: int | None = None  # the RAM budget, counted by ram_budget.py (the whole firmware's with `target`)
    target: FirmwareTarget | None = None  # --board: the firmware whose RAM `ram` is
    stop_at_fit: bool = False  # with ram: the first plan within it is kept (no tightening)
    # "model": the model's op order; "auto": the memory-aware order when it lowers the arena;
    # "memory": the memory-aware order whenever it differs (to test or measure it);
    # or an explicit order: the model's op indices in the order to run them.
    order: str | tuple[int, ...] = "auto"
    # Memory regions (--region), fastest first; empty: one arena of budget `ram`.
    regions: tuple[Region, ...] = ()
    # Patch-based execution of a stage (patches.py): "default" only when
    # needed to fit `ram`; "auto" whenever it lowers the arena; "off"; or a
    # number of strips to force.
    patches: str = "default"
    # The whole command's deadline (`mcu-plan --time-limit`): every search
    # stops by it and keeps its best so far.  None: each search has only its
    # own bound (`time_limit` for the exact planner, work counts elsewhere).
    deadline: Deadline | None = field(default=None, compare=False)
    # Solver nodes bounding the exact search instead of `time_limit`
    # (Budget.work_limit): the default's trial plans, the same on every
    # machine however busy.  None: `time_limit`.
    search_work: int | None = None

    def search_seconds(self) -> float:
        """The exact planner's time limit: `time_limit`, or half of what remains
        before the deadline when that is less (the other half is left for
        what follows: the patch search, the overlap-free comparison)."""
        if self.deadline is None:
            return self.time_limit
        return min(self.time_limit, self.deadline.remaining() * DEADLINE_SHARE_PER_SEARCH)

    def past_deadline(self, stage: str) -> bool:
        """Whether the deadline has passed; if so, `stage` is recorded as cut short there."""
        if self.deadline is None or not self.deadline.expired():
            return False
        self.deadline.cut(stage)
        return True


@dataclass
class AnalysedModel:
    """A model read and its tensors' lifetimes: everything planning needs."""

    graph: Graph
    lifetimes: Lifetimes
    # When `graph` runs its ops in a memory-aware order: the model in its own
    # order, which planning keeps instead unless the new order's arena is smaller.
    model_order: AnalysedModel | None = None
    # The op indices of the model (after constant folding) in the order `graph` runs them.
    op_order: tuple[int, ...] | None = None
    # When `graph` runs some depthwise convolutions over their own input
    # (in_place_depthwise.py): the model without, which planning keeps
    # unless it does not fit --ram and the in-place arena is smaller (the
    # channel-by-channel kernel is slower: kws_ref_model on the M4 takes
    # 367,833 ticks in place against 224,091).
    without_in_place: AnalysedModel | None = None
    # SHA-256 (hex) of the model file's bytes, written into the generated header.
    model_sha256: str = ""

    def arena_capacity(self, options: PlanOptions) -> int | None:
        """The arena's share of the RAM budget: what the planner must fit."""
        if options.ram is None:
            return None
        return options.ram - budget_of(self.lifetimes, 0, options, self.kernel_functions).other

    @cached_property
    def kernel_functions(self) -> frozenset[str]:
        """The C kernels the model calls (lowered once: they decide its static buffers)."""
        return kernel_functions(self.lifetimes.program, self.lifetimes.elided_ops)


@dataclass
class PlannedModel:
    graph: Graph
    lifetimes: Lifetimes
    plan: ArenaPlan
    options: PlanOptions
    # With planner "all": one row per planner (its plan, or why it has none).
    compared: list[PlanRow] = field(default_factory=list)
    # When the ops run in a memory-aware order: the model's op indices in run
    # order, and the arena the model's own order would have needed.
    op_order: tuple[int, ...] | None = None
    model_order_arena: int | None = None
    # With memory regions: each buffer's region and offset there (`plan` then
    # holds the regions side by side: region k starts after the sizes of 0..k-1).
    regions: RegionPlans | None = None
    model_sha256: str = ""  # of the model file, for the generated header
    # The default plan's overlaps that run kernels on their slower raster
    # walk, within the cost model's allowance (cost_model.py); None: none.
    slower_walks: SlowerWalks | None = None

    @cached_property
    def ram_budget(self) -> RamBudget:
        """Every term of this plan's RAM (ram_budget.py)."""
        return budget_of(self.lifetimes, self.plan.arena_bytes, self.options)

    @property
    def ram_needed(self) -> int:
        return self.ram_budget.total

    @property
    def program(self) -> Program:
        """The planned Program: its calls, facts and the planner's rewrites (patches, in-place depthwise)."""
        return self.lifetimes.program

    @property
    def fits(self) -> bool:
        if self.regions is not None:
            return self.regions.fits()
        return self.options.ram is None or self.ram_needed <= self.options.ram

    def generate(
        self,
        name: str,
        *,
        arena_section: str | None = None,
        extern_arena: bool = False,
        shared_arena: SharedArena | None = None,
    ) -> GeneratedSources:
        from .emit.codegen import generate

        return generate(
            self.graph,
            self.lifetimes,
            self.plan,
            name=name,
            arena_section=arena_section,
            extern_arena=extern_arena,
            regions=self.regions,
            arena_alignment=self.options.alignment,
            shared_arena=shared_arena,
            model_sha256=self.model_sha256,
        )


ORDERS = ("model", "auto", "memory")


def analyse_model(
    model: str | os.PathLike[str] | bytes, options: PlanOptions, label: str | None = None
) -> AnalysedModel:
    """Read and validate `model` (validate.py: exit 2 naming the op, tensor
    and rule a model breaks), fold constant chains, choose the op order
    (`options.order`, order.py), compute its tensors' lifetimes in it, and
    with aliasing on, offer the depthwise convolutions that may run in place
    (in_place_depthwise.py) as an alternative."""
    analysed = _analyse_order(model, options, label)
    if not options.alias:
        return analysed
    chosen = in_place_candidates(analysed.lifetimes.program, analysed.lifetimes)
    if not chosen:
        return analysed
    program = with_in_place_depthwise(analysed.lifetimes.program, chosen)
    lifetimes = compute_lifetimes(program, alignment=options.alignment, alias=options.alias)
    return AnalysedModel(program.graph, lifetimes, op_order=analysed.op_order, without_in_place=analysed)


def _analyse_order(model: str | os.PathLike[str] | bytes, options: PlanOptions, label: str | None) -> AnalysedModel:
    if not isinstance(model, (bytes, bytearray, memoryview)):
        # Read once, bounded (model_file.py): the graph and the digest come from the same bytes.
        label = label or str(model)
        model = read_model_file(model, label)
    graph = load_model(model, label=label)
    digest = model_sha256(model)
    _progress(options, "folding constants")
    graph = fold_constants(graph)  # ops on constants and shapes run now, once
    graph = unpack_int4_weights(graph)  # int4 filters become the int8 ones the kernels read
    program = lower_program(graph)  # and every op is lowered now, once
    _progress(options, "lifetimes")
    analysed = AnalysedModel(
        graph, compute_lifetimes(program, alignment=options.alignment, alias=options.alias), model_sha256=digest
    )
    if options.order == "model":
        return analysed
    if isinstance(options.order, tuple):
        reordered = reorder(graph, options.order)
        if reordered is graph:
            return analysed
        reordered_program = reorder_program(program, reordered, options.order)
        lifetimes = compute_lifetimes(reordered_program, alignment=options.alignment, alias=options.alias)
        return AnalysedModel(reordered, lifetimes, op_order=options.order, model_sha256=digest)
    if options.order not in ORDERS:
        raise ValueError(f"unknown op order {options.order!r}")
    found = best_order(graph, alignment=options.alignment, deadline=options.deadline)
    if found.order == tuple(range(len(graph.operators))):
        return analysed
    reordered = reorder(graph, found.order)
    reordered_program = reorder_program(program, reordered, found.order)
    lifetimes = compute_lifetimes(reordered_program, alignment=options.alignment, alias=options.alias)
    if options.order == "memory":
        return AnalysedModel(reordered, lifetimes, op_order=found.order, model_sha256=digest)
    if peak_live(lifetimes.problem).bytes >= peak_live(analysed.lifetimes.problem).bytes:
        return analysed  # aliasing already took what the new order saves
    return AnalysedModel(reordered, lifetimes, model_order=analysed, op_order=found.order, model_sha256=digest)


def _progress(options: PlanOptions, stage: str) -> None:
    if options.deadline is not None:
        options.deadline.progress(stage)


def model_sha256(model: str | os.PathLike[str] | bytes) -> str:
    """SHA-256 (hex) of the model's bytes (a path: read as the reader reads it)."""
    import hashlib

    if not isinstance(model, (bytes, bytearray, memoryview)):
        model = read_model_file(model)
    return hashlib.sha256(model).hexdigest()


def _plan_one(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    quick = model.lifetimes.problem.without_slower_overlaps()
    if quick is model.lifetimes.problem:
        return _plan_placed(model, options)
    # Overlaps that slow their kernel (KernelFacts.raster_walk_is_slower):
    # without a budget, or under one the fast plan meets, those the cost
    # model prices at most 2% (a budget that is not tight plans as no
    # budget does); any of them when the budget (--ram or --region) needs it.
    fast = _plan_placed(replace(model, lifetimes=replace(model.lifetimes, problem=quick)), options)
    if (options.ram is None and not options.regions) or fast.fits:
        cheap = _cheap_slower_walks(model, options, fast)
        return cheap if cheap.fits else fast
    slow = _plan_placed(model, options)
    if options.regions:
        return slow if slow.fits else fast
    return slow if slow.plan.arena_bytes < fast.plan.arena_bytes else fast


# Trial plans the default makes with slower walks allowed: every one, then
# without one of the costliest at a time; each trial's exact search visits
# at most TRIAL_SEARCH_NODES solver nodes (about 1 s on a 2026 laptop core),
# so that any machine, however busy, makes the same trials: a trial cut by
# the clock picked other walks under load.  The command's deadline
# (--time-limit) still stops them, and the report then says so.  Trials
# only pick the walks: the plan kept is made again with just those
# allowed, a far smaller search.
DEFAULT_SLOWER_WALK_TRIALS = 6
TRIAL_SEARCH_NODES = 4_000_000


def _cheap_slower_walks(model: AnalysedModel, options: PlanOptions, fast: PlannedModel) -> PlannedModel:
    """The default (no budget, or one the fast plan meets): the smallest arena found whose
    slower raster walks cost at most DEFAULT_EXTRA_SHARE more instructions
    than the fast plan `fast` (cost_model.py), else `fast`.  Greedy: all
    slower walks allowed, then the costliest taken dropped one at a time,
    each drop kept while the arena stays below `fast`'s; then, within the
    allowance, each costly walk whose drop keeps the arena.  A plan that an
    exact search cut by the clock chose is kept only when `fast` was one
    too: the default stays the same on every machine."""
    program, problem = model.lifetimes.program, model.lifetimes.problem
    trial_options = replace(options, search_work=TRIAL_SEARCH_NODES)

    def plan_with(allowed: frozenset[int], plan_options: PlanOptions) -> tuple[PlannedModel, SlowerWalks]:
        lifetimes = replace(model.lifetimes, problem=problem.without_slower_overlaps(keep=allowed))
        planned = _plan_placed(replace(model, lifetimes=lifetimes), plan_options)
        return planned, slower_walks(planned.program, problem, planned.plan.offsets)

    every = frozenset(index for index, step in enumerate(problem.steps) if any(o.slower for o in step.overlaps))
    planned, taken = plan_with(every, trial_options)
    trials = DEFAULT_SLOWER_WALK_TRIALS - 1
    needed: set[int] = set()  # dropping these gave back the fast plan's arena
    while planned.plan.arena_bytes < fast.plan.arena_bytes and not taken.within_default_cost():
        droppable = sorted(set(taken.ops) - needed, key=lambda index: -raster_walk_extra(program, index))
        if not droppable or trials <= 0 or options.past_deadline("the default's slower-walk plans"):
            return fast
        trials -= 1
        trial, trial_taken = plan_with(frozenset(taken.ops) - {droppable[0]}, trial_options)
        if trial.plan.arena_bytes < fast.plan.arena_bytes:
            planned, taken = trial, trial_taken
        else:
            needed.add(droppable[0])
    if planned.plan.arena_bytes >= fast.plan.arena_bytes or options.past_deadline("the default's slower-walk plans"):
        return fast
    # Within the allowance, a costly walk whose drop keeps the arena is dropped too.
    for index in sorted(set(taken.ops) - needed, key=lambda index: -raster_walk_extra(program, index)):
        if trials <= 0 or raster_walk_extra(program, index) <= 0:
            break
        trials -= 1
        trial, trial_taken = plan_with(frozenset(taken.ops) - {index}, trial_options)
        if trial.plan.arena_bytes <= planned.plan.arena_bytes:
            planned, taken = trial, trial_taken
    # The kept plan: again with only the walks the trial took (its own
    # placement among the candidates, so no larger once the search finishes).
    planned, taken = plan_with(frozenset(taken.ops), options)
    if (
        planned.plan.arena_bytes >= fast.plan.arena_bytes
        or not taken.within_default_cost()
        or (fast.plan.reproducible and not planned.plan.reproducible)
    ):
        return fast
    planned.slower_walks = taken if taken.ops or taken.smaller_scratch_ops else None
    return planned


def _plan_placed(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    """One plan of `model`'s lifetimes: in its regions, or in one arena."""
    if options.regions:
        regions = plan_regions(
            model.graph,
            model.lifetimes,
            options.regions,
            planner="auto" if options.planner == "all" else options.planner,
            time_limit=options.search_seconds(),
            stop_at_fit=options.stop_at_fit,
            work_limit=options.search_work,
        )
        planned = PlannedModel(
            model.graph, model.lifetimes, side_by_side(regions), options, model_sha256=model.model_sha256
        )
        planned.regions = regions
        return planned
    return _with_scratch_regrown(_plan_lifetimes(model, options))


def _with_scratch_regrown(planned: PlannedModel) -> PlannedModel:
    """`planned` with each op on a smaller scratch given its full one back
    where the plan has room for it (scratch_sizes.regrow_scratch), unless
    that misses the budget `planned` meets: the arena stays, but a scratch
    given back where the smaller one was none adds a buffer's counter."""
    regrown = regrow_scratch(planned.lifetimes, planned.plan.offsets, planned.plan.arena_bytes, planned.options.alias)
    if regrown is None:
        return planned
    lifetimes, offsets = regrown
    faster = replace(
        planned, graph=lifetimes.program.graph, lifetimes=lifetimes, plan=replace(planned.plan, offsets=offsets)
    )
    return faster if faster.fits or faster.ram_needed <= planned.ram_needed else planned


def _plan_lifetimes(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    capacity = model.arena_capacity(options)
    compared: list[PlanRow] = []
    _progress(options, "arena planning")
    seconds = options.search_seconds()
    if options.planner == "all":
        compared, plan = compare_planners(
            model.lifetimes.problem, seconds, capacity, options.stop_at_fit, options.search_work
        )
    else:
        plan = plan_within(
            model.lifetimes.problem, options.planner, seconds, capacity, options.stop_at_fit, options.search_work
        )
    if not plan.reproducible and options.deadline is not None:  # the exact search ran out of its time
        options.deadline.cut("the exact arena search")
    return PlannedModel(model.graph, model.lifetimes, plan, options, compared, model_sha256=model.model_sha256)


def side_by_side(regions: RegionPlans) -> ArenaPlan:
    """The regions' plans as one: region k's offsets moved past the sizes of
    regions 0..k-1, arena_bytes the total the regions use."""
    offsets: dict[int, int] = {}
    base = 0
    for region, plan in zip(regions.regions, regions.plans, strict=True):
        offsets.update({buffer: base + offset for buffer, offset in plan.offsets.items()})
        base += region.size
    planners = list(dict.fromkeys(plan.planner for plan in regions.plans if plan.offsets))
    return ArenaPlan(
        "+".join(planners) or regions.plans[0].planner,
        offsets,
        sum(plan.arena_bytes for plan in regions.plans),
        False,
        sum(plan.seconds for plan in regions.plans),
        reproducible=all(plan.reproducible for plan in regions.plans),
    )


def plan_analysed(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    """The plan of `model` for `options`.  Ops whose kernels also run in
    less scratch on slower paths (the int8 convolutions' compact columns,
    without the M4 DSP blocks: scratch_sizes.py) run on it where a plan
    with every such op on it needs it (each plan gives the others their
    full scratch back where it has room: _plan_placed): under a budget the
    full scratch misses, whenever that gets closer to it; otherwise (no
    budget, or one met) when the arena is smaller and the cost model puts
    the slower paths, with the plan's slower walks, within
    DEFAULT_EXTRA_SHARE."""
    full = _plan_analysed(model, options)
    if not smaller_scratch_ops(model.lifetimes.program) or (options.regions and full.fits):
        return full
    # The default offers only the smaller scratch whose cost alone is within the allowance.
    offered = None if not full.fits else cheap_smaller_scratch((model.without_in_place or model).lifetimes.program)
    if offered is not None and not offered:
        return full
    compact = _plan_analysed(_with_smaller_scratch(model, options, offered), options)
    if options.regions:
        return compact if compact.fits and not full.fits else full
    if not full.fits:
        return compact if compact.fits or compact.ram_needed < full.ram_needed else full
    if compact.plan.arena_bytes >= full.plan.arena_bytes:
        return full
    costed = with_smaller_scratch_cost(compact.program, compact.slower_walks)
    if not costed.within_default_cost():
        return full
    compact.slower_walks = costed
    return compact


def _with_smaller_scratch(
    model: AnalysedModel, options: PlanOptions, tensors: frozenset[int] | None = None
) -> AnalysedModel:
    """`model`, and each alternative it holds, with every op that may run on
    a smaller scratch (of `tensors`, when given) on it (scratch_sizes.py);
    lifetimes computed again."""
    program = with_smaller_scratch(model.lifetimes.program, tensors)
    return replace(
        model,
        graph=program.graph,
        lifetimes=compute_lifetimes(program, alignment=options.alignment, alias=options.alias),
        model_order=None if model.model_order is None else _with_smaller_scratch(model.model_order, options, tensors),
        without_in_place=None
        if model.without_in_place is None
        else _with_smaller_scratch(model.without_in_place, options, tensors),
    )


def _plan_analysed(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    planned = _plan_whole(model, options)
    if options.patches == "off" or options.regions:
        return planned
    if options.patches == "default" and (options.ram is None or planned.fits):
        return planned  # patches recompute their halos: only when the budget needs them
    return _plan_patched(model.without_in_place or model, options, planned)


# Patched plans the search completes in each order it tries (under --ram: the cheapest, then the
# roomiest; else the smallest bounds): each takes up to the time limit.
PATCH_PLANS_TRIED = 6
# Candidates' lifetimes the patch search derives, counted in ops (each
# holds a copy of the graph's lifetimes): time and memory linear in the
# model.  The shared models need at most 230 x 84 (mobilenet_v2); a run of
# thousands of spatial ops would otherwise give candidates by the thousand.
PATCH_SEARCH_OPS = 25_000


def _plan_patched(model: AnalysedModel, options: PlanOptions, whole: PlannedModel) -> PlannedModel:
    """The stage and patches (patches.py) for `options.patches`: under
    "default" the fewest extra MACs whose plan fits `ram`; under "auto" the
    smallest arena (ties: fewer MACs), kept only when below `whole`'s; both
    try strips and n x n grids.  A grid "RxC" (or "N", N x N) is forced: the
    stage with the smallest arena."""
    forced = forced_grid(options.patches)
    program = model.lifetimes.program
    graph = program.graph
    candidates: list[PatchCandidate] = []
    stage_sizes: list[tuple[tuple[int, ...], int, int]] = []  # (ops, output height, output width)
    most = max(PATCH_PLANS_TRIED, PATCH_SEARCH_OPS // max(1, len(graph.operators)))
    for ops in candidate_stages(program):
        if len(candidates) >= most:
            break
        height, width = graph.tensors[graph.operators[ops[-1]].outputs[0]].shape[1:3]
        stage_sizes.append((ops, height, width))
        if forced is None:
            cuts = [(rows, 0) for rows in strip_options(graph, ops)] + grid_options(graph, ops)
        elif forced[0] not in patch_counts(height) or (forced[1] > 1 and forced[1] not in patch_counts(width)):
            continue  # patches are equal but the last: 7 asked of 16 rows would make 6
        else:
            cuts = [(-(-height // forced[0]), -(-width // forced[1]) if forced[1] > 1 else 0)]
        for rows, cols in cuts[: most - len(candidates)]:
            stage = make_stage(program, ops, rows, cols)
            patched = with_stage(program, stage)
            lifetimes = compute_lifetimes(patched, alignment=options.alignment, alias=options.alias)
            candidates.append((sharing_lower_bound(lifetimes.problem), stage, patched, lifetimes))
    if not candidates and forced is not None:
        raise InputError(f"--patches {options.patches}: {_grids_possible(stage_sizes, forced)}")
    if not candidates:
        return whole
    fitting = options.patches == "default"
    capacity = model.arena_capacity(options)
    if fitting:
        assert capacity is not None
        within = [c for c in candidates if c[0] <= capacity]
        if within:
            by_macs = sorted(within, key=lambda c: (c[1].extra_macs, c[0]))
            candidates = by_macs[:PATCH_PLANS_TRIED] + _each_stage_in_turn(by_macs[PATCH_PLANS_TRIED:])
        else:
            # Nothing can fit: plan the smallest stage anyway, so that the
            # shortfall reported is what patches reach, not the whole-tensor one.
            candidates = sorted(candidates, key=lambda c: (c[0], c[1].extra_macs))[:1]
    else:
        candidates = sorted(candidates, key=lambda c: (c[0], c[1].extra_macs))[:PATCH_PLANS_TRIED]
    best: tuple[int, int, PlannedModel] | None = None  # (arena, extra MACs, plan)
    for tried, (_, stage, patched, lifetimes) in enumerate(candidates):
        if options.deadline is not None:
            options.deadline.progress("patch search", tried, len(candidates))
        if best is not None and options.past_deadline("the patch search"):
            break
        analysed = AnalysedModel(patched.graph, lifetimes, op_order=model.op_order, model_sha256=model.model_sha256)
        planned = _plan_one(analysed, replace(options, stop_at_fit=options.stop_at_fit or fitting))
        planned.op_order = model.op_order
        if fitting and planned.fits:
            return planned
        if best is None or (planned.plan.arena_bytes, stage.extra_macs) < best[:2]:
            best = (planned.plan.arena_bytes, stage.extra_macs, planned)
    if best is None or (forced is None and best[0] >= whole.plan.arena_bytes):
        return whole
    return best[2]


def _each_stage_in_turn(candidates: list[PatchCandidate], most: int = PATCH_PLANS_TRIED) -> list[PatchCandidate]:
    """Up to `most` of `candidates` (in order of extra MACs), taking each
    stage's next one in turn: a bound below the budget does not promise a
    plan that fits, and the cheapest cuts may all be of a stage that does not
    hold the arena's peak (pretrainedResnet under --ram 160K: the later
    stages' cuts cost fewer MACs, only the first stage's lower the peak)."""
    by_stage: dict[tuple[int, ...], list[PatchCandidate]] = {}
    for candidate in candidates:
        by_stage.setdefault(candidate[1].ops, []).append(candidate)
    queues = [by_stage[ops] for ops in sorted(by_stage)]
    turns: list[PatchCandidate] = []
    while len(turns) < most and any(queues):
        for queue in queues:
            if queue and len(turns) < most:
                turns.append(queue.pop(0))
    return turns


def patch_counts(size: int) -> list[int]:
    """How many patches `size` output rows (or columns) can be cut into, all
    of one size but the last: 16 rows make 1, 2, 3, 4, 6, 8 or 16 (7 would
    take patches of 3 rows, which make 6)."""
    return sorted({-(-size // -(-size // n)) for n in range(1, size + 1)})


def _grids_possible(stage_sizes: list[tuple[tuple[int, ...], int, int]], forced: tuple[int, int]) -> str:
    """Why no stage takes the grid `forced`, with what each stage does take."""
    if not stage_sizes:
        return "the model has no run of spatial ops to cut into patches"
    what = "rows x columns" if forced[1] > 1 else "rows (strips)"
    most_rows = max(height for _, height, _ in stage_sizes)
    most_cols = max(width for _, _, width in stage_sizes)
    most = f"{most_rows}x{most_cols}" if forced[1] > 1 else f"{most_rows}x1"
    ops, height, width = max(stage_sizes, key=lambda s: s[1] * s[2])
    counts = ", ".join(map(str, patch_counts(height)[1:]))
    return (
        f"no run of spatial ops can be cut into exactly {forced[0]}x{forced[1]} patches ({what}; at most {most}); "
        f"ops {ops[0]}-{ops[-1]} ({height}x{width} output pixels) take {counts} rows of patches"
    )


def forced_grid(patches: str) -> tuple[int, int] | None:
    """The grid (rows, columns of patches) `--patches` forces: "N" is N x N,
    "RxC" R rows of C patches (C = 1: full-width strips); None for the modes
    that search."""
    if patches in PATCH_MODES:
        return None
    parts = patches.lower().split("x")
    if len(parts) <= 2 and all(part.isdigit() for part in parts):
        rows, cols = int(parts[0]), int(parts[-1])
        if min(rows, cols) >= 1 and rows * cols >= 2:
            return rows, cols
    raise InputError(
        f"--patches takes {', '.join(PATCH_MODES)}, N (an N x N grid, N >= 2) or RxC (R rows of C patches, "
        f"Rx1: strips), not {patches!r}"
    )


PATCH_MODES = ("default", "auto", "off")


def _plan_whole(model: AnalysedModel, options: PlanOptions) -> PlannedModel:
    if model.without_in_place is not None:
        without = _plan_whole(model.without_in_place, options)
        if options.ram is None or without.fits:
            return without  # the slower in-place kernel only when the budget needs it
        planned = _plan_whole(replace(model, without_in_place=None), options)
        return planned if planned.plan.arena_bytes < without.plan.arena_bytes else without
    planned = _plan_one(model, options)
    planned.op_order = model.op_order
    if model.model_order is None:
        return planned
    in_model_order = _plan_one(model.model_order, options)
    # The memory-aware order only when its arena is smaller: equal arenas keep the model's order.
    if planned.plan.arena_bytes >= in_model_order.plan.arena_bytes:
        return in_model_order
    planned.model_order_arena = in_model_order.plan.arena_bytes
    return planned


def plan_model(model: str | os.PathLike[str] | bytes, options: PlanOptions, label: str | None = None) -> PlannedModel:
    """Read `model` (a path or .tflite bytes), compute lifetimes and plan it
    as `mcu-plan --planner P --time-limit T --ram R` does."""
    return plan_analysed(analyse_model(model, options, label), options)


def generate_for_model(
    model_bytes: bytes,
    *,
    name: str,
    planner: str = "auto",
    time_limit: float = DEFAULT_TIME_LIMIT,
    ram: int | None = None,
    alias: bool = True,
    alignment: int = 16,
    label: str | None = None,
    order: str | tuple[int, ...] = "auto",
    regions: tuple[Region, ...] = (),
    patches: str = "default",
    target: FirmwareTarget | None = None,
) -> tuple[Graph, ArenaPlan, GeneratedSources]:
    """Read, plan (as `mcu-plan --ram RAM [--board B]` or `--region ...`
    does) and generate: (graph, plan, files); `files.interface` describes the
    generated model.  DoesNotFit when the plan does not fit."""
    options = PlanOptions(
        planner=planner,
        alignment=alignment,
        alias=alias,
        time_limit=time_limit,
        ram=ram,
        order=order,
        regions=regions,
        patches=patches,
        target=target,
    )
    planned = plan_model(model_bytes, options, label=label or name)
    if not planned.fits:
        from .emit.report import shortfall_message
        from .errors import DoesNotFit

        if planned.regions is not None:
            raise DoesNotFit(regions_shortfall(planned.regions))
        assert ram is not None
        raise DoesNotFit(
            f"{label or name}: "
            + shortfall_message(planned.graph, planned.lifetimes, planned.plan, planned.ram_budget, ram)
        )
    return planned.graph, planned.plan, planned.generate(name)


@dataclass
class ModelsInOneArena:
    """Several models generated into one directory around one arena: run one
    after another they share it (its size is the largest need); planned
    `concurrent`, each has a part of its own (the size is their sum).  Each
    model's state (variable tensors) stays in its own array."""

    names: list[str]
    planned: list[PlannedModel]
    concurrent: bool
    bases: list[int]  # each model's offset in the shared arena
    arena_bytes: int

    @property
    def variable_bytes(self) -> int:
        return sum(model.lifetimes.variable_bytes for model in self.planned)

    @property
    def ram_needed(self) -> int:
        """The RAM (ram_budget.py) of the models together: one arena, each
        model's state and counters, the kernels' static buffers once."""
        functions = frozenset().union(
            *(kernel_functions(model.lifetimes.program, model.lifetimes.elided_ops) for model in self.planned)
        )
        target = self.planned[0].options.target if self.planned else None
        counted = ram_budget(self.arena_bytes, self.variable_bytes, 0, functions, target=target)
        counters = sum(budget_of(m.lifetimes, 0, m.options, functions).counters for m in self.planned)
        return counted.total - counted.counters + counters


def share_arena(names: list[str], planned: list[PlannedModel], *, concurrent: bool) -> ModelsInOneArena:
    """Lay the planned models out in one arena (see ModelsInOneArena)."""
    from .memory.problem import align_up

    bases, end = [], 0
    for model in planned:
        base = align_up(end, max(model.options.alignment, 16)) if concurrent else 0
        bases.append(base)
        end = max(end, base + model.plan.arena_bytes)
    return ModelsInOneArena(list(names), list(planned), concurrent, bases, end)


def generate_models(
    models: ModelsInOneArena, *, arena_section: str | None = None, extern_arena: bool = False, interface_of: int = 0
) -> GeneratedSources:
    """The files of all models (each with its own prefix), the runtime files
    once, the shared arena and one library of them all; `files.interface`
    describes model `interface_of` (the one a test harness runs), with the
    shared arena as its arena."""
    from dataclasses import replace

    from .emit.codegen import MODELS_LIBRARY, GeneratedSources, SharedArena, drop_in_build_files, generate_shared_arena

    files: dict[str, bytes] = {}
    interfaces = []
    for name, model, base in zip(models.names, models.planned, models.bases, strict=True):
        generated = model.generate(name, shared_arena=SharedArena(base))
        for file_name, data in generated.items():
            if files.get(file_name, data) != data:
                raise AssertionError(f"{file_name} differs between the models' outputs")
            files[file_name] = data
        interfaces.append(generated.interface)
    alignment = max(model.options.alignment for model in models.planned)
    files.update(
        generate_shared_arena(
            models.names,
            models.arena_bytes,
            concurrent=models.concurrent,
            alignment=alignment,
            arena_section=arena_section,
            extern_arena=extern_arena,
        )
    )
    files.update(drop_in_build_files(MODELS_LIBRARY, files, aliases=tuple(models.names)))
    interface = replace(
        interfaces[interface_of],
        arena_bytes=max(models.arena_bytes, 1),
        arena_section=arena_section,
        extern_arena=False,
    )
    return GeneratedSources(dict(sorted(files.items())), interface)


def smallest_ram(
    model: str | os.PathLike[str] | bytes,
    options: PlanOptions,
    label: str | None = None,
    *,
    accept: Callable[[PlannedModel], bool] | None = None,
    failed: PlannedModel | None = None,
) -> PlannedModel:
    """The plan at the smallest `--ram` budget (a multiple of the alignment)
    within which `plan_model` fits, found by bisection: the budget of the
    plan without one (its `ram_needed`) fits; a budget one alignment unit
    below the variable tensors cannot.  Each probe plans the model as
    `mcu-plan --ram R` does, so every technique the pipeline takes only when
    a budget needs it (slower overlaps, in-place depthwise, ...) is offered.
    Assumes that a budget that fits keeps fitting when it grows (the pipeline
    never trades a fitting plan for one that does not); with the exact
    planner, "does not fit" may be a time limit reached rather than a proof.
    `accept` (e.g. a cap on recomputed MACs) must also hold for a probe to
    count as fitting.  `failed`: the plan at a budget that did not fit
    (`mcu-plan --ram B` failing names this same smallest budget); the search
    starts at its need, which is the answer when one unit less does not fit
    (one probe, not a bisection).
    The returned plan's `options.ram` is its own need (ram_budget.py's
    total, at most the budget found): the smallest RAM, to the byte, that
    the plan found fits."""
    found = _smallest_ram_plan(model, options, label, accept, failed)
    # The figure must hold as stated: one unit below it does not fit.  The
    # search's plans need not be monotone in the budget (a tighter budget
    # may call in a technique a looser one did not try), so step down while
    # one unit less still fits, a bounded number of times (past the
    # deadline too: each probe's searches then stop at once, and the figure
    # stated must still hold for the plans the command makes).
    for _ in range(SMALLEST_RAM_STEPS_DOWN):
        below = plan_model(model, _probe(options, found.ram_needed - options.alignment), label)
        if not (below.fits and (accept is None or accept(below))):
            break
        found = below
    return replace(found, options=replace(found.options, ram=found.ram_needed))


def _probe(options: PlanOptions, ram: int | None) -> PlanOptions:
    """One probe of smallest_ram: planned as `mcu-plan --ram RAM` plans it,
    with a --time-limit of its own (a deadline shared by all the probes
    would leave the later ones no search, and the figure found would not be
    what the command at that budget does)."""
    deadline = options.deadline
    if deadline is not None:
        deadline = Deadline(deadline.seconds, progress_to=deadline.progress_stream)
    return replace(options, ram=ram, deadline=deadline)


# How many alignment units smallest_ram steps below the bisection's answer when they still fit.
SMALLEST_RAM_STEPS_DOWN = 16


def _smallest_ram_plan(
    model: str | os.PathLike[str] | bytes,
    options: PlanOptions,
    label: str | None,
    accept: Callable[[PlannedModel], bool] | None,
    failed: PlannedModel | None,
) -> PlannedModel:
    unit = options.alignment
    if failed is not None and failed.options.ram is not None:
        failing = failed.options.ram // unit
        fitting = -(-failed.ram_needed // unit)
        best = replace(failed, options=replace(failed.options, ram=fitting * unit))
        if fitting - 1 <= failing:
            return best
        below = plan_model(model, _probe(options, (fitting - 1) * unit), label)
        if not (below.fits and (accept is None or accept(below))):
            return best
        fitting, best = fitting - 1, below
    else:
        unbounded = plan_model(model, _probe(options, None), label)
        fitting = -(-unbounded.ram_needed // unit)  # in units; fits (see the docstring)
        failing = unbounded.lifetimes.variable_bytes // unit - 1
        best = plan_model(model, _probe(options, fitting * unit), label)
    while fitting - failing > 1:
        middle = (fitting + failing) // 2
        planned = plan_model(model, _probe(options, middle * unit), label)
        if planned.fits and (accept is None or accept(planned)):
            fitting, best = middle, planned
        else:
            failing = middle
    return best
