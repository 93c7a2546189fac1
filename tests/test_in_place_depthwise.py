"""In-place depthwise convolution (TinyEngine's method): chosen only where its
scratch is smaller than the overlap it replaces and only when --ram needs it;
bit-exact, with the plan checked at run time, when it runs."""

from __future__ import annotations

import pytest
from conftest import MODELS_DIR, needs_shared

from mcu_planner.memory.in_place_depthwise import candidates
from mcu_planner.pipeline import PlanOptions, analyse_model, generate_for_model, plan_model
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net


def _deep_depthwise(strides=(1, 1), padding="SAME", batches=1, pointwise=True) -> bytes:
    net = Int8Net(seed=5)
    x = net.input((batches, 7, 6, 64))
    x = net.depthwise_conv2d(x, strides=strides, padding=padding, activation="RELU")
    if pointwise:
        x = net.conv2d(x, 16, kernel=(1, 1))
    return net.build(x)


def _in_place_ram(model: bytes) -> int:
    """The first budget, stepping down from the roomy RAM to 16 B under what
    each plan needs, at which a depthwise convolution runs in place: budgets
    take every overlap first, then the pointwise's compact columns (when
    there is a pointwise), then the in-place kernel."""
    needed = plan_model(model, PlanOptions()).ram_needed
    for _ in range(4):
        planned = plan_model(model, PlanOptions(ram=needed - 16))
        if _in_place_ops(planned):
            return needed - 16
        needed = planned.ram_needed
    raise AssertionError("no budget runs the depthwise convolution in place")


def _in_place_ops(planned) -> list[int]:
    return list(planned.lifetimes.program.in_place_depthwise)


def test_only_depthwise_ops_whose_scratch_beats_their_overlap_are_candidates():
    deep = analyse_model(_deep_depthwise(), PlanOptions(order="model"))
    assert candidates(deep.without_in_place.lifetimes.program, deep.without_in_place.lifetimes) == [0]
    net = Int8Net(seed=6)
    x = net.input((1, 24, 24, 8))  # 576 B of scratch against a 208 B overlap
    x = net.depthwise_conv2d(x)
    shallow = net.build(net.conv2d(x, 8, kernel=(1, 1)))
    analysed = analyse_model(shallow, PlanOptions(order="model"))
    assert analysed.without_in_place is None
    assert candidates(analysed.lifetimes.program, analysed.lifetimes) == []


def test_the_slower_kernel_runs_only_when_the_budget_needs_it():
    model = _deep_depthwise()
    # Without a budget: no overlap that slows a kernel, no in-place kernel.
    roomy = plan_model(model, PlanOptions())
    assert _in_place_ops(roomy) == [] and roomy.plan.arena_bytes == 2 * 7 * 6 * 64
    # --ram counts what the model keeps beside the arena too (ram_budget.py).
    beside = roomy.ram_budget.other
    free = plan_model(model, PlanOptions(ram=roomy.plan.arena_bytes + beside - 16))
    assert _in_place_ops(free) == []
    # 7 x 6 x 64 in and out: the depthwise overlap keeps the output some
    # pixels below the input (its walk's bound); the pointwise output and its
    # columns scratch (eight pixels' 64 channels as int16 for the M4 DSP
    # blocks, and 3 B to word-align them) go beside it, at most that scratch
    # above the depthwise bound.  The in-place run needs the input's
    # bytes and 42 B of scratch (48 aligned) that the pointwise reuses.
    ordinary = analyse_model(model, PlanOptions()).without_in_place
    depthwise_limit = next(limit for (out, _), limit in ordinary.lifetimes.problem.overlap_limits().items() if out == 3)
    assert depthwise_limit <= -8 * 64
    columns = sum(t.nbytes for t in free.graph.tensors if t.is_scratch)
    assert columns == 8 * 64 * 2 + 3
    assert 7 * 6 * 64 - depthwise_limit <= free.plan.arena_bytes <= 7 * 6 * 64 - depthwise_limit + columns
    # Less: the pointwise's compact columns (2 x 64 B of filter pairs, the
    # path without the blocks) before the slower depthwise kernel.
    compact = plan_model(model, PlanOptions(ram=free.plan.arena_bytes + beside - 16))
    assert _in_place_ops(compact) == [] and compact.fits
    assert sum(t.nbytes for t in compact.graph.tensors if t.is_scratch) == 2 * 64
    tight = plan_model(model, PlanOptions(ram=compact.plan.arena_bytes + beside - 16))
    assert _in_place_ops(tight) == [0] and tight.fits
    assert tight.plan.arena_bytes <= 7 * 6 * 64 + 7 * 6 * 16 < free.plan.arena_bytes


@pytest.mark.slow
@pytest.mark.parametrize(
    "strides, padding, batches, pointwise",
    [((1, 1), "SAME", 1, True), ((2, 2), "VALID", 2, False), ((2, 1), "SAME", 1, False)],
)
def test_in_place_depthwise_is_bit_exact(strides, padding, batches, pointwise):
    model = _deep_depthwise(strides, padding, batches, pointwise)
    ram = _in_place_ram(model)
    graph, plan, files = generate_for_model(model, name="dw", ram=ram)
    (scratch,) = graph.operators[0].scratch  # the channel buffer of op 0, run in place
    assert graph.tensors[scratch].name.endswith("_scratch_channel")
    assert "mcu_depthwise_conv_2d_s8_in_place(" in files["dw.c"].decode()
    report = check_model(model, inputs=3, ram=ram)  # the normal and the -DMCU_PLAN_CHECK build
    assert report.passed and report.arena_bytes == plan.arena_bytes <= ram


@pytest.mark.slow
@needs_shared
def test_kws_ref_model_fits_9k_in_place_bit_exact():
    model = MODELS_DIR / "mlcommons-tiny" / "kws_ref_model.tflite"
    # A 9K arena, and what the model keeps beside it (counters, conv_columns; one more counter in place).
    ram = 9 * 1024 + plan_model(str(model), PlanOptions()).ram_budget.other + 4
    report = check_model(str(model), inputs=2, ram=ram)
    assert report.passed and report.arena_bytes <= 9 * 1024
