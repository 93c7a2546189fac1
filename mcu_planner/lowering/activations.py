"""LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH ->
firmware/runtime/mcu_activations.c.

Constants follow TFLite's activations.cc Prepare functions.  int8 LOGISTIC and
TANH are, in TFLite's reference path, a 256-entry table filled at Prepare time
with float32 arithmetic and the C library's expf / tanhf; the table is built
here the same way and stored as a constant, so the MCU does no float math.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from functools import lru_cache
from typing import Callable

import numpy as np

from ..graph import DTYPE_C_TYPE, Graph, Operator, Tensor
from ..quant import (
    FLOAT32_MAX,
    INT_RANGES,
    checked_log2,
    downscale_multiplier_to_int16,
    f32,
    lut_int8,
    quantize_multiplier,
    tflite_round,
)
from . import CArray, KernelCall, NotLowerable, lowers
from .common import TYPE_SUFFIX, elementwise_operands, kernel_call, require_dtype, scale, zero_point

SOURCES = ("mcu_activations",)
SOURCES_S16 = ("mcu_activations_s16",)  # the int16 kernels


@lru_cache(maxsize=None)
def _libm_float_function(name: str) -> Callable[[float], float] | None:
    """The C library's single-precision `name` (expf, tanhf), the function
    TFLite's table builder calls, or None where no C library can be loaded."""
    path = ctypes.util.find_library("m")
    try:
        library = ctypes.CDLL(path) if path else ctypes.CDLL(None)
        function = getattr(library, name)
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
        return one / (one + _exp_f32(-x))


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


@lowers("LOGISTIC", "TANH")
def lower_lut(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _unary_operands(op, graph)
    if inp.dtype == "int16":
        return _lower_sigmoid_s16(op, inp, out)
    require_dtype(op, inp, "int8", "uint8")
    if op.opcode == "LOGISTIC" and f32(scale(out)) != 1.0 / 256:
        # The reference rejects such a model in Prepare.
        raise NotLowerable(f"{inp.dtype} LOGISTIC with output scale {scale(out)!r} (TFLite requires 1/256)")
    transform = _logistic_f32 if op.opcode == "LOGISTIC" else _tanh_f32
    table = lut_int8((scale(inp), zero_point(inp)), (scale(out), zero_point(out)), transform, inp.dtype)
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
