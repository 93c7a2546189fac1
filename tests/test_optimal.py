"""The exact planner: plans the verifier accepts, optima a brute force
confirms, known optima of the shared benchmarks, and the interval-file loader."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import BENCHMARKS_DIR, needs_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_planner.errors import DoesNotFit, InputError, McuPlanError
from mcu_planner.memory.intervals import read_intervals, write_offsets
from mcu_planner.memory.planners import load_all, optimal
from mcu_planner.memory.planners.optimal import fit_within, plan_optimal, search
from mcu_planner.memory.planning import run_planner
from mcu_planner.memory.problem import Budget, Buffer, Problem, arena_bytes, peak_live, problem_from_intervals
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import TRIAL_SEARCH_NODES, PlanOptions, analyse_model

MINIMALLOC = BENCHMARKS_DIR / "minimalloc"
TVM = BENCHMARKS_DIR / "tvm_usmp"
CAPACITY = 1_048_576


def other_planners() -> list[str]:
    """Every registered planner but the exact one."""
    return [name for name in load_all() if name != "optimal"]


def brute_force_optimum(problem: Problem) -> int:
    """Smallest arena over every placement order, each buffer put right above
    the placed buffers it overlaps in time (any optimal plan, taken in order of
    offset, is reproduced at or below its own offsets this way)."""
    bufs = [b for b in problem.buffers if b.size > 0 and b.end > b.start]
    offsets: dict[int, int] = {}
    best = [sum(b.size for b in bufs)]

    def place(height: int) -> None:
        if height >= best[0]:
            return
        if len(offsets) == len(bufs):
            best[0] = height
            return
        for b in bufs:
            if b.id in offsets:
                continue
            offset = max((offsets[o.id] + o.size for o in bufs if o.id in offsets and o.overlaps_in_time(b)), default=0)
            offsets[b.id] = offset
            place(max(height, offset + b.size))
            del offsets[b.id]

    if bufs:
        place(0)
    return best[0] if bufs else 0


@st.composite
def interval_sets(draw, max_buffers: int = 6):
    n = draw(st.integers(1, max_buffers))
    shape = draw(st.sampled_from(["random", "equal sizes", "nested", "chained"]))
    if shape == "equal sizes":
        size = draw(st.integers(1, 64))
        sizes = [size] * n
    else:
        sizes = draw(st.lists(st.integers(0, 96), min_size=n, max_size=n))
    if shape == "nested":
        spans = [(i, 2 * n - i) for i in range(n)]
    elif shape == "chained":
        length = draw(st.integers(2, 3))
        spans = [(i, i + length) for i in range(n)]
    else:
        spans = []
        for _ in range(n):
            start = draw(st.integers(0, 8))
            spans.append((start, start + draw(st.integers(1, 6))))
    alignment = draw(st.sampled_from([1, 4, 16]))
    buffers = [Buffer(i, size, start, end) for i, (size, (start, end)) in enumerate(zip(sizes, spans, strict=True))]
    return problem_from_intervals(buffers, alignment)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interval_sets())
def test_optimal_matches_brute_force_and_no_planner_beats_it(problem):
    result = plan_optimal(problem, Budget(time_limit=5.0))
    size = arena_bytes(problem, result.offsets)
    assert verify(problem, result.offsets, size) == []
    assert size == brute_force_optimum(problem)
    assert result.proven_optimal
    for name in other_planners():
        assert size <= run_planner(problem, name).arena_bytes, name


@settings(max_examples=40, deadline=None)
@given(interval_sets(max_buffers=40))
def test_larger_random_sets_give_valid_plans_no_planner_beats(problem):
    plan = run_planner(problem, "optimal", 2.0)  # run_planner verifies the plan
    assert verify(problem, plan.offsets, plan.arena_bytes) == []
    assert plan.arena_bytes >= peak_live(problem).bytes
    # Out of time, the exact planner still never returns worse than the
    # largest-first plan it starts from (greedy's); proven, it beats them all.
    rivals = other_planners() if plan.proven_optimal else ["greedy"]
    for name in rivals:
        assert plan.arena_bytes <= run_planner(problem, name).arena_bytes, name


# Nine buffers whose best plan needs one byte more than the live peak (found by
# random search, shrunk by hand; the brute force confirms it).
GAP_INSTANCE = [(5, 0, 1), (3, 0, 3), (3, 0, 4), (2, 2, 5), (3, 2, 6), (1, 4, 6), (3, 5, 9), (3, 5, 9), (5, 6, 8)]


def gap_problem() -> Problem:
    return problem_from_intervals([Buffer(i, s, a, b) for i, (s, a, b) in enumerate(GAP_INSTANCE)])


def test_proves_optimality_above_the_lower_bound():
    problem = gap_problem()
    optimum = brute_force_optimum(problem)
    assert optimum > peak_live(problem).bytes  # the point of this instance
    report = search(problem, 10.0)
    assert report.arena_bytes == optimum
    assert report.proven_optimal
    assert report.proven_infeasible_below == optimum
    assert any(answer == "infeasible" for _, answer, _ in report.questions)


def test_fit_within_reports_what_cannot_fit():
    problem = gap_problem()
    optimum = brute_force_optimum(problem)
    fitted = fit_within(problem, optimum, 10.0)
    assert verify(problem, fitted.offsets, optimum) == []
    with pytest.raises(DoesNotFit, match="proved"):
        fit_within(problem, optimum - 1, 10.0)
    with pytest.raises(DoesNotFit, match="proved"):
        fit_within(problem, peak_live(problem).bytes - 1, 10.0)


def test_offsets_are_aligned_and_zero_sized_buffers_are_placed():
    buffers = [Buffer(0, 10, 0, 2), Buffer(1, 0, 0, 3), Buffer(2, 7, 1, 3), Buffer(3, 33, 2, 4)]
    problem = problem_from_intervals(buffers, alignment=16)
    result = plan_optimal(problem, Budget(time_limit=5.0))
    assert set(result.offsets) == {0, 1, 2, 3}
    assert all(offset % 16 == 0 for offset in result.offsets.values())
    assert verify(problem, result.offsets) == []
    assert arena_bytes(problem, result.offsets) == brute_force_optimum(problem)


def test_empty_problem():
    problem = problem_from_intervals([])
    assert plan_optimal(problem, Budget(time_limit=1.0)).offsets == {}


def test_time_out_still_returns_a_valid_plan():
    # J is far from its lower bound; a fraction of a second proves nothing.
    if not (MINIMALLOC / "J.1048576.csv").is_file():
        pytest.skip("../shared benchmarks absent")
    problem = problem_from_intervals(read_intervals(MINIMALLOC / "J.1048576.csv"))
    result = plan_optimal(problem, Budget(time_limit=0.3))
    assert verify(problem, result.offsets) == []
    assert not result.proven_optimal


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_kws_int8.tflite"


def _clock_running(monkeypatch, seconds_per_reading: float) -> None:
    """The search's clock moving `seconds_per_reading` each time it is read:
    a machine so busy that each of the search's steps takes that long."""
    ticks = itertools.count()
    monkeypatch.setattr(optimal, "time", SimpleNamespace(monotonic=lambda: seconds_per_reading * next(ticks)))


def test_a_work_bounded_search_plans_the_same_on_a_busy_machine(monkeypatch):
    """The default's trial plans are bounded by solver nodes (pipeline.py
    TRIAL_SEARCH_NODES): with every step 0.25 s, their questions, answers
    and plan stay as they are, where a search bounded by 1 s (the trials'
    old bound) asks nothing and keeps its first-fit plan."""
    problem = analyse_model(EXAMPLE, PlanOptions()).lifetimes.problem
    assert problem.overlap_limits()  # the lower bound's windows are searched too
    calm = search(problem, 60.0, work_limit=TRIAL_SEARCH_NODES)
    calm_by_clock = search(problem, 1.0)
    assert calm.reproducible and calm_by_clock.reproducible and calm_by_clock.questions
    _clock_running(monkeypatch, 0.25)
    busy = search(problem, 60.0, work_limit=TRIAL_SEARCH_NODES)
    assert busy.offsets == calm.offsets and busy.arena_bytes == calm.arena_bytes
    assert [q[:2] for q in busy.questions] == [q[:2] for q in calm.questions]
    assert busy.lower_bound == calm.lower_bound and busy.nodes == calm.nodes and busy.reproducible
    busy_by_clock = search(problem, 1.0)
    assert not busy_by_clock.questions and not busy_by_clock.reproducible


def test_the_deadline_still_stops_a_work_bounded_search_and_says_so(monkeypatch):
    problem = analyse_model(EXAMPLE, PlanOptions()).lifetimes.problem
    _clock_running(monkeypatch, 1.0)
    cut = search(problem, 3.0, work_limit=TRIAL_SEARCH_NODES)
    assert not cut.reproducible and not cut.work_bounded
    assert verify(problem, cut.offsets, cut.arena_bytes) == []


def test_the_solver_stops_after_its_nodes_with_no_answer():
    solver = optimal._solver_module()
    sizes, starts, ends = (
        [s for s, _, _ in GAP_INSTANCE],
        [a for _, a, _ in GAP_INSTANCE],
        [b for _, _, b in GAP_INSTANCE],
    )
    answer, offsets, nodes = solver.fit(sizes, starts, ends, 1_000, 10.0, "WAT,TAW,TWA", None, 0)
    assert answer == "found" and nodes > 3
    assert solver.fit(sizes, starts, ends, 1_000, 10.0, "WAT,TAW,TWA", None, 3) == ("out of work", None, 3)


def test_missing_extension_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcu_planner._solver", None)  # makes the import fail
    with pytest.raises(McuPlanError, match="pip install"):
        plan_optimal(problem_from_intervals([Buffer(0, 4, 0, 1)]), Budget(time_limit=1.0))


# ---- shared benchmark instances -------------------------------------------------------


def documented_tvm_optima() -> dict[str, int]:
    """The optima ../shared/benchmarks/README.md states for the TVM sets
    ("Optimal capacities ...: alloc_max 67,600; deep_speech (184 buffers)
    100,352; ..."), or {} without the shared folder."""
    readme = BENCHMARKS_DIR / "README.md"
    if not readme.is_file():
        return {}
    text = " ".join(readme.read_text().split())
    sentence = re.search(r"Optimal capacities[^:]*:([^.]*)\.", text)
    if sentence is None:
        return {}
    return {
        name: int(value.replace(",", ""))
        for name, value in re.findall(r"(\w+)(?: \([^)]*\))? ([\d,]+)", sentence.group(1))
    }


TVM_OPTIMA = documented_tvm_optima()


@needs_shared
def test_readme_documents_an_optimum_for_every_tvm_set():
    assert sorted(TVM_OPTIMA) == sorted(p.stem.removeprefix("test_data_") for p in TVM.glob("test_data_*.csv"))


@needs_shared
@pytest.mark.parametrize("name", sorted(TVM_OPTIMA))
def test_tvm_usmp_instances_reach_their_optima(name):
    problem = problem_from_intervals(read_intervals(TVM / f"test_data_{name}.csv"))
    plan = run_planner(problem, "optimal", 10.0)
    assert plan.arena_bytes == TVM_OPTIMA[name] == peak_live(problem).bytes
    assert plan.proven_optimal


@needs_shared
def test_minimalloc_readme_example_reaches_12():
    buffers = read_intervals(MINIMALLOC / "input.12.csv")
    assert [b.label for b in buffers] == ["b1", "b2", "b3", "b4", "b5"]
    problem = problem_from_intervals(buffers)
    plan = run_planner(problem, "optimal", 10.0)
    assert plan.arena_bytes == 12
    assert plan.proven_optimal


# The quickest of the eleven (under a second each here); bench/planners.py runs all.
@needs_shared
@pytest.mark.parametrize("name", ["G", "H", "K"])
def test_challenging_minimalloc_instances_fit(name):
    problem = problem_from_intervals(read_intervals(MINIMALLOC / f"{name}.1048576.csv"))
    plan = run_planner(problem, "optimal", 60.0, capacity=CAPACITY)
    assert plan.arena_bytes <= CAPACITY
    assert verify(problem, plan.offsets, CAPACITY) == []


@needs_shared
def test_instance_c_reaches_its_lower_bound():
    problem = problem_from_intervals(read_intervals(MINIMALLOC / "C.1048576.csv"))
    report = search(problem, 60.0)
    assert report.arena_bytes == peak_live(problem).bytes
    assert report.proven_optimal
    assert verify(problem, report.offsets, report.arena_bytes) == []


# ---- interval files --------------------------------------------------------------------


def test_offsets_file_round_trips(tmp_path: Path):
    source = tmp_path / "in.csv"
    source.write_text("id,lower,upper,size\nx,0,3,4\ny,3,9,4\nz,0,9,4\n")
    buffers = read_intervals(source)
    problem = problem_from_intervals(buffers)
    plan = run_planner(problem, "optimal", 5.0)
    out = tmp_path / "out.csv"
    write_offsets(out, buffers, plan.offsets)
    lines = out.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,offset"
    assert [line.split(",")[0] for line in lines[1:]] == ["x", "y", "z"]
    again = read_intervals(out)  # the extra offset column is ignored
    assert [(b.label, b.start, b.end, b.size) for b in again] == [(b.label, b.start, b.end, b.size) for b in buffers]
    written = {line.split(",")[0]: int(line.split(",")[4]) for line in lines[1:]}
    assert written == {b.label: plan.offsets[b.id] for b in buffers}


def test_integer_ids_are_kept(tmp_path: Path):
    path = tmp_path / "ints.csv"
    path.write_text("id,lower,upper,size\n7,0,2,8\n3,1,4,8\n")
    assert [b.id for b in read_intervals(path)] == [7, 3]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty interval file"),
        ("id,lower,size\n0,0,4\n", "lacks column"),
        ("id,lower,upper,size\n0,0,x,4\n", ":2: column 'upper' must be an integer"),
        ("id,lower,upper,size\n0,0,4\n", ":2: expected 4 fields"),
        ("id,lower,upper,size\n0,5,5,4\n", ":2: lifetime"),
        ("id,lower,upper,size\n0,0,5,-4\n", ":2: negative size"),
        ("id,lower,upper,size\n0,0,5,4\n0,1,2,4\n", "more than once"),
    ],
)
def test_malformed_interval_files_raise_input_error(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        read_intervals(path)
    assert "\n" not in str(info.value)


def test_missing_interval_file(tmp_path: Path):
    with pytest.raises(InputError, match="no such interval file"):
        read_intervals(tmp_path / "absent.csv")


# ---- --stop-at-fit ---------------------------------------------------------------

# Eight intervals (start, end, size) on which the largest-first first fit (16) is
# above the optimum (13, by brute force), so fitting and minimising differ.
LOOSE_FIRST_FIT = [(2, 3, 8), (5, 7, 4), (7, 11, 3), (7, 10, 8), (4, 6, 5), (1, 4, 3), (3, 5, 4), (3, 6, 4)]


def _cli_arena(path: Path, capacity: int, *flags: str) -> int:
    import subprocess

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcu_planner.cli",
            "--intervals",
            str(path),
            "--capacity",
            str(capacity),
            "--planner",
            "optimal",
            "--time-limit",
            "5",
            *flags,
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"^optimal: ([\d,]+) B", done.stdout, re.MULTILINE)
    assert found, done.stdout
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("capacity", [15, 17])
def test_stop_at_fit_keeps_the_first_plan_that_fits(tmp_path: Path, capacity: int):
    """With the flag the exact planner answers the capacity and stops: its plan
    fits (run_planner verifies it) but is not tightened to the optimum, which
    the same command without the flag reaches."""
    buffers = [Buffer(i, size, start, end) for i, (start, end, size) in enumerate(LOOSE_FIRST_FIT)]
    problem = problem_from_intervals(buffers)
    optimum = brute_force_optimum(problem)
    path = tmp_path / "loose.csv"
    path.write_text(
        "id,lower,upper,size\n" + "".join(f"b{i},{s},{e},{z}\n" for i, (s, e, z) in enumerate(LOOSE_FIRST_FIT))
    )

    first = run_planner(problem, "optimal", 5.0, capacity=capacity, stop_at_fit=True)
    assert optimum < first.arena_bytes <= capacity
    assert verify(problem, first.offsets, capacity) == []
    # The work done: at most the one question "does it fit `capacity`?", none below it.
    stopped = search(problem, 5.0, capacity=capacity, stop_when_fits=True)
    assert [answer for _, answer, _ in stopped.questions] in ([], ["found"])
    assert all(asked == capacity for asked, _, _ in stopped.questions)
    tightened = search(problem, 5.0, capacity=capacity)
    assert tightened.arena_bytes == optimum and len(tightened.questions) > len(stopped.questions)

    assert _cli_arena(path, capacity, "--stop-at-fit") == first.arena_bytes
    assert _cli_arena(path, capacity) == optimum


def test_stop_at_fit_through_auto_stops_once_a_fast_planner_fits():
    buffers = [Buffer(i, size, start, end) for i, (start, end, size) in enumerate(LOOSE_FIRST_FIT)]
    problem = problem_from_intervals(buffers)
    loose = max(run_planner(problem, name).arena_bytes for name in other_planners())
    plan = run_planner(problem, "auto", 5.0, capacity=loose, stop_at_fit=True)
    assert plan.arena_bytes <= loose
    assert plan.tried and plan.tried[0][1] <= loose and len(plan.tried) == 1
    assert run_planner(problem, "auto", 5.0, capacity=loose).arena_bytes == brute_force_optimum(problem)


def test_stop_at_fit_needs_a_budget(tmp_path: Path):
    from mcu_planner.cli import main

    path = tmp_path / "x.csv"
    path.write_text("id,lower,upper,size\na,0,1,4\n")
    assert main(["--intervals", str(path), "--planner", "optimal", "--stop-at-fit"]) == 2
