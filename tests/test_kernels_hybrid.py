"""Hybrid (dynamic-range) models: float32 activations with int8 weights.

FULLY_CONNECTED runs as TFLite's EvalHybrid does (the input quantized per
batch row when the op runs) and must give the reference's floats exactly;
so do CONV_2D and DEPTHWISE_CONV_2D, except the variants TFLite computes
wrongly, which exit 4 saying what to do instead."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.emit.codegen import lower_all
from mcu_planner.errors import UnsupportedModel
from mcu_planner.frontend.reader import read_model
from mcu_planner_testing.builder import Int8Net

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
            outputs.append(
                net.hybrid_fully_connected(
                    source,
                    7 + j,
                    activation=activation,
                    per_channel=(i + j) % 2 == 0,
                    asymmetric_quantize_inputs=asymmetric,
                )
            )
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


def test_hybrid_convolutions_match_the_reference_exactly():
    # CONV_2D with one filter scale, per-channel scales that are all equal
    # (both quantize the input symmetrically) and distinct per-channel scales
    # (asymmetrically); DEPTHWISE_CONV_2D (always per channel, asymmetric)
    # with depth multipliers and dilation; two batch images, each quantized
    # with its own factor; windows reaching into the padding.
    net = Int8Net(6)
    x = net.float_input((2, 7, 8, 3))
    positive = _float_op(net, "ADD", x, _constant(net, np.full((2, 7, 8, 3), 1.0)))
    outputs = []
    for i, filter_scales in enumerate(("one", "equal", "per_channel")):
        source = positive if i == 1 else x
        outputs.append(net.hybrid_conv2d(source, 4, filter_scales=filter_scales, activation=ACTIVATIONS[i]))
        outputs.append(
            net.hybrid_conv2d(
                x, 5, kernel=(2, 3), strides=(2, 1), padding="VALID", activation="RELU", filter_scales=filter_scales
            )
        )
    outputs += [
        net.hybrid_depthwise_conv2d(x, depth_multiplier=2),
        net.hybrid_depthwise_conv2d(positive, kernel=(3, 2), strides=(2, 2), dilation=(2, 2), activation="RELU6"),
    ]
    assert_matches_reference(net.build(*outputs), inputs=3)


@pytest.mark.parametrize(
    "layer, kwargs, why",
    [
        ("hybrid_conv2d", dict(filters=4, dilation=(2, 1)), "ignores its dilation"),
        ("hybrid_depthwise_conv2d", dict(filter_scales="one"), "reads one per channel"),
    ],
)
def test_hybrid_convolutions_the_reference_gets_wrong_exit_4_saying_what_to_do(layer, kwargs, why):
    net = Int8Net(5)
    x = net.float_input((1, 6, 6, 3))
    y = getattr(net, layer)(x, **kwargs)
    message = rf"hybrid \(dynamic-range\) model.*{why}.*full-integer quantization"
    with pytest.raises(UnsupportedModel, match=message):
        lower_all(read_model(net.build(y)))
