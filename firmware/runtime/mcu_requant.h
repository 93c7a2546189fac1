/* Requantisation: the int32 accumulator times a quantized multiplier and a
 * shift, scalar and on four Helium lanes, and the int32 clamps.
 *
 * Every function here reproduces, bit for bit, the helper of the same purpose
 * in TensorFlow Lite's reference kernels (tensorflow/lite/kernels/internal/
 * common.h and gemmlowp's fixedpoint.h, built without TFLITE_SINGLE_ROUNDING),
 * because the generated code must agree with the reference interpreter on
 * every output byte.  Signed right shifts of negative values are arithmetic
 * on every compiler we target (gcc, arm-none-eabi-gcc), as TFLite assumes.
 */
#ifndef MCU_REQUANT_H
#define MCU_REQUANT_H

#include <stdint.h>

/* (a * b * 2) >> 32 rounded to nearest, saturating the single overflow case
 * INT32_MIN * INT32_MIN. */
static inline int32_t mcu_sat_round_doubling_high_mul(int32_t a, int32_t b)
{
    int64_t ab, nudge;
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    ab = (int64_t)a * (int64_t)b;
    nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    /* Division, not a shift: it truncates toward zero as gemmlowp's does. */
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* x / 2^exponent rounded to nearest, ties away from zero. */
static inline int32_t mcu_rounding_divide_by_pot(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* mcu_rounding_divide_by_pot for 1 <= exponent <= 30 and |x| + 2^(exponent-1)
 * < 2^31 (products of two int16, say): adding half, less one for negative x
 * (its sign word), then flooring rounds ties away from zero, in three
 * instructions. */
static inline int32_t mcu_rounding_divide_by_pot_bounded(int32_t x, int exponent)
{
    return (x + ((int32_t)1 << (exponent - 1)) + (x >> 31)) >> exponent;
}

/* mcu_rounding_divide_by_pot for exponents up to 62, as TFLite's
 * RoundingDivideByPOT executes on x86-64 where its "exponent <= 31" assert is
 * compiled out: the mask is the low 32 bits of 2^exponent - 1 and the shift
 * count is taken mod 32 (x86's SAR).  An Arm core shifts by the full count,
 * so this spells the x86 result out for the kernels whose exponent can pass
 * 31 (int8 DIV on a small dividend). */
static inline int32_t mcu_rounding_divide_by_pot_wide(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)(uint32_t)(((uint64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> (exponent & 31)) + (remainder > threshold ? 1 : 0);
}

/* x * multiplier * 2^shift where multiplier is a Q31 value in [0.5, 1):
 * TFLite's MultiplyByQuantizedMultiplier (double rounding variant), written
 * step by step as TFLite does.  mcu_mul_by_quantized_mul below gives the same
 * value in fewer instructions; this one defines it (and tests compare them). */
static inline int32_t mcu_mul_by_quantized_mul_two_roundings(int32_t x, int32_t multiplier, int shift)
{
    const int left_shift = shift > 0 ? shift : 0;
    const int right_shift = shift > 0 ? 0 : -shift;
    /* Unsigned shift: TFLite writes x * (1 << left_shift), which wraps.  A
     * tiny output scale can make left_shift 32..129, where that expression is
     * undefined in C++; the x86 build of the reference shifts by the count
     * mod 32 (SHL), and so does this, on every target, without UB. */
    const int32_t shifted = (int32_t)((uint32_t)x << (left_shift & 31));
    return mcu_rounding_divide_by_pot(mcu_sat_round_doubling_high_mul(shifted, multiplier), right_shift);
}

/* The same value from one 64-bit product, one constant and one shift (on
 * Arm: SMULL, a 64-bit add, ASR of the high word).  Why it is equal, with
 * p = x * multiplier and e = -shift:
 * - the high mul is floor((p + 2^30) / 2^31) for either sign of p (gemmlowp
 *   nudges negative products by 1 - 2^30 and truncates toward zero, which is
 *   that floor), so t = that value, saturation aside;
 * - the divide by 2^e (e >= 1) rounds ties away from zero:
 *   floor((t + 2^(e-1) - [t < 0]) / 2^e);
 * - floor(floor(y / A) / B) = floor(y / (A * B)) for integer y, so both
 *   roundings are one floor of p + 2^30 + 2^(30+e) - [t < 0] * 2^31 over
 *   2^(31+e), i.e. an arithmetic shift of its high word by e - 1;
 * - t < 0 exactly when p < -2^30; for -2^30 <= p < 0, t = 0 and both values
 *   of the correction give 0, so the sign of p decides.
 * The one saturating case of the high mul (both factors INT32_MIN) needs a
 * multiplier of INT32_MIN, which no quantized scale gives; it goes the long
 * way. */
static inline int32_t mcu_mul_by_quantized_mul(int32_t x, int32_t multiplier, int shift)
{
    int64_t product, round;
    int right_shift;
    if (multiplier == INT32_MIN) {
        return mcu_mul_by_quantized_mul_two_roundings(x, multiplier, shift);
    }
    if (shift >= 0) {
        /* The left shift count mod 32, as the two-step version (x86's SHL). */
        product = (int64_t)(int32_t)((uint32_t)x << (shift & 31)) * (int64_t)multiplier;
        return (int32_t)((product + ((int64_t)1 << 30)) >> 31);
    }
    right_shift = -shift;
    product = (int64_t)x * (int64_t)multiplier;
    /* 2^(30+e) | 2^30 (distinct bits, e >= 1) built from a 32-bit power of
     * two shifted by a constant: no variable 64-bit shift. */
    round = (int64_t)(((uint64_t)((uint32_t)1 << right_shift) << 30) | ((uint64_t)1 << 30)) -
            (product < 0 ? ((int64_t)1 << 31) : 0);
    return (int32_t)((product + round) >> 32) >> (right_shift - 1);
}

/* mcu_mul_by_quantized_mul with what depends on the multiplier and shift
 * alone worked out once (per output channel), for kernels that apply it to
 * many sums; 32-bit rounding terms only.  For a right shift e >= 2 and a
 * multiplier >= 0 (every multiplier TFLite's QuantizeMultiplier makes from a
 * positive scale), with p = x * multiplier:
 * - the product has the sign of x, or is 0 (multiplier 0), where either
 *   correction leaves 0 ((2^30 + 2^(30+e) - 2^31) < 2^(31+e)); so the
 *   rounding term of mcu_mul_by_quantized_mul is 2^(30+e) + c with
 *   c = 2^30 for x >= 0 and -2^30 for negative x (2^30 with the sign bit
 *   flipped, read as int32);
 * - 2^(30+e) = 2^(e-2) * 2^32, so floor((p + c + 2^(30+e)) / 2^(31+e)) =
 *   (high word of p + c, plus 2^(e-2)) >> (e - 1).
 * Other multipliers and shifts take mcu_mul_by_quantized_mul itself. */
typedef struct {
    int32_t multiplier;
    int32_t shift;
    int32_t high_round; /* 2^(e-2) */
    int32_t high_shift; /* e - 1, or -1: use mcu_mul_by_quantized_mul */
} mcu_prepared_mul;

static inline mcu_prepared_mul mcu_prepare_mul(int32_t multiplier, int shift)
{
    mcu_prepared_mul m;
    m.multiplier = multiplier;
    m.shift = shift;
    m.high_round = 0;
    m.high_shift = -1;
    if (shift <= -2 && shift >= -31 && multiplier >= 0) {
        m.high_round = (int32_t)((uint32_t)1 << (-shift - 2));
        m.high_shift = -shift - 1;
    }
    return m;
}

/* The same value for any right shift e >= 1 as one 64-bit multiply-
 * accumulate and one shift of the high word: the rounding term
 * 2^30 + 2^(30+e) - [x < 0] 2^31 of the derivation above (t < 0 exactly when
 * p < -2^30, and for -2^30 <= p < 0 either correction gives 0, so the sign
 * of x decides) is worked out for both signs, as the 64-bit accumulator the
 * product is added to; floor(/ 2^(31+e)) is then the high word shifted by
 * e - 1.  For a multiplier >= 0 (every positive scale gives one). */
typedef struct {
    uint32_t round_low[2]; /* by x < 0 */
    int32_t round_high[2];
    int32_t multiplier;
    int32_t high_shift; /* e - 1 */
} mcu_accumulated_mul;

/* 0 where the shift or multiplier is outside that form. */
static inline int mcu_prepare_accumulated_mul(int32_t multiplier, int shift, mcu_accumulated_mul *m)
{
    int negative;
    if (shift > -1 || shift < -31 || multiplier < 0) {
        return 0;
    }
    for (negative = 0; negative < 2; ++negative) {
        const int64_t round = ((int64_t)1 << 30) + ((int64_t)1 << (30 - shift)) - (negative ? (int64_t)1 << 31 : 0);
        m->round_low[negative] = (uint32_t)((uint64_t)round & 0xFFFFFFFFu);
        m->round_high[negative] = (int32_t)(round >> 32);
    }
    m->multiplier = multiplier;
    m->high_shift = -shift - 1;
    return 1;
}

static inline int32_t mcu_apply_accumulated_mul(int32_t x, const mcu_accumulated_mul *m)
{
    const uint32_t negative = (uint32_t)x >> 31;
    const int64_t round = (int64_t)(((uint64_t)(uint32_t)m->round_high[negative] << 32) | m->round_low[negative]);
    return (int32_t)(((int64_t)x * (int64_t)m->multiplier + round) >> 32) >> m->high_shift;
}

/* mcu_apply_prepared_mul for a prepared multiplier with m->high_shift >= 0
 * (a right shift of 2 or more), for loops that test that once. */
static inline int32_t mcu_apply_prepared_right_shift(int32_t x, const mcu_prepared_mul *m)
{
    const int32_t c = (int32_t)(0x40000000u ^ ((uint32_t)x & 0x80000000u));
    return ((int32_t)(((int64_t)x * (int64_t)m->multiplier + (int64_t)c) >> 32) + m->high_round) >> m->high_shift;
}

static inline int32_t mcu_apply_prepared_mul(int32_t x, const mcu_prepared_mul *m)
{
    if (m->high_shift < 0) {
        return mcu_mul_by_quantized_mul(x, m->multiplier, m->shift);
    }
    return mcu_apply_prepared_right_shift(x, m);
}

/* The same product rounded once: (x * multiplier + half) >> (31 - shift) in
 * 64 bits, rounding ties toward +infinity.  This is how ruy (and TFLite built
 * with TFLITE_SINGLE_ROUNDING) applies the multiplier, and the TFLite
 * interpreter's int8 FULLY_CONNECTED goes through ruy. */
static inline int32_t mcu_mul_by_quantized_mul_single_round(int32_t x, int32_t multiplier, int shift)
{
    const int total_shift = 31 - shift;
    const int64_t round = (int64_t)1 << (total_shift - 1);
    return (int32_t)(((int64_t)x * (int64_t)multiplier + round) >> total_shift);
}

/* The int64 overload of MultiplyByQuantizedMultiplier, which the 16x8 kernels
 * (int64 accumulators) use: the Q31 multiplier rounded to Q15, one product,
 * one rounding (ties toward +infinity).  x must lie in [-2^47, 2^47); a
 * result outside int32 wraps as TFLite's static_cast does.
 *
 * (v + 2^(s-1)) >> s is computed as (v >> s) + bit s-1 of v, which is the
 * same integer (v = q 2^s + r: the rounding carries exactly when r >= 2^(s-1))
 * and needs no 64-bit add or variable 64-bit shift: only the low word of the
 * quotient is kept, from the two words of v.  s = 15 - shift lies in [8, 46]. */
static inline int32_t mcu_mul_by_quantized_mul_s64(int64_t x, int32_t multiplier, int shift)
{
    const int32_t reduced_multiplier = multiplier < 0x7FFF0000 ? ((multiplier + (1 << 15)) >> 16) : 0x7FFF;
    const int total_shift = 15 - shift;
    const int64_t v = x * (int64_t)reduced_multiplier;
    const uint32_t lo = (uint32_t)v;
    const int32_t hi = (int32_t)(uint32_t)((uint64_t)v >> 32);
    if (total_shift < 32) {
        return (int32_t)(((lo >> total_shift) | ((uint32_t)hi << (32 - total_shift))) +
                         ((lo >> (total_shift - 1)) & 1u));
    }
    if (total_shift == 32) {
        return (int32_t)((uint32_t)hi + (lo >> 31));
    }
    return (hi >> (total_shift - 32)) + ((hi >> (total_shift - 33)) & 1);
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && defined(__GNUC__)
#include <arm_mve.h>

/* mcu_mul_by_quantized_mul on four lanes (Helium), each with its own
 * multiplier and shift; the same values:
 * - VSHL by a non-negative amount below 32 is the wrapping left shift;
 * - VQRDMULH is by definition the saturating rounding doubling high mul,
 *   SignedSat((2ab + 2^31) >> 32) = floor((ab + 2^30) / 2^31), saturating
 *   only INT32_MIN * INT32_MIN;
 * - VRSHL by -e rounds ties up, computed without overflow:
 *   (t + 2^(e-1)) >> e; TFLite rounds ties away from zero, so negative t
 *   first loses 1 when e > 0 (t & (-e) has the sign bit exactly then).  The
 *   saturating add only matters at t = INT32_MIN, a multiple of 2^e, where
 *   both give the same quotient. */
/* The shift split into its two VSHL / VRSHL counts (mcu_mul_by_quantized_mul_x4):
 * kernels that requantize several pixels of the same channels split once. */
typedef struct {
    int32x4_t left;  /* max(shift, 0) mod 32 */
    int32x4_t right; /* min(shift, 0) = -e */
} mcu_shift_x4;

static inline mcu_shift_x4 mcu_split_shift_x4(int32x4_t shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    mcu_shift_x4 split;
    split.right = vminq_s32(shift, zero);
    /* VSHL by 32 or more gives 0; the count mod 32 is what the scalar
     * helpers (and the x86 reference) shift by. */
    split.left = vandq_s32(vmaxq_s32(shift, zero), vdupq_n_s32(31));
    return split;
}

static inline int32x4_t mcu_mul_by_quantized_mul_x4_split(int32x4_t x, int32x4_t multiplier, mcu_shift_x4 shift)
{
    const int32x4_t high = vqrdmulhq_s32(vshlq_s32(x, shift.left), multiplier);
    const int32x4_t ties_away = vshrq_n_s32(vandq_s32(high, shift.right), 31);
    return vrshlq_s32(vqaddq_s32(high, ties_away), shift.right);
}

static inline int32x4_t mcu_mul_by_quantized_mul_x4(int32x4_t x, int32x4_t multiplier, int32x4_t shift)
{
    return mcu_mul_by_quantized_mul_x4_split(x, multiplier, mcu_split_shift_x4(shift));
}

/* The same sequence with one multiplier and shift for all four lanes (four
 * pixels of one output channel): the lane values of mcu_mul_by_quantized_mul_x4
 * with both vectors splat, the shift decided once instead of per lane.  With
 * a right shift, -e has its sign bit set, so the tie fix-up is every negative
 * lane's sign (VSHR #31); without one it is 0 and VRSHL by 0 changes
 * nothing. */
static inline int32x4_t mcu_mul_by_quantized_mul_x4_n(int32x4_t x, int32_t multiplier, int32_t shift)
{
    int32x4_t high;
    if (shift > 0) {
        return vqrdmulhq_n_s32(vshlq_r_s32(x, shift & 31), multiplier);
    }
    high = vqrdmulhq_n_s32(x, multiplier);
    if (shift == 0) {
        return high;
    }
    return vrshlq_n_s32(vqaddq_s32(high, vshrq_n_s32(high, 31)), shift);
}

/* mcu_mul_by_quantized_mul_single_round on four lanes sharing a multiplier
 * (a quantized one: not INT32_MIN) and a shift <= 0, with k = 31 - shift:
 * - k = 31: VQRDMULH is (2xm + 2^31) >> 32 = (xm + 2^30) >> 31;
 * - k = 32: VRMULH is (xm + 2^31) >> 32;
 * - k >= 33: 2^(k-1) is a multiple of 2^32, so (xm + 2^(k-1)) >> k is
 *   (floor(xm / 2^32) + 2^(k-33)) >> (k - 32): VMULH, then VRSHL by
 *   -(k - 32) = shift + 1, which rounds half up without overflow.
 * (Callers take the scalar helper for shifts above 0.) */
static inline int32x4_t mcu_mul_by_quantized_mul_single_round_n_x4(int32x4_t x, int32_t multiplier, int32_t shift)
{
    if (shift == 0) {
        return vqrdmulhq_n_s32(x, multiplier);
    }
    if (shift == -1) {
        return vrmulhq_s32(x, vdupq_n_s32(multiplier));
    }
    return vrshlq_n_s32(vmulhq_s32(x, vdupq_n_s32(multiplier)), shift + 1);
}

/* mcu_mul_by_quantized_mul_x4 for a multiplier and a shift shared by all
 * lanes, given as left_shift = max(shift, 0) mod 32 (a core register) and
 * `right` = min(shift, 0) in every lane: the same steps, with the
 * multiplier and the left shift in core registers. */
static inline int32x4_t mcu_mul_by_quantized_mul_n_x4(int32x4_t x, int32_t multiplier, int32_t left_shift,
                                                      int32x4_t right)
{
    /* A constant 0 (ADD's rescales) drops the shift at compile time. */
    const int32x4_t high = vqrdmulhq_n_s32(left_shift != 0 ? vshlq_r_s32(x, left_shift) : x, multiplier);
    const int32x4_t ties_away = vshrq_n_s32(vandq_s32(high, right), 31);
    return vrshlq_s32(vqaddq_s32(high, ties_away), right);
}

/* mcu_rounding_divide_by_pot on four lanes for 1 <= exponent <= 31: minus 1
 * on negative lanes, then VRSHL's round-half-up shift (which rounds in wider
 * arithmetic: no overflow), i.e. ties away from zero. */
static inline int32x4_t mcu_rounding_divide_by_pot_x4(int32x4_t x, int32_t exponent)
{
    return vrshlq_n_s32(vaddq_s32(x, vshrq_n_s32(x, 31)), -exponent);
}
#endif

static inline int32_t mcu_mul_by_quantized_mul_greater_than_one(int32_t x, int32_t multiplier, int left_shift)
{
    return mcu_mul_by_quantized_mul(x, multiplier, left_shift); /* left_shift >= 0: the high mul alone */
}

static inline int32_t mcu_mul_by_quantized_mul_smaller_than_one_exp(int32_t x, int32_t multiplier, int left_shift)
{
    return mcu_mul_by_quantized_mul(x, multiplier, left_shift); /* left_shift <= 0: both steps */
}

/* a + b with the int32 wrap-around the reference kernels get on x86-64 where
 * their int32 sums overflow (undefined in C and C++; two's complement there),
 * without the undefined behaviour: the sum is taken modulo 2^32. */
static inline int32_t mcu_add_wrap_s32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t mcu_clamp_s32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

#endif /* MCU_REQUANT_H */
