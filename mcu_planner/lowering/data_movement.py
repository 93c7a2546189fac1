"""CONCATENATION, STRIDED_SLICE, RESIZE_NEAREST_NEIGHBOR -> firmware/runtime
mcu_concat.c, mcu_slice.c, mcu_resize.c.

These ops move bytes without arithmetic, so each has one kernel for every
element type; what is resolved here is where each byte comes from: the block
sizes of a concatenation, the per-axis start/count/step of a strided slice
(TFLite's strided_slice_logic.h), and the source row/column of each resized
output pixel (TFLite's GetNearestNeighbor, float32 arithmetic).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import Graph, Operator
from ..quant import quantize_multiplier, tflite_round
from . import CArray, KernelCall, NotLowerable, lowers
from .common import constant_ints, element_bytes, input_tensor, int32_array, output_tensor, scale, zero_point

CONCAT_MAX_INPUTS = 8  # MCU_CONCAT_MAX_INPUTS in firmware/runtime/mcu_concat.h
SLICE_RANK = 5  # MCU_SLICE_RANK in firmware/runtime/mcu_slice.h
INT32_LOWEST = -(1 << 31)
INT32_HIGHEST = (1 << 31) - 1


def _product(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


# ---------------------------------------------------------------- CONCATENATION


@lowers("CONCATENATION")
def lower_concatenation(op: Operator, graph: Graph) -> KernelCall:
    out = output_tensor(op, graph)
    inputs = [input_tensor(op, graph, i) for i in range(len(op.inputs))]
    if not 1 <= len(inputs) <= CONCAT_MAX_INPUTS:
        raise NotLowerable(f"CONCATENATION of {len(inputs)} inputs (at most {CONCAT_MAX_INPUTS})")
    if (op.options.get("fused_activation_function") or "NONE") != "NONE":
        raise NotLowerable("CONCATENATION with a fused activation (TFLite rejects it)")
    rank = len(out.shape)
    axis = op.options.get("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise NotLowerable(f"CONCATENATION axis {op.options.get('axis')} of a rank-{rank} output")
    for t in inputs:
        if t.dtype != out.dtype:
            raise NotLowerable(f"CONCATENATION of {t.dtype} into {out.dtype}")
        if len(t.shape) != rank or any(t.shape[d] != out.shape[d] for d in range(rank) if d != axis):
            raise NotLowerable(f"CONCATENATION of shape {t.shape} into {out.shape} along axis {axis}")
    if sum(t.shape[axis] for t in inputs) != out.shape[axis]:
        raise NotLowerable(f"CONCATENATION inputs do not add up to output shape {out.shape}")
    size = element_bytes(op, out)
    outer = _product(out.shape[:axis])
    copy_bytes = [_product(t.shape[axis:]) * size for t in inputs]
    padding = (-1,) * (CONCAT_MAX_INPUTS - len(inputs))
    args = tuple(op.inputs) + padding + (op.outputs[0],)
    common = {"num_inputs": len(inputs), "outer_size": outer, "copy_bytes": int32_array(copy_bytes)}

    if out.dtype not in ("int8", "uint8") or all(t.same_quantization(out) for t in inputs):
        return KernelCall(
            function="mcu_concatenation",
            params_type="mcu_concatenation_params",
            params=common,
            args=args,
            sources=("mcu_concat",),
        )
    if out.dtype == "uint8":
        return _concatenation_with_scaling(inputs, out, common, args)
    # TFLite's own int8 CONCATENATION refuses differing quantization; here such
    # an input is requantized as QUANTIZE to the output's parameters would.
    rescale, zero_points, multipliers, shifts = [], [], [], []
    for t in inputs:
        same = t.same_quantization(out)
        m, s = (0, 0) if same else quantize_multiplier(scale(t) / scale(out))
        rescale.append(0 if same else 1)
        zero_points.append(zero_point(t))
        multipliers.append(m)
        shifts.append(s)
    return KernelCall(
        function="mcu_concatenation_s8",
        params_type="mcu_concatenation_s8_params",
        params={
            **common,
            "rescale": int32_array(rescale),
            "input_zero_point": int32_array(zero_points),
            "multiplier": int32_array(multipliers),
            "shift": int32_array(shifts),
            "output_zero_point": zero_point(out),
        },
        args=args,
        sources=("mcu_concat",),
    )


def _concatenation_with_scaling(inputs, out, common: dict, args: tuple) -> KernelCall:
    """uint8 inputs quantized unlike the output, as reference_ops::
    ConcatenationWithScaling rescales them: in float32, scale = input_scale *
    (1.f / output_scale), bias = -zero_point * scale; an input whose scale
    and zero point equal the output's is copied."""
    inverse_output_scale = np.float32(1) / np.float32(scale(out))
    rescale, scales, biases = [], [], []
    for t in inputs:
        copy = zero_point(t) == zero_point(out) and np.float32(scale(t)) == np.float32(scale(out))
        input_scale = np.float32(scale(t)) * inverse_output_scale
        rescale.append(0 if copy else 1)
        scales.append(float(input_scale))
        biases.append(float(np.float32(-zero_point(t)) * input_scale))
    return KernelCall(
        function="mcu_concatenation_u8",
        params_type="mcu_concatenation_u8_params",
        params={
            **common,
            "rescale": int32_array(rescale),
            "scale": CArray("float", tuple(scales)),
            "bias": CArray("float", tuple(biases)),
            "output_zero_point": zero_point(out),
        },
        args=args,
        sources=("mcu_concat",),
    )


# ---------------------------------------------------------------- STRIDED_SLICE


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def slice_start(begin: int, stride: int, masked: bool, axis_size: int) -> int:
    """strided_slice::StridedSliceStartForAxis."""
    start = begin + axis_size if begin < 0 else begin
    start = _clamp(start, 0, axis_size) if stride > 0 else _clamp(start, -1, axis_size - 1)
    if masked:
        start = 0 if stride > 0 else axis_size - 1
    return start


def slice_end(end: int, stride: int, masked: bool, shrink: bool, offset: bool, start: int, axis_size: int) -> int:
    """strided_slice::StridedSliceEndForAxis."""
    if shrink:
        return start if start >= axis_size else start + 1
    if offset:
        end += start
    if end < 0:
        end += axis_size
    end = _clamp(end, 0, axis_size) if stride > 0 else _clamp(end, -1, axis_size - 1)
    if masked:
        end = axis_size if stride > 0 else -1
    return end


def slice_count(start: int, end: int, stride: int) -> int:
    """How many of start, start + stride, ... lie before end (TFLite's loop condition)."""
    if stride > 0:
        return max(0, -(-(end - start) // stride))
    return max(0, -(-(start - end) // -stride))


@lowers("STRIDED_SLICE")
def lower_strided_slice(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"STRIDED_SLICE from {inp.dtype} to {out.dtype}")
    options = op.options
    if options.get("ellipsis_mask", 0) or options.get("new_axis_mask", 0):
        raise NotLowerable("STRIDED_SLICE with ellipsis_mask or new_axis_mask")
    begin = constant_ints(op, input_tensor(op, graph, 1), "begin")
    end = constant_ints(op, input_tensor(op, graph, 2), "end")
    strides = constant_ints(op, input_tensor(op, graph, 3), "strides")
    rank = len(inp.shape)
    if not (len(begin) == len(end) == len(strides)) or len(begin) > rank or rank > SLICE_RANK:
        raise NotLowerable(f"STRIDED_SLICE of a rank-{rank} input with {len(begin)} indices")
    if any(s == 0 for s in strides):
        raise NotLowerable("STRIDED_SLICE with stride 0")
    begin_mask, end_mask = options.get("begin_mask", 0), options.get("end_mask", 0)
    shrink_mask, offset = options.get("shrink_axis_mask", 0), bool(options.get("offset", False))
    # Axes past the given indices are taken whole.
    for axis in range(len(begin), rank):
        begin.append(0)
        end.append(0)
        strides.append(1)
        begin_mask |= 1 << axis
        end_mask |= 1 << axis

    input_strides = [_product(inp.shape[axis + 1 :]) for axis in range(rank)]
    first, counts, steps, kept = 0, [], [], []
    for axis in range(rank):
        size, stride = inp.shape[axis], strides[axis]
        start = slice_start(begin[axis], stride, bool(begin_mask >> axis & 1), size)
        stop = slice_end(
            end[axis], stride, bool(end_mask >> axis & 1), bool(shrink_mask >> axis & 1), offset, start, size
        )
        count = slice_count(start, stop, stride)
        counts.append(count)
        steps.append(stride * input_strides[axis])
        if count:
            first += start * input_strides[axis]
        if not shrink_mask >> axis & 1:
            kept.append(count)
    if tuple(kept) != tuple(out.shape):
        raise NotLowerable(f"STRIDED_SLICE computes shape {tuple(kept)} but the model says {out.shape}")
    if _product(counts) == 0:
        raise NotLowerable("STRIDED_SLICE with an empty result")
    pad = SLICE_RANK - rank
    return KernelCall(
        function="mcu_strided_slice",
        params_type="mcu_strided_slice_params",
        params={
            "element_bytes": element_bytes(op, inp),
            "first": first,
            "counts": int32_array([1] * pad + counts),
            "steps": int32_array([0] * pad + steps),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_slice",),
    )


# ---------------------------------------------------------------- RESIZE_NEAREST_NEIGHBOR


def nearest_neighbor(index: int, input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool) -> int:
    """GetNearestNeighbor, in float32 as the C++ computes it."""
    if align_corners and output_size > 1:
        ratio = np.float32(input_size - 1) / np.float32(output_size - 1)
    else:
        ratio = np.float32(input_size) / np.float32(output_size)
    offset = np.float32(0.5 if half_pixel_centers else 0.0)
    position = float((np.float32(index) + offset) * ratio)
    source = tflite_round(position) if align_corners else math.floor(position)
    source = min(source, input_size - 1)
    if half_pixel_centers:
        source = max(0, source)
    return source


@lowers("RESIZE_NEAREST_NEIGHBOR")
def lower_resize_nearest_neighbor(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"RESIZE_NEAREST_NEIGHBOR from {inp.dtype} to {out.dtype}")
    if len(inp.shape) != 4 or len(out.shape) != 4:
        raise NotLowerable("RESIZE_NEAREST_NEIGHBOR on a tensor that is not 4-D")
    size = constant_ints(op, input_tensor(op, graph, 1), "size")
    batches, in_h, in_w, depth = inp.shape
    if len(size) != 2 or (batches, size[0], size[1], depth) != tuple(out.shape):
        raise NotLowerable(f"RESIZE_NEAREST_NEIGHBOR size {size} does not give output shape {out.shape}")
    out_h, out_w = size
    align_corners = bool(op.options.get("align_corners", False))
    half_pixel_centers = bool(op.options.get("half_pixel_centers", False))
    rows = [nearest_neighbor(y, in_h, out_h, align_corners, half_pixel_centers) for y in range(out_h)]
    columns = [nearest_neighbor(x, in_w, out_w, align_corners, half_pixel_centers) for x in range(out_w)]
    return KernelCall(
        function="mcu_resize_nearest_neighbor",
        params_type="mcu_resize_nearest_neighbor_params",
        params={
            "batches": batches,
            "input_height": in_h,
            "input_width": in_w,
            "output_height": out_h,
            "output_width": out_w,
            "pixel_bytes": depth * element_bytes(op, inp),
            "source_row": int32_array(rows),
            "source_column": int32_array(columns),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_resize",),
    )
