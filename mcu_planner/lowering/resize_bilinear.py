"""RESIZE_BILINEAR -> mcu_resize_bilinear_{f32,u8,s8,s16} (firmware/runtime/mcu_resize_bilinear.c).

The sampling positions are resolved here, per output row and column, as
TFLite's reference ComputeInterpolationValues computes them: in float32 for
float32 and uint8 tensors (reference_ops::ResizeBilinear<T>), in 1/1024ths
for int8 and int16 (ResizeBilinearInteger).  The kernel blends with the tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..graph import Graph, Operator
from . import CArray, KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import TYPE_SUFFIX, constant_ints, input_tensor, int32_array, output_tensor, scale, zero_point

FRACTION_BITS = 10  # the integer kernel's distances are in 1/1024ths


def float_samples(
    out_size: int, in_size: int, align_corners: bool, half_pixel_centers: bool
) -> tuple[list[int], list[int], list[float]]:
    """Per output index: (lower, upper, scaled - lower) in float32."""
    if align_corners and out_size > 1:
        ratio = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        ratio = np.float32(in_size) / np.float32(out_size)
    lowers_, uppers, fractions = [], [], []
    for index in range(out_size):
        if half_pixel_centers:
            scaled = (np.float32(index) + np.float32(0.5)) * ratio - np.float32(0.5)
        else:
            scaled = np.float32(index) * ratio
        lower = max(math.floor(float(scaled)), 0)
        upper = min(math.ceil(float(scaled)), in_size - 1)
        lowers_.append(lower)
        uppers.append(upper)
        fractions.append(float(scaled - np.float32(lower)))
    return lowers_, uppers, fractions


def _c_divide(a: int, b: int) -> int:
    """C / C++ integer division: truncates toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def integer_samples(
    out_size: int, in_size: int, align_corners: bool, half_pixel_centers: bool
) -> tuple[list[int], list[int], list[int]]:
    """Per output index: (lower, upper, scaled - 1024 * lower), scaled in 1/1024ths."""
    one = 1 << FRACTION_BITS
    if align_corners and out_size > 1:
        scale_10 = (one * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = (one * in_size + out_size // 2) // out_size
    lowers_, uppers, fractions = [], [], []
    for index in range(out_size):
        scaled = index * scale_10
        if half_pixel_centers:
            scaled += scale_10 // 2 - (one >> 1)
        lower = max(_c_divide(scaled, one), 0)
        upper = min(_c_divide(scaled + one - 1, one), in_size - 1)
        fractions.append(scaled - one * lower)
        # Upscaling a short axis by a large factor can round scale_10 up so
        # far that the last sample starts one row past the input, where the
        # reference reads out of bounds (with weight 1024 on that row, 0 on the
        # next).  Here the last row stands in for it: no read leaves the input.
        lowers_.append(min(lower, in_size - 1))
        uppers.append(upper)
    return lowers_, uppers, fractions


@lowers("RESIZE_BILINEAR")
def lower_resize_bilinear(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype != out.dtype or inp.dtype not in ("float32", "uint8", "int8", "int16"):
        raise NotLowerable(f"RESIZE_BILINEAR from {inp.dtype} to {out.dtype}")
    if len(inp.shape) != 4 or len(out.shape) != 4:
        raise NotLowerable("RESIZE_BILINEAR on a tensor that is not 4-D")
    if inp.dtype != "float32" and (scale(inp) != scale(out) or zero_point(inp) != zero_point(out)):
        # The kernels blend quantized values as they are (TFLite checks the same).
        raise NotLowerable("RESIZE_BILINEAR whose output quantization differs from its input's")
    size = constant_ints(op, input_tensor(op, graph, 1), "size")
    batches, in_h, in_w, depth = inp.shape
    if len(size) != 2 or min(size) < 1 or (batches, size[0], size[1], depth) != tuple(out.shape):
        raise NotLowerable(f"RESIZE_BILINEAR size {size} does not give output shape {out.shape}")
    out_h, out_w = size
    align_corners = bool(op.options.get("align_corners", False))
    half_pixel_centers = bool(op.options.get("half_pixel_centers", False))
    if align_corners and half_pixel_centers:
        raise NotLowerable("RESIZE_BILINEAR with both align_corners and half_pixel_centers (TFLite rejects it)")
    # Per output index along one axis: (lower, upper, fraction), see the two functions.
    samples: Callable[[int, int, bool, bool], tuple[list[int], list[int], Sequence[float]]]
    if inp.dtype in ("int8", "int16"):
        samples, fraction_type = integer_samples, "int32_t"
        function, params_type = f"mcu_resize_bilinear_{TYPE_SUFFIX[inp.dtype]}", "mcu_resize_bilinear_int_params"
    else:
        samples, fraction_type = float_samples, "float"
        function, params_type = f"mcu_resize_bilinear_{TYPE_SUFFIX[inp.dtype]}", "mcu_resize_bilinear_float_params"
    rows = samples(out_h, in_h, align_corners, half_pixel_centers)
    columns = samples(out_w, in_w, align_corners, half_pixel_centers)
    return KernelCall(
        function=function,
        params_type=params_type,
        params={
            "batches": batches,
            "input_height": in_h,
            "input_width": in_w,
            "depth": depth,
            "output_height": out_h,
            "output_width": out_w,
            "row_lower": int32_array(rows[0]),
            "row_upper": int32_array(rows[1]),
            "column_lower": int32_array(columns[0]),
            "column_upper": int32_array(columns[1]),
            "row_fraction": CArray(fraction_type, tuple(rows[2])),
            "column_fraction": CArray(fraction_type, tuple(columns[2])),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_resize_bilinear",),
    )


declare_facts(KernelFacts(), "RESIZE_BILINEAR")
