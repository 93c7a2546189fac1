"""Scratch buffers (scratch.py): per-op working memory planned in the arena.

The mechanism is exercised here with a scratch need registered for
FULLY_CONNECTED, whose kernel ignores it: the plan, the verifier, the report
and the -DMCU_PLAN_CHECK build must still treat it as a buffer alive at that
op's step only.  SVDF's own scratch is tested with its kernel in
test_kernels_svdf.py.
"""

from __future__ import annotations

import pytest

from mcu_planner import lowering
from mcu_planner.emit.report import memory_map, plan_json
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import planner_names, run_planner
from mcu_planner.memory.verify import verify
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net

SCRATCH_ELEMENTS = 300


@pytest.fixture
def fully_connected_scratch(monkeypatch):
    lowering.load_all()

    def need(op, graph):
        return (lowering.ScratchNeed("work", "int16", SCRATCH_ELEMENTS),)

    monkeypatch.setitem(lowering.SCRATCH_NEEDS, "FULLY_CONNECTED", need)


def two_layer_model() -> bytes:
    net = Int8Net(seed=3)
    x = net.input((1, 24))
    y = net.fully_connected(x, 20, activation="RELU")
    return net.build(net.fully_connected(y, 8))


def test_scratch_tensors_live_at_their_op_only(fully_connected_scratch):
    graph = read_model(two_layer_model())
    scratch_ops = [op for op in graph.operators if op.scratch]
    assert [op.opcode for op in scratch_ops] == ["FULLY_CONNECTED", "FULLY_CONNECTED"]
    lifetimes = compute_lifetimes(graph)
    buffers = lifetimes.problem.by_id()
    for op in scratch_ops:
        (t,) = op.scratch
        tensor = graph.tensors[t]
        assert tensor.is_scratch and tensor.dtype == "int16" and tensor.nbytes == 2 * SCRATCH_ELEMENTS
        assert lifetimes.first_op[t] == lifetimes.last_op[t] == op.index
        buffer = buffers[lifetimes.placements[t].buffer]
        assert (buffer.start, buffer.end) == (op.index, op.index + 1)
        assert buffer.id in lifetimes.problem.steps[op.index].outputs
    # Every planner keeps the scratch apart from the op's inputs and outputs.
    for name in planner_names():
        if name == "auto":
            continue
        plan = run_planner(lifetimes.problem, name, 2.0)
        assert verify(lifetimes.problem, plan.offsets, plan.arena_bytes) == []
        for op in scratch_ops:
            s = lifetimes.tensor_offset(plan.offsets, op.scratch[0])
            for t in op.inputs[:1] + op.outputs:
                o = lifetimes.tensor_offset(plan.offsets, t)
                assert s + 2 * SCRATCH_ELEMENTS <= o or o + graph.tensors[t].nbytes <= s, name


def test_plan_json_and_map_name_scratch(fully_connected_scratch):
    graph = read_model(two_layer_model())
    lifetimes = compute_lifetimes(graph)
    plan = run_planner(lifetimes.problem, "greedy")
    entries = plan_json("m", graph, lifetimes, plan, True)["tensors"]
    flagged = sorted(e["index"] for e in entries if e.get("scratch"))
    assert flagged == sorted(t for op in graph.operators for t in op.scratch)
    assert all(e["first_op"] == e["last_op"] for e in entries if e.get("scratch"))
    lines = memory_map(graph, lifetimes, plan)
    assert sum("(scratch of op" in line for line in lines) == 2


def test_generated_code_claims_and_releases_scratch(fully_connected_scratch):
    """The check build claims each scratch buffer before its op and poisons it
    after: the outputs stay bit-exact and no overlap is reported."""
    report = check_model(two_layer_model(), inputs=2)
    assert report.passed
