"""What the memory plan may assume about each operator, beside the kernels
whose loop order makes it safe: the one table lifetimes.py (aliasing, in-place
pairs) and codegen (calls left out when aliased) read, and the table of the
order in which each kernel reads its input and writes its output, from which
overlap.py derives how far an output may start inside the input it reads for
the last time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpTraits:
    # The output is the input's bytes under another shape (the kernel is a
    # copy): when the plan gives both the same bytes, no code runs at all.
    reinterprets_input: bool = False
    # The kernel reads element i of every input before it writes element i of
    # the output (and no other element after it), so the output may take the
    # bytes of an input that dies at this op.
    may_run_in_place: bool = False
    # The output is the inputs laid end to end along an axis: inputs that are
    # contiguous slices of it may be written there by their producers.
    concatenates_inputs: bool = False
    # The outputs are consecutive runs of the input along one axis: when each
    # is contiguous (slicing.contiguous_pieces) it may be the input's bytes.
    cuts_input_into_pieces: bool = False


_NONE = OpTraits()
_RESHAPING = OpTraits(reinterprets_input=True)  # mcu_copy (lowering/reshape.py)
# mcu_elementwise.c and mcu_math.c (broadcasting binary ops through
# mcu_for_each_broadcast_row, unary ops in one pass), mcu_activations.c (one pass,
# element by element, or a lookup table), mcu_quantize.c (element by element).
_ELEMENTWISE = OpTraits(may_run_in_place=True)

OP_TRAITS: dict[str, OpTraits] = {
    "RESHAPE": _RESHAPING,
    "SQUEEZE": _RESHAPING,
    "EXPAND_DIMS": _RESHAPING,
    "ADD": _ELEMENTWISE,
    "SUB": _ELEMENTWISE,
    "MUL": _ELEMENTWISE,
    "RELU": _ELEMENTWISE,
    "RELU6": _ELEMENTWISE,
    "RELU_N1_TO_1": _ELEMENTWISE,
    "LEAKY_RELU": _ELEMENTWISE,
    "LOGISTIC": _ELEMENTWISE,
    "TANH": _ELEMENTWISE,
    "HARD_SWISH": _ELEMENTWISE,
    "QUANTIZE": _ELEMENTWISE,
    "DIV": _ELEMENTWISE,
    "POW": _ELEMENTWISE,
    "SQUARED_DIFFERENCE": _ELEMENTWISE,
    "MAXIMUM": _ELEMENTWISE,
    "MINIMUM": _ELEMENTWISE,
    "PRELU": _ELEMENTWISE,
    "EXP": _ELEMENTWISE,
    "LOG": _ELEMENTWISE,
    "SQRT": _ELEMENTWISE,
    "RSQRT": _ELEMENTWISE,
    "SQUARE": _ELEMENTWISE,
    "ABS": _ELEMENTWISE,
    "NEG": _ELEMENTWISE,
    "GELU": _ELEMENTWISE,
    "CONCATENATION": OpTraits(concatenates_inputs=True),  # mcu_concat.c
    "PACK": OpTraits(concatenates_inputs=True),  # mcu_concat.c, along a new axis (lowering/split_gather.py)
    # mcu_split.c, mcu_slice.c: each piece a copy of its run of the input.
    "SPLIT": OpTraits(cuts_input_into_pieces=True),
    "SPLIT_V": OpTraits(cuts_input_into_pieces=True),
    "UNPACK": OpTraits(cuts_input_into_pieces=True),
    "SLICE": OpTraits(cuts_input_into_pieces=True),
}


def op_traits(opcode: str) -> OpTraits:
    """The opcode's traits; an op not in the table may assume nothing."""
    return OP_TRAITS.get(opcode, _NONE)


@dataclass(frozen=True)
class RasterOrder:
    """A kernel's walk, as the plan may assume it: output pixels (batch, row,
    column; the rows of a matrix for FULLY_CONNECTED) in raster order,
    `pixels_per_group` consecutive pixels at a time; a group reads nothing but
    its own pixels' input windows and writes nothing but its own pixels,
    reads and writes interleaved in any order inside the group.  A kernel
    whose loops change must change its entry here (and the comment beside
    the kernel that says so): the plan puts outputs over inputs by it, and
    tests/test_overlap.py runs every listed kernel bit-exact at the tightest
    overlap it allows."""

    pixels_per_group: int = 1
    # How the parameter block describes the geometry: "conv" (input_c,
    # output_c, filter, stride, padding, dilation), "pool" (channels; no
    # dilation), "rows" (accum_depth -> output_depth per batch row) or "pad"
    # (a 4-D PAD along height and width only: a 1 x 1 window whose padding
    # is the PAD's leading padding).
    window: str = "conv"
    # Each output channel from the same input channel, pixel by pixel in
    # raster order, each pixel reading its window's values of the channel
    # before writing its own (problem.WindowAccess.channel_wise): a depthwise
    # kernel with depth multiplier 1 whose loops keep channels apart.
    channel_wise: bool = False


_CONV_PIXEL = RasterOrder(1, "conv")
_POOL_PIXEL = RasterOrder(1, "pool")
_ROWS = RasterOrder(1, "rows")

KERNEL_ORDERS: dict[str, RasterOrder] = {
    # mcu_conv.c and its families, with raster_walk set (codegen sets it where the plan
    # overlaps): Helium passes take four output pixels at a time, the C and
    # DSP paths two, the per-tap-offset loop one.
    "mcu_conv_2d_s8": RasterOrder(4, "conv"),
    "mcu_conv_2d_f32": _CONV_PIXEL,
    # Up to four pixels of an aligned group of four, four channels at a time;
    # per channel the pixels in raster order, each read before it is written
    # (depthwise_windows4_s8 and the reference loop pixel by pixel, Helium's
    # mcu_helium_depthwise_s8 all four pixels' sums before their stores).
    "mcu_depthwise_conv_2d_s8": RasterOrder(4, "conv", channel_wise=True),
    "mcu_depthwise_conv_2d_f32": _CONV_PIXEL,
    "mcu_conv_2d_u8": _CONV_PIXEL,  # mcu_conv_u8.c
    "mcu_depthwise_conv_2d_u8": _CONV_PIXEL,
    "mcu_conv_2d_s16": _CONV_PIXEL,  # mcu_conv_s16.c
    "mcu_conv_2d_s16_bias32": _CONV_PIXEL,
    "mcu_depthwise_conv_2d_s16": _CONV_PIXEL,
    # mcu_pool.c, mcu_pool_s16.c: one pixel, channel by channel.
    "mcu_average_pool_2d_s8": _POOL_PIXEL,
    "mcu_average_pool_2d_u8": _POOL_PIXEL,
    "mcu_average_pool_2d_f32": _POOL_PIXEL,
    "mcu_average_pool_2d_s16": _POOL_PIXEL,
    "mcu_max_pool_2d_s8": _POOL_PIXEL,
    "mcu_max_pool_2d_u8": _POOL_PIXEL,
    "mcu_max_pool_2d_f32": _POOL_PIXEL,
    "mcu_max_pool_2d_s16": _POOL_PIXEL,
    # mcu_pad.c: the output from its first byte to its last.
    "mcu_pad": RasterOrder(1, "pad"),
    # mcu_fully_connected.c, _u8.c, _s16.c: one input row, then its output row.
    "mcu_fully_connected_s8": _ROWS,
    "mcu_fully_connected_f32": _ROWS,
    "mcu_fully_connected_u8": _ROWS,
    "mcu_fully_connected_s16": _ROWS,
}


# Set (True) in the options of a DEPTHWISE_CONV_2D that in_place_depthwise.py
# chose to run over its own input, channel by channel through a scratch
# buffer (TinyEngine's method): its lowering calls
# mcu_depthwise_conv_2d_s8_in_place, lifetimes gives its output the input's
# bytes.  Not a TFLite option: the plan adds it.
IN_PLACE_DEPTHWISE = "mcu_plan_in_place_channels"


# MCU_CONV_COLUMN_MAX of mcu_conv_internal.h: the longest int8 convolution window
# copied whole into a column (and the longest chunk of a longer one).
CONV_COLUMN_MAX = 1024
# Longer windows go through Helium columns in chunks of whole rows while the
# int32 sums of four pixels carried between chunks (16 x output_c bytes) take
# at most this (mcu_conv_helium.c; lowering/conv.py sizes the scratch).
CONV_CHUNK_SUMS_MAX = 4096


def raster_walk_is_slower(function: str, params: dict[str, object]) -> bool:
    """Whether `function` must leave its faster walk for the raster one
    (mcu_conv_s8_params.raster_walk, set by codegen where the plan overlaps):
    the int8 depthwise convolution (channel-group runs), and the int8
    stride-1 pointwise convolution (channel pairs outermost without Helium)
    and the int8 convolution of windows longer than a column (Helium).
    Planning takes such overlaps only when --ram needs them (pipeline.py);
    measured on vww_96_int8 they cost +3.8% ticks on the M4, +3.0% on the M55."""
    if function == "mcu_depthwise_conv_2d_s8":
        return True
    if function == "mcu_conv_2d_s8":
        pointwise = params.get("filter_h") == params.get("filter_w") == 1
        if pointwise and params.get("stride_h") == params.get("stride_w") == 1:
            return True
        # Windows whose rows or carried sums are too long for the chunks of
        # columns (mcu_conv_helium.c) are read in place by Helium passes that
        # group pixels down border columns and along rows, which aligned
        # raster groups split into passes of one or two pixels (3x3x160 on
        # 10x10 that way: 82 against 138 MACs per tick).
        sizes = [
            v for v in (params.get(k) for k in ("filter_h", "filter_w", "input_c", "output_c")) if isinstance(v, int)
        ]
        if len(sizes) != 4:
            return False
        filter_h, filter_w, input_c, output_c = sizes
        if filter_h * filter_w * input_c <= CONV_COLUMN_MAX:
            return False
        return filter_w * input_c > CONV_COLUMN_MAX or 16 * output_c > CONV_CHUNK_SUMS_MAX
    return False


def kernel_order(function: str) -> RasterOrder | None:
    """The walk `function` declares; None: the plan may assume nothing."""
    return KERNEL_ORDERS.get(function)
