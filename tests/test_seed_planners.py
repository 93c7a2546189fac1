"""The five seed planners: valid plans on any input, and each one behaving
the way its method text says it does (CN112256441B, the Corerain pool
application, CN113127181A, FR2004337's placement search, the block
pre-allocation application; planners.SEED_FILES names each text)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import BENCHMARKS_DIR, model_param, needs_shared, shared_model_paths
from hypothesis import given, settings
from hypothesis import strategies as st

from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.intervals import read_intervals
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planners import SEED_FILES, load_all
from mcu_planner.memory.planners.best_fit import plan_best_fit
from mcu_planner.memory.planners.bidirectional import plan_around_origin, plan_bidirectional
from mcu_planner.memory.planners.first_fit import plan_first_fit
from mcu_planner.memory.planners.search import search_placements
from mcu_planner.memory.planners.shared_blocks import assign_blocks, plan_shared_blocks
from mcu_planner.memory.problem import Budget, Buffer, Problem, Step, arena_bytes, peak_live, problem_from_intervals
from mcu_planner.memory.verify import verify

SEED_PLANNERS = ("bidirectional", "best-fit", "first-fit", "search", "shared-blocks")
SEARCH_SECONDS = 0.3  # the search's budget in these tests: validity never depends on it


def run(name: str, problem: Problem) -> dict[int, int]:
    time_limit = SEARCH_SECONDS if name == "search" else None
    return load_all()[name](problem, Budget(time_limit=time_limit)).offsets


def assert_valid(problem: Problem, offsets: dict[int, int]) -> None:
    assert verify(problem, offsets) == []


def live_count_peak(problem: Problem) -> int:
    steps = range(max((b.end for b in problem.buffers), default=0))
    return max((sum(b.start <= s < b.end for b in problem.buffers) for s in steps), default=0)


# ---------------------------------------------------------------- random inputs


@st.composite
def interval_sets(draw):
    shape = draw(st.sampled_from(["random", "nested", "chained"]))
    n = draw(st.integers(1, 14))
    equal = draw(st.booleans())
    buffers = []
    for i in range(n):
        size = 48 if equal else draw(st.integers(0, 200))
        if shape == "nested":  # each lifetime inside the previous one, or beside it
            start = draw(st.integers(0, 4))
            end = start + draw(st.integers(1, 12 - start))
        elif shape == "chained":  # each buffer read by the op that writes the next
            start = i + draw(st.integers(0, 1))
            end = start + draw(st.integers(1, 3))
        else:
            start = draw(st.integers(0, 12))
            end = start + draw(st.integers(1, 6))
        buffers.append(Buffer(i, size, start, end))
    return problem_from_intervals(buffers, alignment=draw(st.sampled_from([1, 4, 16])))


@st.composite
def graph_problems(draw):
    """Op graphs as the lifetimes stage hands them on: graph inputs nobody
    writes, ops with several outputs, outputs nobody reads, and in-place pairs."""
    alignment = 16
    num_ops = draw(st.integers(1, 8))
    size_of = {}
    producer = {}
    next_id = 0
    for _ in range(draw(st.integers(1, 2))):
        size_of[next_id], producer[next_id] = 16 * draw(st.integers(1, 4)), 0
        next_id += 1
    reads: dict[int, list[int]] = {}
    writes: dict[int, list[int]] = {}
    for op in range(num_ops):
        available = sorted(t for t in size_of if producer[t] < op or (producer[t] == 0 and t not in writes.get(0, [])))
        reads[op] = sorted(set(draw(st.lists(st.sampled_from(available), min_size=1, max_size=2))))
        writes[op] = []
        for _ in range(draw(st.integers(1, 2))):
            size_of[next_id], producer[next_id] = 16 * draw(st.integers(1, 4)), op
            writes[op].append(next_id)
            next_id += 1
    readers = {t: [op for op in reads if t in reads[op]] for t in size_of}
    buffers = []
    for t in sorted(size_of):
        if readers[t]:
            end = max(readers[t]) + 1
        else:  # a graph output held to the end, or an output nobody needs
            end = num_ops if draw(st.booleans()) else producer[t] + 1
        buffers.append(Buffer(t, size_of[t], producer[t], max(end, producer[t] + 1)))
    by_id = {b.id: b for b in buffers}
    steps = []
    for op in range(num_ops):
        pairs = []
        if len(writes[op]) == 1 and draw(st.booleans()):
            out = by_id[writes[op][0]]
            for t in reads[op]:
                src = by_id[t]
                if src.end == op + 1 and src.size == out.size and src.start < op:
                    pairs.append((out.id, src.id))
        steps.append(Step(tuple(reads[op]), tuple(writes[op]), tuple(pairs)))
    return Problem(tuple(buffers), alignment, tuple(steps))


@pytest.mark.parametrize("name", SEED_PLANNERS)
@settings(max_examples=60, deadline=None)
@given(problem=interval_sets())
def test_random_interval_sets_get_valid_plans_no_smaller_than_the_live_peak(name, problem):
    offsets = run(name, problem)
    assert_valid(problem, offsets)
    assert arena_bytes(problem, offsets) >= peak_live(problem).bytes


@pytest.mark.parametrize("name", SEED_PLANNERS)
@settings(max_examples=60, deadline=None)
@given(problem=graph_problems())
def test_random_op_graphs_with_in_place_pairs_get_valid_plans(name, problem):
    offsets = run(name, problem)
    assert_valid(problem, offsets)
    if not problem.in_place_pairs():
        assert arena_bytes(problem, offsets) >= peak_live(problem).bytes


def test_every_seed_planner_is_registered_with_its_method_text():
    load_all()
    assert {name: SEED_FILES[name][:3] for name in SEED_PLANNERS} == {
        "bidirectional": "000",
        "best-fit": "001",
        "first-fit": "002",
        "search": "003",
        "shared-blocks": "004",
    }


# ---------------------------------------------------------------- bidirectional (seed 000)


def test_bidirectional_puts_final_outputs_on_the_right_in_id_order():
    # op0: I -> A; op1: A -> (O2, O1), both final.  Ids: I 0, A 1, O2 2, O1 3.
    buffers = (Buffer(0, 16, 0, 1), Buffer(1, 32, 0, 2), Buffer(2, 48, 1, 2), Buffer(3, 16, 1, 2))
    steps = (Step((0,), (1,)), Step((1,), (3, 2)))
    problem = Problem(buffers, 16, steps)
    plan = plan_around_origin(problem)
    # Outputs on the right from the origin in ID order; A, the IFM of the layer
    # that wrote them, goes left so that both can be released; I then fits
    # under the right boundary without growing it.
    assert plan.offsets == {2: 0, 3: 48, 1: -32, 0: 0}
    assert (plan.left_boundary, plan.right_boundary) == (-32, 64)
    offsets = plan_bidirectional(problem).offsets
    assert offsets == {2: 32, 3: 80, 1: 0, 0: 32}
    assert arena_bytes(problem, offsets) == plan.arena_bytes == 96
    assert_valid(problem, offsets)


def test_bidirectional_chain_alternates_sides_so_each_consumer_is_released():
    # I -> A -> B -> O: every input goes opposite its consumer, whose block then pops.
    buffers = (Buffer(0, 16, 0, 1), Buffer(1, 32, 0, 2), Buffer(2, 48, 1, 3), Buffer(3, 16, 2, 3))
    steps = (Step((0,), (1,)), Step((1,), (2,)), Step((2,), (3,)))
    problem = Problem(buffers, 16, steps)
    plan = plan_around_origin(problem)
    assert plan.offsets == {3: 0, 2: -48, 1: 0, 0: -16}
    assert plan.arena_bytes == plan.right_boundary - plan.left_boundary == 80 == peak_live(problem).bytes
    assert_valid(problem, plan_bidirectional(problem).offsets)


def test_bidirectional_one_step_tensor_goes_where_more_is_released():
    # op0: I -> A; op1: A -> (P, Q); op2: P -> R; op3: (Q, R) -> O.
    # When A is placed, P tops the right stack and Q the left one, both released
    # at op1.  A lives one step, so it goes right (releasing Q, 64 B) although
    # the left side would not have grown and the right one grows by 16 B.
    sizes = {"I": 16, "A": 16, "P": 32, "Q": 64, "R": 48, "O": 16}
    ids = {name: i for i, name in enumerate(sizes)}
    spans = {"I": (0, 1), "A": (0, 2), "P": (1, 3), "Q": (1, 4), "R": (2, 4), "O": (3, 4)}
    buffers = tuple(Buffer(ids[n], sizes[n], *spans[n]) for n in sizes)
    steps = (
        Step((ids["I"],), (ids["A"],)),
        Step((ids["A"],), (ids["P"], ids["Q"])),
        Step((ids["P"],), (ids["R"],)),
        Step((ids["Q"], ids["R"]), (ids["O"],)),
    )
    problem = Problem(buffers, 16, steps)
    plan = plan_around_origin(problem)
    assert {n: plan.offsets[ids[n]] for n in sizes} == {"O": 0, "Q": -64, "R": -112, "P": 0, "A": 32, "I": -16}
    assert (plan.left_boundary, plan.right_boundary) == (-112, 48)
    assert_valid(problem, plan_bidirectional(problem).offsets)


def test_bidirectional_branching_graph_with_a_later_layer_buried_in_a_stack():
    # op0: I -> A; op1: A -> Q; op2: A -> P; op3: P -> R; op4: (Q, R) -> O.
    # Walking back from O (right, [0, 16)): op4 puts Q then R on the left so
    # that O is released (Q [-48, 0), R [-112, -48)) and O pops.  R, the latest
    # layer, tops the left stack (claim 4): its IFM P goes right, [0, 16), and
    # R pops.  P tops the right stack and outranks Q: its IFM A goes left over
    # Q, [-80, -48), and P pops.  Q (ID 2) now lies buried under A (ID 1), a
    # later layer under an earlier one: its only IFM, A, is placed already, so
    # the walk goes on with op0, whose I goes right, [0, 16), to release A.
    sizes = {"I": 16, "A": 32, "Q": 48, "P": 16, "R": 64, "O": 16}
    ids = {name: i for i, name in enumerate(sizes)}
    spans = {"I": (0, 1), "A": (0, 3), "Q": (1, 5), "P": (2, 4), "R": (3, 5), "O": (4, 5)}
    buffers = tuple(Buffer(ids[n], sizes[n], *spans[n]) for n in sizes)
    steps = (
        Step((ids["I"],), (ids["A"],)),
        Step((ids["A"],), (ids["Q"],)),
        Step((ids["A"],), (ids["P"],)),
        Step((ids["P"],), (ids["R"],)),
        Step((ids["Q"], ids["R"]), (ids["O"],)),
    )
    problem = Problem(buffers, 16, steps)
    plan = plan_around_origin(problem)
    assert {n: plan.offsets[ids[n]] for n in sizes} == {"O": 0, "Q": -48, "R": -112, "P": 0, "A": -80, "I": 0}
    assert (plan.left_boundary, plan.right_boundary) == (-112, 16)
    offsets = plan_bidirectional(problem).offsets
    assert arena_bytes(problem, offsets) == plan.arena_bytes == peak_live(problem).bytes == 48 + 64 + 16
    assert_valid(problem, offsets)


# ---------------------------------------------------------------- best-fit (seed 001)


def test_best_fit_splits_a_free_block_only_when_the_remainder_exceeds_the_threshold():
    # X frees a 64 B block; Y (48 B) and Z (16 B) then arrive together.
    problem = problem_from_intervals([Buffer(0, 64, 0, 1), Buffer(1, 48, 1, 2), Buffer(2, 16, 1, 2)], 16)
    split = plan_best_fit(problem, split_threshold=0).offsets
    assert split == {0: 0, 1: 0, 2: 48}  # the 16 B remainder serves Z
    whole = plan_best_fit(problem, split_threshold=16).offsets
    assert whole == {0: 0, 1: 0, 2: 64}  # Y keeps all 64 B; Z makes the pool grow
    for offsets in (split, whole):
        assert_valid(problem, offsets)


def test_best_fit_frees_at_reference_count_zero_and_grows_only_when_nothing_fits():
    # A is read by op1 and op2: after op1 its count is still 1, so C (op2)
    # cannot take its block and the pool grows; after op2 both A and B are
    # free and D takes the lowest of the two equally good blocks.
    buffers = (Buffer(0, 32, 0, 3), Buffer(1, 32, 1, 3), Buffer(2, 32, 2, 4), Buffer(3, 32, 3, 4))
    steps = (Step((), (0,)), Step((0,), (1,)), Step((0, 1), (2,)), Step((2,), (3,)))
    problem = Problem(buffers, 16, steps)
    offsets = plan_best_fit(problem).offsets
    assert offsets == {0: 0, 1: 32, 2: 64, 3: 0}
    assert arena_bytes(problem, offsets) == 96
    assert_valid(problem, offsets)


def test_best_fit_takes_the_smallest_block_that_fits_not_the_first():
    problem = problem_from_intervals(
        [Buffer(0, 64, 0, 1), Buffer(1, 32, 0, 3), Buffer(2, 32, 0, 1), Buffer(3, 32, 1, 2)], 16
    )
    assert plan_best_fit(problem).offsets[3] == 96  # the 32 B hole, not the 64 B one at 0
    assert plan_first_fit(problem).offsets[3] == 0  # first fit from the head


def test_best_fit_output_takes_the_block_of_the_input_it_runs_in_place_on():
    buffers = (Buffer(0, 64, 0, 2), Buffer(1, 64, 1, 2))
    steps = (Step((), (0,)), Step((0,), (1,), in_place=((1, 0),)))
    problem = Problem(buffers, 16, steps)
    offsets = plan_best_fit(problem).offsets
    assert offsets == {0: 0, 1: 0}
    assert arena_bytes(problem, offsets) == 64 < peak_live(problem).bytes
    assert_valid(problem, offsets)
    assert plan_best_fit(problem, in_place=False).offsets == {0: 0, 1: 64}


# ---------------------------------------------------------------- first-fit (seed 002)


def test_first_fit_coalesces_freed_neighbours():
    # A and B die next to each other; D needs both their bytes.
    problem = problem_from_intervals(
        [Buffer(0, 32, 0, 1), Buffer(1, 32, 0, 1), Buffer(2, 32, 0, 3), Buffer(3, 64, 1, 2)], 16
    )
    assert plan_first_fit(problem).offsets == {0: 0, 1: 32, 2: 64, 3: 0}
    # The best-fit text merges nothing: D finds no 64 B block and the pool grows.
    assert plan_best_fit(problem).offsets[3] == 96
    assert plan_best_fit(problem, coalesce=True).offsets[3] == 0


def test_first_fit_rounds_every_request_up_to_the_minimum_unit():
    problem = problem_from_intervals([Buffer(0, 16, 0, 1), Buffer(1, 16, 0, 1)], 16)
    assert plan_first_fit(problem).offsets == {0: 0, 1: 16}
    offsets = plan_first_fit(problem, min_unit=48).offsets
    assert offsets == {0: 0, 1: 48}
    assert_valid(problem, offsets)


def test_first_fit_groups_above_the_reference_threshold_take_memory_outside_the_pool():
    # X -> Y runs in place (one group, reuse value 64 B); Z (16 B) lives throughout.
    buffers = (Buffer(0, 64, 0, 2), Buffer(1, 64, 1, 3), Buffer(2, 16, 0, 3))
    steps = (Step((), (0, 2)), Step((0,), (1,), in_place=((1, 0),)), Step((1, 2), ()))
    problem = Problem(buffers, 16, steps)
    pooled = plan_first_fit(problem).offsets
    assert pooled == {0: 0, 2: 64, 1: 0}  # Y takes over X's node in the pool
    outside = plan_first_fit(problem, reference_threshold=32).offsets
    assert outside == {2: 0, 0: 16, 1: 16}  # the group sits past the 16 B pool, once for both
    small_groups_pooled = plan_first_fit(problem, reference_threshold=64).offsets
    assert small_groups_pooled == pooled
    for offsets in (pooled, outside):
        assert_valid(problem, offsets)


# ---------------------------------------------------------------- search (seed 003)


def test_search_places_an_output_over_the_input_it_may_overwrite():
    buffers = (Buffer(0, 64, 0, 2), Buffer(1, 64, 1, 2), Buffer(2, 32, 0, 2))
    steps = (Step((), (0, 2)), Step((0, 2), (1,), in_place=((1, 0),)))
    problem = Problem(buffers, 16, steps)
    offsets, arena = search_placements(problem)
    assert offsets == {0: 0, 2: 64, 1: 0}
    assert arena == arena_bytes(problem, offsets) == 96 < peak_live(problem).bytes
    assert_valid(problem, offsets)


@settings(max_examples=80, deadline=None)
@given(problem=st.one_of(interval_sets(), graph_problems()))
def test_search_backtracking_never_returns_worse_than_its_first_descent(problem):
    first_offsets, first_arena = search_placements(problem, 5.0, max_backtracks=0)
    offsets, arena = search_placements(problem, 5.0, max_backtracks=300)
    assert arena <= first_arena
    assert arena == arena_bytes(problem, offsets)
    assert first_arena == arena_bytes(problem, first_offsets)
    assert_valid(problem, offsets)


def test_search_backtracking_improves_on_a_first_descent_that_stacks_too_high():
    # Execution order: A (64 B, steps 0-2), C (32 B, 2-3), B (16 B, 3-4), D (64 B, 3-4).
    # The first descent puts B in the tightest gap, the 64 B A left below C, so
    # D finds no gap and goes on top: 160 B.  B's untaken placement, on top at
    # 96, sits on the stack; popping it leaves the hole to D: 112 B, the live peak.
    problem = problem_from_intervals(
        [Buffer(0, 64, 0, 3), Buffer(1, 16, 3, 5), Buffer(2, 32, 2, 4), Buffer(3, 64, 3, 5)], 16
    )
    first_offsets, first_arena = search_placements(problem, 5.0, max_backtracks=0)
    assert first_offsets == {0: 0, 2: 64, 1: 0, 3: 96} and first_arena == 160
    offsets, arena = search_placements(problem, 5.0)
    assert offsets == {0: 0, 2: 64, 1: 96, 3: 0}
    assert arena == peak_live(problem).bytes == 112
    assert_valid(problem, offsets)


def test_search_without_a_time_limit_reads_no_clock_and_stops_at_its_work_bound(monkeypatch):
    import mcu_planner.memory.planners.search as search_module

    def no_clock() -> float:
        raise AssertionError("search read the clock without a time limit")

    monkeypatch.setattr(search_module, "time", SimpleNamespace(perf_counter=no_clock))
    problem = problem_from_intervals(
        [Buffer(0, 64, 0, 3), Buffer(1, 16, 3, 5), Buffer(2, 32, 2, 4), Buffer(3, 64, 3, 5)], 16
    )
    first_descent = search_placements(problem, max_backtracks=0)
    # A budget of one sequence's placements is spent by the first descent.
    assert search_placements(problem, max_placements=len(problem.buffers)) == first_descent
    offsets, arena = search_placements(problem)
    assert arena == peak_live(problem).bytes < first_descent[1]
    assert load_all()["search"](problem, Budget()).offsets == offsets


# ---------------------------------------------------------------- shared-blocks (seed 004)


def test_shared_blocks_on_a_chain_two_blocks_each_as_large_as_its_largest_tensor():
    # I -> A -> B -> C
    buffers = (Buffer(0, 16, 0, 1), Buffer(1, 64, 0, 2), Buffer(2, 32, 1, 3), Buffer(3, 48, 2, 3))
    steps = (Step((0,), (1,)), Step((1,), (2,)), Step((2,), (3,)))
    problem = Problem(buffers, 16, steps)
    block_of, block_sizes = assign_blocks(problem)
    # A (the layer's output) takes block 0 before the graph input I; I's block
    # is idle after op0 and grows to hold B; A's is idle after op1 and holds C.
    assert block_of == {1: 0, 0: 1, 2: 1, 3: 0}
    assert block_sizes == [64, 32]
    offsets = plan_shared_blocks(problem).offsets
    assert offsets == {1: 0, 0: 64, 2: 64, 3: 0}
    assert_valid(problem, offsets)


@settings(max_examples=120, deadline=None)
@given(problem=st.one_of(interval_sets(), graph_problems()))
def test_shared_blocks_count_is_the_live_count_peak_and_each_block_fits_its_largest_tensor(problem):
    block_of, block_sizes = assign_blocks(problem)
    assert len(block_sizes) == live_count_peak(problem)
    sizes = {b.id: b.size for b in problem.buffers}
    for block, size in enumerate(block_sizes):
        assert size == max(sizes[i] for i, held in block_of.items() if held == block)
    assert arena_bytes(problem, plan_shared_blocks(problem).offsets) == sum(block_sizes)


# ---------------------------------------------------------------- shared models and benchmarks


@needs_shared
@pytest.mark.parametrize("path", [model_param(p) for p in shared_model_paths()])
@pytest.mark.parametrize("alias", [True, False], ids=["alias", "no-alias"])
def test_every_seed_planner_plans_every_shared_model_validly(path, alias):
    problem = compute_lifetimes(read_model(path), alias=alias).problem
    for name in SEED_PLANNERS:
        offsets = run(name, problem)
        assert verify(problem, offsets) == [], name
        if not problem.in_place_pairs():
            assert arena_bytes(problem, offsets) >= peak_live(problem).bytes


def benchmark_files():
    return sorted(BENCHMARKS_DIR.glob("*/*.csv")) if BENCHMARKS_DIR.is_dir() else []


@needs_shared
@pytest.mark.parametrize("path", benchmark_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_seed_planner_plans_every_benchmark_instance_validly(path):
    problem = problem_from_intervals(read_intervals(path))
    bound = peak_live(problem).bytes
    for name in SEED_PLANNERS:
        offsets = run(name, problem)
        assert verify(problem, offsets) == [], name
        assert arena_bytes(problem, offsets) >= bound


@needs_shared
def test_search_backtracking_improves_the_minimalloc_instances():
    first_total = total = 0
    for path in sorted((BENCHMARKS_DIR / "minimalloc").glob("[A-K].*.csv")):
        problem = problem_from_intervals(read_intervals(path))
        first_total += search_placements(problem, 30.0, max_backtracks=0)[1]
        total += search_placements(problem, 30.0, max_backtracks=200)[1]
    assert total < first_total
