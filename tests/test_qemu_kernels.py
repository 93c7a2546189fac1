"""int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED on a Cortex-M under QEMU.

On cores with the DSP extension the inner products take four int8 values per
word through SMLAD, and on the Cortex-M55 (mps3-an547) the ones without
offsets take sixteen per Helium VMLADAVA (firmware/runtime/mcu_dsp.h): paths
the host build never compiles.  These models put them on the sizes where they
can go wrong: channel and depth counts that leave 1-3 values after the words
and 1-15 after the vectors, pixel and filter-row starts at every byte
alignment, windows inside the input (no offset) and at its border (offset per
tap, SXTAB16), and input zero points at both ends of the int8 range (input
offsets of 128 and -127).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import needs_cortex_m
from mcu_planner_testing.builder import Int8Net, ModelBuilder, int8_quant
from mcu_planner.graph import Quantization

from kernel_models import assert_matches_reference

pytestmark = needs_cortex_m

BOARDS = ["mps2-an386", "mps3-an547"]


def conv_model() -> bytes:
    net = Int8Net(31)
    # Input ranges [0, 3] and [-2, 0]: zero points -128 and 127.
    odd = net.input((1, 5, 7, 13), 0.0, 3.0)
    wide = net.input((2, 3, 3, 22), -2.0, 0.0)
    # 3 * 3 * 73 = 657 values per window: past the 640 that windows copied
    # into columns hold (mcu_conv.c), so these take the runs-per-row path.
    deep = net.input((1, 6, 5, 73), -1.0, 2.0)
    outputs = [
        net.conv2d(deep, 5, kernel=(3, 3), padding="SAME"),
        net.conv2d(deep, 3, kernel=(3, 3), strides=(1, 2), padding="SAME", activation="RELU"),
        # Pointwise: 13 channels (three words and one left over), 35 pixels
        # (a lone last pixel), 9 filters (a lone last filter).
        net.conv2d(odd, 9, kernel=(1, 1)),
        net.conv2d(odd, 6, kernel=(1, 1), strides=(2, 3)),
        net.conv2d(wide, 5, kernel=(1, 1), activation="RELU"),
        # Windows of up to 640 values go through columns (a whole window per
        # run, padding as the zero point): 3 * 3 * 13 = 117 at every border,
        # odd output widths (a lone last pixel), dilation and stride.
        net.conv2d(odd, 7, kernel=(3, 3), padding="SAME"),
        net.conv2d(odd, 4, kernel=(2, 3), strides=(2, 1), padding="SAME", dilation=(2, 2)),
        net.conv2d(wide, 3, kernel=(3, 2), padding="SAME", activation="RELU6"),
        net.conv2d(wide, 2, kernel=(2, 2), padding="VALID"),
        net.depthwise_conv2d(odd, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(wide, kernel=(3, 3), strides=(2, 2), padding="SAME", depth_multiplier=4),
        net.depthwise_conv2d(odd, kernel=(2, 3), padding="VALID", depth_multiplier=2),
    ]
    return net.build(*outputs)


def fully_connected_model() -> bytes:
    net = Int8Net(32)
    rows = net.input((3, 13), 0.0, 2.0)
    vector = net.input((1, 64), -1.0, 0.0)
    outputs = [
        net.fully_connected(rows, 7),  # four rows then three single ones
        net.fully_connected(rows, 4, activation="RELU"),
        net.fully_connected(vector, 10, activation="RELU6"),
        net.fully_connected(vector, 1),
    ]
    return net.build(*outputs)


def fully_connected_with_filter_zero_point() -> bytes:
    # A per-tensor filter with a zero point: fo * sum(x) joins the raw products.
    rng = np.random.default_rng(33)
    mb = ModelBuilder()
    x = mb.add_tensor((5, 19), "int8", int8_quant(-1.0, 3.0))
    weights = rng.integers(-128, 128, size=(6, 19)).astype(np.int8)
    w = mb.add_tensor(weights.shape, "int8", Quantization((0.01,), (-3,)), data=weights)
    bias = rng.integers(-500, 500, size=6).astype(np.int32)
    b = mb.add_tensor((6,), "int32", Quantization((0.01 * mb.tensors[x].quant.scales[0],), (0,)), data=bias)
    y = mb.add_tensor((5, 6), "int8", int8_quant(-30.0, 30.0))
    mb.add_op("FULLY_CONNECTED", (x, w, b), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([x], [y])
    return mb.build()


@pytest.mark.parametrize("board", BOARDS)
def test_int8_convolutions_on_odd_sizes(board):
    assert_matches_reference(conv_model(), inputs=2, target=board)


@pytest.mark.parametrize("board", BOARDS)
def test_int8_fully_connected_on_odd_sizes(board):
    assert_matches_reference(fully_connected_model(), inputs=2, target=board)


def test_int8_fully_connected_with_filter_zero_point():
    assert_matches_reference(fully_connected_with_filter_zero_point(), inputs=2, target="mps2-an386")
