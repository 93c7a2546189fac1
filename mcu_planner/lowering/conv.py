"""CONV_2D and DEPTHWISE_CONV_2D -> mcu_conv_2d_* / mcu_depthwise_conv_2d_* (mcu_conv.c's
entries, one per family of layers, each calling the variants of one file per
family; 16x8 in mcu_conv_s16.c)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import numpy as np

from ..graph import Graph, Operator, Tensor
from ..quant import conv_output_multipliers, int64_rescale_multipliers
from . import (
    CArray,
    KernelCall,
    KernelFacts,
    NotLowerable,
    ParamValue,
    ScratchAlternative,
    ScratchNeed,
    facts_for,
    lowers,
    scratch_for,
)
from .common import (
    activation_params,
    filter_quantization,
    hybrid_weighted_operands,
    input_tensor,
    int32_array,
    is_float_weighted_op,
    is_hybrid_weighted_op,
    kernel_call,
    output_tensor,
    require_16x8_weighted_op,
    scale,
    sliding_window,
    uint8_weighted_params,
    zero_point,
)
from .walks import PIXEL_BY_PIXEL, RasterOrder, image_window_facts

# mcu_conv.c and its variant families (firmware/runtime; mcu_conv_internal.h is header-only).
SOURCES = (
    "mcu_conv",
    "mcu_conv_reference",
    "mcu_conv_1x1",
    "mcu_conv_window",
    "mcu_conv_dsp_block",
    "mcu_conv_dsp_block_asm",
    "mcu_conv_helium",
    "mcu_conv_helium_small",
    "mcu_conv_helium_rows",
    "mcu_conv_helium_long",
    "mcu_conv_helium_interleaved",
    "mcu_depthwise",
    "mcu_depthwise_helium",
    "mcu_depthwise_dsp",
    "mcu_depthwise_3x3_dsp",
    "mcu_conv_few_channels_dsp",
    "mcu_conv_f32",
)

# mcu_conv.c's working columns, planned in the arena as the scratch of each
# int8 CONV_2D (they were a static buffer no RAM budget counted).  The
# generated C is the same for every core and each core's path needs its own
# amount, so the scratch is the largest of them (conv_columns_bytes).
HELIUM_COLUMNS = 4  # MCU_CONV_COLUMNS on the Cortex-M55 (2 on cores without Helium)
PAIRS_MAX = 1280  # pointwise filter pairs interleaved for SMLAD (M4/M7) up to this size
BLOCK_TAPS_MAX = 576  # taps per pixel the DSP blocks of eight pixels widen (mcu_conv_dsp_block.c)
BLOCK_MIN_CHANNELS = 5  # fewer input channels (first layers) take other paths
FEW_BLOCK_TAPS_MAX = 32  # first layers' windows the DSP blocks take (FEW_BLOCK_WINDOW_MAX)
ROWS_UNROLLED_MAX = 8  # Helium's unrolled rows, in vectors of 16 (MCU_CONV_ROWS_UNROLLED_MAX)
FIRST_VECTORS_MAX = 2  # Helium's first-layer passes, in vectors of 16 (MCU_CONV_FIRST_VECTORS_MAX)


# The int8 entries of the runtime (mcu_conv.c lists them), one per family of
# layers.  conv_2d_s8_entry and depthwise_conv_2d_s8_entry pick a layer's from
# what its shape fixes -- the one place that choice is written; the entries
# take it as given and keep the run-time checks of their variants -- so that
# a firmware links only the variants its layers can take (--gc-sections).
CONV_2D_S8_ANY_LAYER = "mcu_conv_2d_s8_any_layer"
CONV_2D_S8_POINTWISE = "mcu_conv_1x1_s8"
CONV_2D_S8_POINTWISE_BLOCKS = "mcu_conv_2d_s8_pointwise_blocks"
CONV_2D_S8_FIRST_POINTWISE = "mcu_conv_2d_s8_first_pointwise"
CONV_2D_S8_FIRST_LAYER = "mcu_conv_2d_s8_first_layer"
CONV_2D_S8_FIRST_LAYER_LONG = "mcu_conv_2d_s8_first_layer_long"
CONV_2D_S8_WINDOWS = "mcu_conv_2d_s8_windows"
CONV_2D_S8_WIDE_WINDOWS = "mcu_conv_2d_s8_wide_windows"
CONV_2D_S8_LONG_WINDOWS = "mcu_conv_2d_s8_long_windows"
CONV_2D_S8_ENTRIES = (
    CONV_2D_S8_ANY_LAYER,
    CONV_2D_S8_POINTWISE,
    CONV_2D_S8_POINTWISE_BLOCKS,
    CONV_2D_S8_FIRST_POINTWISE,
    CONV_2D_S8_FIRST_LAYER,
    CONV_2D_S8_FIRST_LAYER_LONG,
    CONV_2D_S8_WINDOWS,
    CONV_2D_S8_WIDE_WINDOWS,
    CONV_2D_S8_LONG_WINDOWS,
)
DEPTHWISE_S8_PER_TAP_OFFSET = "mcu_depthwise_conv_2d_s8_per_tap_offset"
DEPTHWISE_S8_3X3 = "mcu_depthwise_conv_2d_s8_3x3"
DEPTHWISE_S8_WINDOWS = "mcu_depthwise_conv_2d_s8_windows"
DEPTHWISE_S8_ENTRIES = (DEPTHWISE_S8_PER_TAP_OFFSET, DEPTHWISE_S8_3X3, DEPTHWISE_S8_WINDOWS)


def conv_2d_s8_entry(params: dict[str, int], with_offset_terms: bool, column_bytes: int) -> str:
    """The int8 CONV_2D entry of a layer: the reference loops without window
    offset terms or with groups; pointwise (1x1, no padding), apart those
    whose `column_bytes` hold the M4/M7 DSP blocks' eight pixels (block_bytes:
    those blocks then take all of them on those cores); windows of up
    to CONV_COLUMN_MAX values in `column_bytes` of columns that hold
    HELIUM_COLUMNS of them (the most any core's path copies: all cores'
    conv_columns_bytes), past CONV_CHUNKS_MIN values the wide ones (Helium's
    chunks) unless Helium's interleaved columns take them, else read in
    place; first layers (fewer than BLOCK_MIN_CHANNELS input channels) try
    the M4/M7 few-channel paths first:
    the DSP blocks up to FEW_BLOCK_TAPS_MAX values, longer windows the other."""
    in_c = params["input_c"]
    if not with_offset_terms or params["filter_in_c_or_multiplier"] != in_c:
        return CONV_2D_S8_ANY_LAYER
    first_layer = in_c < BLOCK_MIN_CHANNELS
    if (params["filter_h"], params["filter_w"], params["pad_h"], params["pad_w"]) == (1, 1, 0, 0):
        if first_layer:
            return CONV_2D_S8_FIRST_POINTWISE
        return CONV_2D_S8_POINTWISE_BLOCKS if block_bytes(in_c) <= column_bytes else CONV_2D_S8_POINTWISE
    window = params["filter_h"] * params["filter_w"] * in_c
    if window > CONV_COLUMN_MAX or HELIUM_COLUMNS * window > column_bytes:
        return CONV_2D_S8_LONG_WINDOWS
    if not first_layer:
        # Helium's interleaved columns beat its chunks wherever they apply.
        wide = window > CONV_CHUNKS_MIN and not interleaved_windows(params)
        return CONV_2D_S8_WIDE_WINDOWS if wide else CONV_2D_S8_WINDOWS
    return CONV_2D_S8_FIRST_LAYER if window <= FEW_BLOCK_TAPS_MAX else CONV_2D_S8_FIRST_LAYER_LONG


# The entries whose Helium paths run rows of four pixels (pointwise pixels,
# windows copied into columns) through mcu_conv_helium_rows.c.
ROWS_ENTRIES = frozenset(
    {
        CONV_2D_S8_POINTWISE,
        CONV_2D_S8_POINTWISE_BLOCKS,
        CONV_2D_S8_FIRST_POINTWISE,
        CONV_2D_S8_FIRST_LAYER,
        CONV_2D_S8_FIRST_LAYER_LONG,
        CONV_2D_S8_WINDOWS,
    }
)


def interleaved_windows(params: dict[str, int]) -> bool:
    """Whether Helium copies an int8 CONV_2D's windows (CONV_2D_S8_WINDOWS)
    into columns interleaved a vector at a time for passes of four pixels x
    two channels (mcu_conv_helium_interleaved.c): windows of whole vectors
    (input_c a multiple of 16, dilation_w 1) longer than the unrolled rows
    take."""
    n = params["filter_h"] * params["filter_w"] * params["input_c"]
    return params["input_c"] % 16 == 0 and params["dilation_w"] == 1 and n > 16 * ROWS_UNROLLED_MAX


def helium_rows_variant(params: dict[str, int], function: str) -> str:
    """The `rows` field of an int8 CONV_2D calling `function`: Helium's loop
    unrolled for its rows (a pixel's input channels, or a window:
    filter_h x filter_w x input_c values), MCU_CONV_ROWS_S8(vectors of 16,
    whether the last is partial) for 2 to ROWS_UNROLLED_MAX vectors, so that
    a firmware links only the loops its layers take; NULL for other entries
    and lengths (one vector in registers, longer rows the generic loop), and
    for layers of fewer than four output channels or pixels (the loop runs
    four pixels against groups of four channels)."""
    n = params["filter_h"] * params["filter_w"] * params["input_c"]
    vectors = -(-n // 16)
    pixels = params["batches"] * params["output_h"] * params["output_w"]
    if helium_first_variant(params, function) != "NULL":
        return "NULL"  # the first-layer pass takes the layer instead
    if function == CONV_2D_S8_WINDOWS and interleaved_windows(params):
        return "MCU_CONV_INTERLEAVED_S8(4, 2)"
    if function not in ROWS_ENTRIES or not 2 <= vectors <= ROWS_UNROLLED_MAX or min(params["output_c"], pixels) < 4:
        return "NULL"
    return f"MCU_CONV_ROWS_S8({vectors}, {int(n % 16 != 0)})"


FIRST_ENTRIES = frozenset({CONV_2D_S8_FIRST_LAYER, CONV_2D_S8_FIRST_LAYER_LONG})


def first_layer_vectors(params: dict[str, int]) -> int:
    """Vectors of 16 values a window of the layer takes (filter_h x filter_w x input_c)."""
    return -(-(params["filter_h"] * params["filter_w"] * params["input_c"]) // 16)


def helium_first_variant(params: dict[str, int], function: str) -> str:
    """The `first` field of an int8 CONV_2D calling `function`: Helium's
    first-layer pass (mcu_conv_helium_small.c: four windows per pass, copied
    into columns of whole vectors, every output channel against them) for
    first-layer entries whose windows take at most FIRST_VECTORS_MAX vectors,
    as MCU_CONV_FIRST_S8(vectors), so that a firmware links only the passes
    its layers run; NULL for the others (Helium's rows or chunks)."""
    vectors = first_layer_vectors(params)
    if function not in FIRST_ENTRIES or vectors > FIRST_VECTORS_MAX:
        return "NULL"
    return f"MCU_CONV_FIRST_S8({vectors})"


def depthwise_conv_2d_s8_entry(params: dict[str, int], with_offset_terms: bool) -> str:
    """The int8 DEPTHWISE_CONV_2D entry of a layer: the per-tap offset without
    window offset terms; 3 x 3 filters (the M4/M7 3 x 3 path first); others."""
    if not with_offset_terms:
        return DEPTHWISE_S8_PER_TAP_OFFSET
    if (params["filter_h"], params["filter_w"]) == (3, 3):
        return DEPTHWISE_S8_3X3
    return DEPTHWISE_S8_WINDOWS


def helium_depthwise_variant(params: dict[str, ParamValue], function: str) -> str:
    """MCU_DEPTHWISE_S8(multiplier, raster) of an int8 depthwise layer with
    window offset terms (mcu_conv.h; NULL on cores without Helium), so that
    a firmware links only the Helium kernels its layers run: 1 for depth
    multiplier 1, 4 for a multiple of 4 (others take the channel loop: NULL),
    raster 1 under raster_walk (the raster groups a planned overlap needs),
    else 0 (runs)."""
    multiplier = params["filter_in_c_or_multiplier"]
    if function not in DEPTHWISE_S8_ENTRIES or function == DEPTHWISE_S8_PER_TAP_OFFSET:
        return "NULL"
    if multiplier != 1 and not (isinstance(multiplier, int) and multiplier % 4 == 0):
        return "NULL"
    return f"MCU_DEPTHWISE_S8({1 if multiplier == 1 else 4}, {1 if params['raster_walk'] else 0})"


def block_bytes(taps: int) -> int:
    """MCU_CONV_BLOCK_BYTES of mcu_conv_dsp_block.h: eight pixels' taps as int16,
    rounded up to whole groups of four taps, plus 3 bytes to word-align them."""
    return 3 + 64 * ((taps + 3) // 4)


COLUMNS_SCRATCH = "columns"


def conv_columns_bytes(params: dict[str, int], blocks: bool = True) -> int:
    """Bytes of the `columns` of mcu_conv.c's entries for a one-group int8 CONV_2D with
    window offset terms: the most any core's path uses --
    - pointwise (M4/M7 DSP): eight pixels' input channels widened to int16
      (block_bytes, BLOCK_MIN_CHANNELS to BLOCK_TAPS_MAX channels); otherwise, with stride 1,
      two filters interleaved word by word, 2 x input_c, when input_c is a
      multiple of 4 (up to PAIRS_MAX);
    - windows of up to BLOCK_TAPS_MAX values on BLOCK_MIN_CHANNELS or more
      input channels (M4/M7 DSP): eight windows widened (block_bytes) and,
      unless input_c is a multiple of 4, one int8 window before them;
    - windows (not 1x1) of up to FEW_BLOCK_TAPS_MAX values on fewer than
      BLOCK_MIN_CHANNELS input channels (M4/M7 DSP, first layers): eight
      windows widened (block_bytes; without them, and for 1x1, four on the
      stack);
    - windows of up to CONV_COLUMN_MAX values: four (Helium) whole windows,
      past CONV_CHUNKS_MIN values each rounded up to whole vectors of 16;
      on fewer than BLOCK_MIN_CHANNELS input channels, windows of at most
      FIRST_VECTORS_MAX vectors of 16 as four columns of whole vectors
      (Helium's first-layer passes, helium_first_variant), compact or not;
    - longer windows (Helium): chunks of whole window rows in four columns
      of at most CONV_COLUMN_MAX values (each rounded up to whole vectors
      of 16, interleaved), the int32 sums of the four pixels
      carried between chunks (16 x output_c, up to CONV_CHUNK_SUMS_MAX, plus 3
      bytes to align them); past those limits the windows are read in place
      and need one window row's span of the input zero point, read for
      window rows in the padding.
    The kernel checks `column_bytes` before taking a path that needs them;
    without `blocks`, the DSP blocks' sizes are left out: the compact
    columns, the scratch alternative the planner may choose instead
    (conv_2d_facts)."""
    filter_h, filter_w, in_c = params["filter_h"], params["filter_w"], params["input_c"]
    window = filter_h * filter_w * in_c
    past_first_layers = _columns_bytes_past_first_layers(params, blocks)
    pointwise = (filter_h, filter_w, params["pad_h"], params["pad_w"]) == (1, 1, 0, 0)
    if in_c < BLOCK_MIN_CHANNELS and not pointwise and window <= CONV_COLUMN_MAX:
        # Helium's first-layer passes: four columns of whole vectors.
        vectors = first_layer_vectors(params)
        if vectors <= FIRST_VECTORS_MAX:
            past_first_layers = max(past_first_layers, HELIUM_COLUMNS * 16 * vectors)
    if blocks and in_c < BLOCK_MIN_CHANNELS and window <= FEW_BLOCK_TAPS_MAX and (filter_h, filter_w) != (1, 1):
        return max(block_bytes(window), past_first_layers)
    return past_first_layers


def _columns_bytes_past_first_layers(params: dict[str, int], blocks: bool) -> int:
    filter_h, filter_w, in_c = params["filter_h"], params["filter_w"], params["input_c"]
    if (filter_h, filter_w, params["pad_h"], params["pad_w"]) == (1, 1, 0, 0):
        if blocks and BLOCK_MIN_CHANNELS <= in_c <= BLOCK_TAPS_MAX:
            return block_bytes(in_c)
        stride_1 = (params["stride_h"], params["stride_w"]) == (1, 1)
        return 2 * in_c if stride_1 and in_c % 4 == 0 and 2 * in_c <= PAIRS_MAX else 0
    window = filter_h * filter_w * in_c
    if blocks and window <= BLOCK_TAPS_MAX and in_c >= BLOCK_MIN_CHANNELS:
        return max(HELIUM_COLUMNS * window, (window if in_c % 4 else 0) + block_bytes(window))
    if window <= CONV_COLUMN_MAX:
        return HELIUM_COLUMNS * (_vectors_bytes(window) if window > CONV_CHUNKS_MIN else window)
    span = ((filter_w - 1) * params["dilation_w"] + 1) * in_c
    row = filter_w * in_c
    sums = 16 * params["output_c"]
    if row <= CONV_COLUMN_MAX and sums <= CONV_CHUNK_SUMS_MAX:
        rows = min(filter_h, CONV_COLUMN_MAX // row)
        return max(span, 3 + sums + HELIUM_COLUMNS * _vectors_bytes(rows * row))
    return span


def _vectors_bytes(n: int) -> int:
    """`n` values rounded up to whole vectors of 16: a pixel's slots in the
    interleaved columns of Helium's chunks (mcu_conv_helium_long.c)."""
    return 16 * -(-n // 16)


def _geometry(op: Operator, inp: Tensor, filt: Tensor, out: Tensor, per_filter: int) -> dict[str, int]:
    batches, in_h, in_w, in_c = inp.shape
    _, filter_h, filter_w, _ = filt.shape
    out_b, out_h, out_w, out_c = out.shape
    dilation_h = op.options.get("dilation_h_factor", 1)
    dilation_w = op.options.get("dilation_w_factor", 1)
    window = sliding_window(op, in_h, in_w, filter_h, filter_w, dilation_h, dilation_w)
    expected = (batches, window["output_h"], window["output_w"])
    if (out_b, out_h, out_w) != expected:
        raise NotLowerable(f"{op.opcode} output shape {out.shape} disagrees with its options ({expected})")
    return {
        "batches": batches,
        "input_h": in_h,
        "input_w": in_w,
        "input_c": in_c,
        "filter_h": filter_h,
        "filter_w": filter_w,
        "output_h": out_h,
        "output_w": out_w,
        "output_c": out_c,
        "stride_h": window["stride_h"],
        "stride_w": window["stride_w"],
        "dilation_h": dilation_h,
        "dilation_w": dilation_w,
        "pad_h": window["pad_h"],
        "pad_w": window["pad_w"],
        "filter_in_c_or_multiplier": per_filter,
    }


def _lower(op: Operator, graph: Graph, stem: str, depthwise: bool) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    filt = input_tensor(op, graph, 1)
    bias = input_tensor(op, graph, 2, optional=True)
    out = output_tensor(op, graph)
    if len(inp.shape) != 4 or len(filt.shape) != 4 or len(out.shape) != 4:
        raise NotLowerable(f"{op.opcode} on tensors that are not 4-D")
    in_c, out_c = inp.shape[3], out.shape[3]
    if filt.shape[3 if depthwise else 0] != out_c:
        raise NotLowerable(f"{op.opcode} filter {filt.shape} does not produce {out_c} channels")
    if depthwise:
        if filt.shape[0] != 1 or in_c == 0 or out_c % in_c:
            raise NotLowerable(f"DEPTHWISE_CONV_2D with filter {filt.shape} on {in_c} input channels")
        per_filter = out_c // in_c
    else:
        per_filter = filt.shape[3]
        if per_filter == 0 or in_c % per_filter or out_c % (in_c // per_filter):
            raise NotLowerable(f"CONV_2D filter {filt.shape} does not divide {in_c} input channels into groups")
    params = _geometry(op, inp, filt, out, per_filter)
    if inp.dtype == "uint8":
        return _lower_u8(op, inp, filt, bias, out, stem, params)
    if is_hybrid_weighted_op(inp, filt):
        return _lower_hybrid(op, filt, bias, out, stem, params, depthwise)
    if inp.dtype == "int16":
        return _lower_16x8(op, stem, params, inp, filt, bias, out, depthwise)
    if is_float_weighted_op(op, inp, filt, bias, out):
        return kernel_call(
            op, f"{stem}_f32", "mcu_conv_f32_params", {**params, **activation_params(op, out)}, SOURCES, inputs=3
        )

    quantization = filter_quantization(op, filt)
    if any(quantization.zero_points):
        # The reference kernels ignore the filter zero point: only symmetric weights are valid.
        raise NotLowerable(f"{op.opcode} with a non-zero filter zero point")
    multipliers, shifts = conv_output_multipliers(scale(inp), quantization.scales, scale(out), out_c)
    input_offset = -zero_point(inp)
    s8_params: dict[str, ParamValue] = {
        **params,
        "input_offset": input_offset,
        "output_offset": zero_point(out),
        "output_multiplier": int32_array(multipliers),
        "output_shift": int32_array(shifts),
        **activation_params(op, out),
        "window_offset_terms": _window_offset_terms(filt, input_offset, depthwise),
        # 1 where the plan overlaps the output with the input (in_raster_order below).
        "raster_walk": 0,
        "column_bytes": 0,
        "rows": "NULL",
        "first": "NULL",
        "depthwise": "NULL",
    }
    with_offset_terms = s8_params["window_offset_terms"] != "NULL"
    if depthwise:
        function = depthwise_conv_2d_s8_entry(params, with_offset_terms)
        s8_params["depthwise"] = helium_depthwise_variant(s8_params, function)
        return kernel_call(op, function, "mcu_conv_s8_params", s8_params, SOURCES, inputs=3)
    columns = _columns_scratch(op, graph)
    column_bytes = graph.tensors[columns].shape[0] if columns >= 0 else 0
    s8_params["column_bytes"] = column_bytes
    function = conv_2d_s8_entry(params, with_offset_terms, column_bytes)
    s8_params["rows"] = helium_rows_variant(params, function)
    s8_params["first"] = helium_first_variant(params, function)
    call = kernel_call(op, function, "mcu_conv_s8_params", s8_params, SOURCES, inputs=3)
    return KernelCall(call.function, call.params_type, s8_params, call.args + (columns,), call.sources)


def _columns_scratch(op: Operator, graph: Graph) -> int:
    """The op's columns scratch tensor (scratch.py puts the op's own needs
    first in op.scratch), -1 when it has none."""
    if op.scratch and graph.tensors[op.scratch[0]].name.endswith(f"_scratch_{COLUMNS_SCRATCH}"):
        return op.scratch[0]
    return -1


@scratch_for("CONV_2D")
def conv_scratch(op: Operator, graph: Graph) -> tuple[ScratchNeed, ...]:
    """The columns of an int8 CONV_2D of one group (conv_columns_bytes)."""
    inp, filt, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if (inp.dtype, filt.dtype, out.dtype) != ("int8", "int8", "int8") or len(filt.shape) != 4:
        return ()
    if len(inp.shape) != 4 or len(out.shape) != 4 or filt.shape[3] != inp.shape[3] or not filt.is_constant:
        return ()  # grouped, or no window offset terms: the per-tap loop needs no columns
    nbytes = conv_columns_bytes(_geometry(op, inp, filt, out, filt.shape[3]))
    return (ScratchNeed(COLUMNS_SCRATCH, "int8", nbytes),) if nbytes else ()


def _lower_u8(
    op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor, stem: str, geometry: dict[str, int]
) -> KernelCall:
    """reference_ops::Conv / DepthwiseConv for uint8."""
    params = {**geometry, **uint8_weighted_params(op, inp, filt, bias, out)}
    return kernel_call(op, f"{stem}_u8", "mcu_conv_u8_params", params, ("mcu_conv_u8",), inputs=3)


def _lower_hybrid(
    op: Operator, filt: Tensor, bias: Tensor | None, out: Tensor, stem: str, geometry: dict[str, int], depthwise: bool
) -> KernelCall:
    """The hybrid (dynamic-range) convolutions of TFLite's conv.cc and
    depthwise_conv.cc: a CONV_2D with one filter scale (all scales equal)
    quantizes its input symmetrically (EvalHybrid), one with per-channel
    scales and every DEPTHWISE_CONV_2D asymmetrically (EvalHybridPerChannel)."""
    quantization, _ = hybrid_weighted_operands(op, filt, bias, out)
    scales = quantization.scales
    channels = out.shape[3]
    if len(scales) not in (1, channels):
        raise NotLowerable(f"hybrid {op.opcode} filter with {len(scales)} scales for {channels} channels")
    if depthwise and len(scales) != channels:
        # TFLite's hybrid depthwise kernel reads a scale per channel.
        raise NotLowerable(
            "hybrid (dynamic-range) model: TFLite reads one per channel; convert with full-integer quantization"
        )
    if not depthwise and (geometry["dilation_h"], geometry["dilation_w"]) != (1, 1):
        # TFLite's hybrid CONV_2D sets the dilation to 1 whatever the model
        # says, and so computes another convolution than the model's.
        raise NotLowerable(
            "hybrid (dynamic-range) model: TFLite ignores its dilation; convert with full-integer quantization"
        )
    per_channel = depthwise or len(set(scales)) > 1
    params = {
        **geometry,
        "asymmetric": int(per_channel),
        "per_channel": int(len(scales) > 1),
        "scales_first": int(depthwise or not per_channel),
        "filter_scales": CArray("float", tuple(scales)),
        **activation_params(op, out),
    }
    return kernel_call(op, f"{stem}_hybrid", "mcu_conv_hybrid_params", params, ("mcu_conv_hybrid",), inputs=3)


def _lower_16x8(
    op: Operator,
    stem: str,
    params: dict[str, int],
    inp: Tensor,
    filt: Tensor,
    bias: Tensor | None,
    out: Tensor,
    depthwise: bool,
) -> KernelCall:
    """int16 activations, int8 weights, an int64 bias (CONV_2D: or int32, as
    TFLM takes it); the sums accumulate in int64 either way."""
    quantization = require_16x8_weighted_op(op, inp, filt, bias, out, ("int64",) if depthwise else ("int64", "int32"))
    function = f"{stem}_s16_bias32" if bias is not None and bias.dtype == "int32" else f"{stem}_s16"
    multipliers, shifts = int64_rescale_multipliers(scale(inp), quantization.scales, scale(out), out.shape[3])
    s16_params = {
        **params,
        "output_multiplier": int32_array(multipliers),
        "output_shift": int32_array(shifts),
        **activation_params(op, out),
    }
    return kernel_call(op, function, "mcu_conv_s16_params", s16_params, ("mcu_conv_s16",), inputs=3)


def _window_offset_terms(filt: Tensor, input_offset: int, depthwise: bool) -> CArray | str:
    """Per output channel, input_offset times the sum of all its filter taps.

    sum(w * (x + offset)) = sum(w * x) + offset * sum(w): with this term known
    the kernels leave the zero point out of the multiply-accumulate wherever
    the whole window lies inside the input.  Integer sums are exact in any
    order, so the result is the reference kernel's.  "NULL" (the kernels then
    add the offset per tap) when the filter is not a constant."""
    if not filt.is_constant or filt.data is None:
        return "NULL"
    weights = np.frombuffer(filt.data, dtype=np.int8).astype(np.int64).reshape(filt.shape)
    sums = weights.sum(axis=(0, 1, 2)) if depthwise else weights.reshape(filt.shape[0], -1).sum(axis=1)
    terms = input_offset * sums
    if terms.size and (terms.min() < -(2**31) or terms.max() >= 2**31):
        return "NULL"
    return int32_array(terms)


@lowers("CONV_2D")
def lower_conv_2d(op: Operator, graph: Graph) -> KernelCall:
    return _lower(op, graph, "mcu_conv_2d", depthwise=False)


@lowers("DEPTHWISE_CONV_2D")
def lower_depthwise_conv_2d(op: Operator, graph: Graph) -> KernelCall:
    return _lower(op, graph, "mcu_depthwise_conv_2d", depthwise=True)


# The walk of each kernel as the plan may assume it (the int8 kernels with
# raster_walk set where the plan overlaps): mcu_conv.c's int8 convolution takes four output
# pixels at a time on Helium, two on the C and DSP paths, one in the
# per-tap-offset loop (the M4 DSP blocks read eight aligned pixels before
# writing any: each group of four read no later, written no earlier); its int8 depthwise convolution up to four pixels of
# an aligned group of four, four channels at a time, per channel the pixels
# in raster order, each read before it is written (depthwise_windows4_s8 and
# the reference loop pixel by pixel, Helium's mcu_helium_depthwise_s8 all
# four pixels' sums before their stores); the float, uint8 (mcu_conv_u8.c)
# and 16x8 (mcu_conv_s16.c) kernels one pixel at a time.  The hybrid kernels
# have no walk the plan may use and run whole (they quantize their whole
# input with one scale from its largest value).
WALKS: dict[str, RasterOrder] = {
    **dict.fromkeys(CONV_2D_S8_ENTRIES, RasterOrder(4)),
    "mcu_conv_2d_f32": PIXEL_BY_PIXEL,
    **dict.fromkeys(DEPTHWISE_S8_ENTRIES, RasterOrder(4, channel_wise=True)),
    "mcu_depthwise_conv_2d_f32": PIXEL_BY_PIXEL,
    "mcu_conv_2d_u8": PIXEL_BY_PIXEL,
    "mcu_depthwise_conv_2d_u8": PIXEL_BY_PIXEL,
    "mcu_conv_2d_s16": PIXEL_BY_PIXEL,
    "mcu_conv_2d_s16_bias32": PIXEL_BY_PIXEL,
    "mcu_depthwise_conv_2d_s16": PIXEL_BY_PIXEL,
}


# MCU_CONV_COLUMN_MAX of mcu_conv_internal.h: the longest int8 convolution window
# copied whole into a column (and the longest chunk of a longer one).
CONV_COLUMN_MAX = 1024
# Windows in columns of more values than this, not first layers', take
# mcu_conv_2d_s8_wide_windows: one chunk on Helium (mcu_conv_helium_long.c,
# two channels per pass), its columns each rounded up to whole vectors of
# 16.  In shorter ones copying the windows interleaved costs more than the
# second channel saves (pretrainedResnet_quant's 3x3x16 layers: 20% slower
# than the rows, its 3x3x32 one 5% faster).
CONV_CHUNKS_MIN = 256
# Longer windows go through Helium columns in chunks of whole rows while the
# int32 sums of four pixels carried between chunks (16 x output_c bytes) take
# at most this (mcu_conv_helium_long.c; conv_columns_bytes sizes the scratch).
CONV_CHUNK_SUMS_MAX = 4096


def _raster_walk_is_slower(call: KernelCall) -> bool:
    """Whether the kernel must leave its faster walk for the raster one
    (mcu_conv_s8_params.raster_walk, set where the plan overlaps):
    the int8 depthwise convolution (channel-group runs), the int8 stride-1
    pointwise convolution (channel pairs outermost without Helium), and the
    int8 convolution of windows longer than a column (Helium).  Measured on
    vww_96_int8 the first two cost +3.8% ticks on the M4, +3.0% on the M55."""
    # The integer fields: the geometry ones all are (image_window_facts reads them so).
    p = {k: v for k, v in call.params.items() if isinstance(v, int)}
    if call.function in DEPTHWISE_S8_ENTRIES:
        return True
    if call.function not in CONV_2D_S8_ENTRIES:
        return False
    if p["filter_h"] == p["filter_w"] == 1 and p["stride_h"] == p["stride_w"] == 1:
        return True
    # Windows whose rows or carried sums are too long for the chunks of
    # columns (mcu_conv_helium.c) are read in place by Helium passes that
    # group pixels down border columns and along rows, which aligned raster
    # groups split into passes of one or two pixels (3x3x160 on 10x10 that
    # way: 82 against 138 MACs per tick).
    filter_h, filter_w, input_c, output_c = (p[k] for k in ("filter_h", "filter_w", "input_c", "output_c"))
    if filter_h * filter_w * input_c <= CONV_COLUMN_MAX:
        return False
    return filter_w * input_c > CONV_COLUMN_MAX or 16 * output_c > CONV_CHUNK_SUMS_MAX


@facts_for("CONV_2D")
def conv_2d_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    # Every output element sums KH x KW x (input channels per group) products.
    filter_shape = graph.tensors[op.inputs[1]].shape
    macs = graph.tensors[op.outputs[0]].num_elements * math.prod(filter_shape[1:])
    facts = _image_facts(op, graph, call, macs)
    columns = _columns_scratch(op, graph)
    if columns < 0 or not isinstance(call.params.get("column_bytes"), int):
        return facts
    return _with_columns_alternative(op, graph, call, macs, columns, facts)


def _with_columns_alternative(
    op: Operator, graph: Graph, call: KernelCall, macs: int, columns: int, facts: KernelFacts
) -> KernelFacts:
    """`facts` of `call` offering the columns' other size: the compact columns
    (conv_columns_bytes without the M4 DSP blocks, whose paths then run
    instead: the kernel picks its path by column_bytes) when the call has
    the full ones, the full ones when it has the compact ones."""
    geometry = {name: value for name, value in call.params.items() if isinstance(value, int)}
    full, compact = conv_columns_bytes(geometry), conv_columns_bytes(geometry, blocks=False)
    if compact >= full:
        return facts
    has_full = call.params["column_bytes"] == full
    other = compact if has_full else full
    alternative = ScratchAlternative(columns, other, partial(_with_columns, op, graph, call, macs, columns, other))
    return replace(facts, smaller_scratch=alternative) if has_full else replace(facts, larger_scratch=alternative)


def _with_columns(
    op: Operator, graph: Graph, call: KernelCall, macs: int, columns: int, nbytes: int
) -> tuple[KernelCall, KernelFacts]:
    """The int8 CONV_2D's call with `nbytes` of columns (none: NULL), and its facts."""
    params = {**call.params, "column_bytes": nbytes}
    geometry = {name: value for name, value in params.items() if isinstance(value, int)}
    # The columns decide the entry too (the DSP blocks' pointwise one needs their eight pixels).
    function = conv_2d_s8_entry(geometry, params["window_offset_terms"] != "NULL", nbytes)
    params["rows"] = helium_rows_variant(geometry, function)
    params["first"] = helium_first_variant(geometry, function)
    resized = replace(call, function=function, params=params, args=call.args[:-1] + (columns if nbytes else -1,))
    facts = _image_facts(op, graph, resized, macs)
    return resized, _with_columns_alternative(op, graph, resized, macs, columns, facts)


@facts_for("DEPTHWISE_CONV_2D")
def depthwise_conv_2d_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    filter_shape = graph.tensors[op.inputs[1]].shape
    macs = graph.tensors[op.outputs[0]].num_elements * math.prod(filter_shape[1:3])
    facts = _image_facts(op, graph, call, macs)
    if call.function not in DEPTHWISE_S8_ENTRIES or call.params["filter_in_c_or_multiplier"] != 1:
        return facts

    return replace(facts, over_input=partial(_depthwise_over_input, call))


def _image_facts(op: Operator, graph: Graph, call: KernelCall, macs: int) -> KernelFacts:
    walk = WALKS.get(call.function)
    facts = image_window_facts(
        op, graph, call, walk, patchable=walk is not None, macs=macs, slower=_raster_walk_is_slower(call)
    )
    if facts.access is None or "raster_walk" not in call.params:
        return facts

    return replace(facts, in_raster_order=partial(_in_raster_order, call))


# The facts' call rewrites are module-level functions bound with
# functools.partial, so that a Program (and a Plan) pickles.
def _depthwise_over_input(call: KernelCall, scratch: int) -> KernelCall:
    """mcu_depthwise_conv_2d_s8_in_place: channel by channel through
    `scratch` (output_h x output_w values), each written back over the
    input's channel (in_place_depthwise.py)."""
    params = {**call.params, "depthwise": "NULL"}  # the channel-by-channel kernel runs no walk
    return KernelCall(
        "mcu_depthwise_conv_2d_s8_in_place", call.params_type, params, call.args + (scratch,), call.sources
    )


def _in_raster_order(call: KernelCall) -> KernelCall:
    """mcu_conv.c's int8 kernels leave their faster walks for the one WALKS declares."""
    params = {**call.params, "raster_walk": 1}
    if "depthwise" in params:
        params["depthwise"] = helium_depthwise_variant(params, call.function)
    return replace(call, params=params)
