"""SVDF (float32; int8 with int16 state) against TFLite's reference kernels
over several invocations in a row, with state carried from one to the next
(check_model runs the input sets in sequence on one interpreter and on one
generated model, then resets both and runs the first sets again)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS_DIR, needs_cortex_m, needs_shared
from kernel_models import Branches, assert_matches_reference, random_int8_quant, random_scale

from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes

# (batch, input_size, units, rank, memory_size, with bias)
SHAPES = [
    (1, 8, 4, 1, 1, True),
    (1, 12, 5, 1, 4, True),
    (2, 7, 3, 2, 3, False),
    (1, 16, 8, 2, 10, True),
    (3, 5, 2, 3, 2, True),
    (1, 6, 2, 5, 3, True),
    (2, 9, 3, 4, 8, True),
]


def _svdf_branch(
    model: Branches,
    rng,
    batch,
    input_size,
    units,
    rank,
    memory,
    with_bias,
    dtype,
    activation,
    state_headroom=1.0,
    output_headroom=1.0,
    zero_points=None,
):
    filters = units * rank
    if dtype == "float32":
        x = model.input((batch, input_size), "float32")
        wf = model.constant(rng.standard_normal((filters, input_size)).astype(np.float32) * 0.5, "float32")
        wt = model.constant(rng.standard_normal((filters, memory)).astype(np.float32) * 0.5, "float32")
        bias = model.constant(rng.standard_normal(units).astype(np.float32), "float32") if with_bias else -1
        state = model.mb.add_tensor((batch, filters * memory), "float32", is_variable=True)
        options = {"rank": rank, "fused_activation_function": activation}
        return model.op("SVDF", (x, wf, wt, bias, state), (batch, units), "float32", None, options)

    in_scale, in_zero = random_int8_quant(rng)
    out_zero = int(rng.integers(-128, 128))
    if zero_points is not None:
        in_zero, out_zero = zero_points
    x = model.input((batch, input_size), "int8", (in_scale, in_zero))
    wf_scale = random_scale(rng, 1e-3, 2e-2)
    wf = model.constant(rng.integers(-127, 128, (filters, input_size)).astype(np.int8), "int8", (wf_scale, 0))
    # The state holds feature activations: about sqrt(n) * 64 * 64 input x weight steps.
    typical_feature = np.sqrt(input_size) * 64 * 74 * in_scale * wf_scale
    state_scale = float(np.float32(typical_feature / 6000 * state_headroom))
    wt_scale = random_scale(rng, 1e-4, 1e-2)
    wt = model.constant(rng.integers(-20000, 20001, (filters, memory)).astype(np.int16), "int16", (wt_scale, 0))
    typical_unit = np.sqrt(rank * memory) * 6000 * 11000 * state_scale * wt_scale
    bias = -1
    if with_bias:
        bias_values = rng.integers(-1, 2, units) * rng.integers(0, int(6000 * 11000), units)
        bias = model.constant(bias_values.astype(np.int32), "int32", (float(np.float32(state_scale * wt_scale)), 0))
    state = model.mb.add_tensor((batch, filters * memory), "int16", (state_scale, 0), is_variable=True)
    out_quant = (float(np.float32(typical_unit / 60 * output_headroom)), out_zero)
    options = {"rank": rank, "fused_activation_function": activation}
    return model.op("SVDF", (x, wf, wt, bias, state), (batch, units), "int8", out_quant, options)


@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_float_svdf_over_invocations(activation):
    rng = np.random.default_rng(11)
    model = Branches("float SVDF")
    for shape in SHAPES:
        _svdf_branch(model, rng, *shape, "float32", activation)
    assert_matches_reference(model.build(), inputs=5)


def int8_svdf_model() -> bytes:
    """Every shape of SHAPES (filter counts with and without a multiple of
    four, memories with and without a multiple of eight), saturation and
    extreme zero points."""
    rng = np.random.default_rng(12)
    model = Branches("int8 SVDF")
    for shape in SHAPES:
        _svdf_branch(model, rng, *shape, "int8", "RELU")
    # Saturation: feature activations beyond int16, unit sums beyond int8.
    _svdf_branch(model, rng, 1, 16, 6, 2, 5, True, "int8", "RELU", state_headroom=0.05)
    _svdf_branch(model, rng, 2, 9, 4, 1, 6, True, "int8", "RELU", output_headroom=0.02)
    # Zero points at both ends of the int8 range.
    _svdf_branch(model, rng, 1, 10, 4, 2, 3, True, "int8", "RELU", zero_points=(-128, 127))
    _svdf_branch(model, rng, 1, 10, 4, 1, 3, False, "int8", "RELU", zero_points=(127, -128))
    return model.build()


def test_int8_svdf_over_invocations():
    assert_matches_reference(int8_svdf_model(), inputs=6)


def test_svdf_scratch_is_planned_at_its_step_only():
    rng = np.random.default_rng(13)
    model = Branches("SVDF scratch")
    _svdf_branch(model, rng, 2, 12, 5, 2, 4, True, "int8", "RELU")
    graph = read_model(model.build())
    (op,) = graph.operators
    (scratch,) = op.scratch
    assert graph.tensors[scratch].is_scratch
    assert graph.tensors[scratch].nbytes == 4 * 2 * 10  # int32 per batch and filter
    lifetimes = compute_lifetimes(graph)
    assert lifetimes.first_op[scratch] == lifetimes.last_op[scratch] == 0
    # The state is no arena buffer: it lives in its own region.
    state = op.inputs[4]
    assert state not in lifetimes.placements and lifetimes.variable_offsets[state] == 0
    assert lifetimes.variable_bytes == 2 * 2 * 10 * 4 + 0  # int16 [2, 40], a multiple of 16


def test_reset_returns_the_state_to_its_start(tmp_path):
    """The same input after two others gives another output while the
    state carries over, and the first output again after NAME_reset()."""
    from mcu_planner.emit.output_dir import write_output
    from mcu_planner.targets.check import HostTarget, generate_for_model, random_inputs

    rng = np.random.default_rng(14)
    model = Branches("SVDF reset")
    _svdf_branch(model, rng, 1, 12, 5, 1, 4, True, "int8", "RELU")
    graph, _, files = generate_for_model(model.build(), name="svdf")
    generated = write_output(files, tmp_path / "generated")
    sets = [[a.tobytes() for a in random_inputs(graph, rng)] for _ in range(3)]
    sizes = dict(
        input_bytes=[graph.tensors[t].nbytes for t in graph.inputs],
        output_bytes=[graph.tensors[t].nbytes for t in graph.outputs],
    )
    samples = sets + sets[:1]
    carried = HostTarget().run(generated, "svdf", samples, check_build=False, workdir=tmp_path / "a", **sizes)
    reset = HostTarget().run(generated, "svdf", samples, check_build=False, workdir=tmp_path / "b", reset_at=3, **sizes)
    assert carried.outputs[:3] == reset.outputs[:3]
    assert carried.outputs[3] != carried.outputs[0]
    assert reset.outputs[3] == reset.outputs[0]


@needs_shared
def test_keyword_scrambled_carries_its_state_bit_exactly():
    """TFLM's keyword_scrambled: seven int8 SVDFs with int16 state, int16
    input, int8 -> int16 SOFTMAX; five invocations in a row, then two after
    reset.  Its plan holds one int32 scratch buffer per SVDF."""
    from mcu_planner.emit.report import plan_json
    from mcu_planner.memory.planning import run_planner
    from mcu_planner.targets.check import check_model

    path = MODELS_DIR / "tflite-micro" / "keyword_scrambled.tflite"
    report = check_model(path, inputs=5, raise_on_mismatch=False)
    assert report.passed and (report.total, report.reset_total) == (5, 2), report.mismatch_message()
    graph = read_model(path)
    lifetimes = compute_lifetimes(graph)
    plan = run_planner(lifetimes.problem, "greedy")
    scratch = [e for e in plan_json("m", graph, lifetimes, plan, True)["tensors"] if e.get("scratch")]
    svdfs = [op for op in graph.operators if op.opcode == "SVDF"]
    assert len(scratch) == len(svdfs) == 7
    assert sorted(e["bytes"] for e in scratch) == sorted(4 * graph.tensors[op.inputs[1]].shape[0] for op in svdfs)
    assert lifetimes.variable_bytes == sum(graph.tensors[op.inputs[4]].nbytes for op in svdfs)


@needs_cortex_m
def test_svdf_sequence_on_mps2_an386():
    """float32 and int8 SVDF in one firmware: four invocations in one QEMU
    run, state carried over, then two after NAME_reset()."""
    rng = np.random.default_rng(15)
    model = Branches("SVDF on the M4")
    _svdf_branch(model, rng, 2, 9, 4, 2, 5, True, "float32", "RELU6")
    _svdf_branch(model, rng, 1, 16, 8, 1, 6, True, "int8", "RELU")
    _svdf_branch(model, rng, 2, 7, 3, 3, 2, False, "int8", "RELU")
    report = assert_matches_reference(model.build(), inputs=4, target="mps2-an386")
    assert (report.total, report.reset_total) == (4, 2)


def test_int8_variable_tensors_start_at_their_zero_point():
    """TFLite's ResetVariableTensor fills an int8 variable with its zero
    point (0 for other types): ADD reads such a state, so an all-zero start
    would shift every output."""
    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    x = mb.add_tensor((1, 16), "int8", (0.1, -3), name="x")
    state = mb.add_tensor((1, 16), "int8", (0.05, 37), name="state", is_variable=True)
    y = mb.add_tensor((1, 16), "int8", (0.2, 5), name="y")
    mb.add_op("ADD", (x, state), (y,))
    mb.set_io([x], [y])
    assert_matches_reference(mb.build(), inputs=3)
