"""int8 kernels with Cortex-M paths (DSP, Helium) under QEMU.

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

import contextlib
import re
import subprocess

import numpy as np
import pytest
from conftest import compact_columns_everywhere, needs_cortex_m
from kernel_models import Branches, assert_firmware_matches_reference, assert_matches_reference, fp16_tables_header

from mcu_planner.emit.output_dir import write_output
from mcu_planner.emit.resources import firmware_dir
from mcu_planner.graph import Quantization
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.check import check_model
from mcu_planner.targets.firmware_build import build_firmware
from mcu_planner.targets.qemu import run_firmware
from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, Uint8Net, int8_quant, lstm_model

pytestmark = needs_cortex_m

BOARDS = ["mps2-an386", "mps3-an547"]


def conv_model() -> bytes:
    net = Int8Net(31)
    # Input ranges [0, 3] and [-2, 0]: zero points -128 and 127.
    odd = net.input((1, 5, 7, 13), 0.0, 3.0)
    wide = net.input((2, 3, 3, 22), -2.0, 0.0)
    # 3 * 3 * 73 = 657 values per window: past the 640 that windows copied
    # into columns held before they became planned scratch.
    deep = net.input((1, 6, 5, 73), -1.0, 2.0)
    outputs = [
        net.conv2d(deep, 5, kernel=(3, 3), padding="SAME"),
        net.conv2d(deep, 3, kernel=(3, 3), strides=(1, 2), padding="SAME", activation="RELU"),
        # Pointwise: 13 channels (three words and one left over), 35 pixels
        # (a lone last pixel), 9 filters (a lone last filter).
        net.conv2d(odd, 9, kernel=(1, 1)),
        net.conv2d(odd, 6, kernel=(1, 1), strides=(2, 3)),
        net.conv2d(wide, 5, kernel=(1, 1), activation="RELU"),
        # Windows of up to 1,024 values go through columns (a whole window per
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


def block_edge_model() -> bytes:
    """Sizes at the edges of the multi-pixel blocks: on the Cortex-M55 (Helium,
    mcu_conv_helium.h) rows of exactly 16 and 144 values (no tail lanes) and
    of 64 with the padding as zero point, pixel counts that leave 1-3 after
    the blocks of four; on both cores depthwise runs of inside pixels along a
    row and down a one-column output, channel tails of 2, dilation, and a
    depth multiplier of 8 on one input channel with stride 2."""
    net = Int8Net(34)
    sixteen = net.input((1, 3, 5, 16), -1.0, 1.0)
    # Three input columns, one output column: the run down the column steps
    # a whole input row at a time.
    column = net.input((1, 9, 3, 6), 0.0, 4.0)
    mono = net.input((1, 9, 9, 1), -3.0, 0.0)
    outputs = [
        net.conv2d(sixteen, 5, kernel=(1, 1)),
        net.conv2d(sixteen, 3, kernel=(3, 3), padding="SAME", activation="RELU"),
        net.conv2d(sixteen, 4, kernel=(2, 2), strides=(2, 2), padding="SAME"),
        net.depthwise_conv2d(column, kernel=(3, 3), padding="VALID"),
        net.depthwise_conv2d(column, kernel=(2, 3), padding="VALID", dilation=(3, 1)),
        net.depthwise_conv2d(sixteen, kernel=(3, 3), padding="SAME", dilation=(1, 2)),
        net.depthwise_conv2d(mono, kernel=(3, 3), strides=(2, 2), padding="VALID", depth_multiplier=8),
    ]
    return net.build(*outputs)


def helium_rows_model() -> bytes:
    """Rows of 17 to 128 values, the lengths whose channel loops the
    Cortex-M55 compiles per number of vectors (mcu_conv_helium_rows.c:
    immediate offsets, the last vector under a tail predicate): 2 to 8
    vectors with and without a tail, and 129 values (the loop kept for longer
    rows); pointwise pixels and windows copied into columns, pixel counts
    that leave 1-3 after the passes of four, stride 2 (rows not one after
    another) and an odd number of filters."""
    net = Int8Net(41)
    outputs = []
    # 15 pixels: three passes of four and one of three.
    depths = (17, 32, 47, 48, 63, 64, 73, 80, 90, 96, 99, 112, 127, 128, 129)
    # Four or more filters (the unrolled loops take groups of four), 1-3 left
    # over; 129 values and 3 filters: only the loop over the channels left.
    for depth, filters in zip(depths, (5, 5, 4, 6, 7, 6, 5, 7, 5, 4, 6, 6, 9, 5, 3), strict=True):
        x = net.input((1, 3, 5, depth), -1.0, 2.0 if depth % 2 else 1.0)
        outputs.append(net.conv2d(x, filters, kernel=(1, 1)))
    # 3 x 3 windows of 36 and 108 values (3 and 7 vectors, tails of 4 and
    # 12), 2 x 2 of 128 (8 whole vectors); 9 and 13 pixels (lone last ones).
    windows = net.input((1, 3, 3, 4), 0.0, 3.0)
    wide = net.input((1, 3, 3, 12), -2.0, 0.0)
    deep = net.input((1, 5, 6, 32), -1.0, 1.0)
    outputs += [
        net.conv2d(windows, 6, kernel=(3, 3), padding="SAME", activation="RELU"),
        net.conv2d(wide, 5, kernel=(3, 3), padding="SAME"),
        net.conv2d(deep, 3, kernel=(2, 2), strides=(2, 2), padding="SAME", activation="RELU6"),
        net.conv2d(deep, 4, kernel=(1, 1), strides=(2, 2)),
    ]
    return net.build(*outputs)


def helium_interleaved_model() -> bytes:
    """Windows of whole vectors past the unrolled rows (input_c 16, 32, 48:
    144 to 432 values) that the Cortex-M55 copies into interleaved columns
    (mcu_conv_helium_interleaved.c): 1 to 3 channels left after the groups
    of four, passes of 1-3 pixels at the end, SAME padding on every side,
    windows wider than the input, stride 2, dilation down the rows, two
    images, input zero points at both ends of int8."""
    net = Int8Net(43)
    sixteen = net.input((1, 5, 7, 16), -1.0, 1.0)
    low = net.input((1, 4, 5, 32), 0.0, 3.0)
    high = net.input((2, 3, 3, 48), -2.0, 0.0)
    outputs = [
        net.conv2d(sixteen, 5, kernel=(3, 3), padding="SAME"),  # 35 pixels
        net.conv2d(sixteen, 6, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(sixteen, 4, kernel=(1, 9), padding="SAME"),  # wider than the input
        net.conv2d(sixteen, 8, kernel=(3, 3), padding="SAME", dilation=(2, 1)),
        net.conv2d(low, 7, kernel=(3, 3), padding="VALID", activation="RELU6"),  # 6 pixels
        net.conv2d(high, 9, kernel=(3, 3), padding="SAME"),  # 18 pixels
    ]
    return net.build(*outputs)


def column_filter_model() -> bytes:
    """Depthwise (k, 1) filters over one-column inputs, the layers of
    streaming models: on the Cortex-M55 their passes take one loop over the
    rows (mcu_depthwise_helium.c; mcu_helium_depthwise_group for multiplier
    4).  Runs down the column that
    end in a lone pixel, one-pixel outputs, border rows in the padding,
    channel tails of 2, depth multiplier 4 and stride 2."""
    net = Int8Net(39)
    tail = net.input((1, 9, 1, 6), -1.0, 3.0)
    single = net.input((1, 5, 1, 10), -2.0, 2.0)
    narrow = net.input((1, 7, 1, 2), 0.0, 1.0)
    outputs = [
        net.depthwise_conv2d(tail, kernel=(5, 1), padding="VALID"),
        net.depthwise_conv2d(tail, kernel=(5, 1), padding="SAME", activation="RELU"),
        net.depthwise_conv2d(tail, kernel=(3, 1), strides=(2, 1), padding="SAME"),
        net.depthwise_conv2d(single, kernel=(5, 1), padding="VALID"),
        net.depthwise_conv2d(narrow, kernel=(3, 1), padding="SAME", depth_multiplier=4),
        net.depthwise_conv2d(narrow, kernel=(7, 1), padding="VALID", depth_multiplier=4),
    ]
    return net.build(*outputs)


def depthwise_3x3_model() -> bytes:
    """The 3 x 3 depthwise path of cores with the DSP extension and no Helium
    (mcu_depthwise_3x3_dsp.c, channels in groups of four): 4 to 12 channels,
    depth multipliers 1, 4 and 8 (on 1, 2 and 8 input channels), strides 1
    and 2 (and mixed), SAME and VALID padding, odd sizes, two
    batches, inputs smaller than the window (every pixel at the border), the
    full int8 range (SSAT) and RELU / RELU6 clamps, input zero points at both
    ends of int8."""
    net = Int8Net(41)
    odd = net.input((1, 7, 9, 12), 0.0, 3.0)
    even = net.input((2, 6, 5, 8), -2.0, 0.0)
    tiny = net.input((1, 2, 1, 8), -1.0, 1.0)
    wide = net.input((1, 5, 11, 4), -0.5, 2.5)
    mono = net.input((1, 9, 8, 1), 0.0, 1.0)
    pair = net.input((1, 5, 6, 2), -3.0, 1.0)
    outputs = [
        net.depthwise_conv2d(odd, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(odd, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="RELU6"),
        net.depthwise_conv2d(odd, kernel=(3, 3), strides=(2, 2), padding="VALID"),
        net.depthwise_conv2d(even, kernel=(3, 3), padding="SAME", activation="RELU"),
        net.depthwise_conv2d(even, kernel=(3, 3), strides=(2, 2), padding="SAME"),
        net.depthwise_conv2d(tiny, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(wide, kernel=(3, 3), strides=(1, 2), padding="SAME"),
        net.depthwise_conv2d(wide, kernel=(3, 3), strides=(2, 1), padding="VALID", activation="RELU6"),
        # Depth multipliers divisible by 4: four channels share each input value.
        net.depthwise_conv2d(mono, kernel=(3, 3), strides=(2, 2), padding="SAME", depth_multiplier=8),
        net.depthwise_conv2d(pair, kernel=(3, 3), padding="SAME", depth_multiplier=4, activation="RELU6"),
        net.depthwise_conv2d(even, kernel=(3, 3), strides=(2, 2), padding="VALID", depth_multiplier=4),
    ]
    return net.build(*outputs)


def small_window_model() -> bytes:
    """Windows of 17 to 64 values on the Cortex-M55: first layers of up to
    two vectors on the first-layer passes (mcu_conv_helium_small.c), longer
    ones (10x4x1, 4x4x4) on the rows; rows of 9 and 16 values, border
    windows at every side, channel counts past 32 with a tail of 1, 2 or 3,
    two images, input zero points at both ends of int8; and windows of 16
    or fewer (2x2x4, 3x3x1 dilated)."""
    net = Int8Net(41)
    rgb = net.input((1, 11, 13, 3), 0.0, 3.0)
    mono = net.input((2, 12, 7, 1), -2.0, 0.0)
    quad = net.input((1, 6, 9, 4), -1.0, 2.0)
    outputs = [
        net.conv2d(rgb, 8, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(rgb, 37, kernel=(3, 3), padding="VALID"),
        net.conv2d(rgb, 6, kernel=(2, 5), strides=(1, 3), padding="SAME"),
        net.conv2d(mono, 6, kernel=(10, 4), strides=(2, 2), padding="SAME"),
        net.conv2d(mono, 5, kernel=(3, 3), padding="SAME", dilation=(2, 1)),
        net.conv2d(mono, 3, kernel=(3, 3), padding="SAME", dilation=(1, 2)),
        net.conv2d(quad, 4, kernel=(4, 4), strides=(1, 2), padding="SAME"),
        net.conv2d(quad, 3, kernel=(1, 5), padding="VALID"),
        net.conv2d(quad, 9, kernel=(2, 2), padding="SAME", activation="RELU6"),
    ]
    return net.build(*outputs)


def first_layer_model() -> bytes:
    """First layers (1-4 input channels) on Helium's first-layer passes
    (mcu_conv_helium_small.c) of one and two vectors, inside windows gathered
    or copied row by row: odd image sizes,
    strides, SAME and VALID padding, dilation down and across (across: every
    window through the border copy), windows of 4 to 30 values (16 exactly:
    no tail; a 10x4 one stays on the rows), channel counts of 1 to 37 (the last channel's tail read, groups
    of four with 1-3 left), passes ending on 1-3 pixels, two images, input
    zero points at both ends of int8."""
    net = Int8Net(47)
    rgb = net.input((1, 11, 13, 3), 0.0, 3.0)
    mono = net.input((2, 12, 7, 1), -2.0, 0.0)
    duo = net.input((1, 9, 8, 2), -1.0, 2.0)
    quad = net.input((1, 6, 9, 4), -1.0, 1.0)
    # Rows of 270 bytes: windows too tall to gather (taps over 255 bytes apart), copied row by row.
    wide = net.input((1, 4, 90, 3), -1.0, 1.0)
    outputs = [
        net.conv2d(rgb, 8, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(rgb, 37, kernel=(3, 3), padding="VALID"),
        net.conv2d(rgb, 6, kernel=(2, 5), strides=(1, 3), padding="SAME"),
        net.conv2d(rgb, 5, kernel=(1, 5), strides=(2, 1), padding="SAME", activation="RELU6"),
        net.conv2d(mono, 6, kernel=(10, 4), strides=(2, 2), padding="SAME"),
        net.conv2d(mono, 16, kernel=(4, 1), strides=(2, 1), padding="SAME"),
        net.conv2d(mono, 5, kernel=(3, 3), padding="SAME", dilation=(2, 1)),
        net.conv2d(mono, 3, kernel=(3, 3), padding="SAME", dilation=(1, 2)),
        net.conv2d(duo, 7, kernel=(3, 3), padding="SAME"),
        net.conv2d(duo, 1, kernel=(5, 3), strides=(1, 2), padding="VALID"),
        net.conv2d(quad, 9, kernel=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(quad, 2, kernel=(3, 2), strides=(2, 1), padding="SAME"),
        # Window rows of 20 values (past a vector): copied by the generic column copy.
        net.conv2d(quad, 3, kernel=(1, 5), padding="SAME"),
        net.conv2d(wide, 4, kernel=(3, 3), strides=(1, 3), padding="SAME"),
    ]
    return net.build(*outputs)


def few_channels_model() -> bytes:
    """First layers on cores with the DSP extension and no Helium: 1 to 4
    input channels, windows of 3 to 32 values in blocks of four pixels
    (mcu_conv_dsp_block.c: 1-3 pixels past the blocks) and of 36 and 40
    (mcu_conv_few_channels_dsp.c), word tails of 0-3, odd filter counts (a
    lone last filter), odd pixel counts (a lone last pixel), two batches, SAME and VALID,
    strides and dilation, RELU / RELU6 clamps, input zero points at both
    ends of int8."""
    net = Int8Net(43)
    rgb = net.input((1, 9, 11, 3), 0.0, 3.0)
    mono = net.input((1, 13, 6, 1), -2.0, 0.0)
    pair = net.input((2, 5, 5, 2), -1.0, 1.0)
    four = net.input((1, 6, 7, 4), -0.5, 2.5)
    # 3 x 3 RGB windows inside the input read straight from its rows
    # (mcu_conv_few_channels_dsp.c, few_rgb_lanes), zero point 127.
    rgb_high = net.input((1, 8, 10, 3), -2.0, 0.0)
    outputs = [
        net.conv2d(rgb_high, 5, kernel=(3, 3), padding="SAME", dilation=(2, 1)),
        net.conv2d(rgb_high, 9, kernel=(3, 3), strides=(1, 2), padding="VALID", activation="RELU"),
        net.conv2d(rgb, 8, kernel=(3, 3), strides=(2, 2), padding="SAME"),
        net.conv2d(rgb, 5, kernel=(3, 3), padding="VALID", activation="RELU6"),
        net.conv2d(mono, 7, kernel=(10, 4), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(mono, 3, kernel=(2, 2), padding="VALID"),
        net.conv2d(pair, 3, kernel=(2, 2), padding="SAME", dilation=(2, 1)),
        net.conv2d(pair, 4, kernel=(3, 3), strides=(2, 1), padding="SAME"),
        net.conv2d(four, 6, kernel=(3, 3), padding="SAME", activation="RELU6"),
        net.conv2d(four, 1, kernel=(1, 2), strides=(1, 2), padding="VALID"),
        net.conv2d(four, 3, kernel=(2, 4), padding="SAME"),
        net.conv2d(mono, 2, kernel=(1, 6), padding="VALID", activation="RELU"),
        net.conv2d(rgb, 3, kernel=(1, 1), activation="RELU6"),
    ]
    return net.build(*outputs)


def dsp_block_model() -> bytes:
    """The M4's blocks of eight pixels (mcu_conv_dsp_block.c): input channel
    counts leaving 1-3 taps after the words (5, 6, 7, 11) or none (8, 64),
    pixel counts leaving 1-7 after the blocks of eight and last blocks of
    four or fewer (21, 9, 4, 2 x 6), strided pointwise, windows at every
    border with stride and dilation, widened through an int8 column (input
    channels not a multiple of 4) or straight from the input, the longest
    window the blocks take (3 x 3 x 64 = 576 taps) and one past it, one and
    odd output channels."""
    net = Int8Net(36)
    five = net.input((1, 3, 7, 5), 0.0, 3.0)  # zero point -128
    six = net.input((2, 2, 3, 6), -2.0, 0.0)  # zero point 127
    seven = net.input((1, 3, 3, 7), -1.0, 2.0)
    eleven = net.input((1, 5, 4, 11), -1.0, 1.0)
    deep = net.input((1, 4, 3, 64), -1.0, 2.0)
    deeper = net.input((1, 3, 3, 65), -1.0, 1.0)
    outputs = [
        net.conv2d(five, 3, kernel=(1, 1)),
        net.conv2d(six, 1, kernel=(1, 1), activation="RELU"),
        net.conv2d(seven, 9, kernel=(1, 1), activation="RELU6"),
        net.conv2d(eleven, 5, kernel=(1, 1), strides=(2, 2)),
        net.conv2d(deep, 7, kernel=(1, 1)),
        net.conv2d(five, 4, kernel=(3, 3), padding="SAME"),
        net.conv2d(six, 3, kernel=(2, 2), padding="VALID", activation="RELU"),
        net.conv2d(seven, 2, kernel=(3, 3), strides=(2, 2), padding="SAME"),
        net.conv2d(eleven, 6, kernel=(3, 2), padding="SAME", dilation=(2, 1), activation="RELU6"),
        net.conv2d(deep, 5, kernel=(3, 3), padding="SAME"),
        net.conv2d(deep, 4, kernel=(2, 3), strides=(1, 2), padding="SAME", dilation=(2, 2)),
        net.conv2d(deeper, 3, kernel=(3, 3), padding="SAME"),
    ]
    return net.build(*outputs)


def depthwise_table_model() -> bytes:
    """Depthwise convolutions of multiplier 1 on the Cortex-M55
    (mcu_depthwise_helium.c: eight channels per vector, pixels in pairs):
    whole groups of eight (8, 24) and channel tails of 1 to 7 (3, 12, 15,
    17) after them, 3x3, 4x4 (16 taps), (7, 1) and (16, 1) filters, windows
    in the padding (the input offset per tap), stride 2, dilation, runs of
    odd lengths (a lone last pixel), two images, and input zero points at
    both ends of int8."""
    net = Int8Net(43)
    square = net.input((1, 7, 9, 8), 0.0, 3.0)
    column = net.input((1, 21, 1, 12), -2.0, 0.0)
    odd = net.input((1, 6, 11, 15), -1.0, 2.0)
    few = net.input((2, 5, 4, 3), 0.0, 1.0)
    wide = net.input((1, 5, 7, 17), -2.0, 0.0)
    deep = net.input((1, 4, 5, 24), -1.0, 1.0)
    outputs = [
        net.depthwise_conv2d(square, kernel=(3, 3), padding="SAME", activation="RELU"),
        net.depthwise_conv2d(square, kernel=(3, 3), strides=(2, 2), padding="SAME"),
        net.depthwise_conv2d(square, kernel=(4, 4), padding="SAME"),
        net.depthwise_conv2d(square, kernel=(2, 2), padding="VALID", dilation=(2, 3)),
        net.depthwise_conv2d(column, kernel=(7, 1), padding="SAME"),
        net.depthwise_conv2d(column, kernel=(16, 1), padding="VALID"),
        net.depthwise_conv2d(odd, kernel=(3, 3), padding="SAME", activation="RELU6"),
        net.depthwise_conv2d(odd, kernel=(3, 3), strides=(2, 2), padding="SAME"),
        net.depthwise_conv2d(odd, kernel=(3, 2), strides=(1, 2), padding="VALID", dilation=(2, 1)),
        net.depthwise_conv2d(few, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(few, kernel=(2, 3), strides=(2, 1), padding="VALID"),
        net.depthwise_conv2d(wide, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(wide, kernel=(5, 5), strides=(2, 2), padding="SAME", activation="RELU"),
        net.depthwise_conv2d(deep, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(deep, kernel=(3, 3), strides=(2, 2), padding="VALID"),
    ]
    return net.build(*outputs)


def per_channel_shift_model() -> bytes:
    """Per-channel rescales from 2^-25 to about 3.6: right shifts of every
    size (2^-24 the last the M4 blocks fold the output offset into, 2^-25
    past it), shift 0 and left shifts, with output zero points at both ends of
    int8, on a pointwise and a depthwise convolution; and pointwise ones
    whose every rescale is a right shift of 2 to 23 (the M4 blocks' channels
    in assembly), output zero points 127 and -128."""
    rng = np.random.default_rng(35)
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4, 6, 16), "int8", Quantization((0.05,), (-100,)))
    channels = 8
    rescales = [2.0**-20, 2.0**-9, 0.3, 0.75, 1.0, 3.6, 2.0**-24, 2.0**-25]
    folded = [2.0**-9, 0.2, 2.0**-24, 0.03, 0.12]
    out_scale = 0.02
    layers = [
        ("CONV_2D", (channels, 1, 1, 16), 127, rescales),
        ("DEPTHWISE_CONV_2D", (1, 3, 3, 16), -128, rescales),
        ("CONV_2D", (5, 1, 1, 16), 127, folded),
        ("CONV_2D", (3, 1, 1, 16), -128, folded[1:]),
    ]
    outputs = []
    for opcode, shape, out_zero_point, layer_rescales in layers:
        out_c = shape[0] if opcode == "CONV_2D" else shape[3]
        filter_scales = tuple(layer_rescales[c % len(layer_rescales)] * out_scale / 0.05 for c in range(out_c))
        weights = rng.integers(-127, 128, size=shape).astype(np.int8)
        axis = 0 if opcode == "CONV_2D" else 3
        w = mb.add_tensor(shape, "int8", Quantization(filter_scales, (0,) * out_c, axis), data=weights)
        bias = rng.integers(-2000, 2000, size=out_c).astype(np.int32)
        b = mb.add_tensor(
            (out_c,), "int32", Quantization(tuple(0.05 * s for s in filter_scales), (0,) * out_c), data=bias
        )
        y = mb.add_tensor((1, 4, 6, out_c), "int8", Quantization((out_scale,), (out_zero_point,)))
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
        if opcode == "DEPTHWISE_CONV_2D":
            options["depth_multiplier"] = 1
        mb.add_op(opcode, (x, w, b), (y,), options)
        outputs.append(y)
    mb.set_io([x], outputs)
    return mb.build()


def fused_activation_model() -> bytes:
    """Convolutions whose fused RELU / RELU6 is narrower than their int8
    output (the output range reaches below 0 and past 6, as in TFLM's
    mobilenet_v2): the M4 blocks' assembly saturates to int8 only and the
    activation is clamped after it.  Pointwise and 3 x 3 windows of 16
    input channels, and a first layer of 3, over 24 and 40 pixels (full
    blocks of eight)."""
    rng = np.random.default_rng(37)
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4, 6, 16), "int8", Quantization((0.05,), (-3,)))
    rgb = mb.add_tensor((1, 5, 8, 3), "int8", Quantization((0.02,), (5,)))
    layers = [
        (x, (12, 1, 1, 16), "RELU6", (-8.0, 8.0)),
        (x, (7, 3, 3, 16), "RELU", (-4.0, 4.0)),
        (rgb, (6, 3, 3, 3), "RELU6", (-8.0, 8.0)),
    ]
    outputs = []
    for source, shape, activation, (low, high) in layers:
        out_c, in_scale = shape[0], mb.tensors[source].quant.scales[0]
        window = shape[1] * shape[2] * shape[3]
        filter_scales = tuple(float(s) for s in rng.uniform(0.5, 2.0, out_c) * 3.0 / (127 * np.sqrt(window)))
        weights = rng.integers(-127, 128, size=shape).astype(np.int8)
        w = mb.add_tensor(shape, "int8", Quantization(filter_scales, (0,) * out_c, 0), data=weights)
        bias = rng.integers(-3000, 3000, size=out_c).astype(np.int32)
        b = mb.add_tensor(
            (out_c,), "int32", Quantization(tuple(in_scale * s for s in filter_scales), (0,) * out_c), data=bias
        )
        y = mb.add_tensor((*mb.tensors[source].shape[:3], out_c), "int8", int8_quant(low, high))
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": activation}
        mb.add_op("CONV_2D", (source, w, b), (y,), options)
        outputs.append(y)
    mb.set_io([x, rgb], outputs)
    return mb.build()


def dead_channel_model() -> bytes:
    """Channels of the M4 blocks by kind (mcu_conv_dsp_block.c,
    block_channel_kind): dead ones whose bias (+-2^30, as trained models keep
    for pruned channels) puts every output at one value, written without sums;
    one whose bias is past the doubled sums' bound but whose outputs still
    vary (the C loop on doubled lanes); right shifts past 22 (the offset
    added after the shift) and of 9 (folded in), interleaved so that the
    assembly takes runs of one to three channels; on 128 input channels
    (pointwise, 20 pixels: two blocks of eight and one of four) and on
    a 3 x 3 window of 8 channels (72 taps), output zero points -128 and 100."""
    rng = np.random.default_rng(37)
    mb = ModelBuilder()
    in_scale = 0.05
    # (rescale, bias): dead at both ends of int8, past the bound but live,
    # large and small right shifts.
    kinds = [
        (2.0**-28, -(2**30)),
        (2.0**-9, 300),
        (2.0**-26, 2**30),
        (2.0**-21, -(2**28) - 2**20),
        (2.0**-25, 5000),
        (2.0**-9, -700),
        (2.0**-12, 20000),
        (2.0**-30, -(2**30)),
        (2.0**-24, -3000),
        (2.0**-9, 0),
        (2.0**-9, 100),
    ]
    out_scale = 0.02
    layers = [((1, 4, 5, 128), (1, 1), -128), ((1, 5, 7, 8), (3, 3), 100)]
    outputs, inputs = [], []
    for shape, kernel, out_zero_point in layers:
        x = mb.add_tensor(shape, "int8", Quantization((in_scale,), (-3,)))
        out_c = len(kinds)
        filter_shape = (out_c, kernel[0], kernel[1], shape[3])
        filter_scales = tuple(rescale * out_scale / in_scale for rescale, _ in kinds)
        weights = rng.integers(-127, 128, size=filter_shape).astype(np.int8)
        w = mb.add_tensor(filter_shape, "int8", Quantization(filter_scales, (0,) * out_c, 0), data=weights)
        bias = np.array([b for _, b in kinds], dtype=np.int32)
        b = mb.add_tensor(
            (out_c,), "int32", Quantization(tuple(in_scale * s for s in filter_scales), (0,) * out_c), data=bias
        )
        y = mb.add_tensor(shape[:3] + (out_c,), "int8", Quantization((out_scale,), (out_zero_point,)))
        mb.add_op("CONV_2D", (x, w, b), (y,), {"padding": "SAME", "stride_h": 1, "stride_w": 1})
        inputs.append(x)
        outputs.append(y)
    mb.set_io(inputs, outputs)
    return mb.build()


def fully_connected_model() -> bytes:
    net = Int8Net(32)
    rows = net.input((3, 13), 0.0, 2.0)
    vector = net.input((1, 64), -1.0, 0.0)
    outputs = [
        net.fully_connected(rows, 7),  # four rows then three single ones
        net.fully_connected(rows, 4, activation="RELU"),
        net.fully_connected(vector, 10, activation="RELU6"),
        net.fully_connected(vector, 1),
        # 37 values: two whole vectors and a tail of 5, in the groups of
        # four rows and in the two rows left after them.
        net.fully_connected(net.input((2, 37), -2.0, 1.0), 6),
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
def test_int8_convolutions_at_the_block_edges(board):
    assert_matches_reference(block_edge_model(), inputs=2, target=board)


def test_int8_depthwise_3x3_on_the_dsp_path():
    assert_matches_reference(depthwise_3x3_model(), inputs=3, target="mps2-an386")


@pytest.mark.parametrize("compact", [False, True], ids=["blocks", "compact_columns"])
def test_int8_first_layer_convolutions_on_the_dsp_path(compact):
    # Blocks of eight pixels in the planned columns; compact_columns plans
    # none, and the windows go in blocks of four on the stack.
    with compact_columns_everywhere() if compact else contextlib.nullcontext():
        assert_matches_reference(few_channels_model(), inputs=3, target="mps2-an386")


@pytest.mark.parametrize("compact", [False, True], ids=["blocks", "compact_columns"])
def test_int8_convolutions_in_the_m4_dsp_blocks(compact):
    # compact_columns: the scratch a tight --ram budget plans; the kernels
    # must then leave the blocks for the paths that fit it.
    with compact_columns_everywhere() if compact else contextlib.nullcontext():
        assert_matches_reference(dsp_block_model(), inputs=2, target="mps2-an386")


def test_int8_fused_activations_narrower_than_the_output_in_the_m4_blocks():
    assert_matches_reference(fused_activation_model(), inputs=3, target="mps2-an386")


def test_int8_dead_and_far_shifted_channels_in_the_m4_blocks():
    assert_matches_reference(dead_channel_model(), inputs=3, target="mps2-an386")


def test_int8_convolution_rows_of_each_vector_count_on_helium():
    model = helium_rows_model()
    # Layers of four or more channels and pixels name each of the 14 loops (helium_rows_variant).
    _, _, files = generate_for_model(model, name="rows")
    named = set(re.findall(r"MCU_CONV_ROWS_S8\((\d+), ([01])\)", files["rows.c"].decode()))
    assert named == {(str(v), str(t)) for v in range(2, 9) for t in (0, 1)}
    assert_matches_reference(model, inputs=2, target="mps3-an547")


def test_int8_convolution_windows_in_interleaved_columns_on_helium():
    model = helium_interleaved_model()
    _, _, files = generate_for_model(model, name="interleaved")
    assert files["interleaved.c"].decode().count("MCU_CONV_INTERLEAVED_S8(4, 2)") == 6
    assert_matches_reference(model, inputs=2, target="mps3-an547")


def test_int8_depthwise_column_filters_on_helium():
    assert_matches_reference(column_filter_model(), inputs=2, target="mps3-an547")


def test_int8_depthwise_multiplier_1_on_helium():
    assert_matches_reference(depthwise_table_model(), inputs=2, target="mps3-an547")


def test_int8_small_convolution_windows_on_helium():
    assert_matches_reference(small_window_model(), inputs=2, target="mps3-an547")


def test_int8_first_layers_on_helium_link_only_their_passes(tmp_path):
    """The generator names each first layer's pass (helium_first_variant), so
    the firmware links both passes and only the rows loop of the 10x4 layer
    (none for the layers the passes run); every output equals the
    reference's."""
    model = first_layer_model()
    graph, _, files = generate_for_model(model, name="first")
    text = files["first.c"].decode()
    assert set(re.findall(r"MCU_CONV_FIRST_S8\((\d)\)", text)) == {"1", "2"}
    assert set(re.findall(r"MCU_CONV_ROWS_S8\((\d), ([01])\)", text)) == {("3", "1")}
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=256 * 1024)
    names = subprocess.run(["arm-none-eabi-nm", str(report.elf)], capture_output=True, text=True, check=True).stdout
    assert set(re.findall(r"\bmcu_conv_first_s8_(\d)\b", names)) == {"1", "2"}
    assert set(re.findall(r"\bunrolled_rows_(\d)_([01])\b", names)) == {("3", "1")}
    assert_firmware_matches_reference(report.elf, model, graph, "mps3-an547")


@pytest.mark.parametrize("board", BOARDS)
def test_int8_convolutions_with_per_channel_left_and_right_shifts(board):
    assert_matches_reference(per_channel_shift_model(), inputs=2, target=board)


@pytest.mark.parametrize("board", BOARDS)
def test_int8_fully_connected_on_odd_sizes(board):
    assert_matches_reference(fully_connected_model(), inputs=2, target=board)


def test_int8_fully_connected_without_bias_on_helium():
    """The four-lane rescale without a bias, 6 outputs (4 and 2 more), the
    input zero point at the low end."""
    rng = np.random.default_rng(39)
    mb = ModelBuilder()
    x = mb.add_tensor((3, 21), "int8", int8_quant(0.0, 4.0))
    weights = rng.integers(-127, 128, size=(6, 21)).astype(np.int8)
    w = mb.add_tensor(weights.shape, "int8", Quantization((0.02,), (0,)), data=weights)
    y = mb.add_tensor((3, 6), "int8", int8_quant(-10.0, 12.0))
    mb.add_op("FULLY_CONNECTED", (x, w, -1), (y,), {"fused_activation_function": "RELU"})
    mb.set_io([x], [y])
    assert_matches_reference(mb.build(), inputs=2, target="mps3-an547")


def test_int8_fully_connected_with_filter_zero_point():
    assert_matches_reference(fully_connected_with_filter_zero_point(), inputs=2, target="mps2-an386")


def elementwise_model() -> bytes:
    """ADD, SUB and MUL rows the Helium loop takes four lanes at a time: rows
    of 17 and 7 (1 and 3 left for the predicated tail), an input broadcast
    along the row (stride 0, gathered) and across rows, zero points at both
    ends of the int8 and uint8 ranges, output scales small enough that
    results saturate, and a MUL whose rescale exceeds 1 (a left shift)."""
    model = Branches("elementwise rows")
    a = model.input((3, 17), "int8", (0.02, -128))
    b = model.input((3, 17), "int8", (0.03, 127))
    row = model.input((1, 7), "int8", (0.05, 3))
    column = model.input((5, 1), "int8", (0.01, -100))
    ua = model.input((2, 9), "uint8", (0.04, 0))
    ub = model.input((2, 9), "uint8", (0.02, 255))
    model.op("ADD", (a, b), (3, 17), "int8", (0.05, -3), {"fused_activation_function": "NONE"})
    model.op("SUB", (a, b), (3, 17), "int8", (0.004, 10), {"fused_activation_function": "RELU6"})
    model.op("ADD", (row, column), (5, 7), "int8", (0.02, 127), {"fused_activation_function": "NONE"})
    model.op("MUL", (a, b), (3, 17), "int8", (0.0002, -128), {"fused_activation_function": "NONE"})
    model.op("MUL", (column, row), (5, 7), "int8", (2e-5, 0), {"fused_activation_function": "RELU"})
    model.op("ADD", (ua, ub), (2, 9), "uint8", (0.03, 128), {"fused_activation_function": "NONE"})
    model.op("MUL", (ua, ub), (2, 9), "uint8", (0.5, 7), {"fused_activation_function": "NONE"})
    return model.build()


def test_int8_uint8_elementwise_rows_on_helium():
    report = check_model(elementwise_model(), target="mps3-an547", inputs=2, extremes=True, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def add_16bit_lanes_model() -> bytes:
    """ADD and SUB of same-shaped rows, which Helium takes eight 16-bit lanes
    at a time (mcu_elementwise.c: add_rows_16bit): 1 to 69 values (whole
    passes of eight and tails of 1-7), equal input scales (both rescales the
    high mul alone), the smaller scale first (inputs swapped; for SUB the
    negated multiplier moves into the 16-bit factor) or second, zero points
    at both ends of the int8 and uint8 ranges, an output scale of twice the
    input scale (the output rounding hits ties at .5 for every odd sum, both
    signs), an input scale 2^-20 of the other (ties in the input rescale),
    and output scales small enough that results saturate."""
    model = Branches("ADD and SUB in 16-bit lanes")
    shapes = [(1,), (7,), (8,), (9,), (3, 23), (2, 5, 3)]
    ops = [
        ("ADD", (0.05, -128), (0.05, 127), (0.1, 0), "NONE"),
        ("SUB", (0.05, 127), (0.05, -128), (0.1, -1), "NONE"),
        ("ADD", (0.01, 3), (0.04, -128), (0.003, 127), "RELU"),
        ("SUB", (0.01, -128), (0.04, 5), (0.2, -128), "RELU6"),
        ("ADD", (0.5, 0), (0.5 * 2.0**-20, 1), (0.5, -7), "NONE"),
        ("SUB", (2.0**-20, -3), (1.0, 0), (1.0, 2), "NONE"),
    ]
    for shape, (opcode, q1, q2, out_q, activation) in zip(shapes, ops, strict=True):
        a = model.input(shape, "int8", q1)
        b = model.input(shape, "int8", q2)
        model.op(opcode, (a, b), shape, "int8", out_q, {"fused_activation_function": activation})
    ua = model.input((2, 11), "uint8", (0.02, 255))
    ub = model.input((2, 11), "uint8", (0.03, 0))
    model.op("ADD", (ua, ub), (2, 11), "uint8", (0.04, 128), {"fused_activation_function": "NONE"})
    model.op("SUB", (ub, ua), (2, 11), "uint8", (0.001, 255), {"fused_activation_function": "NONE"})
    return model.build()


def test_int8_uint8_add_sub_in_16bit_lanes_on_helium():
    report = check_model(add_16bit_lanes_model(), target="mps3-an547", inputs=3, extremes=True, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def float_quantize_model_and_inputs() -> tuple[bytes, list[list[np.ndarray]]]:
    """float32 QUANTIZE to int8, uint8 and int16, which Helium rounds four
    lanes at a time (mcu_quantize.c, VCVTA): 23 values (five passes, the
    last of three), quotients at ties (k + 0.5, both signs) and next to
    them, NaN, infinities, values past the int32 range and at its ends,
    subnormals and zeros, extreme zero points."""
    model = Branches("float QUANTIZE lanes")
    scale = 0.25
    outputs = [("int8", (scale, -128)), ("uint8", (scale, 255)), ("int16", (scale, 0)), ("int8", (scale, 127))]
    inputs = [model.input((1, 23), "float32") for _ in outputs]
    for x, (dtype, q) in zip(inputs, outputs, strict=True):
        model.op("QUANTIZE", (x,), (1, 23), dtype, q)
    edges = np.array(
        [0.125, -0.125, 0.375, -0.375, 0.1249, -0.1251, 31.875, -32.125, np.nan, np.inf, -np.inf, 1e30, -1e30]
        + [536870880.0, -536870912.0, 6e8, -6e8, 1e-40, -1e-40, 0.0, -0.0, 0.625, -0.625],
        dtype=np.float32,
    )
    rng = np.random.default_rng(3)
    sets = [[edges.reshape(1, 23) for _ in outputs]]
    sets.append([(rng.integers(-400, 400, size=(1, 23)) * 0.125).astype(np.float32) for _ in outputs])
    return model.build(), sets


def test_float_quantize_lanes_on_helium():
    model, sets = float_quantize_model_and_inputs()
    assert_matches_reference(model, inputs=len(sets), target="mps3-an547", input_sets=sets)


def softmax_lanes_model() -> bytes:
    """8-bit SOFTMAX, which Helium computes four lanes at a time for rows
    of SOFTMAX_LANES_MIN_DEPTH values or more (the exp on lanes,
    mcu_softmax.c's `_long_rows` entries): rows of 16, 17, 18, 19 and 40
    values (tails of every length), input scales from narrow to wide
    (differences below diff_min give the lowest output), zero points at both
    ends, betas, int8, uint8 and int16 outputs, a row of 300 close values (a
    large sum of exps: the rounding exponent of 31, the largest the lanes
    take; beyond it the reference interpreter itself aborts), and rows of 1,
    3 and 10 on the scalar entries of every output type."""
    model = Branches("softmax lanes")
    cases = [
        ((2, 1), "int8", (0.1, 0), 1.0),
        ((3, 3), "uint8", (0.05, 0), 2.0),
        ((2, 10), "int16", (0.4, 127), 0.7),
        ((2, 16), "int8", (0.05, -128), 2.0),
        ((2, 19), "int8", (0.4, 127), 0.7),
        ((2, 2, 17), "uint8", (0.3, 0), 1.0),
        ((1, 40), "int8", (0.02, 5), 4.0),
        ((3, 18), "int16", (0.25, -20), 0.5),
        ((1, 300), "int8", (0.002, 0), 1.0),
    ]
    for shape, out_dtype, in_q, beta in cases:
        in_dtype = "uint8" if out_dtype == "uint8" else "int8"
        x = model.input(shape, in_dtype, in_q)
        out_q = {"int8": (1 / 256, -128), "uint8": (1 / 256, 0), "int16": (1 / 65536, -32768)}[out_dtype]
        model.op("SOFTMAX", (x,), shape, out_dtype, out_q, {"beta": beta})
    return model.build()


def test_softmax_lanes_on_helium():
    report = check_model(softmax_lanes_model(), target="mps3-an547", inputs=3, extremes=True, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


# Helium kernels a firmware must and must not link, by the depthwise layer's
# multiplier and the SOFTMAX's row length (helium_depthwise_variant,
# SOFTMAX_LANES_MIN_DEPTH): the kernels of the other kind cost 1.8-5 KB.
DEPTHWISE_AND_SOFTMAX = {
    # multiplier, input channels (softmax depth = their product)
    "multiplier 1, short rows": (1, 8, {"mcu_depthwise_s8_1_0", "dw8_group_inside"}),
    "multiplier 4, long rows": (4, 5, {"mcu_depthwise_s8_4_0", "mcu_helium_depthwise_any_s8", "output_row_mve"}),
}
ALL_NAMED = {"mcu_depthwise_s8_1_0", "dw8_group_inside", "mcu_depthwise_s8_4_0", "mcu_helium_depthwise_any_s8",
             "output_row_mve", "mcu_depthwise_s8_1_1", "mcu_depthwise_s8_4_1"}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DEPTHWISE_AND_SOFTMAX))
def test_helium_links_only_the_depthwise_and_softmax_kernels_named(case, tmp_path):
    multiplier, channels, linked = DEPTHWISE_AND_SOFTMAX[case]
    net = Int8Net(47)
    x = net.input((1, 5, 6, channels), -1.0, 2.0)
    x = net.depthwise_conv2d(x, kernel=(3, 3), padding="SAME", depth_multiplier=multiplier)
    model = net.build(net.softmax(x))
    graph, _, files = generate_for_model(model, name="named")
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=64 * 1024)
    symbols = set(
        subprocess.run(["arm-none-eabi-nm", str(report.elf)], capture_output=True, text=True, check=True).stdout.split()
    )
    assert symbols & ALL_NAMED == linked
    assert_firmware_matches_reference(report.elf, model, graph, "mps3-an547")


def float_fully_connected_model() -> bytes:
    """Float rows four at a time, four columns per pass: depths of 19 and 6
    (3 and 2 left after the passes), 7 and 5 units (a lone last row), two
    batches, with and without a bias."""
    net = FloatNet(seed=34)
    deep = net.input((2, 19))
    short = net.input((1, 6))
    outputs = [
        net.op(
            "FULLY_CONNECTED",
            (deep, net.const((7, 19)), net.const((7,))),
            (2, 7),
            {"fused_activation_function": "RELU"},
        ),
        net.op("FULLY_CONNECTED", (short, net.const((5, 6)), -1), (1, 5), {"fused_activation_function": "NONE"}),
    ]
    return net.build(*outputs)


@pytest.mark.parametrize("board", BOARDS)
def test_float_fully_connected_on_odd_sizes(board):
    """Each output's sum in the reference's order: bit-exact, not only close."""
    assert_matches_reference(float_fully_connected_model(), inputs=2, target=board)


# The table reads of the LSTM's activations on eight lanes against the
# scalar ones (which the host tests check against gemmlowp on every input).
HELIUM_TABLE_CHECK = r"""
#include <stdint.h>
#include "mcu_quant.h"
#include "semihost.h"
#include "tables.h"

int main(void);
int main(void)
{
    static const mcu_fp16_table *const tables[] = {&r0, &r3, &r4, &r7, &r4_from_r3};
    uint32_t differences = 0u;
    int32_t start;
    int k, lane;
    for (start = INT16_MIN; start <= INT16_MAX; start += 8) {
        int16_t in[8], logistic[8], tanh[8];
        for (lane = 0; lane < 8; ++lane) {
            in[lane] = (int16_t)(start + lane);
        }
        for (k = 0; k < 5; ++k) {
            /* The logistic reads tables of their own. */
            vst1q_s16(logistic, mcu_fp16_table_logistic_x8(tables[k < 4 ? k : 0], vld1q_s16(in)));
            vst1q_s16(tanh, mcu_fp16_table_tanh_x8(tables[k], vld1q_s16(in)));
            for (lane = 0; lane < 8; ++lane) {
                differences += logistic[lane] != mcu_fp16_table_logistic(tables[k < 4 ? k : 0], in[lane]);
                differences += tanh[lane] != mcu_fp16_table_tanh(tables[k], in[lane]);
            }
        }
    }
    semihost_write0(differences == 0u ? "table lanes: equal\n" : "table lanes: DIFFER\n");
    semihost_exit(differences == 0u ? 0 : 1);
}
"""


def test_helium_table_logistic_and_tanh_equal_the_scalar_on_every_input(tmp_path):
    """The eight-lane reads of the LSTM's activation tables (mps3-an547):
    the tables of 0, 3, 4 and 7 integer bits (the ends and the gates' two)
    and the cell gate's (4 bits, reading the 3 bits' table at 2m below its
    first magnitude) on all 65536 inputs against the scalar reads."""
    net = Int8Net(35)
    _, _, files = generate_for_model(net.build(net.relu(net.input((1, 4)))), name="any")
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=64 * 1024, run_make=False)
    (outdir / "board" / "semihost_main.c").write_text(HELIUM_TABLE_CHECK)
    runtime = firmware_dir() / "runtime"
    quant = (runtime / "mcu_quant.h").read_text()
    for header in ["mcu_quant.h", *re.findall(r'#include "(\w+\.h)"', quant)]:  # it includes one per family
        (outdir / "board" / header).write_bytes((runtime / header).read_bytes())
    tables = {"r0": (0, None), "r3": (3, None), "r4": (4, None), "r7": (7, None), "r4_from_r3": (4, "r3")}
    (outdir / "board" / "tables.h").write_text(fp16_tables_header(tables))
    subprocess.run(["make", "-s", "-C", str(outdir), "firmware.elf"], check=True, capture_output=True, timeout=600)
    run = run_firmware(report.elf, machine="mps3-an547", inputs=[], num_outputs=0, timeout=600)
    assert run.exit_status == 0 and "equal" in run.console, run.console


# The rounding shift on four Helium lanes (the LSTM's cell update) against
# the scalar one at every tie and both neighbours, for each exponent the
# cell update takes (15 .. 21), over the range of products of two int16.
HELIUM_ROUNDING_CHECK = r"""
#include <stdint.h>
#include "mcu_dsp.h"
#include "mcu_requant.h"
#include "semihost.h"

int main(void);
int main(void)
{
    uint32_t differences = 0u;
    int32_t exponent, k, lane;
    for (exponent = 15; exponent <= 21; ++exponent) {
        const int32_t half = (int32_t)1 << (exponent - 1), count = (int32_t)1 << (31 - exponent);
        for (k = -count + 1; k < count; ++k) {
            int32_t in[4], out[4];
            for (lane = 0; lane < 4; ++lane) {
                in[lane] = k * half + (lane % 3) - 1;
            }
            vst1q_s32(out, mcu_rounding_divide_by_pot_x4(vld1q_s32(in), exponent));
            for (lane = 0; lane < 4; ++lane) {
                differences += out[lane] != mcu_rounding_divide_by_pot(in[lane], (int)exponent);
            }
        }
    }
    semihost_write0(differences == 0u ? "rounding lanes: equal\n" : "rounding lanes: DIFFER\n");
    semihost_exit(differences == 0u ? 0 : 1);
}
"""


def test_helium_rounding_shift_equals_the_scalar_at_every_tie(tmp_path):
    net = Int8Net(35)
    _, _, files = generate_for_model(net.build(net.relu(net.input((1, 4)))), name="any")
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=64 * 1024, run_make=False)
    (outdir / "board" / "semihost_main.c").write_text(HELIUM_ROUNDING_CHECK)
    runtime = firmware_dir() / "runtime"
    for header in ["mcu_dsp.h", "mcu_requant.h"]:
        (outdir / "board" / header).write_bytes((runtime / header).read_bytes())
    subprocess.run(["make", "-s", "-C", str(outdir), "firmware.elf"], check=True, capture_output=True, timeout=600)
    run = run_firmware(report.elf, machine="mps3-an547", inputs=[], num_outputs=0, timeout=600)
    assert run.exit_status == 0 and "equal" in run.console, run.console


@pytest.mark.parametrize(
    "variant",
    [
        dict(batch=2, time=3, n_input=5, n_cell=11),  # 8 lanes and a tail of 3
        # Gate products: 32 input columns (two whole vectors) and 17
        # recurrent ones (a vector and a tail of 1), 17 rows (four passes of
        # four and one row left), a cell clip (the cell update's lanes);
        # 21 and 16 columns, 16 rows (no row left).
        dict(batch=1, time=3, n_input=32, n_cell=17, cell_clip=0.4),
        dict(batch=2, time=2, n_input=21, n_cell=16, time_major=True),
        dict(
            batch=1,
            time=4,
            n_input=3,
            n_cell=9,
            n_output=4,
            cifg=True,
            peephole=True,
            layer_norm=True,
            projection=True,
            time_major=True,
            cell_scale_exponent=-9,
        ),
    ],
    ids=["plain", "long-rows", "long-rows-batch", "cifg-peephole-norm-projection"],
)
def test_int8_lstm_on_helium(variant):
    assert_matches_reference(
        lstm_model("int8", seed=36, input_range=(-4.0, 4.0), **variant), inputs=2, target="mps3-an547"
    )


@pytest.mark.parametrize("board", BOARDS)
def test_int8_svdf_on_odd_sizes(board):
    """The SVDF kernel's DSP and Helium paths (inner products four filters at
    a time, int16 time products by pairs or eight lanes, rank-1 units on four
    lanes) over several invocations, state carried over."""
    from test_kernels_svdf import int8_svdf_model

    assert_matches_reference(int8_svdf_model(), inputs=3, target=board)


def pool_model(net: Int8Net) -> bytes:
    """Every pooling variant of the host tests on 19 channels (a block of 16
    and 3 more) with zero points at both ends of the range."""
    from test_kernels_pool import POOL_VARIANTS

    low = net.input((2, 7, 9, 19), 0.0, 3.0)  # zero point at the low end
    high = net.input((1, 7, 9, 19), -3.0, 0.0)  # and at the high end
    outputs = []
    for pool, strides, padding, activation in POOL_VARIANTS:
        for x in (low, high):
            outputs.append(net.average_pool2d(x, pool, strides, padding, activation))
            outputs.append(net.max_pool2d(x, pool, strides, padding, activation))
    return net.build(*outputs)


@pytest.mark.parametrize("board", BOARDS)
def test_int8_pools_on_channel_blocks(board):
    assert_matches_reference(pool_model(Int8Net(37)), inputs=2, target=board)


def test_uint8_pools_on_helium():
    assert_matches_reference(pool_model(Uint8Net(38)), inputs=2, target="mps3-an547")


def requantize_model() -> bytes:
    """QUANTIZE between 8- and 16-bit types on 21 values (five passes of four
    lanes and one of one): rescale factors above one (a left shift) and below,
    zero points at the ends of each range, outputs that saturate."""
    model = Branches("requantize lanes")
    zero_points = {"int8": (-128, 127), "uint8": (0, 255), "int16": (0, 0)}
    pairs = [
        ("int8", "int8"),
        ("int8", "uint8"),
        ("uint8", "int8"),
        ("int8", "int16"),
        ("int16", "int8"),
        ("int16", "int16"),
    ]
    for in_dtype, out_dtype in pairs:
        for k, ratio in enumerate((3.7, 0.013)):
            in_scale = 0.05 if in_dtype != "int16" else 0.0005
            x = model.input((3, 7), in_dtype, (in_scale, zero_points[in_dtype][k]))
            out_q = (float(np.float32(in_scale * ratio)), zero_points[out_dtype][1 - k])
            model.op("QUANTIZE", (x,), (3, 7), out_dtype, out_q)
    return model.build()


def test_requantize_lanes_on_helium():
    report = check_model(requantize_model(), target="mps3-an547", inputs=2, extremes=True, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def long_window_model() -> bytes:
    """int8 windows past the 1,024 values columns hold.  On the Cortex-M55
    they go through four columns in chunks of whole window rows, the sums
    carried between chunks (mcu_helium_conv_chunk_s8): runs of 1-15 values
    after the vectors (5 x 43 = 215 a row, 3 x 121 = 363), chunks of one to
    four rows with a shorter last one, rows in the padding, dilation, stride
    2, two images, pixel counts that leave 1-3 after the groups of four.
    Rows longer than a chunk (3 x 350 = 1,050) are read in place instead
    (mcu_helium_conv_pass_s8): four pixels that share their inside columns
    at a time, rows in the padding read as the zero point, window columns
    partly in the padding (offset times the filter taps read).  And windows
    of 257 to 1,024 values, whole in one chunk (MCU_CONV_CHUNKS_MIN): 725
    values (tail 5), 333 (tail 13) with stride 2, padding, 11 filters (two
    blocks of channel pairs and a lone last channel), and dilation (taps not
    one run of the input row)."""
    net = Int8Net(36)
    odd = net.input((2, 7, 6, 43), -1.0, 2.0)
    deep = net.input((1, 5, 3, 121), 0.0, 3.0)
    wide = net.input((1, 4, 9, 120), -2.0, 0.0)
    middle = net.input((1, 5, 6, 29), -1.0, 1.0)
    rows = net.input((1, 4, 5, 350), -1.0, 1.0)
    medium = net.input((1, 5, 7, 37), -1.0, 1.0)
    outputs = [
        net.conv2d(odd, 5, kernel=(5, 5), padding="SAME"),
        net.conv2d(odd, 3, kernel=(5, 5), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(deep, 7, kernel=(3, 3), padding="SAME", activation="RELU6"),
        net.conv2d(deep, 2, kernel=(5, 3), padding="VALID"),
        net.conv2d(wide, 4, kernel=(3, 3), padding="SAME", dilation=(1, 2)),
        net.conv2d(wide, 3, kernel=(2, 5), strides=(1, 3), padding="SAME", dilation=(2, 1)),
        net.conv2d(middle, 6, kernel=(5, 5), padding="SAME"),
        net.conv2d(rows, 5, kernel=(3, 3), padding="SAME"),
        net.conv2d(rows, 3, kernel=(2, 3), strides=(2, 1), padding="SAME", dilation=(2, 1), activation="RELU"),
        net.conv2d(medium, 11, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="RELU"),
        net.conv2d(medium, 3, kernel=(3, 3), padding="VALID", dilation=(1, 2)),
    ]
    return net.build(*outputs)


@pytest.mark.parametrize("board", BOARDS)
def test_int8_long_convolution_windows_on_odd_sizes(board):
    assert_matches_reference(long_window_model(), inputs=2, target=board)


# (input shape, filters, kernel, --ram): chunks of columns (3 x 5 x 72 =
# 1,080 values a window; the plan overlaps them at any budget), rows too
# long for a chunk read in place (3 x 350 a row; overlapped only when the
# budget is too small for input and output whole), and a wide window in
# one chunk (3 x 3 x 40 = 360 values, mcu_conv_2d_s8_wide_windows).
RASTER_LONG_WINDOWS = [
    ((1, 6, 7, 72), 40, (3, 5), 8100),
    ((1, 4, 5, 350), 24, (3, 3), 9300),
    ((1, 6, 7, 40), 24, (3, 3), 5000),
]


@pytest.mark.parametrize("shape, filters, kernel, ram", RASTER_LONG_WINDOWS, ids=["chunks", "in_place", "wide"])
def test_int8_long_convolution_windows_in_raster_groups_on_helium(tmp_path, shape, filters, kernel, ram):
    """A long-window convolution whose output the plan starts inside its
    input (raster_walk, taken under a tight --ram): aligned groups of four
    pixels, exact."""
    net = Int8Net(37)
    x = net.input(shape, -1.0, 1.0)
    model = net.build(net.conv2d(x, filters, kernel=kernel, padding="SAME"))
    report = check_model(model, target="mps3-an547", inputs=2, ram=ram, raise_on_mismatch=False, keep_dir=tmp_path)
    assert report.passed, report.mismatch_message()
    generated = "".join(p.read_text() for p in tmp_path.rglob("*.c"))
    assert ".raster_walk = 1," in generated
