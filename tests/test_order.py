"""Memory-aware op order: the searched order is the best of all topological
orders (brute force over every order, peaks from the real lifetimes), the
reordered C is bit-exact, and every plan of a reordered graph verifies."""

from __future__ import annotations

import itertools

import pytest
from test_random_networks import NETWORK_RECIPES, network, recipe_id, recipe_seed

from mcu_planner.frontend.order import best_order, reorder
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planners import load_all
from mcu_planner.memory.planning import run_planner
from mcu_planner.memory.problem import peak_live
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, analyse_model, plan_analysed
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net


def two_wide_branches() -> bytes:
    """Two branches that each widen the input 8x and narrow it again, added
    at the end; the model lists both widening convolutions first, so both
    wide tensors are alive at once unless one branch runs to its end first."""
    net = Int8Net(seed=3)
    x = net.input((1, 8, 8, 4))
    wide_a = net.conv2d(x, 32, kernel=(1, 1))
    wide_b = net.conv2d(x, 32, kernel=(1, 1))
    narrow_a = net.conv2d(wide_a, 4, kernel=(1, 1))
    narrow_b = net.conv2d(wide_b, 4, kernel=(1, 1))
    return net.build(net.add(narrow_a, narrow_b))


def topological_orders(graph):
    producer = {t: op.index for op in graph.operators for t in op.outputs}
    needs = [{producer[t] for t in op.inputs if t in producer} for op in graph.operators]
    for order in itertools.permutations(range(len(graph.operators))):
        position = {op: i for i, op in enumerate(order)}
        if all(position[p] < position[op] for op in order for p in needs[op]):
            yield order


def real_peak(graph, order, alias=True) -> int:
    return peak_live(compute_lifetimes(reorder(graph, order), alignment=16, alias=alias).problem).bytes


def test_the_searched_order_has_the_smallest_peak_of_all_orders():
    graph = read_model(two_wide_branches())
    peaks = {order: real_peak(graph, order) for order in topological_orders(graph)}
    assert len(peaks) > 1
    found = best_order(graph, alignment=16)
    assert found.exact
    assert real_peak(graph, found.order) == min(peaks.values()) == found.peak_bytes
    model_peak = peaks[tuple(range(len(graph.operators)))]
    assert found.model_order_peak == model_peak
    assert min(peaks.values()) < model_peak  # the model's order is not the best one here


def test_auto_order_lowers_the_arena_and_stays_bit_exact(tmp_path):
    model = two_wide_branches()
    by_order = {}
    for order in ("model", "auto"):
        options = PlanOptions(order=order, time_limit=2.0)
        planned = plan_analysed(analyse_model(model, options), options)
        assert verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes) == []
        by_order[order] = planned
    assert by_order["model"].op_order is None
    assert by_order["auto"].op_order is not None
    assert by_order["auto"].plan.arena_bytes < by_order["model"].plan.arena_bytes
    assert by_order["auto"].model_order_arena == by_order["model"].plan.arena_bytes
    report = check_model(model, inputs=2, order="auto", time_limit=2.0, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def test_the_command_reports_and_records_the_order(tmp_path):
    import json

    from mcu_planner.cli import main

    path = tmp_path / "branches.tflite"
    path.write_bytes(two_wide_branches())
    plans = {}
    for order in ("model", "auto"):
        out = tmp_path / f"{order}.json"
        assert main([str(path), "--order", order, "--json", str(out)]) == 0
        plans[order] = json.loads(out.read_text())
    assert plans["model"]["op_order"] == list(range(5))
    assert sorted(plans["auto"]["op_order"]) == list(range(5)) != plans["auto"]["op_order"]
    assert plans["auto"]["arena_bytes"] < plans["model"]["arena_bytes"]


BRANCHY = [r for r in NETWORK_RECIPES if r[1] in ("inception", "residual", "nested_concat", "output_alias")]


def latest_ready_first(graph) -> tuple[int, ...]:
    """A valid order as far from the model's as the data flow allows: always
    run the ready op that comes last in the model."""
    producer = {t: op.index for op in graph.operators for t in op.outputs}
    needs = [{producer[t] for t in op.inputs if t in producer and producer[t] != op.index} for op in graph.operators]
    order: list[int] = []
    while len(order) < len(graph.operators):
        ready = [op for op in range(len(graph.operators)) if op not in order and needs[op] <= set(order)]
        order.append(max(ready))
    return tuple(order)


@pytest.mark.parametrize("recipe", BRANCHY, ids=recipe_id)
def test_branchy_random_networks_run_in_another_order_bit_exact(recipe):
    """The branchy networks are already in their best order (the search keeps
    it: no order found has a lower peak than the model's), so another valid
    order is forced: the C runs the ops in it, bit-exact, and every planner's
    plan of it verifies."""
    net = network(recipe)
    graph = read_model(net.model)
    found = best_order(graph, alignment=16)
    model_order = tuple(range(len(graph.operators)))
    assert found.peak_bytes <= found.model_order_peak == real_peak(graph, model_order, alias=False)
    other = latest_ready_first(graph)
    assert other != model_order
    assert found.exact and real_peak(graph, other, alias=False) >= found.peak_bytes  # nothing beats an exact search
    problem = compute_lifetimes(reorder(graph, other), alignment=16, alias=True).problem
    for name in load_all():
        plan = run_planner(problem, name, 1.0)
        assert verify(problem, plan.offsets, plan.arena_bytes) == [], name
    report = check_model(
        net.model, inputs=2, seed=recipe_seed(recipe), order=other, time_limit=1.0, raise_on_mismatch=False
    )
    assert report.passed, f"{net.name}: {report.mismatch_message()}"


def test_an_order_against_the_data_flow_is_refused():
    graph = read_model(two_wide_branches())
    with pytest.raises(ValueError):
        reorder(graph, (2, 0, 1, 3, 4))
