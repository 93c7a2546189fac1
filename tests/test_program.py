"""The Program (program.py): every op lowered once, right after folding and
the op order, its call kept with the facts its lowering module declares."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import needs_shared
from test_order import two_wide_branches

from mcu_planner import lowering
from mcu_planner.emit.report import plan_json
from mcu_planner.frontend.order import reorder
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.program import lower_program, reorder_program
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner_testing.shared import MODELS_DIR


def test_every_lowered_opcode_declares_its_facts():
    """Adding an op is its lowering and its facts, in the same module."""
    lowerings = lowering.load_all()
    assert lowerings, "the lowering modules register their ops"
    missing = sorted(set(lowerings) - set(lowering.FACTS))
    assert not missing, f"opcodes lowered without KernelFacts (declare them beside the lowering): {missing}"
    for opcode, facts_fn in lowering.FACTS.items():
        assert lowerings[opcode].__module__ == facts_fn.__module__ or facts_fn.__name__ == "<lambda>", opcode


@pytest.fixture
def counted_lowerings(monkeypatch):
    """Every registered lowering function, counting its calls per op object."""
    calls: Counter[int] = Counter()
    for opcode, fn in list(lowering.load_all().items()):

        def counting(op, graph, fn=fn):
            calls[id(op)] += 1
            return fn(op, graph)

        monkeypatch.setitem(lowering.LOWERINGS, opcode, counting)
    return calls


@needs_shared
def test_planning_and_generating_lowers_every_op_once(counted_lowerings):
    """vww_96_int8 at 36K takes overlaps and a patched stage, and the
    search tries dozens of stages: before the Program its ops were lowered
    4,798 times (31 ops) through planning, the plan JSON and codegen."""
    model = MODELS_DIR / "mlcommons-tiny" / "vww_96_int8.tflite"
    planned = plan_model(str(model), PlanOptions(ram=36 * 1024))
    assert planned.fits and planned.program.patch_stage is not None
    plan_json(str(model), planned.graph, planned.lifetimes, planned.plan, True, planned.op_order)
    files = planned.generate("vww")
    assert "vww.c" in files
    ops = len(planned.graph.operators)
    assert sum(counted_lowerings.values()) == ops == 31
    assert set(counted_lowerings.values()) == {1}


def test_a_reordered_program_keeps_the_calls_the_ops_lower_to():
    graph = read_model(two_wide_branches())
    order = (1, 3, 0, 2, 4)
    reordered = reorder(graph, order)
    program = reorder_program(lower_program(graph), reordered, order)
    assert program.graph is reordered
    again = lower_program(reordered)
    assert [lowered.call for lowered in program.ops] == [lowered.call for lowered in again.ops]
    assert [lowered.facts for lowered in program.ops] == [lowered.facts for lowered in again.ops]


def test_facts_say_what_the_tables_said():
    """Spot checks of the facts that replaced the planner's tables."""
    graph = read_model(two_wide_branches())
    program = lower_program(graph)
    by_opcode = {op.opcode: program.facts(op.index) for op in graph.operators}
    conv, add = by_opcode["CONV_2D"], by_opcode["ADD"]
    assert add.elementwise and not conv.elementwise
    assert conv.access is not None and conv.access.group == 4  # int8 conv: four pixels at a time
    assert conv.raster_walk_is_slower  # 1 x 1, stride 1: its faster walk takes channel pairs outermost
    assert conv.window is not None and conv.for_window is not None
    assert add.window is None and add.macs == 0
    # 8 x 8 pixels x 32 filters x 4 input channels for the first conv
    assert program.facts(0).macs == 8 * 8 * 32 * 4
