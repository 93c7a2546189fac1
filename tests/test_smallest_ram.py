"""pipeline.smallest_ram: the bisection over --ram that bench/techniques.py
reports as the smallest budget the tool reaches."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace

from conftest import REPO
from test_overlap import _vww_like

from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model, smallest_ram

OPTIONS = PlanOptions(time_limit=5.0, order="model")


def _bench_techniques():
    spec = importlib.util.spec_from_file_location("bench_techniques", REPO / "bench" / "techniques.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_smallest_ram_fits_is_verified_and_one_unit_less_does_not_fit():
    model = _vww_like()
    default = plan_model(model, OPTIONS)
    smallest = smallest_ram(model, OPTIONS)
    budget = smallest.options.ram
    assert budget is not None and budget % OPTIONS.alignment == 0
    assert smallest.fits and smallest.ram_needed <= budget
    problem, plan = smallest.lifetimes.problem, smallest.plan
    assert verify(problem, plan.offsets, plan.arena_bytes) == []
    # The slower walks' overlaps are offered only under a budget: the search must find them.
    assert budget < default.ram_needed
    assert not plan_model(model, replace(OPTIONS, ram=budget - OPTIONS.alignment)).fits


def test_smallest_ram_counts_the_variable_tensors():
    from mcu_planner_testing.builder import lstm_model

    model = lstm_model()
    smallest = smallest_ram(model, OPTIONS)
    variables = smallest.lifetimes.variable_bytes
    assert variables > 0
    assert smallest.fits and smallest.options.ram is not None
    assert smallest.options.ram >= smallest.plan.arena_bytes + variables
    assert not plan_model(model, replace(OPTIONS, ram=smallest.options.ram - OPTIONS.alignment)).fits


def test_bench_names_the_techniques_the_plan_json_counts():
    bench = _bench_techniques()
    smallest = smallest_ram(_vww_like(), OPTIONS)
    record = bench.plan_record(smallest, "vww_like")
    used = bench.techniques_used(record)
    assert f"overlaps {len(record['overlaps'])}" in used
    assert record["overlaps"]  # the budget took the arena below the live peak through overlaps
    assert bench.mac_overhead(record) == 0.0  # overlaps compute what the model does
    lines = bench.peak_steps(smallest)
    assert any(line.startswith("- top reached at step") for line in lines)
    assert any("at its bound" in line for line in lines)
