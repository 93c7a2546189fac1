"""TRANSPOSE_CONV -> mcu_transpose_conv_{s8,s16,f32} (firmware/runtime/mcu_transpose_conv.c).

TFLite's input order is (output_shape, weights, input, bias).  The output's
shape is the output tensor's static shape: a constant output_shape input must
agree with it, and a non-constant one (TFLM's SEANet cases feed it as a graph
input) is not read by the generated code.  Padding follows transpose_conv.cc's
Prepare: ComputePaddingHeightWidth with the output's size as the "input" size
and dilation 1; multipliers follow PopulateConvolutionQuantizationParams.
"""

from __future__ import annotations

import math

from ..graph import Graph, Operator
from ..quant import conv_output_multipliers, int64_rescale_multipliers
from . import KernelCall, KernelFacts, NotLowerable, facts_for, lowers
from .common import (
    activation_params,
    compute_out_size,
    compute_padding,
    constant_ints,
    input_tensor,
    int32_array,
    output_tensor,
    require_16x8_weighted_op,
    require_dtype,
    scale,
    zero_point,
)

SOURCES = ("mcu_transpose_conv",)


@lowers("TRANSPOSE_CONV")
def lower_transpose_conv(op: Operator, graph: Graph) -> KernelCall:
    shape_input = input_tensor(op, graph, 0)
    filt = input_tensor(op, graph, 1)
    inp = input_tensor(op, graph, 2)
    bias = input_tensor(op, graph, 3, optional=True)
    out = output_tensor(op, graph)
    if len(inp.shape) != 4 or len(filt.shape) != 4 or len(out.shape) != 4:
        raise NotLowerable("TRANSPOSE_CONV on tensors that are not 4-D")
    if shape_input.is_constant and tuple(constant_ints(op, shape_input, "output shape")) != tuple(out.shape):
        raise NotLowerable(f"TRANSPOSE_CONV output_shape input disagrees with output {out.shape}")
    batches, in_h, in_w, in_c = inp.shape
    out_c, filter_h, filter_w, filter_in_c = filt.shape
    if filter_in_c != in_c or out.shape[0] != batches or out.shape[3] != out_c:
        raise NotLowerable(f"TRANSPOSE_CONV filter {filt.shape} does not map {inp.shape} to {out.shape}")
    stride_h, stride_w = op.options.get("stride_h", 1), op.options.get("stride_w", 1)
    if min(stride_h, stride_w) < 1:
        raise NotLowerable(f"TRANSPOSE_CONV with stride {stride_h}x{stride_w}")
    padding = op.options.get("padding", "SAME")
    _, out_h, out_w, _ = out.shape
    # The transposed convolution of the output must give back the input's size.
    for out_size, taps, stride, in_size in ((out_h, filter_h, stride_h, in_h), (out_w, filter_w, stride_w, in_w)):
        if compute_out_size(padding, out_size, taps, stride) != in_size:
            raise NotLowerable(f"TRANSPOSE_CONV output shape {out.shape} disagrees with input {inp.shape}")
    params = {
        "batches": batches,
        "input_h": in_h,
        "input_w": in_w,
        "input_c": in_c,
        "filter_h": filter_h,
        "filter_w": filter_w,
        "output_h": out_h,
        "output_w": out_w,
        "output_c": out_c,
        "stride_h": stride_h,
        "stride_w": stride_w,
        "dilation_h": 1,
        "dilation_w": 1,
        "pad_h": compute_padding(stride_h, 1, out_h, filter_h, in_h),
        "pad_w": compute_padding(stride_w, 1, out_w, filter_w, in_w),
        "filter_in_c_or_multiplier": in_c,
    }
    args = (op.inputs[2], op.inputs[1], op.inputs[3] if bias is not None else -1, op.outputs[0])
    if inp.dtype == "float32":
        for t in (filt, out) + ((bias,) if bias is not None else ()):
            require_dtype(op, t, "float32")
        return KernelCall(
            "mcu_transpose_conv_f32",
            "mcu_transpose_conv_f32_params",
            {**params, **activation_params(op, out)},
            args,
            SOURCES,
        )
    if inp.dtype == "int16":
        # TFLite's 16x8 kernel reads the bias as int64 whatever its type.
        quantization = require_16x8_weighted_op(op, inp, filt, bias, out, ("int64",))
        function = "mcu_transpose_conv_s16"
    else:
        for t in (inp, filt, out):
            require_dtype(op, t, "int8")
        if bias is not None:
            require_dtype(op, bias, "int32")
        if filt.quantization is None or any(filt.quantization.zero_points):
            raise NotLowerable("TRANSPOSE_CONV with an unquantized or asymmetric int8 filter")
        quantization = filt.quantization
        function = "mcu_transpose_conv_s8"
    rescale = int64_rescale_multipliers if inp.dtype == "int16" else conv_output_multipliers
    multipliers, shifts = rescale(scale(inp), quantization.scales, scale(out), out_c)
    quantized = {
        **params,
        "input_offset": -zero_point(inp),
        "output_offset": zero_point(out),
        "output_multiplier": int32_array(multipliers),
        "output_shift": int32_array(shifts),
        **activation_params(op, out),
    }
    return KernelCall(function, "mcu_transpose_conv_params", quantized, args, SOURCES)


@facts_for("TRANSPOSE_CONV")
def transpose_conv_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """Every input element is scattered through the whole filter of each output channel."""
    filter_shape = graph.tensors[op.inputs[1]].shape
    macs = graph.tensors[op.inputs[2]].num_elements * math.prod(filter_shape[:3])
    return KernelFacts(macs=macs)
