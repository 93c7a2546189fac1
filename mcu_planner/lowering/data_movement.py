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
from collections.abc import Iterable

import numpy as np

from ..graph import Graph, Operator, Tensor
from ..quant import quantize_multiplier, tflite_round
from ..slicing import SliceAxis, strided_slice_axes
from . import CArray, KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import constant_ints, element_bytes, input_tensor, int32_array, output_tensor, scale, zero_point

CONCAT_MAX_INPUTS = 8  # MCU_CONCAT_MAX_INPUTS in firmware/runtime/mcu_concat.h
SLICE_RANK = 5  # MCU_SLICE_RANK in firmware/runtime/mcu_slice.h
INT32_LOWEST = -(1 << 31)
INT32_HIGHEST = (1 << 31) - 1


def _product(values: Iterable[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


# ---------------------------------------------------------------- CONCATENATION


def concatenated_operands(op: Operator, graph: Graph) -> tuple[Tensor, list[Tensor]]:
    """Output and inputs of an op the concatenation kernel runs (CONCATENATION, PACK)."""
    out = output_tensor(op, graph)
    inputs = [input_tensor(op, graph, i) for i in range(len(op.inputs))]
    if not 1 <= len(inputs) <= CONCAT_MAX_INPUTS:
        raise NotLowerable(f"{op.opcode} of {len(inputs)} inputs (at most {CONCAT_MAX_INPUTS})")
    return out, inputs


@lowers("CONCATENATION")
def lower_concatenation(op: Operator, graph: Graph) -> KernelCall:
    out, inputs = concatenated_operands(op, graph)
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
    common: dict[str, ParamValue] = {
        "num_inputs": len(inputs),
        "outer_size": outer,
        "copy_bytes": int32_array(copy_bytes),
    }

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


def _concatenation_with_scaling(
    inputs: list[Tensor], out: Tensor, common: dict[str, ParamValue], args: tuple[int, ...]
) -> KernelCall:
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


@lowers("STRIDED_SLICE")
def lower_strided_slice(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"STRIDED_SLICE from {inp.dtype} to {out.dtype}")
    begin = constant_ints(op, input_tensor(op, graph, 1), "begin")
    end = constant_ints(op, input_tensor(op, graph, 2), "end")
    strides = constant_ints(op, input_tensor(op, graph, 3), "strides")
    try:
        axes, shape = strided_slice_axes(inp.shape, begin, end, strides, op.options)
    except ValueError as exc:
        raise NotLowerable(f"STRIDED_SLICE: {exc}") from None
    if len(shape) > SLICE_RANK:
        raise NotLowerable(f"STRIDED_SLICE over {len(shape)} dimensions (at most {SLICE_RANK})")
    kept = tuple(a.count for a in axes if not a.shrink)
    if kept != tuple(out.shape):
        raise NotLowerable(f"STRIDED_SLICE computes shape {kept} but the model says {out.shape}")
    if _product(a.count for a in axes) == 0:
        raise NotLowerable("STRIDED_SLICE with an empty result")
    return strided_copy(op, element_bytes(op, inp), shape, axes)


def strided_copy(op: Operator, element_size: int, shape: tuple[int, ...], axes: list[SliceAxis]) -> KernelCall:
    """mcu_strided_slice taking `axes` of an input of `shape` (SLICE and
    STRIDED_SLICE both lower to it)."""
    input_strides = [_product(shape[axis + 1 :]) for axis in range(len(shape))]
    first = sum(a.start * s for a, s in zip(axes, input_strides, strict=True))
    counts = [a.count for a in axes]
    steps = [a.stride * s for a, s in zip(axes, input_strides, strict=True)]
    return strided_slice_call(op, element_size, first, counts, steps)


def strided_slice_call(op: Operator, element_size: int, first: int, counts: list[int], steps: list[int]) -> KernelCall:
    """mcu_strided_slice taking counts[d] elements `steps[d]` input elements
    apart along each dimension, from input element `first` (padded to
    SLICE_RANK dimensions in front)."""
    pad = SLICE_RANK - len(counts)
    return KernelCall(
        function="mcu_strided_slice",
        params_type="mcu_strided_slice_params",
        params={
            "element_bytes": element_size,
            "first": first,
            "counts": int32_array([1] * pad + list(counts)),
            "steps": int32_array([0] * pad + list(steps)),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_slice",),
    )


# ---------------------------------------------------------------- RESIZE_NEAREST_NEIGHBOR


def nearest_neighbor(
    index: int, input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool
) -> int:
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


declare_facts(KernelFacts(concatenates_inputs=True), "CONCATENATION")  # mcu_concat.c
declare_facts(KernelFacts(), "STRIDED_SLICE", "RESIZE_NEAREST_NEIGHBOR")
