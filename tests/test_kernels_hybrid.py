"""Hybrid (dynamic-range) models: float32 activations with int8 weights.

FULLY_CONNECTED runs as TFLite's EvalHybrid does (the input quantized per
batch row when the op runs) and must give the reference's floats exactly;
hybrid convolutions are refused with a message that says what to do."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.builder import Int8Net
from mcu_planner.codegen import lower_all
from mcu_planner.errors import UnsupportedModel
from mcu_planner.graph import Quantization
from mcu_planner.reader import read_model

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _constant(net: Int8Net, values: np.ndarray) -> int:
    return net.mb.add_tensor(values.shape, "float32", data=values.astype(np.float32))


def _float_op(net: Int8Net, opcode: str, a: int, b: int) -> int:
    y = net.mb.add_tensor(net.shape(a), "float32")
    net.mb.add_op(opcode, (a, b), (y,), {"fused_activation_function": "NONE"})
    return y


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_fully_connected_matches_the_reference_exactly(asymmetric):
    # Per-channel and per-tensor weights, every fused activation, several
    # batch rows (each quantized with its own factor), and input rows that
    # move the quantization to its edges: all positive (the asymmetric zero
    # point at -128), large, tiny, and a depth that is not a multiple of the
    # kernel's 64-value chunks.
    net = Int8Net(3)
    x = net.float_input((5, 70))
    shift = _constant(net, np.full((5, 70), 1.0))  # inputs in [0, 2): no negative value
    scale = _constant(net, np.geomspace(1e-4, 1e3, 5).reshape(5, 1) * np.ones((5, 70)))
    variants = [x, _float_op(net, "ADD", x, shift), _float_op(net, "MUL", x, scale)]
    outputs = []
    for i, source in enumerate(variants):
        for j, activation in enumerate(ACTIVATIONS):
            outputs.append(net.hybrid_fully_connected(
                source, 7 + j, activation=activation, per_channel=(i + j) % 2 == 0,
                asymmetric_quantize_inputs=asymmetric))
    assert_matches_reference(net.build(*outputs), inputs=4, seed=int(asymmetric))


def test_hybrid_fully_connected_of_an_all_zero_input_gives_the_bias():
    # The reference skips the product for an all-zero input (IsZeroVector),
    # and a row of zeros quantizes to zeros with factor 1 otherwise.
    net = Int8Net(4)
    x = net.float_input((2, 33))
    zeros = _float_op(net, "MUL", x, _constant(net, np.zeros((2, 33))))
    one_zero_row = _float_op(net, "MUL", x, _constant(net, np.array([[0.0] * 33, [1.0] * 33])))
    outputs = [
        net.hybrid_fully_connected(zeros, 5, activation="RELU"),
        net.hybrid_fully_connected(one_zero_row, 5, asymmetric_quantize_inputs=True),
        net.hybrid_fully_connected(one_zero_row, 6, per_channel=False),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)


def test_hybrid_convolution_exits_4_saying_what_to_do():
    net = Int8Net(5)
    x = net.float_input((1, 6, 6, 3))
    weights = np.ones((4, 3, 3, 3), np.int8)
    w = net.mb.add_tensor(weights.shape, "int8", Quantization((0.01,), (0,)), data=weights)
    b = net.mb.add_tensor((4,), "float32", data=np.zeros(4, np.float32))
    y = net.mb.add_tensor((1, 6, 6, 4), "float32")
    net.mb.add_op("CONV_2D", (x, w, b), (y,), {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    with pytest.raises(UnsupportedModel, match=r"hybrid \(dynamic-range\) model.*full-integer quantization"):
        lower_all(read_model(net.build(y)))
