/* gemmlowp's fixed point on int32 and int16 raw values (exp, logistic,
 * tanh, reciprocal) and TFLite's inverse square root multiplier.
 *
 * Every function here reproduces, bit for bit, the helper of the same purpose
 * in TensorFlow Lite's reference kernels (tensorflow/lite/kernels/internal/
 * common.h and gemmlowp's fixedpoint.h, built without TFLITE_SINGLE_ROUNDING),
 * because the generated code must agree with the reference interpreter on
 * every output byte.
 */
#ifndef MCU_FIXEDPOINT_H
#define MCU_FIXEDPOINT_H

#include <stdint.h>

#include "mcu_requant.h"

/* Forces the inlining of the int16 fixed-point functions whose integer-bit
 * counts are constants at their call sites. */
#if defined(__GNUC__)
#define MCU_QUANT_INLINE __attribute__((always_inline))
#else
#define MCU_QUANT_INLINE
#endif

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

#endif /* MCU_FIXEDPOINT_H */
