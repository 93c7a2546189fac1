/* Follows TensorFlow Lite's reference_ops::Softmax: the int8 versions (int8
 * or int16 output) in
 * gemmlowp fixed point (exp of scaled differences accumulated with 12 integer
 * bits, one reciprocal per row; a uint8 output is the int8 one with zero
 * point 0), the float version with expf. */
#include "mcu_softmax.h"

#include <float.h>
#include <math.h>

#include "mcu_dsp.h"
#include "mcu_quant.h"

#define MCU_SOFTMAX_DIFF_INTEGER_BITS 5
#define MCU_SOFTMAX_ACCUM_INTEGER_BITS 12

/* exp(beta * input_scale * diff) for diff <= 0, in Q0.31.  Both passes over a
 * row compute it: the reference recomputes it rather than buffer a row. */
static int32_t exp_of_diff(const mcu_softmax_s8_params *p, int32_t diff)
{
    const int32_t scaled_diff =
        mcu_mul_by_quantized_mul_greater_than_one(diff, p->input_multiplier, (int)p->input_left_shift);
    return mcu_fp_exp_on_negative_values(scaled_diff, MCU_SOFTMAX_DIFF_INTEGER_BITS);
}

/* Per row: the largest input, and 1 / sum(exp) as a Q0.31 reciprocal with
 * its extra shift. */
static void row_reciprocal(const mcu_softmax_s8_params *p, const uint8_t *in_row, int is_signed, int32_t *max_in_row,
                           int32_t *reciprocal, int *num_bits_over_unit)
{
    int32_t max_value = is_signed ? INT8_MIN : 0;
    int32_t sum_of_exps = 0;
    int32_t c;
    for (c = 0; c < p->depth; ++c) {
        max_value = MCU_MAX(max_value, mcu_widen_8bit(in_row[c], is_signed));
    }
    for (c = 0; c < p->depth; ++c) {
        const int32_t diff = mcu_widen_8bit(in_row[c], is_signed) - max_value;
        if (diff >= p->diff_min) {
            const int32_t exp_q0 = exp_of_diff(p, diff);
            sum_of_exps = mcu_fp_add(sum_of_exps, mcu_fp_sat_round_mul_by_pot(exp_q0, -MCU_SOFTMAX_ACCUM_INTEGER_BITS));
        }
    }
    *max_in_row = max_value;
    *reciprocal = mcu_fp_reciprocal(sum_of_exps, MCU_SOFTMAX_ACCUM_INTEGER_BITS, num_bits_over_unit);
}

/* One output of an `output_bits`-bit type, offset by the type's minimum
 * (the output zero point TFLite requires), before the final clamp. */
static int32_t shifted_output(const mcu_softmax_s8_params *p, int32_t diff, int32_t reciprocal,
                              int num_bits_over_unit, int output_bits)
{
    const int32_t exp_q0 = exp_of_diff(p, diff);
    const int32_t unsat = mcu_rounding_divide_by_pot(mcu_sat_round_doubling_high_mul(reciprocal, exp_q0),
                                                     num_bits_over_unit + 31 - output_bits);
    return unsat - ((int32_t)1 << (output_bits - 1));
}

#if defined(MCU_MVE)
/* mcu_fp_exp_on_negative_values(a, MCU_SOFTMAX_DIFF_INTEGER_BITS) on four
 * lanes, step for step: VQSHL is the saturating multiply by 2^5 (its
 * threshold and gemmlowp's agree: -2^26 << 5 fits, either way INT32_MIN),
 * VQRDMULH the saturating rounding doubling high mul, + and - wrap (VADD,
 * VSUB), mcu_rounding_divide_by_pot_x4 the rounding divides, and each bit
 * of the remainder applies its multiplier (a predicated VQRDMULH) as the
 * scalar branch does.  (Five integer bits: no clamp below -32.) */
static inline MCU_ALWAYS_INLINE int32x4_t exp_on_negative_values_x4(int32x4_t a)
{
    static const int32_t multipliers[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t one_quarter = (int32_t)1 << (31 - MCU_SOFTMAX_DIFF_INTEGER_BITS - 2);
    const int32x4_t a_mod_quarter_minus_one_quarter =
        vsubq_s32(vandq_s32(a, vdupq_n_s32(one_quarter - 1)), vdupq_n_s32(one_quarter));
    const int32x4_t remainder = vsubq_s32(a_mod_quarter_minus_one_quarter, a);
    const int32_t constant_term = 1895147668, constant_1_over_3 = 715827883;
    const int32x4_t x = vaddq_s32(vqshlq_n_s32(a_mod_quarter_minus_one_quarter, MCU_SOFTMAX_DIFF_INTEGER_BITS),
                                  vdupq_n_s32((int32_t)1 << 28));
    const int32x4_t x2 = vqrdmulhq_s32(x, x);
    const int32x4_t x3 = vqrdmulhq_s32(x2, x);
    const int32x4_t x4_over_4 = mcu_rounding_divide_by_pot_x4(vqrdmulhq_s32(x2, x2), 2);
    const int32x4_t poly = mcu_rounding_divide_by_pot_x4(
        vaddq_s32(vqrdmulhq_n_s32(vaddq_s32(x4_over_4, x3), constant_1_over_3), x2), 1);
    int32x4_t result = vaddq_n_s32(vqrdmulhq_n_s32(vaddq_s32(x, poly), constant_term), constant_term);
    int k;
    for (k = 0; k < 7; ++k) {
        const int32_t bit = (int32_t)((uint32_t)1 << (31 - MCU_SOFTMAX_DIFF_INTEGER_BITS - 2 + k));
        const mve_pred16_t set = vcmpneq_n_s32(vandq_s32(remainder, vdupq_n_s32(bit)), 0);
        result = vqrdmulhq_m_n_s32(result, result, multipliers[k], set);
    }
    return vpselq_s32(vdupq_n_s32(INT32_MAX), result, vcmpeqq_n_s32(a, 0));
}

static inline MCU_ALWAYS_INLINE int32x4_t exp_of_diff_x4(const mcu_softmax_s8_params *p, int32x4_t diff)
{
    return exp_on_negative_values_x4(mcu_mul_by_quantized_mul_x4_n(diff, p->input_multiplier, p->input_left_shift));
}

static inline MCU_ALWAYS_INLINE int32x4_t load_row_x4(const uint8_t *x, mve_pred16_t lanes, int is_signed)
{
    return is_signed ? vldrbq_z_s32((const int8_t *)x, lanes) : vreinterpretq_s32_u32(vldrbq_z_u32(x, lanes));
}

/* row_reciprocal on lanes: the maximum sixteen values per pass, the sum
 * of the rounded exps four per pass (wrapping adds: any order gives the
 * same int32), lanes below diff_min left out as the scalar branch does. */
static void row_reciprocal_mve(const mcu_softmax_s8_params *p, const uint8_t *in_row, int is_signed,
                               int32_t *max_in_row, int32_t *reciprocal, int *num_bits_over_unit)
{
    int32_t max_value, sum_of_exps = 0, c;
    if (is_signed) {
        int8_t max = INT8_MIN;
        for (c = 0; c < p->depth; c += 16) {
            const mve_pred16_t lanes = vctp8q((uint32_t)(p->depth - c));
            max = vmaxvq_p_s8(max, vldrbq_z_s8((const int8_t *)in_row + c, lanes), lanes);
        }
        max_value = max;
    } else {
        uint8_t max = 0;
        for (c = 0; c < p->depth; c += 16) {
            const mve_pred16_t lanes = vctp8q((uint32_t)(p->depth - c));
            max = vmaxvq_p_u8(max, vldrbq_z_u8(in_row + c, lanes), lanes);
        }
        max_value = max;
    }
    for (c = 0; c < p->depth; c += 4) {
        const mve_pred16_t lanes = vctp32q((uint32_t)(p->depth - c));
        const int32x4_t diff = vsubq_n_s32(load_row_x4(in_row + c, lanes, is_signed), max_value);
        const int32x4_t exps =
            mcu_rounding_divide_by_pot_x4(exp_of_diff_x4(p, diff), MCU_SOFTMAX_ACCUM_INTEGER_BITS);
        sum_of_exps = vaddvaq_p_s32(sum_of_exps, exps, vcmpgeq_m_n_s32(diff, p->diff_min, lanes));
    }
    *max_in_row = max_value;
    *reciprocal = mcu_fp_reciprocal(sum_of_exps, MCU_SOFTMAX_ACCUM_INTEGER_BITS, num_bits_over_unit);
}

/* The outputs of a row on four lanes (shifted_output, the clamp to
 * [low, high] and `low` below diff_min), for a rounding exponent of at
 * most 31 (sums of fewer than ~2^9 maximal exps); 0 where it is larger.
 * `offset` is what the scalar loop adds after shifted_output (u8: 128).
 * Each pass reads its values before it writes them (in place is safe). */
static int output_row_mve(const mcu_softmax_s8_params *p, const uint8_t *in_row, void *out_row, int is_signed,
                          int output_bits, int32_t offset)
{
    int32_t max_in_row, reciprocal, c;
    int num_bits_over_unit, exponent;
    const int32_t low = output_bits == 16 ? INT16_MIN : (is_signed ? INT8_MIN : 0);
    const int32_t high = output_bits == 16 ? INT16_MAX : (is_signed ? INT8_MAX : UINT8_MAX);
    row_reciprocal_mve(p, in_row, is_signed, &max_in_row, &reciprocal, &num_bits_over_unit);
    exponent = num_bits_over_unit + 31 - output_bits;
    if (exponent < 1 || exponent > 31) {
        return 0;
    }
    for (c = 0; c < p->depth; c += 4) {
        const mve_pred16_t lanes = vctp32q((uint32_t)(p->depth - c));
        const int32x4_t diff = vsubq_n_s32(load_row_x4(in_row + c, lanes, is_signed), max_in_row);
        const int32x4_t unsat =
            mcu_rounding_divide_by_pot_x4(vqrdmulhq_n_s32(exp_of_diff_x4(p, diff), reciprocal), exponent);
        int32x4_t value = vaddq_n_s32(unsat, offset - ((int32_t)1 << (output_bits - 1)));
        value = vmaxq_s32(vminq_s32(value, vdupq_n_s32(high)), vdupq_n_s32(low));
        value = vpselq_s32(value, vdupq_n_s32(low), vcmpgeq_n_s32(diff, p->diff_min));
        if (output_bits == 16) {
            vstrhq_p_s32((int16_t *)out_row + c, value, lanes);
        } else {
            vstrbq_p_s32((int8_t *)out_row + c, value, lanes);
        }
    }
    return 1;
}
#endif

/* The rows of an 8-bit SOFTMAX (`is_signed` input) into `output_bits`-bit
 * outputs; with `lanes` (a constant at each entry) on Helium four lanes at a
 * time first (output_row_mve), so that the entries without it link none of
 * that code.  A uint8 output is the int8 one plus 128 (zero point 0). */
static inline MCU_ALWAYS_INLINE void softmax_rows(const mcu_softmax_s8_params *p, const uint8_t *input,
                                                  void *output, int is_signed, int output_bits, int lanes)
{
    const int32_t offset = is_signed ? 0 : 128;
    const int32_t low = output_bits == 16 ? INT16_MIN : (is_signed ? INT8_MIN : 0);
    const int32_t high = output_bits == 16 ? INT16_MAX : (is_signed ? INT8_MAX : UINT8_MAX);
    int32_t i, c;
    (void)lanes; /* without Helium every entry is the scalar loop */
    for (i = 0; i < p->outer_size; ++i) {
        const size_t first = (size_t)i * (size_t)p->depth;
        const uint8_t *in_row = input + first;
        int16_t *out_row16 = (int16_t *)output + first;
        uint8_t *out_row8 = (uint8_t *)output + first;
        int32_t max_in_row, reciprocal;
        int num_bits_over_unit;
#if defined(MCU_MVE)
        if (lanes && output_row_mve(p, in_row, output_bits == 16 ? (void *)out_row16 : (void *)out_row8, is_signed,
                                    output_bits, offset)) {
            continue;
        }
#endif
        row_reciprocal(p, in_row, is_signed, &max_in_row, &reciprocal, &num_bits_over_unit);
        /* The input row may be the output row (in place, 8-bit outputs):
         * each element is read before it is written. */
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = mcu_widen_8bit(in_row[c], is_signed) - max_in_row;
            const int32_t value =
                diff >= p->diff_min
                    ? mcu_clamp_s32(shifted_output(p, diff, reciprocal, num_bits_over_unit, output_bits) + offset,
                                    low, high)
                    : low;
            if (output_bits == 16) {
                out_row16[c] = (int16_t)value;
            } else {
                out_row8[c] = (uint8_t)(value & 0xff); /* int8 outputs: the same bits */
            }
        }
    }
}

void mcu_softmax_s8(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output)
{
    softmax_rows(p, (const uint8_t *)input, output, 1, 8, 0);
}

void mcu_softmax_u8(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output)
{
    softmax_rows(p, input, output, 0, 8, 0);
}

void mcu_softmax_s8_s16(const mcu_softmax_s8_params *p, const int8_t *input, int16_t *output)
{
    softmax_rows(p, (const uint8_t *)input, output, 1, 16, 0);
}

void mcu_softmax_s8_long_rows(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output)
{
    softmax_rows(p, (const uint8_t *)input, output, 1, 8, 1);
}

void mcu_softmax_u8_long_rows(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output)
{
    softmax_rows(p, input, output, 0, 8, 1);
}

void mcu_softmax_s8_s16_long_rows(const mcu_softmax_s8_params *p, const int8_t *input, int16_t *output)
{
    softmax_rows(p, (const uint8_t *)input, output, 1, 16, 1);
}

void mcu_softmax_f32(const mcu_softmax_f32_params *p, const float *input, float *output)
{
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const float *in_row = input + (size_t)i * (size_t)p->depth;
        float *out_row = output + (size_t)i * (size_t)p->depth;
        float max = -FLT_MAX;
        float sum = 0.0f;
        for (c = 0; c < p->depth; ++c) {
            max = max < in_row[c] ? in_row[c] : max;
        }
        for (c = 0; c < p->depth; ++c) {
            const float e = expf((in_row[c] - max) * p->beta);
            out_row[c] = e;
            sum += e;
        }
        for (c = 0; c < p->depth; ++c) {
            out_row[c] = out_row[c] / sum;
        }
    }
}

/* reference_ops::LogSoftmax (float): x - max - log(sum of exp(x - max)). */
void mcu_log_softmax_f32(const mcu_log_softmax_f32_params *p, const float *input, float *output)
{
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const float *in_row = input + (size_t)i * (size_t)p->depth;
        float *out_row = output + (size_t)i * (size_t)p->depth;
        float max = -FLT_MAX;
        float sum = 0.0f;
        float log_sum;
        for (c = 0; c < p->depth; ++c) {
            max = max < in_row[c] ? in_row[c] : max;
        }
        for (c = 0; c < p->depth; ++c) {
            sum += expf(in_row[c] - max);
        }
        log_sum = logf(sum);
        for (c = 0; c < p->depth; ++c) {
            out_row[c] = in_row[c] - max - log_sum;
        }
    }
}

/* TFLite's int16 LUT lookup: 512 segments over the int16 range, linear
 * interpolation by the low 7 bits, rounded. */
static int16_t lut_lookup_s16(int16_t value, const int16_t *lut)
{
    const int32_t index = 256 + (value >> 7);
    const int32_t offset = value & 0x7f;
    const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);
    return (int16_t)(lut[index] + ((slope * offset + 64) >> 7));
}

void mcu_softmax_s16(const mcu_softmax_s16_params *p, const int16_t *input, int16_t *output)
{
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const int16_t *in_row = input + (size_t)i * (size_t)p->depth;
        int16_t *out_row = output + (size_t)i * (size_t)p->depth;
        int32_t max_in_row = INT16_MIN;
        int32_t sum_of_exps = 0; /* Q16.15 */
        int32_t shifted_sum, right_shift;
        int64_t round;
        int headroom_plus_one;
        int16_t reciprocal;
        for (c = 0; c < p->depth; ++c) {
            max_in_row = MCU_MAX(max_in_row, (int32_t)in_row[c]);
        }
        /* exp(x - max) in Q0.15, kept in the output row until rescaled (as
         * the reference does). */
        for (c = 0; c < p->depth; ++c) {
            const int32_t scaled_diff = mcu_mul_by_quantized_mul((int32_t)in_row[c] - max_in_row,
                                                                 p->input_multiplier, (int)p->input_shift);
            /* [-65535, 0] -> [-32768, 32767], the table's input range. */
            const int32_t centred = mcu_clamp_s32(scaled_diff + 32767, INT16_MIN, INT16_MAX);
            out_row[c] = lut_lookup_s16((int16_t)centred, p->exp_lut);
            sum_of_exps += out_row[c];
        }
        /* 1 / sum from the 1 / (1 + x) table: the sum normalised to [1, 2)
         * in Q1.15, less one, centred on the table's int16 range. */
        headroom_plus_one = mcu_count_leading_zeros_u32((uint32_t)sum_of_exps);
        shifted_sum = (int32_t)((((int64_t)sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
        reciprocal = lut_lookup_s16(
            (int16_t)mcu_clamp_s32(shifted_sum - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX),
            p->one_over_one_plus_x_lut);
        right_shift = 31 - headroom_plus_one;
        round = (int64_t)1 << (right_shift - 1);
        for (c = 0; c < p->depth; ++c) {
            const int32_t result = (int32_t)(((int64_t)out_row[c] * (int64_t)reciprocal + round) >> right_shift);
            out_row[c] = (int16_t)mcu_clamp_s32(result, 0, INT16_MAX);
        }
    }
}
