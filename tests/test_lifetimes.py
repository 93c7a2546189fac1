"""Lifetimes and lower bounds of real models, checked against figures computed elsewhere."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import MODELS_DIR, needs_shared, parse_int, shared_model_table

from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import run_planner
from mcu_planner.memory.problem import peak_live
from mcu_planner.memory.verify import verify


def _table_rows():
    try:
        return shared_model_table()
    except FileNotFoundError:
        return []


@needs_shared
@pytest.mark.parametrize("row", _table_rows(), ids=lambda r: r["file"])
def test_unaligned_lower_bound_equals_the_live_peak_in_models_md(row):
    graph = read_model(MODELS_DIR / row["file"])
    # MODELS.md counts the model's tensors; kernels' scratch buffers come on top.
    scratch = [t for t in graph.tensors if t.is_scratch]
    model_only = replace(
        graph,
        tensors=tuple(t for t in graph.tensors if not t.is_scratch),
        operators=tuple(replace(op, scratch=()) for op in graph.operators),
    )
    peak = peak_live(compute_lifetimes(model_only, alignment=1, alias=False).problem).bytes
    assert peak == parse_int(row["live peak B"])
    with_scratch = peak_live(compute_lifetimes(graph, alignment=1, alias=False).problem).bytes
    assert peak <= with_scratch <= peak + sum(t.nbytes for t in scratch)


@needs_shared
@pytest.mark.parametrize("row", _table_rows(), ids=lambda r: r["file"])
def test_every_model_plans_with_a_verified_greedy_plan(row):
    graph = read_model(MODELS_DIR / row["file"])
    for alias in (False, True):
        lifetimes = compute_lifetimes(graph, alignment=16, alias=alias)
        plan = run_planner(lifetimes.problem, "greedy")
        assert verify(lifetimes.problem, plan.offsets, plan.arena_bytes) == []
        assert plan.arena_bytes % 16 == 0


def test_lifetime_rules_on_a_built_model():
    from mcu_planner_testing.builder import tiny_kws_int8

    graph = read_model(tiny_kws_int8())
    lifetimes = compute_lifetimes(graph, alignment=16, alias=False)
    last_step = len(graph.operators) - 1
    for t in graph.inputs:
        assert lifetimes.first_op[t] == 0
    for t in graph.outputs:
        assert lifetimes.last_op[t] == last_step
    for op in graph.operators:
        for t in op.outputs:
            if t in lifetimes.first_op and t not in graph.inputs:
                assert lifetimes.first_op[t] == op.index
        for t in op.inputs:
            if t in lifetimes.last_op:
                assert lifetimes.first_op[t] <= op.index <= lifetimes.last_op[t]
    # Constants never take arena bytes.
    assert all(not graph.tensors[t].is_constant for t in lifetimes.placements)
    # Buffers are aligned and the problem covers every activation exactly once.
    assert all(b.size % 16 == 0 for b in lifetimes.problem.buffers)
    assert {b.id for b in lifetimes.problem.buffers} == set(lifetimes.placements)


def _relu_concat_reshape_model(axis: int) -> bytes:
    """x -> RELU a, RELU b -> CONCATENATION(a, b, axis) -> RESHAPE -> output."""
    import numpy as np

    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    q = {"scale": 0.05, "zero_point": -3}
    x = mb.add_tensor((1, 4, 4, 2), "int8", quant=q, name="x")
    a = mb.add_tensor((1, 4, 4, 2), "int8", quant=q, name="relu_a")
    b = mb.add_tensor((1, 4, 4, 2), "int8", quant=q, name="relu_b")
    cat_shape = [1, 4, 4, 2]
    cat_shape[axis] *= 2
    cat = mb.add_tensor(tuple(cat_shape), "int8", quant=q, name="cat")
    flat = mb.add_tensor((1, 64), "int8", quant=q, name="flat")
    shape = mb.add_tensor((2,), "int32", data=np.array([1, 64], np.int32), name="shape")
    mb.add_op("RELU", [x], [a])
    mb.add_op("RELU", [x], [b])
    mb.add_op("CONCATENATION", [a, b], [cat], {"axis": axis})
    mb.add_op("RESHAPE", [cat, shape], [flat], {"new_shape": (1, 64)})
    mb.inputs, mb.outputs = [x], [flat]
    return mb.build()


def test_reshape_aliases_its_dying_input():
    graph = read_model(_relu_concat_reshape_model(axis=3))
    cat, flat = 3, 4  # tensor indices in the order the builder added them
    plain = compute_lifetimes(graph, alignment=1, alias=False)
    assert plain.aliases == {} and plain.elided_ops == frozenset()
    aliased = compute_lifetimes(graph, alignment=1, alias=True)
    # Slices along the innermost axis are interleaved: no concatenation alias.
    assert aliased.aliases == {flat: cat}
    assert aliased.elided_ops == {3}
    assert aliased.placements[flat] == aliased.placements[cat]
    assert peak_live(aliased.problem).bytes == peak_live(plain.problem).bytes == 32 + 32 + 64


def test_concatenation_producers_write_into_contiguous_slices():
    graph = read_model(_relu_concat_reshape_model(axis=1))
    a, b, cat, flat = 1, 2, 3, 4  # tensor indices in the order the builder added them
    aliased = compute_lifetimes(graph, alignment=1, alias=True)
    assert aliased.aliases == {a: cat, b: cat, flat: cat}
    assert aliased.elided_ops == {2, 3}
    assert (aliased.placements[a].offset, aliased.placements[b].offset) == (0, 32)
    # x (32) and the 64-byte concatenation buffer are all that is ever live.
    assert peak_live(aliased.problem).bytes == 96
    plan = run_planner(aliased.problem, "greedy")
    assert verify(aliased.problem, plan.offsets) == []


def _int8(mb, shape, name, scale=0.05, zero_point=-3):
    return mb.add_tensor(shape, "int8", quant={"scale": scale, "zero_point": zero_point}, name=name)


def test_in_place_never_writes_over_a_graph_output():
    from mcu_planner.targets.check import check_model
    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    x = _int8(mb, (1, 8, 8, 4), "x")
    a = _int8(mb, (1, 8, 8, 4), "a")
    q = _int8(mb, (1, 8, 8, 4), "q", scale=0.11, zero_point=7)
    mb.add_op("RELU", [x], [a])
    mb.add_op("QUANTIZE", [a], [q])  # reads `a` last, but `a` is also an output
    mb.inputs, mb.outputs = [x], [a, q]
    model = mb.build()
    lifetimes = compute_lifetimes(read_model(model), alignment=16, alias=True)
    # RELU may write over the dying input x; QUANTIZE must not write over a.
    assert all(source != a for step in lifetimes.problem.steps for _, source in step.in_place)
    assert check_model(model, inputs=2, seed=3).passed


def test_reshapes_feeding_a_concatenation_move_into_its_slices():
    import numpy as np

    from mcu_planner.targets.check import check_model
    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    x = _int8(mb, (1, 4, 4, 2), "x")
    a = _int8(mb, (1, 4, 4, 2), "a")
    b = _int8(mb, (1, 4, 4, 2), "b")
    flat_a = _int8(mb, (1, 32), "flat_a")
    flat_b = _int8(mb, (1, 32), "flat_b")
    cat = _int8(mb, (1, 64), "cat")
    shape = mb.add_tensor((2,), "int32", data=np.array([1, 32], np.int32), name="shape")
    mb.add_op("RELU", [x], [a])
    mb.add_op("RELU6", [x], [b])
    mb.add_op("RESHAPE", [a, shape], [flat_a], {"new_shape": (1, 32)})
    mb.add_op("RESHAPE", [b, shape], [flat_b], {"new_shape": (1, 32)})
    mb.add_op("CONCATENATION", [flat_a, flat_b], [cat], {"axis": 1})
    mb.inputs, mb.outputs = [x], [cat]
    model = mb.build()

    lifetimes = compute_lifetimes(read_model(model), alignment=1, alias=True)
    assert lifetimes.elided_ops == {2, 3, 4}
    assert {t: lifetimes.placements[t] for t in (a, flat_a, b, flat_b)} == {
        a: lifetimes.placements[cat],
        flat_a: lifetimes.placements[cat],
        b: type(lifetimes.placements[cat])(cat, 32),
        flat_b: type(lifetimes.placements[cat])(cat, 32),
    }
    assert lifetimes.aliases == {a: cat, b: cat, flat_a: a, flat_b: b}
    assert peak_live(lifetimes.problem).bytes == 32 + 64
    assert check_model(model, inputs=2, seed=5).passed
