"""LOGISTIC, TANH, EXP, GELU, ABS, LOG, SQRT, RSQRT, RELU, RELU6, RELU_N1_TO_1,
LEAKY_RELU, HARD_SWISH -> firmware/runtime/mcu_activations.c (the float
variants of the first eight: mcu_math.c).

Constants follow TFLite's activations.cc Prepare functions.  int8 LOGISTIC,
TANH, EXP and GELU are, in TFLite's reference path, a 256-entry table filled
at Prepare time with float32 arithmetic and the C library's expf / tanhf /
erfcf; the table is built here the same way and stored as a constant, so the
MCU does no float math.  int8 ABS, LOG, SQRT and RSQRT are per-element
functions of the input byte in the reference, so they become tables too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from dataclasses import replace
from functools import cache

import numpy as np

from ..graph import DTYPE_C_TYPE, Graph, Operator, Tensor
from ..quant import (
    FLOAT32_MAX,
    INT_RANGES,
    checked_log2,
    downscale_multiplier_to_int16,
    f32,
    float_to_int32,
    inv_sqrt_quantized_multiplier_exp,
    lut_int8,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    tflite_round,
    wrap_int32,
)
from . import CArray, KernelCall, KernelFacts, NotLowerable, facts_for, lowers
from .common import TYPE_SUFFIX, elementwise_operands, kernel_call, require_dtype, scale, zero_point
from .math import lower_float_gelu, lower_float_unary
from .walks import unary_elementwise_facts, values_walk

SOURCES = ("mcu_activations",)
SOURCES_S16 = ("mcu_activations_s16",)  # the int16 kernels


@cache
def _libm_float_function(name: str) -> Callable[[float], float] | None:
    """The C library's single-precision `name` (expf, tanhf), the function
    TFLite's table builder calls, or None where no C library can be loaded."""
    path = ctypes.util.find_library("m")
    try:
        library = ctypes.CDLL(path) if path else ctypes.CDLL(None)
        function = library[name]
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_float
    function.argtypes = [ctypes.c_float]
    return function


def _float32_unary(name: str, fallback: Callable[[float], float]) -> Callable[[np.float32], np.float32]:
    libm = _libm_float_function(name)
    if libm is not None:
        return lambda x: np.float32(libm(float(x)))
    # Correctly rounded double result narrowed to float32: what a good libm returns.
    return lambda x: np.float32(fallback(float(x)))


def _exp_f32(x: np.float32) -> np.float32:
    return _float32_unary("expf", lambda v: math.exp(v) if v < 709 else math.inf)(x)


def _tanh_f32(x: np.float32) -> np.float32:
    return _float32_unary("tanhf", math.tanh)(x)


def _logistic_f32(x: np.float32) -> np.float32:
    one = np.float32(1.0)
    with np.errstate(over="ignore"):
        # numpy's stubs type float32 arithmetic as Any when checked for Python
        # 3.10 (numpy 2.4 needs 3.11): the annotation states the float32 result.
        logistic: np.float32 = one / (one + _exp_f32(-x))
    return logistic


def _unary_operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor]:
    inp, out = elementwise_operands(op, graph)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"{op.opcode} from {inp.dtype} to {out.dtype}")
    return inp, out


def _lower_sigmoid_s16(op: Operator, inp: Tensor, out: Tensor) -> KernelCall:
    """int16 LOGISTIC / TANH: the input rescaling of SigmoidPrepare /
    TanhPrepare (the table's domain is 3 * 4096 units per 1.0 of a 1/4-scaled
    input); output scale 1/32768, zero points 0, as TFLite requires."""
    if zero_point(inp) or zero_point(out) or checked_log2(scale(out)) != -15:
        raise NotLowerable(f"int16 {op.opcode} needs zero points 0 and output scale 1/32768")
    input_integer_bits = 3
    log2 = checked_log2(scale(inp))
    left_shift = (15 - input_integer_bits) + (log2 if log2 is not None else 0)
    if log2 is not None and left_shift == 0:
        multiplier = 3  # the power-of-two case: 3 << 0
    else:
        # Double, from the float32 scale; doubled until above 32767 / 2.
        real = f32(scale(inp)) * 4096.0 * 3.0
        left_shift = 0
        while real <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift += 1
            real *= 2.0
        multiplier = int(real)  # static_cast<int32_t>: truncation
    function = "mcu_logistic_s16" if op.opcode == "LOGISTIC" else "mcu_tanh_s16"
    params = {"size": inp.num_elements, "input_multiplier": multiplier, "input_left_shift": left_shift}
    return kernel_call(op, function, "mcu_sigmoid_s16_params", params, SOURCES_S16)


def _lower_abs_s16(op: Operator, inp: Tensor, out: Tensor) -> KernelCall:
    """int16 ABS (elementwise.cc): quantized, zero points 0 as GenericPrepare
    requires, rescaled by input / output scale (a float32 quotient) only
    where the scales differ; without quantization, plain |x|."""
    if inp.quantization is None and out.quantization is None:
        params = {"size": inp.num_elements, "needs_rescale": 0, "output_multiplier": 0, "output_shift": 0}
        return kernel_call(op, "mcu_abs_s16", "mcu_abs_s16_params", {**params, "saturate": 0}, SOURCES_S16)
    if inp.quantization is None or out.quantization is None or zero_point(inp) or zero_point(out):
        raise NotLowerable("int16 ABS needs both tensors quantized with zero point 0")
    in_scale, out_scale = np.float32(scale(inp)), np.float32(scale(out))
    needs_rescale = bool(in_scale != out_scale)
    multiplier, shift = quantize_multiplier(float(in_scale / out_scale)) if needs_rescale else (0, 0)
    params = {
        "size": inp.num_elements,
        "needs_rescale": int(needs_rescale),
        "output_multiplier": multiplier,
        "output_shift": shift,
        "saturate": 1,
    }
    return kernel_call(op, "mcu_abs_s16", "mcu_abs_s16_params", params, SOURCES_S16)


def _erfc_f32(x: np.float32) -> np.float32:
    return _float32_unary("erfcf", math.erfc)(x)


# float32 constants of gelu.h: -M_SQRT1_2, and sqrt(2 / pi) as a constexpr float.
_MINUS_SQRT1_2 = np.float32(-0.70710678118654752440)
_SQRT_2_OVER_PI = np.float32(1.12837916709551257390 * 0.70710678118654752440)


def _gelu_f32(x: np.float32) -> np.float32:
    """GeluTransform: 0.5f * in * std::erfc(in * -M_SQRT1_2), in float32."""
    gelu: np.float32 = np.float32(0.5) * x * _erfc_f32(x * _MINUS_SQRT1_2)
    return gelu


def _gelu_approximate_f32(x: np.float32) -> np.float32:
    """GeluTransformApproximate, its float32 operations in the C++ order."""
    cube_term = np.float32(0.044715) * x * x * x
    inner = _SQRT_2_OVER_PI * (x + cube_term)
    gelu: np.float32 = np.float32(0.5) * x * (np.float32(1.0) + _tanh_f32(inner))
    return gelu


def _log_f32(x: np.float32) -> np.float32:
    return _float32_unary("logf", lambda v: math.log(v) if v > 0 else -math.inf)(x)


# Opcode -> the float32 transform TFLite fills the int8 table with.
LUT_TRANSFORMS = {"LOGISTIC": _logistic_f32, "TANH": _tanh_f32, "EXP": _exp_f32}

# int8 ops elementwise.cc computes per element in integer or float steps; as
# a function of the input byte alone each becomes a table here, built by
# following those steps for all 256 inputs.
INT8_ELEMENTWISE = ("ABS", "LOG", "SQRT", "RSQRT", "NEG")


def wrap_int8(value: int) -> int:
    return (value + 128) % 256 - 128


def _abs_table(inp: Tensor, out: Tensor) -> tuple[int, ...]:
    """AbsEvalQuantized; the rescale (input / output scale in float32) only
    where the scales differ."""
    in_scale, out_scale = np.float32(scale(inp)), np.float32(scale(out))
    multiplier, shift = quantize_multiplier(float(in_scale / out_scale))
    table = [0] * 256
    for q in range(-128, 128):
        value = abs(q - zero_point(inp))
        if in_scale != out_scale:
            value = multiply_by_quantized_multiplier(value, multiplier, shift)
        table[q & 0xFF] = max(-128, min(127, value + zero_point(out)))
    return tuple(table)


def _log_table(inp: Tensor, out: Tensor) -> tuple[int, ...]:
    """LogLUTPrepare: log of the dequantized value, the output's lowest value
    for inputs <= 0."""
    output_min = np.float32(-128 - zero_point(out)) * np.float32(scale(out))
    return lut_int8(
        (scale(inp), zero_point(inp)),
        (scale(out), zero_point(out)),
        lambda v: output_min if v <= 0 else _log_f32(v),
    )


def _sqrt_table(inp: Tensor, out: Tensor) -> tuple[int, ...]:
    """SqrtEvalQuantized: sqrt in float32, then static_cast<int> (truncating)
    of the quotient by the output scale.  Inputs below the zero point make the
    reference fail; their entries follow the same arithmetic (NaN)."""
    in_scale, out_scale = np.float32(scale(inp)), np.float32(scale(out))
    table = [0] * 256
    with np.errstate(invalid="ignore"):
        for q in range(-128, 128):
            root = np.sqrt(in_scale * np.float32(q - zero_point(inp)))
            quantized = wrap_int32(float_to_int32(root / out_scale) + zero_point(out))
            table[q & 0xFF] = max(-128, min(127, quantized))
    return tuple(table)


# RsqrtEvalQuantizedInt8's extra bits, and the reverse-shift convention of
# GetInvSqrtQuantizedMultiplierExp (kReverseShift).
_RSQRT_SHIFT = 20
_REVERSE_SHIFT = -1


def _rsqrt_table(inp: Tensor, out: Tensor) -> tuple[int, ...]:
    """RsqrtEvalQuantizedInt8: 1 / sqrt(q - zero point) in gemmlowp fixed
    point, rescaled by 1 / (sqrt(input scale) * output scale) (float32 sqrt and
    product, double quotient); q at the zero point gives the largest output."""
    root = np.sqrt(np.float32(scale(inp))) * np.float32(scale(out))
    multiplier, shift = quantize_multiplier(1.0 / float(root))
    table = [0] * 256
    for q in range(-128, 128):
        value = q - zero_point(inp)
        if value == 0:
            table[q & 0xFF] = 127
            continue
        inv_sqrt, inv_shift = inv_sqrt_quantized_multiplier_exp(value, _REVERSE_SHIFT)
        data = multiply_by_quantized_multiplier(1, inv_sqrt, inv_shift + _RSQRT_SHIFT)
        result = multiply_by_quantized_multiplier(data, multiplier, shift - _RSQRT_SHIFT) + zero_point(out)
        table[q & 0xFF] = max(-128, min(127, result))
    return tuple(table)


def _neg_table(inp: Tensor, out: Tensor) -> tuple[int, ...]:
    """neg.cc negates the stored int8 value whatever the quantization, in int8
    (-(-128) wraps to -128)."""
    return tuple(wrap_int8(-q) for q in (list(range(0, 128)) + list(range(-128, 0))))


INT8_TABLES = {"ABS": _abs_table, "LOG": _log_table, "SQRT": _sqrt_table, "RSQRT": _rsqrt_table, "NEG": _neg_table}


# The table ops TFLite also has for uint8 (the others are int8 only).
UINT8_TABLE_OPS = ("LOGISTIC", "TANH")


@lowers(*LUT_TRANSFORMS, *INT8_ELEMENTWISE)
def lower_lut(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    if inp.dtype == "float32":
        return lower_float_unary(op, graph)
    if inp.dtype == "int16" and op.opcode in ("LOGISTIC", "TANH"):
        return _lower_sigmoid_s16(op, inp, out)
    if inp.dtype == "int16" and op.opcode == "ABS":
        return _lower_abs_s16(op, inp, out)
    require_dtype(op, inp, "int8", *(("uint8",) if op.opcode in UINT8_TABLE_OPS else ()))
    if op.opcode == "LOGISTIC" and f32(scale(out)) != 1.0 / 256:
        # The reference rejects such a model in Prepare.
        raise NotLowerable(f"{inp.dtype} LOGISTIC with output scale {scale(out)!r} (TFLite requires 1/256)")
    if op.opcode in INT8_TABLES:
        return _table_call(op, inp, INT8_TABLES[op.opcode](inp, out))
    return _lut_call(op, inp, out, LUT_TRANSFORMS[op.opcode])


@lowers("GELU")
def lower_gelu(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    if inp.dtype == "float32":
        return lower_float_gelu(op, graph)
    require_dtype(op, inp, "int8")
    transform = _gelu_approximate_f32 if op.options.get("approximate", False) else _gelu_f32
    return _lut_call(op, inp, out, transform)


def _lut_call(op: Operator, inp: Tensor, out: Tensor, transform: Callable[[np.float32], np.float32]) -> KernelCall:
    """int8 / uint8 through a 256-entry table filled as TFLite's
    LUTPopulate fills it (quant.lut_int8)."""
    table = lut_int8((scale(inp), zero_point(inp)), (scale(out), zero_point(out)), transform, inp.dtype)
    return _table_call(op, inp, table)


def _table_call(op: Operator, inp: Tensor, table: tuple[int, ...]) -> KernelCall:
    """mcu_lut_s8 / mcu_lut_u8: output byte = table[input byte]."""
    suffix = TYPE_SUFFIX[inp.dtype]
    return kernel_call(
        op,
        f"mcu_lut_{suffix}",
        f"mcu_lut_{suffix}_params",
        {"size": inp.num_elements, "table": CArray(DTYPE_C_TYPE[inp.dtype], table)},
        SOURCES,
    )


# Bounds of each RELU variant in real values; None = unbounded above.
RELU_BOUNDS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


@lowers("RELU", "RELU6", "RELU_N1_TO_1")
def lower_relu(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    low, high = RELU_BOUNDS[op.opcode]
    if inp.dtype == "float32":
        return kernel_call(
            op,
            "mcu_relu_f32",
            "mcu_relu_f32_params",
            {"size": inp.num_elements, "act_min": low, "act_max": FLOAT32_MAX if high is None else high},
            SOURCES,
        )
    # TFLite's RELU_N1_TO_1 has no int16 kernel.
    require_dtype(op, inp, "int8", "uint8", *(("int16",) if op.opcode != "RELU_N1_TO_1" else ()))
    q_min, q_max = INT_RANGES[inp.dtype]
    kernel, sources = f"mcu_relu_{TYPE_SUFFIX[inp.dtype]}", (SOURCES_S16 if inp.dtype == "int16" else SOURCES)
    output_scale, output_zero_point = np.float32(scale(out)), zero_point(out)

    def quantized(bound: float) -> int:
        # QuantizedReluX: zero_point + (int32)roundf(bound / scale), in float32.
        return output_zero_point + tflite_round(float(np.float32(bound) / output_scale))

    # input scale / output scale: a float32 division in ReluPrepare.
    multiplier, shift = quantize_multiplier(float(np.float32(scale(inp)) / output_scale))
    return kernel_call(
        op,
        kernel,
        "mcu_relu_s8_params",  # every dtype: the same fields
        {
            "size": inp.num_elements,
            "input_zero_point": zero_point(inp),
            "output_zero_point": output_zero_point,
            "output_multiplier": multiplier,
            "output_shift": shift,
            "act_min": max(q_min, quantized(low)),
            "act_max": q_max if high is None else min(q_max, quantized(high)),
        },
        sources,
    )


@lowers("LEAKY_RELU")
def lower_leaky_relu(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    alpha = f32(op.options.get("alpha", 0.0))
    if inp.dtype == "float32":
        params = {"size": inp.num_elements, "alpha": alpha}
        return kernel_call(op, "mcu_leaky_relu_f32", "mcu_leaky_relu_f32_params", params, SOURCES)
    require_dtype(op, inp, "int8", "uint8", "int16")
    kernel = f"mcu_leaky_relu_{TYPE_SUFFIX[inp.dtype]}"
    sources = SOURCES_S16 if inp.dtype == "int16" else SOURCES
    input_scale, output_scale = np.float32(scale(inp)), np.float32(scale(out))
    # Both ratios are float32 arithmetic in LeakyReluPrepare, widened after.
    alpha_multiplier, alpha_shift = quantize_multiplier(float(input_scale * np.float32(alpha) / output_scale))
    identity_multiplier, identity_shift = quantize_multiplier(float(input_scale / output_scale))
    return kernel_call(
        op,
        kernel,
        "mcu_leaky_relu_s8_params",  # every dtype: the same fields
        {
            "size": inp.num_elements,
            "input_zero_point": zero_point(inp),
            "output_zero_point": zero_point(out),
            "identity_multiplier": identity_multiplier,
            "identity_shift": identity_shift,
            "alpha_multiplier": alpha_multiplier,
            "alpha_shift": alpha_shift,
        },
        sources,
    )


@lowers("HARD_SWISH")
def lower_hard_swish(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    if inp.dtype == "float32":
        return kernel_call(op, "mcu_hard_swish_f32", "mcu_hard_swish_f32_params", {"size": inp.num_elements}, SOURCES)
    require_dtype(op, inp, "int8", "uint8")
    # HardSwishPrepare computes these ratios in float32.
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(scale(inp))
    reluish_scale = np.float32(3.0) / np.float32(32768.0)
    output_multiplier, output_exponent = quantize_multiplier(float(hires_input_scale / np.float32(scale(out))))
    reluish_multiplier, reluish_exponent = quantize_multiplier(float(hires_input_scale / reluish_scale))
    if output_exponent > 0:
        raise NotLowerable("HARD_SWISH whose output scale is below input scale / 128 (TFLite rejects it)")
    if output_exponent < -15 or reluish_exponent < -15:
        raise NotLowerable("HARD_SWISH with a rescale below 2^-15")
    return kernel_call(
        op,
        f"mcu_hard_swish_{TYPE_SUFFIX[inp.dtype]}",
        "mcu_hard_swish_s8_params",
        {
            "size": inp.num_elements,
            "input_zero_point": zero_point(inp),
            "output_zero_point": zero_point(out),
            "reluish_multiplier": downscale_multiplier_to_int16(reluish_multiplier),
            "reluish_exponent": reluish_exponent,
            "output_multiplier": downscale_multiplier_to_int16(output_multiplier),
            "output_exponent": output_exponent,
        },
        SOURCES,
    )


@facts_for(*LUT_TRANSFORMS, *INT8_ELEMENTWISE, "GELU", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH")
def activation_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """Elementwise, one pass over `size` values (mcu_activations.c, a lookup
    table or arithmetic; the float variants mcu_math.c).  The int16 kernels
    (mcu_activations_s16.c) are left out of patches: none was measured there."""
    if call.sources[0] == "mcu_activations":  # one ascending loop over the values: a walk
        return replace(unary_elementwise_facts(op, graph, call), access=values_walk(op, graph, call))
    if call.sources[0] == "mcu_math":
        return unary_elementwise_facts(op, graph, call)
    return KernelFacts(elementwise=True)
