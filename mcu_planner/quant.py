"""Quantization constants as TensorFlow Lite's Prepare functions compute them.

Lowering turns float scales into the integer (multiplier, shift) pairs and
clamp bounds the C kernels use.  Each function here follows the TFLite helper
named in its docstring step for step -- same float32 -> double widening, same
rounding -- because one ulp of difference in a multiplier changes output bytes.
Python floats are IEEE doubles, so double arithmetic carries over; float32
arithmetic goes through numpy.float32.

Parameters these helpers cannot turn into kernel constants raise
`UnsupportedQuantization`; lowering reports it as a variant it cannot lower.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .graph import Tensor
from .shown import shown

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "int32": (INT32_MIN, INT32_MAX)}

FLOAT32_MAX = float(np.finfo(np.float32).max)


class UnsupportedQuantization(ValueError):
    """Quantization parameters the int8 kernels have no constants for."""


class InvalidRescale(ValueError):
    """A rescale factor derived from the model's scales that no kernel can
    apply (not a finite number); the model is refused as bad input."""


def f32(value: float) -> float:
    """`value` rounded to float32, as a tensor's float field holds it."""
    return float(np.float32(value))


def tflite_round(value: float) -> int:
    """std::round: to nearest, ties away from zero (Python's round() ties to even)."""
    if value < 0:
        return -tflite_round(-value)
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier a Q31 in [2^30, 2^31)."""
    if real_multiplier == 0.0:
        return 0, 0
    if not math.isfinite(real_multiplier):
        raise InvalidRescale(f"rescale factor {real_multiplier!r} derived from the scales is not finite")
    fraction, shift = math.frexp(real_multiplier)
    q_fixed = tflite_round(fraction * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return q_fixed, shift


def quantize_multiplier_smaller_than_one_exp(real_multiplier: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: the shift returned is <= 0."""
    if not 0.0 < real_multiplier < 1.0:
        raise UnsupportedQuantization(f"rescale factor {real_multiplier!r} outside (0, 1)")
    multiplier, shift = quantize_multiplier(real_multiplier)
    if shift > 0:
        raise UnsupportedQuantization(f"rescale factor {real_multiplier!r} rounds to 1")
    return multiplier, shift


def conv_output_multipliers(
    input_scale: float, filter_scales: tuple[float, ...], output_scale: float, channels: int
) -> tuple[list[int], list[int]]:
    """PopulateConvolutionQuantizationParams: one (multiplier, shift) per output
    channel, input_scale * filter_scale / output_scale in double; a per-tensor
    filter scale repeats over all channels."""
    if len(filter_scales) not in (1, channels):
        raise UnsupportedQuantization(f"filter has {len(filter_scales)} scales for {channels} output channels")
    multipliers, shifts = [], []
    for c in range(channels):
        filter_scale = filter_scales[c if len(filter_scales) > 1 else 0]
        m, s = quantize_multiplier(input_scale * filter_scale / output_scale)
        multipliers.append(m)
        shifts.append(s)
    return multipliers, shifts


def int64_rescale_multipliers(
    input_scale: float, filter_scales: tuple[float, ...], output_scale: float, channels: int
) -> tuple[list[int], list[int]]:
    """conv_output_multipliers for the 16x8 kernels, which apply them to int64
    sums through the Q15-reduced multiplier: 15 - shift must stay >= 1 (a
    larger rescale factor, 2^14 and up, has no defined result there)."""
    multipliers, shifts = conv_output_multipliers(input_scale, filter_scales, output_scale, channels)
    if shifts and max(shifts) > 14:
        raise UnsupportedQuantization(f"16x8 rescale factor 2^{max(shifts)} too large for the int64 requantization")
    return multipliers, shifts


def activation_range_quantized(activation: str, output: Tensor) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's bounds in the
    output's quantized domain, f / scale computed in float32."""
    if output.dtype not in INT_RANGES:
        raise UnsupportedQuantization(f"fused activation on {output.dtype} output")
    qmin, qmax = INT_RANGES[output.dtype]
    q = output.quantization
    if q is None or len(q.scales) != 1:
        raise UnsupportedQuantization(f"output tensor '{shown(output.name)}' needs one quantization scale")
    scale = np.float32(q.scales[0])
    zero_point = q.zero_points[0]

    def quantize(value: float) -> int:
        with np.errstate(over="ignore"):
            scaled = np.float32(value) / scale
        # static_cast<int32_t>(TfLiteRound(f / scale)): out of range, x86 gives INT32_MIN.
        return zero_point + float_to_int32(np.float32(tflite_round(float(scaled)) if math.isfinite(scaled) else scaled))

    if activation == "NONE":
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    raise UnsupportedQuantization(f"fused activation {activation}")


def activation_range_float(activation: str) -> tuple[float, float]:
    """CalculateActivationRange<float>."""
    if activation == "NONE":
        return -FLOAT32_MAX, FLOAT32_MAX
    if activation == "RELU":
        return 0.0, FLOAT32_MAX
    if activation == "RELU6":
        return 0.0, 6.0
    if activation == "RELU_N1_TO_1":
        return -1.0, 1.0
    raise UnsupportedQuantization(f"fused activation {activation}")


def preprocess_softmax_scaling(beta: float, input_scale: float, input_integer_bits: int) -> tuple[int, int]:
    """PreprocessSoftmaxScaling (double rounding build)."""
    max_real_multiplier = float((1 << 31) - 1)
    real = min(beta * input_scale * (1 << (31 - input_integer_bits)), max_real_multiplier)
    # QuantizeMultiplierGreaterThanOne: a shift >= 0.
    if not real > 1.0:
        raise UnsupportedQuantization(f"softmax rescale {real!r} not above 1")
    return quantize_multiplier(real)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """CalculateInputRadius."""
    max_input_rescaled = (
        1.0
        * ((1 << input_integer_bits) - 1)
        * (1 << (total_signed_bits - input_integer_bits))
        / (1 << input_left_shift)
    )
    return math.floor(max_input_rescaled)


def lut_int8(
    input_q: tuple[float, int],
    output_q: tuple[float, int],
    transform: Callable[[np.float32], np.float32],
    dtype: str = "int8",
) -> tuple[int, ...]:
    """LUTPopulate<int8_t or uint8_t>: entry (uint8_t)q = quantized
    transform(dequantized q), clamped to the type's range."""
    input_scale, input_zero_point = np.float32(input_q[0]), input_q[1]
    output_scale, output_zero_point = np.float32(output_q[0]), output_q[1]
    inverse_scale = np.float32(1) / output_scale
    q_min, q_max = INT_RANGES[dtype]
    table = [0] * 256
    with np.errstate(over="ignore"):
        for value in range(q_min, q_max + 1):
            dequantized = input_scale * np.float32(value - input_zero_point)
            transformed = transform(dequantized)
            rescaled = float(transformed * inverse_scale)
            # std::round on float, then float + int32 in float32.
            rounded = np.float32(tflite_round(rescaled)) if math.isfinite(rescaled) else np.float32(rescaled)
            quantized_float = rounded + np.float32(output_zero_point)
            quantized = float_to_int32(quantized_float)
            table[value & 0xFF] = max(min(q_max, quantized), q_min)
    return tuple(table)


INT16_LUT_STEPS = 512  # LUTPopulateInt16: 512 segments, 513 entries


def lut_int16(
    input_q: tuple[float, int], output_q: tuple[float, int], transform: Callable[[float], float]
) -> tuple[int, ...]:
    """LUTPopulateInt16<double>: 513 int16 samples of `transform` (a function
    of a Python float, i.e. a double) over the int16 input range, each less
    half the error its interpolated midpoint would make; every step in double
    as TFLite computes it when the LUT is populated with double arguments."""
    input_scale, input_zero_point = float(input_q[0]), int(input_q[1])
    output_scale, output_zero_point = float(output_q[0]), int(output_q[1])
    input_min = input_scale * float(-32768 - input_zero_point)
    input_max = input_scale * float(32767 - input_zero_point)
    output_min = output_scale * float(-32768 - output_zero_point)
    output_max = output_scale * float(32767 - output_zero_point)
    step = (input_max - input_min) / INT16_LUT_STEPS
    half_step = step / 2
    output_scaling_inv = float(32767 - -32768 + 1) / (output_max - output_min)

    def clamp(value: float) -> int:
        return int(min(max(value, -32768.0), 32767.0))

    table = []
    for i in range(INT16_LUT_STEPS):
        value = transform(input_min + i * step)
        midpoint = transform(input_min + i * step + half_step)
        following = transform(input_min + (i + 1) * step)
        sample = float(tflite_round(value * output_scaling_inv))
        midpoint_interpolated = float(tflite_round((following * output_scaling_inv + sample) / 2))
        midpoint_exact = float(tflite_round(midpoint * output_scaling_inv))
        bias = float(tflite_round((midpoint_interpolated - midpoint_exact) / 2))
        table.append(clamp(sample - bias))
    table.append(clamp(float(tflite_round(transform(input_max) * output_scaling_inv))))
    return tuple(table)


def checked_log2(value: float) -> int | None:
    """CheckedLog2: log2 of a float32 scale in float32 (log(x) * (1 / log 2)),
    rounded; None when it is not within 1e-3 of an integer (TFLite refuses
    the model then)."""
    x = np.float32(value)
    if not x > 0:
        return None
    with np.errstate(all="ignore"):
        exponent = np.float32(np.log(x)) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    if not math.isfinite(float(exponent)):
        return None
    rounded = tflite_round(float(exponent))
    return rounded if abs(float(np.float32(exponent - np.float32(rounded)))) < 1e-3 else None


def quantized_clip(clip: float, scale: float, limit: int) -> int:
    """A clipping bound in a tensor's quantized domain as TFLite's LSTM Prepare
    computes it: static_cast<intN_t>(clamp(clip / scale, -limit - 1, limit))
    in float32, truncating; 0 (no clipping) unless clip > 0."""
    clip = np.float32(clip)
    if not clip > 0:
        return 0
    value = float(clip / np.float32(scale))
    return int(min(max(value, -float(limit) - 1), float(limit)))


def float_to_int32(value: np.float32) -> int:
    """static_cast<int32_t>(float) as x86-64 executes it: out of range -> INT32_MIN."""
    v = float(value)
    if not math.isfinite(v) or not -(2.0**31) <= v < 2.0**31:
        return -(1 << 31)
    return int(v)


def downscale_multiplier_to_int16(multiplier: int) -> int:
    """DownScaleInt32ToInt16Multiplier: Q31 -> Q15, rounding."""
    rounding = 1 << 15
    if multiplier >= (1 << 31) - 1 - rounding:
        return (1 << 15) - 1
    return (multiplier + rounding) >> 16


def mean_multiplier(input_scale: float, output_scale: float, count: int) -> tuple[int, int]:
    """The rescale of QuantizedMeanOrSum: input_scale / output_scale quantized
    (PrepareMeanOrSum), then 1/count folded into the multiplier with as many
    extra shift bits as count has (clamped so the shift stays >= -31)."""
    multiplier, shift = quantize_multiplier(input_scale / output_scale)
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    # C++ integer division truncates; both operands are non-negative here.
    return (multiplier << extra) // count, shift - extra


# ---- integer helpers mirroring firmware/runtime/mcu_quant.h; tests check the
# C against them ----


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    total = ab + nudge
    # C integer division truncates toward zero.
    quotient = abs(total) >> 31
    return quotient if total >= 0 else -quotient


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def wrap_int32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (two roundings) as the reference executes
    on x86-64 and mcu_mul_by_quantized_mul computes: x * (1 << left_shift)
    wraps to int32, and a left shift of 32 or more (a tiny output scale)
    shifts by the count mod 32, as x86's SHL does."""
    left_shift = max(shift, 0)
    right_shift = max(-shift, 0)
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(wrap_int32(x << (left_shift & 31)), multiplier), right_shift
    )


def multiply_by_quantized_multiplier_single_round(x: int, multiplier: int, shift: int) -> int:
    """ruy's (and TFLITE_SINGLE_ROUNDING's) MultiplyByQuantizedMultiplier."""
    total_shift = 31 - shift
    return (x * multiplier + (1 << (total_shift - 1))) >> total_shift


def multiply_by_quantized_multiplier_int64(x: int, multiplier: int, shift: int) -> int:
    """The int64 overload of MultiplyByQuantizedMultiplier (16x8 kernels):
    the multiplier rounded to Q15, one rounding; wraps to int32 as the cast."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    return wrap_int32((x * reduced + (1 << (total_shift - 1))) >> total_shift)


def saturating_rounding_multiply_by_pot(x: int, exponent: int) -> int:
    """gemmlowp's SaturatingRoundingMultiplyByPOT on an int32 raw value."""
    if exponent > 0:
        threshold = (1 << (31 - exponent)) - 1
        if x > threshold:
            return INT32_MAX
        if x < -threshold:
            return INT32_MIN
        return wrap_int32(x << exponent)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return x


def inv_sqrt_quantized_multiplier_exp(value: int, reverse_shift: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp: 1 / sqrt(value) as (multiplier,
    shift), by the reference's five Newton-Raphson steps in gemmlowp fixed
    point with 3 integer bits."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    leading_zeros = 32 - value.bit_length()
    pairs = (leading_zeros - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    srdhm = saturating_rounding_doubling_high_mul
    fixed_input = value >> 1  # F3
    half_input = saturating_rounding_multiply_by_pot(fixed_input, -1)
    half_three = (1 << 28) + (1 << 27)  # 1.5 in F3
    x = 1 << 28  # F3 one
    for _ in range(5):
        x3 = saturating_rounding_multiply_by_pot(srdhm(srdhm(x, x), x), 6)  # F9 -> F3
        x = saturating_rounding_multiply_by_pot(wrap_int32(srdhm(half_three, x) - srdhm(half_input, x3)), 3)
    x = srdhm(x, 1518500250)  # * sqrt(2) / 2 in F0
    if shift < 0:
        x = wrap_int32(x << -shift)
        shift = 0
    return x, shift * reverse_shift
