"""`auto` reaches the aligned lower bound of the lifetimes it planned on every shared model."""

from __future__ import annotations

import pytest
from conftest import model_param, needs_shared, shared_model_paths

from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import plan_auto, run_planner
from mcu_planner.memory.problem import peak_live
from mcu_planner.memory.verify import verify


@needs_shared
@pytest.mark.parametrize("path", [model_param(p) for p in shared_model_paths()])
@pytest.mark.parametrize("alias", [False, True], ids=["alias-off", "alias-on"])
def test_auto_reaches_the_aligned_lower_bound(path, alias):
    lifetimes = compute_lifetimes(read_model(path), alignment=16, alias=alias)
    plan = plan_auto(lifetimes.problem, time_limit=30.0)
    assert verify(lifetimes.problem, plan.offsets, plan.arena_bytes) == []
    bound = peak_live(lifetimes.problem).bytes
    if alias:
        # In-place reuse may take auto below the live peak, never above it.
        assert plan.arena_bytes <= bound
    else:
        assert plan.arena_bytes == bound
        assert plan.proven_optimal
    greedy = run_planner(lifetimes.problem, "greedy")
    assert plan.arena_bytes <= greedy.arena_bytes


def _problem_greedy_leaves_above_the_bound():
    import random

    from mcu_planner.memory.problem import Buffer, problem_from_intervals

    for seed in range(1000):
        rng = random.Random(seed)
        buffers = []
        for i in range(12):
            start = rng.randint(0, 10)
            buffers.append(Buffer(i, rng.choice([16, 32, 48, 80]), start, start + rng.randint(1, 5)))
        problem = problem_from_intervals(buffers, alignment=16)
        if all(
            run_planner(problem, name).arena_bytes > peak_live(problem).bytes
            for name in ("greedy", "shared-blocks", "best-fit", "first-fit", "bidirectional", "search")
        ):
            return problem
    raise AssertionError("no instance where every fast planner misses the bound")


def test_auto_without_the_solver_extension_keeps_the_fast_planners_plan(monkeypatch):
    import sys

    problem = _problem_greedy_leaves_above_the_bound()
    with_solver = plan_auto(problem, time_limit=10.0)
    assert ("optimal", with_solver.arena_bytes) in with_solver.tried

    monkeypatch.setitem(sys.modules, "mcu_planner._solver", None)  # import now fails
    without = plan_auto(problem, time_limit=10.0)
    assert ("optimal", None) in without.tried
    assert without.planner != "optimal"
    assert verify(problem, without.offsets, without.arena_bytes) == []
    assert without.arena_bytes >= with_solver.arena_bytes
