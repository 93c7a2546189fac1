"""`auto` reaches the aligned lower bound of the lifetimes it planned on every shared model."""

from __future__ import annotations

import pytest

from conftest import model_param, needs_shared, shared_model_paths
from mcu_planner.lifetimes import compute_lifetimes
from mcu_planner.planning import plan_auto, run_planner
from mcu_planner.problem import peak_live
from mcu_planner.reader import read_model
from mcu_planner.verify import verify


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
