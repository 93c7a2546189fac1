"""uint8, RESIZE_BILINEAR, ARG_MAX / ARG_MIN and hybrid FULLY_CONNECTED
kernels on a Cortex-M4F under QEMU: its FPU is single precision, so the
double steps of the hybrid input quantization run in software there, and
must still give the reference's floats exactly."""

from __future__ import annotations

from conftest import needs_cortex_m
from kernel_models import assert_matches_reference

from mcu_planner_testing.builder import Int8Net, Uint8Net

pytestmark = needs_cortex_m

BOARD = "mps2-an386"


def test_uint8_model_on_cortex_m4():
    net = Uint8Net(11)
    x = net.input((1, 6, 7, 3), -1.0, 2.0)
    y = net.conv2d(x, 5, kernel=(3, 3), activation="RELU6")
    z = net.depthwise_conv2d(y, dilation=(2, 2))
    a = net.add(y, z)
    outputs = [
        net.softmax(net.fully_connected(net.reshape(a, (1, 210)), 10)),
        net.resize_bilinear(a, (11, 13), align_corners=True),
        net.arg_max(a, 3, "int64"),
        net.concatenation(a, x, axis=3),
        net.average_pool2d(a),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2, target=BOARD)


def test_hybrid_and_int8_resize_arg_on_cortex_m4():
    net = Int8Net(12)
    f = net.float_input((3, 50))
    x = net.input((1, 5, 6, 4))
    image = net.float_input((1, 5, 5, 3))
    outputs = [
        net.hybrid_conv2d(image, 4, filter_scales="one"),
        net.hybrid_conv2d(image, 3, kernel=(2, 2), activation="RELU"),
        net.hybrid_depthwise_conv2d(image, depth_multiplier=2),
        net.hybrid_fully_connected(f, 6, asymmetric_quantize_inputs=True),
        net.hybrid_fully_connected(f, 5, per_channel=False, activation="RELU"),
        net.resize_bilinear(x, (9, 4), half_pixel_centers=True),
        net.arg_min(x, 2),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2, target=BOARD)
