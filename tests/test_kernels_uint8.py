"""uint8 models (the legacy TF1 / Coral quantization: asymmetric per-tensor
uint8 activations and weights, filters with non-zero zero points, int32
bias) against TFLite's uint8 reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED
from kernel_models import assert_matches_reference

from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Quantization
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import ModelBuilder, Uint8Net

CORAL = SHARED / "peer-tests" / "coral"


@pytest.mark.parametrize("seed", [0, 1])
def test_uint8_layers(seed):
    net = Uint8Net(seed)
    x = net.input((1, 9, 11, 3), -2.0 + seed, 1.5)
    outputs = [
        net.conv2d(x, 4, kernel=(3, 3), activation="RELU6"),
        net.conv2d(x, 5, kernel=(2, 3), strides=(1, 2), padding="VALID", dilation=(2, 1), activation="RELU"),
        net.depthwise_conv2d(x, depth_multiplier=2, strides=(2, 2), activation="RELU_N1_TO_1"),
        net.depthwise_conv2d(x, kernel=(3, 2), dilation=(2, 2)),
    ]
    y = net.conv2d(x, 6, kernel=(1, 1))
    z = net.conv2d(x, 6, kernel=(1, 1))
    outputs += [
        net.average_pool2d(y, (3, 3), (2, 2), "SAME", "RELU"),
        net.max_pool2d(y, (2, 2), (1, 1), "VALID"),
        net.add(y, z, activation="RELU"),
        net.sub(y, z),
        net.mul(y, z),
        net.add(y, net.input((1, 1, 11, 6), -0.5, 2.0)),  # broadcast
        net.concatenation(y, z, x, axis=3),  # three quantizations: rescaled in float
        net.concatenation(y, y, axis=1),  # alike: copied
        net.mean(y, (1, 2)),
        net.mean(z, (3,), keep_dims=False),
    ]
    f = net.fully_connected(net.reshape(y, (1, 9 * 11 * 6)), 10, activation="RELU")
    g = net.fully_connected(net.reshape(z, (9, 11 * 6)), 7)  # 9 batches
    outputs += [
        net.softmax(f),
        net.softmax(g, beta=0.5),
        net.logistic(g),
        net.tanh(g),
        net.relu(g),
        net.relu6(g),
        net.leaky_relu(g, 0.3),
        net.hard_swish(g),
    ]
    # Ops that move uint8 bytes or convert them.
    outputs += [
        net.pad(y, [(0, 0), (1, 2), (0, 1), (0, 0)]),
        net.transpose(y, (0, 3, 1, 2)),
        net.strided_slice(y, (0, 1, 0, 0), (1, 9, 11, 6), (1, 2, 3, 1)),
        net.resize_nearest_neighbor(y, (5, 20)),
        net.expand_dims(net.squeeze(f, (0,)), 0),
        net.quantize(g, -3.0, 1.0),
        net.dequantize(g),
    ]
    assert_matches_reference(net.build(*outputs), seed=seed)


def _add_conv(
    mb: ModelBuilder,
    inputs: list,
    outputs: list,
    input_q,
    filter_q,
    output_q,
    weights,
    bias,
    activation="NONE",
    depthwise=False,
) -> None:
    """One uint8 CONV_2D / DEPTHWISE_CONV_2D on a 5x5 input of its own, SAME padding."""
    in_channels = weights.shape[3]
    channels = in_channels if depthwise else weights.shape[0]
    x = mb.add_tensor((1, 5, 5, in_channels), "uint8", input_q)
    w = mb.add_tensor(weights.shape, "uint8", filter_q, data=weights)
    b = mb.add_tensor(bias.shape, "int32", (input_q[0] * filter_q[0], 0), data=bias)
    y = mb.add_tensor((1, 5, 5, channels), "uint8", output_q)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": activation}
    if depthwise:
        options["depth_multiplier"] = 1
    mb.add_op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", (x, w, b), (y,), options)
    inputs.append(x)
    outputs.append(y)


# (input, filter, output) zero points at both ends of the range and between.
EXTREME_ZERO_POINTS = [(0, 255, 0), (255, 0, 255), (128, 1, 200), (3, 254, 128)]


def test_uint8_convolution_extreme_zero_points():
    # Offsets at both ends of the range and a small output scale: sums reach
    # +-255*255 per tap, outputs saturate at 0 and 255, and padded taps
    # (SAME on 5x5) must contribute nothing, not the filter offset.
    mb, inputs, outputs = ModelBuilder("uint8 zero points"), [], []
    for depthwise in (False, True):
        for input_zp, filter_zp, output_zp in EXTREME_ZERO_POINTS:
            rng = np.random.default_rng(input_zp + 7 * filter_zp + depthwise)
            shape = (1, 3, 3, 4) if depthwise else (3, 3, 3, 4)
            weights = rng.integers(0, 256, size=shape).astype(np.uint8)
            bias = rng.integers(-5000, 5000, size=shape[3] if depthwise else shape[0]).astype(np.int32)
            _add_conv(
                mb,
                inputs,
                outputs,
                (0.02, input_zp),
                (0.01, filter_zp),
                (0.05, output_zp),
                weights,
                bias,
                depthwise=depthwise,
            )
    # Power-of-two scales make acc * multiplier land exactly on .5 for odd
    # sums: the rounding of the single per-tensor multiplier decides.
    weights = (np.arange(36, dtype=np.uint8).reshape(1, 3, 3, 4) * 7).astype(np.uint8)
    _add_conv(
        mb,
        inputs,
        outputs,
        (0.5, 128),
        (0.25, 100),
        (4.0, 10),
        weights,
        np.arange(4, dtype=np.int32),
        "RELU6",
        depthwise=True,
    )
    mb.set_io(inputs, outputs)
    assert_matches_reference(mb.build(), inputs=4)


def test_uint8_per_channel_filter_is_not_lowerable():
    # TFLite's uint8 kernels read one filter scale; a model with several
    # would silently compute something else, so it is refused.
    mb = ModelBuilder()
    x = mb.add_tensor((1, 3, 3, 1), "uint8", (0.1, 128))
    w = mb.add_tensor(
        (2, 1, 1, 1), "uint8", {"scales": [0.1, 0.2], "zero_points": [128, 128]}, data=np.ones((2, 1, 1, 1), np.uint8)
    )
    y = mb.add_tensor((1, 3, 3, 2), "uint8", (0.1, 128))
    mb.add_op("CONV_2D", (x, w, -1), (y,), {"padding": "VALID", "stride_h": 1, "stride_w": 1})
    mb.set_io([x], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="per-channel"):
        lower(graph.operators[0], graph)


def test_uint8_softmax_with_another_output_quantization_is_not_lowerable():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 10), "uint8", (0.1, 128))
    y = mb.add_tensor((1, 10), "uint8", Quantization((1 / 256,), (128,)))
    mb.add_op("SOFTMAX", (x,), (y,), {"beta": 1.0})
    mb.set_io([x], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="zero point 0"):
        lower(graph.operators[0], graph)


needs_coral = pytest.mark.skipif(
    not CORAL.is_dir(), reason=f"../shared/peer-tests/coral is absent (looked for {CORAL})"
)


@needs_coral
@pytest.mark.shared
@pytest.mark.parametrize(
    "name, inputs",
    [
        ("mobilenet_v1_0.5_160_quant", 3),
        # 513x513 input, 2 MB of weights: one input set keeps the suite quick.
        ("deeplabv3_mnv2_dm05_pascal_quant", 1),
        # int8 with a uint8 input; its keypoint decoding is CAST, GATHER_ND
        # and int32 FLOOR_DIV / MUL / SUB on activations.
        ("movenet_single_pose_lightning_ptq", 1),
    ],
)
def test_coral_uint8_models_match_the_reference(name, inputs):
    report = check_model(CORAL / f"{name}.tflite", inputs=inputs, seed=0, raise_on_mismatch=False)
    assert report.total == inputs
    assert report.passed, report.mismatch_message()


def test_uint8_concatenation_rescales_ties_and_saturates_as_the_reference():
    # Scale ratios 1/2 and 1/4 put every odd input exactly on .5 (and .25 /
    # .75) after rescaling, on both sides of zero; zero points 0 and 255 and
    # an output range narrower than the inputs' make both ends saturate.
    mb = ModelBuilder("uint8 concat ties")
    a = mb.add_tensor((1, 4, 4, 3), "uint8", (0.5, 0))
    b = mb.add_tensor((1, 4, 4, 2), "uint8", (0.25, 255))
    c = mb.add_tensor((1, 4, 4, 1), "uint8", (1.0, 10))  # the output's own quantization: copied
    y = mb.add_tensor((1, 4, 4, 6), "uint8", (1.0, 10))
    mb.add_op("CONCATENATION", (a, b, c), (y,), {"axis": 3, "fused_activation_function": "NONE"})
    mb.set_io([a, b, c], [y])
    graph = read_model(mb.build())
    assert lower(graph.operators[0], graph).params["rescale"].values == (1, 1, 0)
    assert_matches_reference(mb.build(), inputs=4)
