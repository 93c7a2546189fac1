"""FULLY_CONNECTED -> mcu_fully_connected_{s8,f32} (mcu_fully_connected.c), 16x8 ->
mcu_fully_connected_s16 (mcu_fully_connected_s16.c), uint8 -> mcu_fully_connected_u8,
hybrid (float activations, int8 weights) -> mcu_fully_connected_hybrid; int8 with a
packed int4 filter -> mcu_fully_connected_s8_s4 (mcu_fully_connected_s4.c)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from ..graph import Graph, Operator, Tensor, unpack_int4
from ..quant import conv_output_multipliers
from . import CArray, KernelCall, KernelFacts, NotLowerable, ParamValue, facts_for, lowers
from .common import (
    activation_params,
    filter_quantization,
    fused_activation,
    hybrid_weighted_operands,
    input_tensor,
    int32_array,
    is_float_weighted_op,
    is_hybrid_weighted_op,
    kernel_call,
    output_tensor,
    require_16x8_weighted_op,
    scale,
    uint8_weighted_params,
    zero_point,
)
from .walks import PIXEL_BY_PIXEL, RasterOrder, rows_facts

SOURCES = ("mcu_fully_connected",)


def _row_offset_terms(filt: Tensor, input_offset: int, filter_offset: int) -> CArray | str:
    """Per output, the parts of sum((w + filter_offset) * (x + input_offset))
    that do not depend on x: input_offset * (sum(w) + depth * filter_offset).
    With them the kernel multiplies raw values and adds filter_offset * sum(x)
    once per input row; integer sums are exact in any order.  "NULL" (offsets
    added per term) when the filter is not a constant."""
    if not filt.is_constant or filt.data is None:
        return "NULL"
    weights = _filter_values(filt).astype(np.int64).reshape(filt.shape)
    terms = input_offset * (weights.sum(axis=1) + filt.shape[1] * filter_offset)
    if terms.size and (terms.min() < -(2**31) or terms.max() >= 2**31):
        return "NULL"
    return int32_array(terms)


def _filter_values(filt: Tensor) -> npt.NDArray[np.int8]:
    """A constant int8 filter's values, or a packed int4 one's (two a byte)."""
    assert filt.data is not None
    if filt.dtype == "int4":
        return unpack_int4(filt.data, filt.num_elements)
    return np.frombuffer(filt.data, dtype=np.int8)


def _lower_u8(
    op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor, sizes: dict[str, int]
) -> KernelCall:
    """reference_ops::FullyConnected for uint8."""
    params = {**sizes, **uint8_weighted_params(op, inp, filt, bias, out)}
    return kernel_call(
        op, "mcu_fully_connected_u8", "mcu_fully_connected_u8_params", params, ("mcu_fully_connected_u8",), inputs=3
    )


# tensor_utils::ApplyActivationToVector's fused activations, as the kernel numbers them.
HYBRID_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}


def _lower_hybrid(
    op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor, sizes: dict[str, int]
) -> KernelCall:
    """EvalHybrid: the float input quantized per batch row when the op runs,
    symmetric or (asymmetric_quantize_inputs) with a zero point."""
    quantization, weights_data = hybrid_weighted_operands(op, filt, bias, out)
    activation = fused_activation(op)
    if activation not in HYBRID_ACTIVATIONS:
        raise NotLowerable(f"hybrid FULLY_CONNECTED with fused activation {activation}")
    output_depth = sizes["output_depth"]
    scales = quantization.scales
    if len(scales) not in (1, output_depth) or (len(scales) > 1 and quantization.axis != 0):
        raise NotLowerable(f"hybrid FULLY_CONNECTED filter with {len(scales)} scales for {output_depth} outputs")
    asymmetric = bool(op.options.get("asymmetric_quantize_inputs", False))
    row_sums: CArray | str = "NULL"
    if asymmetric:
        weights = np.frombuffer(weights_data, dtype=np.int8).astype(np.int64).reshape(filt.shape)
        row_sums = int32_array(weights.sum(axis=1))
    params = {
        **sizes,
        "asymmetric": int(asymmetric),
        "per_channel": int(len(scales) > 1),
        "filter_scales": CArray("float", tuple(scales)),
        "row_sums": row_sums,
        "activation": HYBRID_ACTIVATIONS[activation],
    }
    return kernel_call(
        op,
        "mcu_fully_connected_hybrid",
        "mcu_fully_connected_hybrid_params",
        params,
        ("mcu_fully_connected_hybrid",),
        inputs=3,
    )


def _lower_16x8(
    op: Operator, sizes: dict[str, int], inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor
) -> KernelCall:
    """LiteRT rescales the int64 sums in double by input * filter / output
    scale (see mcu_fully_connected_s16.c); it reads a 16x8 bias as int64
    whatever its type (an int32 one gives garbage), so only int64 has a
    reference to match."""
    filter_scales = require_16x8_weighted_op(op, inp, filt, bias, out, ("int64",)).scales
    per_channel = len(filter_scales) > 1
    if per_channel and len(filter_scales) != sizes["output_depth"]:
        raise NotLowerable(
            f"FULLY_CONNECTED filter has {len(filter_scales)} scales for {sizes['output_depth']} outputs"
        )
    # double(float) * double(float) / double(float), as the reference.
    scales = [scale(inp) * filter_scale / scale(out) for filter_scale in filter_scales]
    params = {
        **sizes,
        "per_channel": int(per_channel),
        "output_scale": CArray("double", tuple(scales)),
        **activation_params(op, out),
    }
    return kernel_call(
        op, "mcu_fully_connected_s16", "mcu_fully_connected_s16_params", params, ("mcu_fully_connected_s16",), inputs=3
    )


@lowers("FULLY_CONNECTED")
def lower_fully_connected(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    filt = input_tensor(op, graph, 1)
    bias = input_tensor(op, graph, 2, optional=True)
    out = output_tensor(op, graph)
    if op.options.get("weights_format", "DEFAULT") not in ("DEFAULT", 0):
        raise NotLowerable(f"FULLY_CONNECTED with {op.options['weights_format']} weights")
    if len(filt.shape) != 2:
        raise NotLowerable(f"FULLY_CONNECTED with a rank-{len(filt.shape)} filter")
    output_depth, accum_depth = filt.shape
    if accum_depth == 0 or inp.num_elements % accum_depth:
        raise NotLowerable(f"FULLY_CONNECTED input of {inp.num_elements} elements is not a multiple of {accum_depth}")
    batches = inp.num_elements // accum_depth
    if out.num_elements != batches * output_depth:
        raise NotLowerable(f"FULLY_CONNECTED output shape {out.shape} does not match {batches}x{output_depth}")
    sizes = {"batches": batches, "output_depth": output_depth, "accum_depth": accum_depth}
    if inp.dtype == "uint8":
        return _lower_u8(op, inp, filt, bias, out, sizes)
    if is_hybrid_weighted_op(inp, filt):
        return _lower_hybrid(op, inp, filt, bias, out, sizes)
    if inp.dtype == "int16":
        return _lower_16x8(op, sizes, inp, filt, bias, out)
    # An int4 filter of an int8 op stays packed (int4_weights.py): the int8
    # kernel's checks apply to the values it holds.
    packed = inp.dtype == "int8" and filt.dtype == "int4" and filt.is_constant
    if is_float_weighted_op(op, inp, replace(filt, dtype="int8") if packed else filt, bias, out):
        params: dict[str, ParamValue] = {**sizes, **activation_params(op, out)}
        return kernel_call(op, "mcu_fully_connected_f32", "mcu_fully_connected_f32_params", params, SOURCES, inputs=3)

    filter_scales = filter_quantization(op, filt).scales
    per_channel = len(filter_scales) > 1
    multipliers, shifts = conv_output_multipliers(
        scale(inp), filter_scales, scale(out), output_depth if per_channel else 1
    )
    input_offset = -zero_point(inp)
    filter_offset = 0 if per_channel else -zero_point(filt)
    params = {
        **sizes,
        "input_offset": input_offset,
        "filter_offset": filter_offset,
        "output_offset": zero_point(out),
        "per_channel": int(per_channel),
        "output_multiplier": int32_array(multipliers),
        "output_shift": int32_array(shifts),
        **activation_params(op, out),
        "row_offset_terms": _row_offset_terms(filt, input_offset, filter_offset),
    }
    if packed:
        if params["row_offset_terms"] == "NULL":
            raise NotLowerable("FULLY_CONNECTED with an int4 filter whose row sums overflow int32")
        return kernel_call(
            op,
            "mcu_fully_connected_s8_s4",
            "mcu_fully_connected_s8_params",
            params,
            ("mcu_fully_connected_s4",),
            inputs=3,
        )
    return kernel_call(op, "mcu_fully_connected_s8", "mcu_fully_connected_s8_params", params, SOURCES, inputs=3)


# mcu_fully_connected.c, _u8.c, _s16.c: one input row, then its output row.
# The hybrid kernel quantizes its whole input first: no walk.
WALKS: dict[str, RasterOrder] = {
    "mcu_fully_connected_s8": PIXEL_BY_PIXEL,
    "mcu_fully_connected_s8_s4": PIXEL_BY_PIXEL,
    "mcu_fully_connected_f32": PIXEL_BY_PIXEL,
    "mcu_fully_connected_u8": PIXEL_BY_PIXEL,
    "mcu_fully_connected_s16": PIXEL_BY_PIXEL,
}


@facts_for("FULLY_CONNECTED")
def fully_connected_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    filter_shape = graph.tensors[op.inputs[1]].shape
    macs = graph.tensors[op.outputs[0]].num_elements * (filter_shape[-1] if filter_shape else 0)
    walk = WALKS.get(call.function)
    return rows_facts(op, graph, call, walk, macs) if walk is not None else KernelFacts(macs=macs)
