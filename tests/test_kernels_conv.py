"""CONV_2D and DEPTHWISE_CONV_2D kernels against the TFLite reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Quantization
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, int8_quant

# (kernel, strides, padding, dilation, activation): each row one op of the batch model.
CONV_VARIANTS = [
    ((3, 3), (1, 1), "SAME", (1, 1), "NONE"),
    ((3, 3), (2, 1), "SAME", (1, 1), "RELU6"),
    ((2, 3), (1, 2), "VALID", (2, 1), "RELU"),
    ((1, 1), (2, 2), "VALID", (1, 1), "RELU_N1_TO_1"),
    ((4, 2), (3, 3), "SAME", (1, 2), "NONE"),
]


@pytest.mark.parametrize("seed", [0, 1])
def test_int8_conv_2d(seed):
    net = Int8Net(seed)
    x = net.input((1, 9, 11, 3), -2.0 + seed, 1.5)
    outputs = [
        net.conv2d(x, 4 + i, kernel=k, strides=s, padding=p, dilation=d, activation=a)
        for i, (k, s, p, d, a) in enumerate(CONV_VARIANTS)
    ]
    assert_matches_reference(net.build(*outputs), seed=seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_int8_depthwise_conv_2d(seed):
    net = Int8Net(seed + 10)
    x = net.input((2, 8, 7, 4), -1.0, 1.0 + seed)
    outputs = [
        net.depthwise_conv2d(x, kernel=k, strides=s, padding=p, dilation=d, activation=a, depth_multiplier=1 + i % 3)
        for i, (k, s, p, d, a) in enumerate(CONV_VARIANTS)
    ]
    assert_matches_reference(net.build(*outputs), seed=seed)


def test_int8_grouped_conv_with_per_tensor_filter():
    # 6 input channels in 2 groups of 3, one filter scale.
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    x = mb.add_tensor((1, 6, 6, 6), "int8", int8_quant(-1.0, 2.0))
    weights = rng.integers(-127, 128, size=(4, 3, 3, 3)).astype(np.int8)
    w = mb.add_tensor(weights.shape, "int8", Quantization((0.004,), (0,)), data=weights)
    bias = rng.integers(-300, 300, size=4).astype(np.int32)
    b = mb.add_tensor((4,), "int32", Quantization((0.004 * mb.tensors[x].quant.scales[0],), (0,)), data=bias)
    y = mb.add_tensor((1, 6, 6, 4), "int8", int8_quant(-3.0, 3.0))
    mb.add_op("CONV_2D", (x, w, b), (y,), {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    mb.set_io([x], [y])
    assert_matches_reference(mb.build())


def test_float_conv_and_depthwise():
    net = FloatNet(seed=5)
    x = net.input((1, 7, 8, 3))
    outputs = []
    for i, ((kh, kw), (sh, sw), padding, (dh, dw), activation) in enumerate(CONV_VARIANTS):
        options = {
            "padding": padding,
            "stride_h": sh,
            "stride_w": sw,
            "dilation_h_factor": dh,
            "dilation_w_factor": dw,
            "fused_activation_function": activation,
        }

        def out_size(n, k, s, d, padding=padding):
            return (n + s - 1) // s if padding == "SAME" else (n - (k - 1) * d - 1 + s) // s

        oh, ow = out_size(7, kh, sh, dh), out_size(8, kw, sw, dw)
        channels = 2 + i
        w = net.const((channels, kh, kw, 3), 0.4)
        b = net.const((channels,), 0.2)
        outputs.append(net.op("CONV_2D", (x, w, b), (1, oh, ow, channels), options))
        multiplier = 1 + i % 2
        dw_w = net.const((1, kh, kw, 3 * multiplier), 0.4)
        dw_b = net.const((3 * multiplier,), 0.2)
        outputs.append(
            net.op(
                "DEPTHWISE_CONV_2D",
                (x, dw_w, dw_b),
                (1, oh, ow, 3 * multiplier),
                {**options, "depth_multiplier": multiplier},
            )
        )
    assert_matches_reference(net.build(*outputs))


def test_float_conv_four_channels_per_pass_stop_at_group_and_channel_ends():
    """The float kernels sum four output channels per pass: a grouped conv
    with 5 filters per group (one pass, then one channel, in each group), a
    depthwise conv with multiplier 3 (passes that straddle input channels)
    and 7 channels (a tail of 3), each bit-exact."""
    net = FloatNet(seed=11)
    x = net.input((1, 5, 6, 8))
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "NONE"}
    grouped = net.op("CONV_2D", (x, net.const((10, 3, 3, 4), 0.4), net.const((10,), 0.2)), (1, 5, 6, 10), options)
    y = net.input((1, 4, 5, 3))
    depthwise = net.op(
        "DEPTHWISE_CONV_2D",
        (y, net.const((1, 3, 3, 9), 0.4), net.const((9,), 0.2)),
        (1, 4, 5, 9),
        {**options, "depth_multiplier": 3},
    )
    wide = net.op("CONV_2D", (y, net.const((7, 2, 2, 3), 0.4), net.const((7,), 0.2)), (1, 4, 5, 7), options)
    assert_matches_reference(net.build(grouped, depthwise, wide))


def test_nonzero_filter_zero_point_is_not_lowerable():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 3, 3, 1), "int8", (0.1, 0))
    w = mb.add_tensor((1, 1, 1, 1), "int8", (0.1, 5), data=np.ones((1, 1, 1, 1), np.int8))
    y = mb.add_tensor((1, 3, 3, 1), "int8", (0.1, 0))
    mb.add_op("CONV_2D", (x, w, -1), (y,), {"padding": "VALID", "stride_h": 1, "stride_w": 1})
    mb.set_io([x], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="zero point"):
        lower(graph.operators[0], graph)


def test_int8_fast_paths_on_odd_sizes_and_batches():
    # Odd pixel and channel counts leave a lone pixel / channel after the
    # two-by-two blocks of the pointwise and one-group paths; a batch of two
    # checks the pixel walk across images; depth multipliers 1 and 4 take the
    # four-channel blocks, 2 the single channels; the 5x6 input has interior windows
    # (no per-tap offset) as well as border ones.
    net = Int8Net(21)
    x = net.input((2, 5, 6, 7), -1.5, 0.5)
    outputs = [
        net.conv2d(x, 5, kernel=(1, 1)),
        net.conv2d(x, 3, kernel=(1, 1), strides=(2, 3)),
        net.conv2d(x, 9, kernel=(3, 3), padding="SAME"),
        net.conv2d(x, 4, kernel=(2, 3), strides=(2, 1), padding="SAME", dilation=(2, 2)),
        net.depthwise_conv2d(x, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(x, kernel=(3, 2), strides=(2, 2), padding="SAME", depth_multiplier=2),
        net.depthwise_conv2d(x, kernel=(3, 3), padding="VALID", dilation=(1, 2)),
        net.depthwise_conv2d(x, kernel=(4, 3), strides=(1, 2), padding="SAME", depth_multiplier=4),
    ]
    assert_matches_reference(net.build(*outputs))


def test_int8_conv_with_a_filter_computed_at_run_time():
    # A filter that is a graph input has no sums known at generation time:
    # the kernels then add the input offset per tap everywhere.
    mb = ModelBuilder()
    x = mb.add_tensor((1, 5, 5, 3), "int8", int8_quant(-1.0, 2.0))
    w = mb.add_tensor((4, 3, 3, 3), "int8", Quantization((0.01,), (0,)))
    bias = np.array([-200, 0, 50, 300], np.int32)
    b = mb.add_tensor((4,), "int32", Quantization((0.01 * mb.tensors[x].quant.scales[0],), (0,)), data=bias)
    y = mb.add_tensor((1, 5, 5, 4), "int8", int8_quant(-4.0, 4.0))
    mb.add_op("CONV_2D", (x, w, b), (y,), {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    mb.set_io([x, w], [y])
    graph = read_model(mb.build())
    assert lower(graph.operators[0], graph).params["window_offset_terms"] == "NULL"
    assert_matches_reference(mb.build())
