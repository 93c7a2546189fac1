"""SOFTMAX -> mcu_softmax_{s8,u8,s8_s16}[_long_rows], mcu_softmax_{s16,f32}."""

from __future__ import annotations

import math

from ..graph import Graph, Operator, Tensor
from ..quant import calculate_input_radius, f32, lut_int16, preprocess_softmax_scaling, quantize_multiplier
from . import CArray, KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import input_tensor, kernel_call, output_tensor, require_dtype, scale, zero_point

SOURCES = ("mcu_softmax",)

# gemmlowp fixed point format of the scaled input differences (reference Softmax).
SCALED_DIFF_INTEGER_BITS = 5

# Rows of at least this many values take the `_long_rows` entries (Helium's
# four lanes, mcu_softmax.c): a shorter row runs a few hundred ticks either
# way, less than the 1.8 KB of flash the lanes' code costs is worth.
SOFTMAX_LANES_MIN_DEPTH = 16


@lowers("SOFTMAX")
def lower_softmax(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    if not inp.shape or inp.shape != out.shape:
        raise NotLowerable(f"SOFTMAX from shape {inp.shape} to {out.shape}")
    depth = inp.shape[-1]
    outer_size = inp.num_elements // depth if depth else 0
    # beta is a float32 in the flatbuffer; TFLite widens it to double.
    beta = f32(op.options.get("beta", 1.0))
    if inp.dtype == "float32":
        require_dtype(op, out, "float32")
        params = {"outer_size": outer_size, "depth": depth, "beta": beta}
        return kernel_call(op, "mcu_softmax_f32", "mcu_softmax_f32_params", params, SOURCES)
    if inp.dtype == "int16":
        return _lower_softmax_s16(op, inp, out, beta, outer_size, depth)
    require_dtype(op, inp, "int8", "uint8")
    require_dtype(op, out, *(("int8", "int16") if inp.dtype == "int8" else ("uint8",)))
    if out.dtype == "uint8":
        if zero_point(out) != 0 or abs(scale(out) - 1.0 / 256) > 0.001 / 256:
            raise NotLowerable("uint8 SOFTMAX whose output is not quantized with scale 1/256, zero point 0")
    elif out.dtype == "int16":
        # TFLite fixes only the zero point of an int16 output; the kernel
        # writes probabilities in steps of 1/65536 whatever the scale says.
        if zero_point(out) != -32768:
            raise NotLowerable("int8 SOFTMAX to int16 whose output zero point is not -32768")
    elif zero_point(out) != -128 or abs(scale(out) - 1.0 / 256) > 0.001 / 256:
        raise NotLowerable("int8 SOFTMAX whose output is not quantized with scale 1/256, zero point -128")
    multiplier, left_shift = preprocess_softmax_scaling(beta, scale(inp), SCALED_DIFF_INTEGER_BITS)
    diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
    params = {
        "outer_size": outer_size,
        "depth": depth,
        "input_multiplier": multiplier,
        "input_left_shift": left_shift,
        "diff_min": diff_min,
    }
    function = {"int8": "mcu_softmax_s8", "uint8": "mcu_softmax_u8", "int16": "mcu_softmax_s8_s16"}[out.dtype]
    if depth >= SOFTMAX_LANES_MIN_DEPTH:
        function += "_long_rows"
    return kernel_call(op, function, "mcu_softmax_s8_params", params, SOURCES)


# int16 SOFTMAX's lookup tables (activations.cc, SoftmaxPrepare): exp over
# [-10, 0] (exp(-10) counts for nothing in a sum) and 1 / (1 + x) over
# [0, 1], both with outputs in [-1, 1], populated in double.
INT16_RANGE = 65535
EXP_LUT = lut_int16((10.0 / INT16_RANGE, 32767), (2.0 / INT16_RANGE, 0), math.exp)
ONE_OVER_ONE_PLUS_X_LUT = lut_int16((1.0 / INT16_RANGE, -32768), (2.0 / INT16_RANGE, 0), lambda x: 1.0 / (1.0 + x))


def _lower_softmax_s16(op: Operator, inp: Tensor, out: Tensor, beta: float, outer_size: int, depth: int) -> KernelCall:
    """int16 in and out, zero points 0: TFLite's SoftmaxInt16 with its two
    lookup tables (the output is probabilities in Q0.15 whatever the scale)."""
    require_dtype(op, out, "int16")
    if zero_point(inp) != 0 or zero_point(out) != 0:
        raise NotLowerable("int16 SOFTMAX with a zero point other than 0")
    # float input scale * float beta in float32, then / (10 / 65535) in
    # double: the differences [-65535, 0] become [-10, 0].
    multiplier, shift = quantize_multiplier(f32(scale(inp) * beta) / (10.0 / INT16_RANGE))
    params: dict[str, ParamValue] = {
        "outer_size": outer_size,
        "depth": depth,
        "input_multiplier": multiplier,
        "input_shift": shift,
        "exp_lut": CArray("int16_t", EXP_LUT),
        "one_over_one_plus_x_lut": CArray("int16_t", ONE_OVER_ONE_PLUS_X_LUT),
    }
    return kernel_call(op, "mcu_softmax_s16", "mcu_softmax_s16_params", params, SOURCES)


@lowers("LOG_SOFTMAX")
def lower_log_softmax(op: Operator, graph: Graph) -> KernelCall:
    """float32 only: the int8 kernel's fixed-point steps are not implemented."""
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    if not inp.shape or inp.shape != out.shape:
        raise NotLowerable(f"LOG_SOFTMAX from shape {inp.shape} to {out.shape}")
    depth = inp.shape[-1]
    params = {"outer_size": inp.num_elements // depth if depth else 0, "depth": depth}
    return kernel_call(op, "mcu_log_softmax_f32", "mcu_log_softmax_f32_params", params, SOURCES)


declare_facts(KernelFacts(), "SOFTMAX", "LOG_SOFTMAX")
