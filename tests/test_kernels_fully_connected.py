"""FULLY_CONNECTED kernels against the TFLite reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Quantization
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, int8_quant

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@pytest.mark.parametrize("seed", [0, 1])
def test_int8_per_channel_shapes_and_activations(seed):
    net = Int8Net(seed)
    batch = net.input((4, 8, 16), -1.5, 2.0)
    vector = net.input((1, 10), -0.5, 0.25)
    outputs = [
        net.fully_connected(batch, 7, activation=ACTIVATIONS[seed], keep_num_dims=True),
        net.fully_connected(batch, 5, activation=ACTIVATIONS[seed + 2]),
        net.fully_connected(vector, 3, activation="RELU6"),
        net.fully_connected(vector, 1, activation="RELU_N1_TO_1"),
    ]
    assert_matches_reference(net.build(*outputs), seed=seed)


def test_int8_per_tensor_filter_without_bias():
    # One filter scale and no bias: the per-tensor multiplier and NULL bias paths.
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    x = mb.add_tensor((16, 12), "int8", int8_quant(-1.0, 3.0))
    weights = rng.integers(-127, 128, size=(6, 12)).astype(np.int8)
    w = mb.add_tensor(weights.shape, "int8", Quantization((0.0123,), (0,)), data=weights)
    y = mb.add_tensor((16, 6), "int8", int8_quant(-20.0, 25.0))
    mb.add_op("FULLY_CONNECTED", (x, w, -1), (y,), {"fused_activation_function": "RELU"})
    mb.set_io([x], [y])
    assert_matches_reference(mb.build(), inputs=4)


@pytest.mark.parametrize("with_bias", [True, False])
def test_float(with_bias):
    net = FloatNet(seed=3)
    x = net.input((4, 9))
    outputs = []
    for units, activation in [(5, "NONE"), (8, "RELU"), (3, "RELU6"), (2, "RELU_N1_TO_1")]:
        w = net.const((units, 9), 0.5)
        b = net.const((units,), 0.3) if with_bias else -1
        outputs.append(net.op("FULLY_CONNECTED", (x, w, b), (4, units), {"fused_activation_function": activation}))
    assert_matches_reference(net.build(*outputs))


def test_int16_activations_with_an_int32_bias_are_not_lowerable():
    # 16x8 FULLY_CONNECTED lowers with an int64 bias or none
    # (tests/test_kernels_s16.py); LiteRT misreads an int32 one as int64.
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int16", (0.01, 0))
    w = mb.add_tensor((2, 4), "int8", (0.02, 0), data=np.ones((2, 4), np.int8))
    b = mb.add_tensor((2,), "int32", (0.0002, 0), data=np.ones(2, np.int32))
    y = mb.add_tensor((1, 2), "int16", (0.05, 0))
    mb.add_op("FULLY_CONNECTED", (x, w, b), (y,), {})
    mb.set_io([x], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="int32"):
        lower(graph.operators[0], graph)


@pytest.mark.parametrize("filter_is_constant", [True, False])
def test_int8_per_tensor_filter_with_zero_point(filter_is_constant):
    # A non-zero filter zero point brings in the filter_offset * sum(x) term;
    # a filter that is a graph input has no row terms and adds offsets per term.
    rng = np.random.default_rng(8)
    mb = ModelBuilder()
    x = mb.add_tensor((3, 9), "int8", int8_quant(-2.0, 1.0))
    weights = rng.integers(-120, 120, size=(6, 9)).astype(np.int8)
    w = mb.add_tensor(weights.shape, "int8", Quantization((0.02,), (5,)), data=weights if filter_is_constant else None)
    bias = rng.integers(-500, 500, size=6).astype(np.int32)
    b = mb.add_tensor((6,), "int32", Quantization((0.02 * mb.tensors[x].quant.scales[0],), (0,)), data=bias)
    y = mb.add_tensor((3, 6), "int8", int8_quant(-6.0, 6.0))
    mb.add_op("FULLY_CONNECTED", (x, w, b), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([x] if filter_is_constant else [x, w], [y])
    graph = read_model(mb.build())
    terms = lower(graph.operators[0], graph).params["row_offset_terms"]
    assert (terms == "NULL") == (not filter_is_constant)
    assert_matches_reference(mb.build(), inputs=4)
