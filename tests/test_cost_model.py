"""The default plan's speed/size trade (memory/cost_model.py): slower raster
walks only where the cost model puts their extra instructions within 2%."""

from __future__ import annotations

import pytest
from conftest import MODELS_DIR, needs_cortex_m, needs_shared

from mcu_planner import cli, pipeline
from mcu_planner.lowering.conv import block_bytes
from mcu_planner.memory import cost_model
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net

EXAMPLE = pipeline.__file__.rsplit("/mcu_planner/", 1)[0] + "/examples/tiny_kws_int8.tflite"
OPTIONS = PlanOptions(time_limit=1.0)


def _fast_plan(model, monkeypatch):
    """The plan as before the cost model: no slower walk without --ram."""
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "_cheap_slower_walks", lambda model, options, fast: fast)
        return plan_model(model, OPTIONS)


def _check_default(model, monkeypatch) -> pipeline.PlannedModel:
    fast = _fast_plan(model, monkeypatch)
    planned = plan_model(model, OPTIONS)
    assert planned.plan.arena_bytes <= fast.plan.arena_bytes
    assert verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes) == []
    taken = planned.slower_walks
    if taken is not None:
        program = planned.program
        assert taken.ops == cost_model.slower_walk_steps(planned.lifetimes.problem, planned.plan.offsets)
        extra = sum(cost_model.raster_walk_extra(program, op) for op in taken.ops)
        assert extra <= cost_model.DEFAULT_EXTRA_SHARE * cost_model.model_instructions(program)
        assert planned.program.patch_stage is None and not planned.program.in_place_depthwise  # no extra MACs
    return planned


def test_the_example_takes_a_cheap_slower_walk_for_a_smaller_arena(monkeypatch):
    planned = _check_default(EXAMPLE, monkeypatch)
    assert planned.slower_walks is not None and planned.slower_walks.ops == (4,)
    assert planned.plan.arena_bytes < _fast_plan(EXAMPLE, monkeypatch).plan.arena_bytes


def test_a_saving_that_costs_more_than_the_allowance_keeps_the_fast_plan(monkeypatch):
    # The example's one slower walk (a pointwise convolution in the M4 DSP
    # blocks, which walk in raster order anyway) is free: no allowance at all.
    monkeypatch.setattr(cost_model, "DEFAULT_EXTRA_SHARE", -0.001)
    planned = plan_model(EXAMPLE, OPTIONS)
    assert planned.slower_walks is None
    assert planned.plan.arena_bytes == _fast_plan(EXAMPLE, monkeypatch).plan.arena_bytes


def test_the_report_says_which_ops_take_the_slower_walk(capsys):
    assert cli.main([EXAMPLE, "--time-limit", "2"]) == 0
    assert (
        "overlaps on the raster walk: ops 4 (+0.0% instructions, estimated on the Cortex-M4)" in capsys.readouterr().out
    )


@needs_shared
@pytest.mark.parametrize("name", ["mlcommons-tiny/vww_96_int8", "mlcommons-tiny/str_ww_ref_model"])
def test_default_arenas_of_shared_models_are_smaller_within_the_allowance(name, monkeypatch):
    model = MODELS_DIR / f"{name}.tflite"
    planned = _check_default(model, monkeypatch)
    assert planned.slower_walks is not None
    assert planned.plan.arena_bytes < _fast_plan(model, monkeypatch).plan.arena_bytes
    # The kept plan is searched again with just its walks allowed: finished, the same on every machine.
    assert planned.plan.reproducible


@needs_shared
def test_a_shared_model_whose_only_saving_costs_too_much_keeps_the_fast_plan(monkeypatch):
    # micro_speech's one slower walk (a depthwise convolution of 320,000 MACs)
    # would save bytes, but the cost model puts it far above 2%.
    model = MODELS_DIR / "tflite-micro/micro_speech_quantized.tflite"
    analysed = pipeline.analyse_model(model, OPTIONS)
    analysed = analysed.without_in_place or analysed
    slow = pipeline._plan_placed(analysed, OPTIONS)  # every slower overlap allowed
    walks = cost_model.slower_walks(analysed.lifetimes.program, analysed.lifetimes.problem, slow.plan.offsets)
    assert walks.ops and not walks.within_default_cost()
    planned = _check_default(model, monkeypatch)
    assert planned.slower_walks is None
    assert slow.plan.arena_bytes < planned.plan.arena_bytes == _fast_plan(model, monkeypatch).plan.arena_bytes


def test_the_default_mobilenet_v1_at_96_plans_below_stm32cube_ai_without_a_budget(monkeypatch):
    from mcu_planner_testing.mobilenet import mobilenet_v1_int8

    # STM32Cube.AI 7.3's published activation RAM for such a model: 40,509 B.
    planned = _check_default(mobilenet_v1_int8(96), monkeypatch)
    assert planned.plan.arena_bytes <= 40_509 and planned.slower_walks is not None


def _cheap_pointwise_at_the_peak() -> bytes:
    """A FULLY_CONNECTED of many MACs in little memory, then a pointwise
    convolution of one pixel of 512 channels: its M4 DSP blocks' columns
    (eight pixels of 512 int16) make the arena's peak, and the paths
    without them cost that one-pixel layer few instructions."""
    net = Int8Net(seed=3)
    x = net.fully_connected(net.input((1, 512)), 512, activation="RELU")
    x = net.reshape(x, (1, 1, 1, 512))
    return net.build(net.conv2d(x, 8, kernel=(1, 1)))


def _columns(planned) -> int:
    """The bytes of the one convolution's columns scratch in the plan."""
    (scratch,) = [t for t in planned.lifetimes.placements if planned.graph.tensors[t].is_scratch]
    return planned.graph.tensors[scratch].nbytes


def test_the_default_gives_up_the_dsp_blocks_columns_where_cheap(monkeypatch):
    model = _cheap_pointwise_at_the_peak()
    planned = plan_model(model, OPTIONS)
    assert verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes) == []
    conv = len(planned.graph.operators) - 1
    taken = planned.slower_walks
    assert taken is not None and taken.smaller_scratch_ops == (conv,) and taken.within_default_cost()
    # The compact columns: two filters interleaved (2 x 512 B) for the path without the blocks.
    assert _columns(planned) == 2 * 512 == planned.program.call(conv).params["column_bytes"]
    monkeypatch.setattr(cost_model, "DEFAULT_EXTRA_SHARE", -0.001)  # no allowance: the full columns
    full = plan_model(model, OPTIONS)
    assert full.slower_walks is None and _columns(full) == block_bytes(512)
    assert planned.plan.arena_bytes <= full.plan.arena_bytes - (block_bytes(512) - 2 * 512)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["host", pytest.param("mps2-an386", marks=needs_cortex_m)])
def test_the_default_on_compact_columns_is_bit_exact(target):
    model = _cheap_pointwise_at_the_peak()
    planned = plan_model(model, OPTIONS)
    assert planned.slower_walks is not None and planned.slower_walks.smaller_scratch_ops
    # check_model plans as mcu-plan does (the same plan; on the M4 the kernel
    # then leaves the DSP blocks for the filter pairs), with -DMCU_PLAN_CHECK too.
    report = check_model(model, target=target, inputs=3)
    assert report.passed and report.arena_bytes == planned.plan.arena_bytes
