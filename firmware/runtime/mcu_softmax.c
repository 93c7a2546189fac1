/* Follows TensorFlow Lite's reference_ops::Softmax: the int8 version in
 * gemmlowp fixed point (exp of scaled differences accumulated with 12 integer
 * bits, one reciprocal per row; int8 and uint8 differ only in the output's
 * zero point, -128 and 0), the float version with expf. */
#include "mcu_softmax.h"

#include <float.h>
#include <math.h>

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

/* int8 and uint8 (is_signed 0): the output is the reference's
 * shifted_output, unsat + the type's lowest value, clamped to the type. */
static void softmax_8bit(const mcu_softmax_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    const int32_t lowest = is_signed ? INT8_MIN : 0, highest = is_signed ? INT8_MAX : UINT8_MAX;
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const uint8_t *in_row = input + (size_t)i * (size_t)p->depth;
        uint8_t *out_row = output + (size_t)i * (size_t)p->depth;
        int32_t max_in_row = lowest;
        int32_t sum_of_exps = 0;
        int32_t reciprocal;
        int num_bits_over_unit;
        for (c = 0; c < p->depth; ++c) {
            max_in_row = MCU_MAX(max_in_row, mcu_widen_8bit(in_row[c], is_signed));
        }
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = mcu_widen_8bit(in_row[c], is_signed) - max_in_row;
            if (diff >= p->diff_min) {
                const int32_t exp_q0 = exp_of_diff(p, diff);
                sum_of_exps = mcu_fp_add(sum_of_exps, mcu_fp_sat_round_mul_by_pot(exp_q0, -MCU_SOFTMAX_ACCUM_INTEGER_BITS));
            }
        }
        reciprocal = mcu_fp_reciprocal(sum_of_exps, MCU_SOFTMAX_ACCUM_INTEGER_BITS, &num_bits_over_unit);
        /* The input row may be the output row (in place): each element is
         * read before it is written. */
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = mcu_widen_8bit(in_row[c], is_signed) - max_in_row;
            if (diff >= p->diff_min) {
                const int32_t exp_q0 = exp_of_diff(p, diff);
                const int32_t unsat = mcu_rounding_divide_by_pot(mcu_sat_round_doubling_high_mul(reciprocal, exp_q0),
                                                                 num_bits_over_unit + 31 - 8);
                out_row[c] = (uint8_t)mcu_clamp_s32(unsat + lowest, lowest, highest);
            } else {
                out_row[c] = (uint8_t)lowest;
            }
        }
    }
}

void mcu_softmax_s8(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output)
{
    softmax_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_softmax_u8(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output)
{
    softmax_8bit(p, input, 0, output);
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
