"""gemmlowp's int16 fixed-point logistic and tanh (what TFLite's integer LSTM
applies to its gates and cell state), step by step on numpy arrays, and the
exact lookup tables the LSTM kernel reads instead of running those steps.

Both functions end in the same value: R_k(m) = 1 / (1 + exp(-m)) from
gemmlowp's Newton-Raphson reciprocal (2 integer bits) of its exp on a
negative int16 with k integer bits, for the input's magnitude m = |a| (0 ..
32768).  logistic(a, k) = min(2 R_k, 32767), mirrored as 32767 - that for
a < 0; tanh(a, k) = min(4 (R_{k+1} - 8192), 32767), negated for a < 0
(mcu_fp16_logistic / mcu_fp16_tanh in firmware/runtime/mcu_quant.h, which
tests compare with these on every int16 input).

The table of R_k is stored as knots every 32 magnitudes (linear
interpolation between them, rounded down) plus a 4-bit correction per
magnitude, up to the magnitude `last` beyond which R_k no longer changes:
gemmlowp's 16-bit steps leave R_k a few units off any smooth curve, which
the corrections (-8 .. 7) absorb exactly.  The knots are stored less the
corrections' bias of 8, which the interpolation carries through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .quant import rounding_divide_by_pot

Array = NDArray[np.int64]

# exp_on_negative_values' barrel: exp(-2^exponent) as Q31 constants.
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))
RESIDUAL_BIAS = 8  # corrections -8 .. 7 stored as 0 .. 15 (and knots as R - 8)
BLOCK_SHIFT = 5  # knots every 2^5 magnitudes: MCU_FP16_TABLE_BLOCK_SHIFT in mcu_quant.h
ZERO_INPUT_VALUE = 1 << 13  # 1/2 in Q1.14: logistic(0) = 2 x 1/2, tanh(0) = 4 x (1/2 - 1/2)


def _wrap16(x: Array) -> Array:
    return ((x + 32768) & 0xFFFF) - 32768


def _constant(int32_value: int) -> int:
    """gemmlowp's RescaleConstantInitializer: an int32 constant at 16 bits."""
    return rounding_divide_by_pot(int32_value, 16)


def _high_mul(a: Array, b: Array | int) -> Array:
    """SaturatingRoundingDoublingHighMul<int16_t> (its one saturating case, -32768 x -32768, included)."""
    product = a * b
    nudge = np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    total = product + nudge
    result = np.where(total >= 0, total >> 15, -((-total) >> 15))
    return np.where((a == -32768) & (np.asarray(b) == -32768), 32767, result)


def _rounding_halve(x: Array, exponent: int) -> Array:
    """RoundingDivideByPOT: round to nearest, ties away from zero."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: Array) -> Array:
    constant_term = _constant(1895147668)
    x = _wrap16(a + (1 << 12))
    x2 = _high_mul(x, x)
    x3 = _high_mul(x2, x)
    x4 = _high_mul(x2, x2)
    x4_over_4 = _rounding_halve(x4, 2)
    poly = _rounding_halve(_wrap16(_high_mul(_wrap16(x4_over_4 + x3), _constant(715827883)) + x2), 1)
    return np.clip(constant_term + _high_mul(np.full_like(x, constant_term), _wrap16(x + poly)), -32768, 32767)


def exp_on_negative_values(a: Array, integer_bits: int) -> Array:
    """exp(a) for int16 a <= 0 with `integer_bits` (0 .. 7) integer bits; 0 integer bits out."""
    one_quarter = 1 << (15 - integer_bits - 2)
    a_mod_quarter_minus_one_quarter = _wrap16((a & (one_quarter - 1)) - one_quarter)
    remainder = _wrap16(a_mod_quarter_minus_one_quarter - a)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        _wrap16(a_mod_quarter_minus_one_quarter << integer_bits)
    )
    for exponent, multiplier in EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (15 - integer_bits + exponent)) & 1
            result = np.where(bit == 1, _high_mul(result, _constant(multiplier)), result)
    if integer_bits > 5:
        result = np.where(a < _constant(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, 32767, result)


def one_over_one_plus_x_f2(a: Array) -> Array:
    """1 / (1 + a) for a in [0, 1) (int16 0 .. 32767), 2 integer bits out."""
    total = a + 32767
    half_denominator = np.where(total >= 0, (total + 1) // 2, -((-total + 1) // 2))
    x = _wrap16(_constant(1515870810) + _high_mul(half_denominator, _constant(-1010580540)))
    for _ in range(3):
        one_minus = _wrap16((1 << 13) - _high_mul(half_denominator, x))
        x = _wrap16(x + _wrap16(_high_mul(x, one_minus) * 4))
    return x


def reciprocal_of_exp(magnitude: Array, integer_bits: int) -> Array:
    """R_k(m): 1 / (1 + exp(-m)) as the int16 logistic and tanh compute it, m = 0 .. 32768."""
    return one_over_one_plus_x_f2(exp_on_negative_values(_wrap16(-magnitude), integer_bits))


def logistic(a: Array, integer_bits: int) -> Array:
    """gemmlowp::logistic on int16 (Q0.15 out)."""
    positive = np.minimum(2 * reciprocal_of_exp(np.abs(a), integer_bits), 32767)
    return np.where(a == 0, 1 << 14, np.where(a > 0, positive, 32767 - positive))


def tanh(a: Array, integer_bits: int) -> Array:
    """gemmlowp::tanh on int16 (Q0.15 out)."""
    t = np.minimum(4 * (reciprocal_of_exp(np.abs(a), integer_bits + 1) - (1 << 13)), 32767)
    return np.where(a == 0, 0, np.where(a < 0, _wrap16(-t), t))


@dataclass(frozen=True)
class ReciprocalTable:
    """R_k for m = first .. last as knots (less RESIDUAL_BIAS) and packed 4-bit
    corrections (two per byte, the even magnitude in the low nibble), indexed
    from `first`; m > last reads R_k(last); m = 0 reads ZERO_INPUT_VALUE.
    Below `first` (0 unless built from a `halved` table) R_k(m) is
    R_(k-1)(2m), read from that table."""

    knots: tuple[int, ...]
    residuals: tuple[int, ...]
    last: int
    first: int = 0

    def lookup(self, magnitude: Array, halved: ReciprocalTable | None = None) -> Array:
        """What the C kernel computes from the table (and the one it was built from)."""
        at = np.minimum(magnitude, self.last) - self.first
        own = _read(self.knots, self.residuals, np.maximum(at, 0))
        if halved is None or self.first == 0:
            return own
        return np.where(magnitude < self.first, halved.lookup(np.minimum(2 * magnitude, 32768)), own)


def _read(knots_tuple: tuple[int, ...], residuals: tuple[int, ...], index: Array) -> Array:
    packed: Array = np.array(residuals, dtype=np.int64)[index >> 1]
    return _interpolate(np.array(knots_tuple, dtype=np.int64), index) + np.where(index & 1, packed >> 4, packed & 15)


def _interpolate(knots: Array, index: Array) -> Array:
    """The knots' linear interpolation at each index, rounded down."""
    block, offset = index >> BLOCK_SHIFT, index & ((1 << BLOCK_SHIFT) - 1)
    low: Array = knots[block]
    high: Array = knots[block + 1]
    return low + (((high - low) * offset + (1 << (BLOCK_SHIFT - 1))) >> BLOCK_SHIFT)


def reciprocal_table(integer_bits: int, halved: ReciprocalTable | None = None) -> ReciprocalTable:
    """The table of R_k; given the table of R_(k-1) as `halved`, only for the
    magnitudes from the first where R_k(m) differs from R_(k-1)(2m) (gemmlowp's
    exp reads the same bits of m with one more integer bit as of 2m with one
    less, until 2m leaves int16).  ValueError where a correction would not
    fit 4 bits or the int16 interpolation of the Helium reads would overflow
    (neither happens for k = 0 .. 7, which the tests check)."""
    magnitudes = np.arange(32769, dtype=np.int64)
    values = reciprocal_of_exp(magnitudes, integer_bits)
    # gemmlowp returns 1/2 and 0 for a zero input without computing R_k(0)
    # (8190); 1/2 here gives both from the same formulas as every other input.
    values[0] = ZERO_INPUT_VALUE
    changes = np.nonzero(values != values[-1])[0]
    last = int(changes[-1]) + 1 if changes.size else 0
    first = 0
    if halved is not None:
        differs = np.nonzero(halved.lookup(np.minimum(2 * magnitudes, 32768)) != values)[0]
        first = min(int(differs[0]) if differs.size else last, last)
    own = values[first : last + 1]
    index = np.arange(own.size, dtype=np.int64)
    knot_at = np.minimum(np.arange((own.size - 1 >> BLOCK_SHIFT) + 2, dtype=np.int64) << BLOCK_SHIFT, own.size - 1)
    knots = own[knot_at] - RESIDUAL_BIAS
    residual = own - _interpolate(knots, index)
    steps = np.abs(np.diff(knots))
    if residual.min() < 0 or residual.max() > 15:
        raise ValueError(f"R_{integer_bits} needs corrections outside -8 .. 7")
    # Helium interpolates on int16 lanes: the product plus half must fit.
    if steps.size and int(steps.max()) * ((1 << BLOCK_SHIFT) - 1) + (1 << (BLOCK_SHIFT - 1)) > 32767:
        raise ValueError(f"R_{integer_bits} has knots too far apart for int16 interpolation")
    padded = np.append(residual, 0) if residual.size % 2 else residual
    packed = padded[0::2] | (padded[1::2] << 4)
    return ReciprocalTable(tuple(int(v) for v in knots), tuple(int(v) for v in packed), last, first)
