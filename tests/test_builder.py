"""Models written by the builder load and run in TFLite's reference kernels,
and the bundled example is exactly what its script makes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcu_planner.frontend.reader import read_model
from mcu_planner_testing.builder import (
    Int8Net,
    ModelBuilder,
    check_runs,
    int8_quant,
    int32_bias,
    pack_int4,
    per_channel_int8_weights,
    quant_range,
    run_reference,
    single_op_model,
    tiny_kws_int8,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"

# (layer, input shapes, layer arguments, expected output shape)
SINGLE_OPS = [
    ("conv2d", [(1, 8, 8, 3)], dict(filters=4, strides=(2, 2)), (1, 4, 4, 4)),
    (
        "conv2d",
        [(1, 9, 7, 3)],
        dict(filters=5, kernel=(3, 2), padding="VALID", dilation=(2, 1), activation="RELU6"),
        (1, 5, 6, 5),
    ),
    ("depthwise_conv2d", [(1, 8, 8, 3)], dict(depth_multiplier=2, strides=(2, 2)), (1, 4, 4, 6)),
    ("fully_connected", [(2, 10)], dict(units=7, activation="RELU"), (2, 7)),
    ("fully_connected", [(1, 3, 10)], dict(units=7, keep_num_dims=True), (1, 3, 7)),
    ("average_pool2d", [(1, 8, 8, 3)], dict(pool=(3, 3), strides=(2, 2), padding="SAME"), (1, 4, 4, 3)),
    ("max_pool2d", [(1, 7, 7, 3)], {}, (1, 3, 3, 3)),
    ("add", [(1, 4, 4, 3), (1, 4, 4, 3)], dict(activation="RELU"), (1, 4, 4, 3)),
    ("add", [(1, 4, 4, 3), (1, 1, 1, 3)], {}, (1, 4, 4, 3)),
    ("sub", [(1, 4, 4, 3), (1, 4, 4, 3)], {}, (1, 4, 4, 3)),
    ("mul", [(1, 4, 4, 3), (1, 4, 4, 3)], {}, (1, 4, 4, 3)),
    ("reshape", [(1, 4, 4, 3)], dict(shape=(1, 48)), (1, 48)),
    ("squeeze", [(1, 1, 4, 3)], dict(axes=(1,)), (1, 4, 3)),
    ("expand_dims", [(1, 4, 3)], dict(axis=1), (1, 1, 4, 3)),
    ("softmax", [(1, 10)], {}, (1, 10)),
    ("logistic", [(1, 10)], {}, (1, 10)),
    ("tanh", [(1, 10)], {}, (1, 10)),
    ("relu", [(1, 10)], {}, (1, 10)),
    ("relu6", [(1, 10)], {}, (1, 10)),
    ("leaky_relu", [(1, 10)], dict(alpha=0.1), (1, 10)),
    ("hard_swish", [(1, 10)], {}, (1, 10)),
    ("quantize", [(1, 10)], dict(low=-2.0, high=0.5), (1, 10)),
    ("dequantize", [(1, 10)], {}, (1, 10)),
    ("concatenation", [(1, 4, 4, 3), (1, 4, 4, 5)], dict(axis=3), (1, 4, 4, 8)),
    ("pad", [(1, 4, 4, 3)], dict(paddings=((0, 0), (1, 2), (2, 1), (0, 0))), (1, 7, 7, 3)),
    ("mean", [(1, 4, 4, 3)], dict(axes=(1, 2)), (1, 1, 1, 3)),
    ("transpose", [(1, 4, 5, 3)], dict(perm=(0, 3, 1, 2)), (1, 3, 4, 5)),
    (
        "strided_slice",
        [(1, 8, 8, 3)],
        dict(begin=(0, 1, 0, 0), end=(1, 7, 8, 3), strides=(1, 2, 3, 1), end_mask=0b1000),
        (1, 3, 3, 3),
    ),
    (
        "strided_slice",
        [(1, 8, 8, 3)],
        dict(begin=(0, 2, 0, 0), end=(1, 3, 8, 3), strides=(1, 1, 1, 1), shrink_axis_mask=0b10),
        (1, 8, 3),
    ),
    ("resize_nearest_neighbor", [(1, 4, 4, 3)], dict(size=(8, 6), half_pixel_centers=True), (1, 8, 6, 3)),
]


@pytest.mark.parametrize(
    "layer,shapes,kwargs,expected", SINGLE_OPS, ids=[f"{c[0]}-{i}" for i, c in enumerate(SINGLE_OPS)]
)
def test_single_op_models_run_in_reference_interpreter(layer, shapes, kwargs, expected):
    model = single_op_model(layer, *shapes, **kwargs)
    (output,) = check_runs(model)
    graph = read_model(model)
    assert output.shape == expected
    assert graph.tensors[graph.outputs[0]].shape == expected
    assert len(graph.operators) == 1


def test_int8_outputs_use_their_range():
    """The chosen output ranges neither collapse to a few codes nor saturate."""
    model = single_op_model("conv2d", (1, 16, 16, 8), filters=16)
    (output,) = run_reference(model, seed=3)
    assert len(np.unique(output)) > 64
    assert np.mean((output == -128) | (output == 127)) < 0.05


def test_example_is_what_make_examples_writes():
    assert EXAMPLE.read_bytes() == tiny_kws_int8(seed=0)
    check = subprocess.run(
        [sys.executable, str(REPO / "examples" / "make_examples.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_example_is_small_runs_and_uses_the_promised_ops():
    model = EXAMPLE.read_bytes()
    assert len(model) < 100_000
    graph = read_model(model)
    assert {op.opcode for op in graph.operators} == {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "AVERAGE_POOL_2D",
        "MAX_POOL_2D",
        "ADD",
        "CONCATENATION",
        "RESHAPE",
        "FULLY_CONNECTED",
        "SOFTMAX",
    }
    (probabilities,) = check_runs(model)
    assert probabilities.shape == (1, 12)
    # int8 softmax at scale 1/256, zero point -128 sums to about 1.
    assert abs((probabilities.astype(np.int32) + 128).sum() / 256 - 1.0) < 0.05


def test_same_seed_same_bytes_other_seed_other_weights():
    assert tiny_kws_int8(seed=1) == tiny_kws_int8(seed=1)
    assert tiny_kws_int8(seed=1) != tiny_kws_int8(seed=2)


def test_int8_quant_covers_the_range_within_a_step():
    for low, high in [(-1.0, 1.0), (0.0, 6.0), (-0.3, 2.7), (0.5, 4.0), (-5.0, -1.0)]:
        q = int8_quant(low, high)
        step = q.scales[0]
        lo, hi = quant_range(q)
        assert lo <= min(low, 0.0) + step and hi >= max(high, 0.0) - step
        assert hi - lo == pytest.approx(255 * step)
    # A rectified range spends no code below zero.
    assert int8_quant(0.0, 6.0).zero_points == (-128,)


def test_per_channel_weights_and_bias_scales():
    rng = np.random.default_rng(0)
    weights, wq = per_channel_int8_weights(rng, (6, 3, 3, 4), 0, 0.2)
    assert weights.dtype == np.int8 and wq.axis == 0 and wq.zero_points == (0,) * 6
    assert np.all(np.abs(weights).reshape(6, -1).max(axis=1) == 127)
    bias, bq = int32_bias(rng, 0.05, wq.scales, 0.1)
    assert bias.dtype == np.int32
    for bias_scale, weight_scale in zip(bq.scales, wq.scales, strict=True):
        assert bias_scale == float(np.float32(0.05) * np.float32(weight_scale))


def test_pack_int4_low_nibble_first():
    assert pack_int4(np.array([1, -1, 7])) == bytes([0xF1, 0x07])


def test_external_buffer_model_runs_like_inline():
    net = Int8Net(seed=4)
    x = net.input((1, 6, 6, 2))
    y = net.conv2d(x, 3)
    net.mb.set_io(net.inputs, [y])
    inline, external = net.mb.build(), net.mb.build(external_buffers=True)
    assert inline != external
    inputs = [np.random.default_rng(0).integers(-128, 128, (1, 6, 6, 2), dtype=np.int8)]
    assert np.array_equal(run_reference(inline, inputs)[0], run_reference(external, inputs)[0])


def test_builder_refuses_unknown_options():
    mb = ModelBuilder()
    with pytest.raises(ValueError, match="stride"):
        mb.add_op("CONV_2D", (), (), {"stride": 2})
    with pytest.raises(ValueError, match="RELU has no options table"):
        mb.add_op("RELU", (), (), {"alpha": 1.0})


def test_quantization_short_forms():
    mb = ModelBuilder()
    a = mb.add_tensor((2,), "int8", (0.1, -3))
    b = mb.add_tensor((2,), "int8", {"scale": 0.1, "zero_point": -3})
    c = mb.add_tensor((2, 3), "int8", {"scales": [0.1, 0.2], "zero_point": 0, "axis": 0}, data=bytes(6))
    y = mb.add_tensor((2,), "int8", (0.1, -3))
    mb.add_op("ADD", (a, b), (y,))
    mb.set_io([a, b], [y])
    graph = read_model(mb.build())
    assert graph.tensors[a].quantization == graph.tensors[b].quantization
    assert graph.tensors[a].quantization.scales == (float(np.float32(0.1)),)
    assert graph.tensors[c].quantization.zero_points == (0, 0)
    assert graph.tensors[c].quantization.per_channel


def test_index_and_comparison_helpers_build_models_the_reference_runs():
    net = Int8Net(seed=5)
    x = net.input((2, 3, 4))
    rows = net.gather_nd(x, [[1, 2], [0, 0]])
    as_float = net.cast(x, "float32")
    greater = net.compare("GREATER", x, net.input((4,)))
    picked = net.select_v2(greater, x, net.input((2, 3, 4)))
    model = net.build(rows, as_float, picked)
    graph = read_model(model)
    assert [op.opcode for op in graph.operators] == ["GATHER_ND", "CAST", "GREATER", "SELECT_V2"]
    inputs = [np.arange(24, dtype=np.int8).reshape(2, 3, 4), np.full(4, 10, np.int8), np.full((2, 3, 4), -1, np.int8)]
    got_rows, got_float, got_picked = run_reference(model, inputs)
    assert got_rows.tolist() == [list(range(20, 24)), [0, 1, 2, 3]]
    assert got_float.dtype == np.float32 and got_float.reshape(-1).tolist() == list(range(24))
    assert got_picked.reshape(-1).tolist() == [-1] * 11 + list(range(11, 24))
