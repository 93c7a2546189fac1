/* Fixed-point arithmetic shared by the int8 kernels.
 *
 * Every function here reproduces, bit for bit, the helper of the same purpose
 * in TensorFlow Lite's reference kernels (tensorflow/lite/kernels/internal/
 * common.h and gemmlowp's fixedpoint.h, built without TFLITE_SINGLE_ROUNDING),
 * because the generated code must agree with the reference interpreter on
 * every output byte.  Signed right shifts of negative values are arithmetic
 * on every compiler we target (gcc, arm-none-eabi-gcc), as TFLite assumes.
 */
#ifndef MCU_QUANT_H
#define MCU_QUANT_H

#include <stdint.h>

/* Forces the inlining of the int16 fixed-point functions whose integer-bit
 * counts are constants at their call sites. */
#if defined(__GNUC__)
#define MCU_QUANT_INLINE __attribute__((always_inline))
#else
#define MCU_QUANT_INLINE
#endif

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
 * result outside int32 wraps as TFLite's static_cast does. */
static inline int32_t mcu_mul_by_quantized_mul_s64(int64_t x, int32_t multiplier, int shift)
{
    const int32_t reduced_multiplier = multiplier < 0x7FFF0000 ? ((multiplier + (1 << 15)) >> 16) : 0x7FFF;
    const int total_shift = 15 - shift;
    const int64_t round = (int64_t)1 << (total_shift - 1);
    return (int32_t)(uint32_t)(uint64_t)((x * (int64_t)reduced_multiplier + round) >> total_shift);
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

static inline float mcu_clamp_f32(float x, float lo, float hi)
{
    /* Order matters for NaN: std::min(std::max(x, lo), hi) as TFLite's
     * ActivationFunctionWithMinMax. */
    const float above = x < lo ? lo : x;
    return hi < above ? hi : above;
}

/* static_cast<int32_t>(TfLiteRound(q)) for a float q, as TFLite's reference
 * kernels execute it on x86-64: std::round on the float (half away from
 * zero), then the conversion, which gives INT32_MIN for NaN and for values
 * outside the int32 range (cvttss2si's "integer indefinite"; Arm's VCVT would
 * saturate instead, so this does not rely on the cast there).  Every step is
 * exact in float (the integer part of a float and its fraction are floats),
 * so no double arithmetic is needed on a single-precision FPU. */
static inline int32_t mcu_round_f32_to_int32(float q)
{
    int32_t truncated;
    float fraction;
    if (!(q >= -2147483648.0f && q < 2147483648.0f)) {
        return INT32_MIN; /* NaN too */
    }
    truncated = (int32_t)q;
    fraction = q - (float)truncated;
    if (fraction >= 0.5f) {
        /* std::round(2^31 - 0.5) would be 2^31, also out of range: that float
         * does not exist (floats near 2^31 are integers). */
        return truncated + 1;
    }
    if (fraction <= -0.5f) {
        return truncated - 1;
    }
    return truncated;
}

/* static_cast<int32_t>(std::round(q)) without libm: round half away from
 * zero.  Where the C++ cast is undefined (NaN, |q| >= 2^31) this saturates. */
static inline int32_t mcu_round_to_int32(double q)
{
    int32_t truncated;
    double fraction;
    if (q != q) {
        return 0;
    }
    if (q >= 2147483647.0) {
        return INT32_MAX;
    }
    if (q <= -2147483648.0) {
        return INT32_MIN;
    }
    truncated = (int32_t)q;
    fraction = q - (double)truncated; /* exact: both share q's exponent range */
    if (fraction >= 0.5) {
        return truncated + 1;
    }
    if (fraction <= -0.5) {
        return truncated - 1;
    }
    return truncated;
}

/* static_cast<int32_t>(std::round(q)) as the reference interpreter computes
 * it on x86-64: rounding half away from zero, and where the C++ cast is
 * undefined (NaN, out of range) the value x86's conversion gives, INT32_MIN. */
static inline int32_t mcu_round_to_int32_x86(double q)
{
    if (q != q || q >= 2147483647.5 || q <= -2147483648.5) {
        return INT32_MIN;
    }
    return mcu_round_to_int32(q);
}

/* ---- gemmlowp fixed point, int16 overloads ---- */

/* gemmlowp's SaturatingRoundingDoublingHighMul on int16: (ab + nudge) / 2^15
 * with the nudge 2^14 (ab >= 0) or 1 - 2^14 and a division truncating toward
 * zero, which is floor((ab + 2^14) / 2^15) for either sign (the argument
 * beside mcu_mul_by_quantized_mul, at 16 bits): one add and one arithmetic
 * shift.  Only INT16_MIN * INT16_MIN reaches 2^15, which saturates. */
static inline int16_t mcu_sat_round_doubling_high_mul_s16(int16_t a, int16_t b)
{
    const int32_t high = ((int32_t)a * (int32_t)b + ((int32_t)1 << 14)) >> 15;
    return (int16_t)(high > INT16_MAX ? INT16_MAX : high);
}

/* The same where the operands are never both INT16_MIN (its one saturating
 * case): no clamp. */
static inline int16_t mcu_round_doubling_high_mul_s16(int16_t a, int16_t b)
{
    return (int16_t)(((int32_t)a * (int32_t)b + ((int32_t)1 << 14)) >> 15);
}

/* As above but truncating toward zero (ARM's SQDMULH). */
static inline int16_t mcu_sat_doubling_high_mul_s16(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)(((int32_t)a * (int32_t)b) / ((int32_t)1 << 15));
}

static inline int16_t mcu_sat_left_shift_s16(int16_t value, int amount)
{
    const int32_t shifted = (int32_t)value * ((int32_t)1 << amount);
    return (int16_t)mcu_clamp_s32(shifted, INT16_MIN, INT16_MAX);
}

/* ---- gemmlowp fixed point (int32 raw values) ----
 * A value with I integer bits is raw * 2^-(31 - I).  The functions are named
 * after their gemmlowp counterparts and follow them step for step. */

/* raw * 2^exponent with saturation, rounding when exponent < 0. */
static inline int32_t mcu_fp_sat_round_mul_by_pot(int32_t x, int exponent)
{
    if (exponent > 0) {
        const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
        if (x > threshold) {
            return INT32_MAX;
        }
        if (x < -threshold) {
            return INT32_MIN;
        }
        return (int32_t)((uint32_t)x << exponent);
    }
    if (exponent < 0) {
        return mcu_rounding_divide_by_pot(x, -exponent);
    }
    return x;
}

/* Wrapping add, as gemmlowp's int32 operator+ behaves on every target. */
static inline int32_t mcu_fp_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t mcu_fp_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* exp(a) for a in [-1/4, 0); a and the result have 0 integer bits. */
static inline int32_t mcu_fp_exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a)
{
    const int32_t constant_term = 1895147668;    /* exp(-1/8) */
    const int32_t constant_1_over_3 = 715827883; /* 1/3 */
    const int32_t x = mcu_fp_add(a, (int32_t)1 << 28);
    const int32_t x2 = mcu_sat_round_doubling_high_mul(x, x);
    const int32_t x3 = mcu_sat_round_doubling_high_mul(x2, x);
    const int32_t x4 = mcu_sat_round_doubling_high_mul(x2, x2);
    const int32_t x4_over_4 = mcu_fp_sat_round_mul_by_pot(x4, -2);
    const int32_t poly = mcu_fp_sat_round_mul_by_pot(
        mcu_fp_add(mcu_sat_round_doubling_high_mul(mcu_fp_add(x4_over_4, x3), constant_1_over_3), x2), -1);
    return mcu_fp_add(constant_term, mcu_sat_round_doubling_high_mul(constant_term, mcu_fp_add(x, poly)));
}

/* exp(a) for a <= 0 given with `integer_bits` integer bits (1..6); the result
 * has 0 integer bits. */
static inline int32_t mcu_fp_exp_on_negative_values(int32_t a, int integer_bits)
{
    static const int32_t multipliers[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242,        /* exp(-16) */
    };
    const int fractional_bits = 31 - integer_bits;
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod_quarter_minus_one_quarter = mcu_fp_sub(a & mask, one_quarter);
    const int32_t remainder = mcu_fp_sub(a_mod_quarter_minus_one_quarter, a);
    int32_t result = mcu_fp_exp_on_interval_between_negative_one_quarter_and_0_excl(
        mcu_fp_sat_round_mul_by_pot(a_mod_quarter_minus_one_quarter, integer_bits));
    int exponent;
    for (exponent = -2; exponent <= 4; ++exponent) {
        if (integer_bits > exponent) {
            const int shift = fractional_bits + exponent;
            if (remainder & (int32_t)((uint32_t)1 << shift)) {
                result = mcu_sat_round_doubling_high_mul(result, multipliers[exponent + 2]);
            }
        }
    }
    if (integer_bits > 5) {
        const int32_t clamp = -((int32_t)1 << (36 - integer_bits)); /* -32 */
        if (a < clamp) {
            result = 0;
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + x) for x in [0, 1): both with 0 integer bits. */
static inline int32_t mcu_fp_one_over_one_plus_x_for_x_in_0_1(int32_t a)
{
    const int32_t constant_48_over_17 = 1515870810;      /* 2 integer bits */
    const int32_t constant_neg_32_over_17 = -1010580540; /* 2 integer bits */
    const int32_t f2_one = (int32_t)1 << 29;
    /* RoundingHalfSum(a, One) with One = INT32_MAX at 0 integer bits. */
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = mcu_fp_add(constant_48_over_17, mcu_sat_round_doubling_high_mul(half_denominator, constant_neg_32_over_17));
    int i;
    for (i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = mcu_sat_round_doubling_high_mul(half_denominator, x);
        const int32_t one_minus = mcu_fp_sub(f2_one, half_denominator_times_x);
        x = mcu_fp_add(x, mcu_fp_sat_round_mul_by_pot(mcu_sat_round_doubling_high_mul(x, one_minus), 2));
    }
    /* ExactMulByPot<-1> keeps the raw value; Rescale<0> from 1 integer bit. */
    return mcu_fp_sat_round_mul_by_pot(x, 1);
}

static inline int mcu_count_leading_zeros_u32(uint32_t x)
{
    int n = 0;
    if (x == 0) {
        return 32;
    }
    while (!(x & 0x80000000u)) {
        x <<= 1;
        ++n;
    }
    return n;
}

/* TFLite's CountLeadingSignBits: redundant sign bits of x (31 for 0 and -1). */
static inline int mcu_count_leading_sign_bits(int32_t x)
{
    if (x >= 0) {
        return mcu_count_leading_zeros_u32((uint32_t)x) - 1;
    }
    return mcu_count_leading_zeros_u32(~(uint32_t)x) - 1;
}

/* TFLite's GetReciprocal: 1 / x for x with `integer_digits` integer bits, as a
 * 0-integer-bit value scaled by 2^-num_bits_over_unit. */
static inline int32_t mcu_fp_reciprocal(int32_t x, int integer_digits, int *num_bits_over_unit)
{
    const int headroom_plus_one = mcu_count_leading_zeros_u32((uint32_t)x);
    const int32_t shifted_sum_minus_one =
        (int32_t)(((uint32_t)x << headroom_plus_one) - ((uint32_t)1 << 31));
    *num_bits_over_unit = integer_digits - headroom_plus_one;
    return mcu_fp_one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
}

/* ---- gemmlowp fixed point (int16 raw values) ----
 * The same functions on int16 raw values, as gemmlowp instantiates its
 * templates for std::int16_t: + - and unary - wrap to 16 bits, constants are
 * the int32 ones rounded to 16 bits, only the last add of the exp polynomial
 * saturates.  `integer_bits` is the template's tIntegerBits. */

static inline int16_t mcu_fp16_add(int16_t a, int16_t b)
{
    return (int16_t)(uint16_t)((uint32_t)(uint16_t)a + (uint32_t)(uint16_t)b);
}

static inline int16_t mcu_fp16_sub(int16_t a, int16_t b)
{
    return (int16_t)(uint16_t)((uint32_t)(uint16_t)a - (uint32_t)(uint16_t)b);
}

static inline int16_t mcu_fp16_neg(int16_t a)
{
    return mcu_fp16_sub(0, a);
}

/* RescaleConstantInitializer: an int32 fixed-point constant at 16 bits. */
static inline int16_t mcu_fp16_constant(int32_t int32_value)
{
    return (int16_t)mcu_rounding_divide_by_pot(int32_value, 16);
}

/* SaturatingRoundingMultiplyByPOT on int16. */
static inline int16_t mcu_fp16_sat_round_mul_by_pot(int16_t x, int exponent)
{
    if (exponent > 0) {
        const int32_t threshold = ((int32_t)1 << (15 - exponent)) - 1;
        if (x > threshold) {
            return INT16_MAX;
        }
        if (x < -threshold) {
            return INT16_MIN;
        }
        return (int16_t)(uint16_t)((uint32_t)(uint16_t)x << exponent);
    }
    if (exponent < 0) {
        return (int16_t)mcu_rounding_divide_by_pot(x, -exponent);
    }
    return x;
}

/* The rounding halvings of x4 and of the polynomial's sum take operands that
 * are never negative here (x2 and x4 are squares; |x3 / 3| < x2 / 8 for
 * |x| <= 1/8, and both are 0 below that), where the round-to-nearest,
 * ties-away divide is an add and a shift.  Checked against gemmlowp's form
 * on every int16 input (tests/test_quant.py). */
static inline int16_t mcu_fp16_exp_on_interval_between_negative_one_quarter_and_0_excl(int16_t a)
{
    const int16_t constant_term = mcu_fp16_constant(1895147668);   /* exp(-1/8) */
    const int16_t constant_1_over_3 = mcu_fp16_constant(715827883); /* 1/3 */
    const int16_t x = mcu_fp16_add(a, (int16_t)(1 << 12));           /* + 1/8 */
    const int16_t x2 = mcu_round_doubling_high_mul_s16(x, x); /* |x| <= 1/8: no saturation */
    const int16_t x3 = mcu_round_doubling_high_mul_s16(x2, x);
    const int16_t x4 = mcu_round_doubling_high_mul_s16(x2, x2);
    const int16_t x4_over_4 = (int16_t)((x4 + 2) >> 2);
    const int16_t poly = (int16_t)(
        (mcu_fp16_add(mcu_sat_round_doubling_high_mul_s16(mcu_fp16_add(x4_over_4, x3), constant_1_over_3), x2) + 1) >> 1);
    const int32_t sum =
        (int32_t)constant_term + mcu_sat_round_doubling_high_mul_s16(constant_term, mcu_fp16_add(x, poly));
    return (int16_t)mcu_clamp_s32(sum, INT16_MIN, INT16_MAX);
}

/* exp_on_negative_values' barrel: exp(-2^exponent) for exponent -2 .. 4 as
 * Q31 constants, each passed to STEP(exponent, multiplier) in order. */
#define MCU_FP16_EXP_BARREL(STEP)                                                                                      \
    STEP(-2, 1672461947) STEP(-1, 1302514674) STEP(0, 790015084) STEP(1, 290630308) STEP(2, 39332535) STEP(3, 720401) \
    STEP(4, 242)

/* One factor of exp's barrel: when the remainder has bit fractional_bits +
 * exponent set, the result times exp(-2^exponent) (the int32 constant
 * rounded to 16 bits; a literal where this inlines). */
static inline MCU_QUANT_INLINE int16_t mcu_fp16_exp_barrel(int16_t result, int16_t remainder, int integer_bits,
                                                           int exponent, int32_t multiplier)
{
    if (integer_bits > exponent && (remainder & (1 << (15 - integer_bits + exponent)))) {
        return mcu_sat_round_doubling_high_mul_s16(result, mcu_fp16_constant(multiplier));
    }
    return result;
}

/* exp(a) for a <= 0 with `integer_bits` (0..7) integer bits; 0 integer bits
 * out.  Always inlined: with a constant integer_bits (the LSTM gates) the
 * barrel below reduces to the steps that can happen. */
static inline MCU_QUANT_INLINE int16_t mcu_fp16_exp_on_negative_values(int16_t a, int integer_bits)
{
    const int fractional_bits = 15 - integer_bits;
    const int16_t one_quarter = (int16_t)(1 << (fractional_bits - 2));
    const int16_t mask = mcu_fp16_sub(one_quarter, 1);
    const int16_t a_mod_quarter_minus_one_quarter = mcu_fp16_sub((int16_t)(a & mask), one_quarter);
    const int16_t remainder = mcu_fp16_sub(a_mod_quarter_minus_one_quarter, a);
    /* In [-1/4, 0): the rescale to 0 integer bits cannot saturate. */
    int16_t result = mcu_fp16_exp_on_interval_between_negative_one_quarter_and_0_excl(
        (int16_t)(a_mod_quarter_minus_one_quarter * (1 << integer_bits)));
#define MCU_FP16_EXP_STEP(exponent, multiplier) \
    result = mcu_fp16_exp_barrel(result, remainder, integer_bits, exponent, multiplier);
    MCU_FP16_EXP_BARREL(MCU_FP16_EXP_STEP)
#undef MCU_FP16_EXP_STEP
    if (integer_bits > 5 && a < mcu_fp16_constant(-((int32_t)1 << (36 - integer_bits)))) {
        result = 0;
    }
    return a == 0 ? INT16_MAX : result;
}

/* The Newton-Raphson iterate both reciprocals below share: 1 / (1 + a) for a
 * in [0, 1), as a value with 2 integer bits.  Over that domain each step's
 * correction stays within +-227 (checked on every input in
 * tests/test_quant.py), so gemmlowp's saturating multiply by 4 is a plain
 * one. */
static inline int16_t mcu_fp16_one_over_one_plus_x_f2(int16_t a)
{
    const int16_t f2_one = (int16_t)(1 << 13);
    const int32_t sum = (int32_t)a + INT16_MAX; /* RoundingHalfSum(a, One) */
    const int16_t half_denominator = (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int16_t x = mcu_fp16_add(mcu_fp16_constant(1515870810), /* 48/17 */
                             mcu_sat_round_doubling_high_mul_s16(half_denominator, mcu_fp16_constant(-1010580540)));
    int i;
    for (i = 0; i < 3; ++i) {
        /* half_denominator > 0 and |one_minus| small: neither product saturates. */
        const int16_t half_denominator_times_x = mcu_round_doubling_high_mul_s16(half_denominator, x);
        const int16_t one_minus = mcu_fp16_sub(f2_one, half_denominator_times_x);
        x = mcu_fp16_add(x, (int16_t)(mcu_round_doubling_high_mul_s16(x, one_minus) * 4));
    }
    return x;
}

/* gemmlowp::logistic on int16 with `integer_bits` integer bits in, 0 out. */
static inline MCU_QUANT_INLINE int16_t mcu_fp16_logistic(int16_t a, int integer_bits)
{
    const int16_t abs_input = a > 0 ? a : mcu_fp16_neg(a);
    const int16_t exp_neg = mcu_fp16_exp_on_negative_values(mcu_fp16_neg(abs_input), integer_bits);
    /* Rescale<0>(ExactMulByPot<-1>(x)): from 1 integer bit to 0. */
    /* The reciprocal lies in [8190, 16384] (tests/test_quant.py): doubling it
     * saturates at the top only. */
    const int32_t doubled = (int32_t)mcu_fp16_one_over_one_plus_x_f2(exp_neg) * 2;
    const int16_t result_if_positive = (int16_t)(doubled > INT16_MAX ? INT16_MAX : doubled);
    if (a == 0) {
        return (int16_t)(1 << 14);
    }
    return a > 0 ? result_if_positive : mcu_fp16_sub(INT16_MAX, result_if_positive);
}

/* gemmlowp::tanh on int16 with `integer_bits` (0..6) integer bits in, 0 out. */
static inline MCU_QUANT_INLINE int16_t mcu_fp16_tanh(int16_t a, int integer_bits)
{
    const int16_t negative_part = a < 0 ? a : mcu_fp16_neg(a);
    /* ExactMulByPot<1>: the same raw value read with one more integer bit. */
    const int16_t exp_neg = mcu_fp16_exp_on_negative_values(negative_part, integer_bits + 1);
    /* (1 - x) / (1 + x): Rescale<0>(x - One) from 2 integer bits. */
    const int32_t t4 = ((int32_t)mcu_fp16_one_over_one_plus_x_f2(exp_neg) - (1 << 13)) * 4; /* top saturation only */
    const int16_t t = (int16_t)(t4 > INT16_MAX ? INT16_MAX : t4);
    if (a == 0) {
        return 0;
    }
    return a < 0 ? mcu_fp16_neg(t) : t;
}

/* An exact table of R_k(m) = 1 / (1 + exp(-m)) (Q1.14) as gemmlowp's int16
 * logistic and tanh below compute it for a magnitude m = 0 .. 32768 with k
 * integer bits (mcu_planner/gemmlowp16.py builds it), for m from `first`:
 * knots R_k(min(first + 32 i, last)) less 8, and per magnitude up to `last`
 * a 4-bit correction (two per byte, the even one low, counted from `first`)
 * added to their interpolation, rounded down; beyond `last` R_k stays
 * R_k(last).  Below `first` (0 for a table of its own), R_k(m) is
 * R_(k-1)(2m), read from the `halved` table (one with `first` 0). */
#define MCU_FP16_TABLE_BLOCK_SHIFT 5

typedef struct mcu_fp16_table {
    const int16_t *knots;
    const uint8_t *residuals;
    int32_t last;
    int32_t first;
    const struct mcu_fp16_table *halved;
} mcu_fp16_table;

/* The value at `index` (counted from the table's first magnitude): the
 * knots' interpolation plus the correction. */
static inline int32_t mcu_fp16_table_read(const mcu_fp16_table *t, int32_t index)
{
    const int32_t block = index >> MCU_FP16_TABLE_BLOCK_SHIFT;
    const int32_t offset = index & ((1 << MCU_FP16_TABLE_BLOCK_SHIFT) - 1);
    const int32_t low = t->knots[block], high = t->knots[block + 1];
    const int32_t residual = (int32_t)((uint32_t)t->residuals[index >> 1] >> ((uint32_t)(index & 1) << 2)) & 15;
    return low + (((high - low) * offset + (1 << (MCU_FP16_TABLE_BLOCK_SHIFT - 1))) >> MCU_FP16_TABLE_BLOCK_SHIFT) +
           residual;
}

/* R_k(m) from its table. */
static inline int32_t mcu_fp16_table_reciprocal_of_exp(const mcu_fp16_table *t, int32_t magnitude)
{
    if (magnitude < t->first) {
        const mcu_fp16_table *const halved = t->halved;
        const int32_t doubled = 2 * magnitude;
        return mcu_fp16_table_read(halved, doubled < halved->last ? doubled : halved->last);
    }
    return mcu_fp16_table_read(t, (magnitude < t->last ? magnitude : t->last) - t->first);
}

/* mcu_fp16_logistic(a, k) from the table of R_k (one of its own: `first`
 * 0, which keeps the halved table's test out of the gates' loop): 2 R_k(|a|),
 * saturated, mirrored for a < 0 (the table holds 1/2 at 0: logistic(0) =
 * 1/2, tanh(0) = 0). */
static inline int16_t mcu_fp16_table_logistic(const mcu_fp16_table *t, int16_t a)
{
    const int32_t magnitude = a < 0 ? -(int32_t)a : (int32_t)a;
    int32_t value = 2 * mcu_fp16_table_read(t, magnitude < t->last ? magnitude : t->last);
    value = value > INT16_MAX ? INT16_MAX : value;
    return (int16_t)(a < 0 ? INT16_MAX - value : value);
}

/* mcu_fp16_tanh(a, k) from the table of R_(k+1): 4 (R_(k+1)(|a|) - 1/2),
 * saturated, negated for a < 0. */
static inline int16_t mcu_fp16_table_tanh(const mcu_fp16_table *t, int16_t a)
{
    const int32_t magnitude = a < 0 ? -(int32_t)a : (int32_t)a;
    int32_t value = 4 * (mcu_fp16_table_reciprocal_of_exp(t, magnitude) - (1 << 13));
    value = value > INT16_MAX ? INT16_MAX : value;
    return (int16_t)(a < 0 ? -value : value);
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp: 1 / sqrt(input) as a Q31
 * multiplier and a shift, multiplied by `reverse_shift` (-1: a left shift).
 * quant.inv_sqrt_quantized_multiplier_exp is the same computation in Python
 * (for the int8 RSQRT table). */
static inline void mcu_inv_sqrt_quantized_multiplier_exp(int32_t input, int reverse_shift, int32_t *output_inv_sqrt,
                                                         int *output_shift)
{
    const int32_t half_three = ((int32_t)1 << 28) + ((int32_t)1 << 27); /* 1.5 at 3 integer bits */
    int32_t x, half_input;
    int left_shift_bit_pairs, i;
    if (input <= 1) {
        *output_inv_sqrt = INT32_MAX;
        *output_shift = 0;
        return;
    }
    *output_shift = 11;
    while (input >= ((int32_t)1 << 29)) {
        input /= 4;
        ++*output_shift;
    }
    left_shift_bit_pairs = (mcu_count_leading_zeros_u32((uint32_t)input) - 1) / 2 - 1;
    *output_shift -= left_shift_bit_pairs;
    input = (int32_t)((uint32_t)input << (2 * left_shift_bit_pairs));
    half_input = mcu_rounding_divide_by_pot(input >> 1, 1);
    x = (int32_t)1 << 28; /* One() at 3 integer bits */
    for (i = 0; i < 5; ++i) {
        /* x * x * x has 9 integer bits; Rescale<3> shifts it left by 6. */
        const int32_t x3 = mcu_fp_sat_round_mul_by_pot(
            mcu_sat_round_doubling_high_mul(mcu_sat_round_doubling_high_mul(x, x), x), 6);
        x = mcu_fp_sat_round_mul_by_pot(
            mcu_fp_sub(mcu_sat_round_doubling_high_mul(half_three, x), mcu_sat_round_doubling_high_mul(half_input, x3)),
            3);
    }
    x = mcu_sat_round_doubling_high_mul(x, 1518500250); /* sqrt(2) / 2 */
    if (*output_shift < 0) {
        x = (int32_t)((uint32_t)x << -*output_shift);
        *output_shift = 0;
    }
    *output_inv_sqrt = x;
    *output_shift *= reverse_shift;
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && defined(__GNUC__)
/* ---- the int16 logistic and tanh tables read on eight lanes (Helium) ---- */

/* mcu_fp16_table_read on eight lanes: the knots and the correction bytes
 * gathered by lane, the interpolation on int16 lanes
 * (gemmlowp16.reciprocal_table keeps its product and half below 2^15). */
static inline int16x8_t mcu_fp16_table_read_x8(const mcu_fp16_table *t, uint16x8_t index)
{
    const uint16x8_t block = vshrq_n_u16(index, MCU_FP16_TABLE_BLOCK_SHIFT);
    const int16x8_t offset =
        vreinterpretq_s16_u16(vandq_u16(index, vdupq_n_u16((1u << MCU_FP16_TABLE_BLOCK_SHIFT) - 1u)));
    const int16x8_t low = vldrhq_gather_shifted_offset_s16(t->knots, block);
    const int16x8_t high = vldrhq_gather_shifted_offset_s16(t->knots, vaddq_n_u16(block, 1));
    const uint16x8_t packed = vldrbq_gather_offset_u16(t->residuals, vshrq_n_u16(index, 1));
    const int16x8_t nibble_shift = vreinterpretq_s16_u16(vshlq_n_u16(vandq_u16(index, vdupq_n_u16(1)), 2));
    const uint16x8_t residual = vandq_u16(vshlq_u16(packed, vnegq_s16(nibble_shift)), vdupq_n_u16(15));
    const int16x8_t step = vmulq_s16(vsubq_s16(high, low), offset);
    const int16x8_t interpolated = vaddq_s16(
        low, vshrq_n_s16(vaddq_n_s16(step, 1 << (MCU_FP16_TABLE_BLOCK_SHIFT - 1)), MCU_FP16_TABLE_BLOCK_SHIFT));
    return vaddq_s16(interpolated, vreinterpretq_s16_u16(residual));
}

/* mcu_fp16_table_reciprocal_of_exp on eight lanes: with a `halved` table,
 * both reads, each lane taking its own. */
static inline int16x8_t mcu_fp16_table_reciprocal_of_exp_x8(const mcu_fp16_table *t, int16x8_t a)
{
    /* |a| read unsigned: INT16_MIN (its own negation) is magnitude 32768. */
    const uint16x8_t magnitude = vreinterpretq_u16_s16(vabsq_s16(a));
    /* Lanes below `first` read index 0 here (saturating subtract). */
    const int16x8_t own = mcu_fp16_table_read_x8(
        t, vqsubq_n_u16(vminq_u16(magnitude, vdupq_n_u16((uint16_t)t->last)), (uint16_t)t->first));
    const mcu_fp16_table *const halved = t->halved;
    if (t->first == 0) {
        return own;
    }
    /* 2m saturates at 65535 before the halved table's `last` clamps it. */
    return vpselq_s16(
        mcu_fp16_table_read_x8(halved, vminq_u16(vqshlq_n_u16(magnitude, 1), vdupq_n_u16((uint16_t)halved->last))),
        own, vcmphiq_u16(vdupq_n_u16((uint16_t)t->first), magnitude));
}

/* mcu_fp16_table_logistic on eight lanes. */
static inline int16x8_t mcu_fp16_table_logistic_x8(const mcu_fp16_table *t, int16x8_t a)
{
    const uint16x8_t magnitude = vreinterpretq_u16_s16(vabsq_s16(a));
    const int16x8_t value =
        vqshlq_n_s16(mcu_fp16_table_read_x8(t, vminq_u16(magnitude, vdupq_n_u16((uint16_t)t->last))), 1);
    return vpselq_s16(vsubq_s16(vdupq_n_s16(INT16_MAX), value), value, vcmpltq_n_s16(a, 0));
}

/* mcu_fp16_table_tanh on eight lanes (R >= 8190: only the top saturates). */
static inline int16x8_t mcu_fp16_table_tanh_x8(const mcu_fp16_table *t, int16x8_t a)
{
    const int16x8_t value = vqshlq_n_s16(vsubq_n_s16(mcu_fp16_table_reciprocal_of_exp_x8(t, a), 1 << 13), 2);
    return vpselq_s16(vnegq_s16(value), value, vcmpltq_n_s16(a, 0));
}
#endif

#endif /* MCU_QUANT_H */
