/* Follows TensorFlow Lite's reference_ops::Add / BroadcastAdd6DSlow for
 * int16 (AddGeneralParamScale and the power-of-two Add), Sub16,
 * and reference_integer_ops::Mul / BroadcastMul6DSlow for int16. */
#include "mcu_elementwise_s16.h"

#include "mcu_broadcast.h"
#include "mcu_quant.h"

static void add_row_s16(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                        int32_t stride2, int32_t out_offset, int32_t n)
{
    const mcu_add_s8_params *p = (const mcu_add_s8_params *)ctx->params;
    const int16_t *a = (const int16_t *)ctx->input1 + offset1;
    const int16_t *b = (const int16_t *)ctx->input2 + offset2;
    int16_t *out = (int16_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        /* |value + offset| < 2^16, so shifting left by 15 stays inside int32. */
        const int32_t shifted1 = ((int32_t)a[i * stride1] + p->input1_offset) * ((int32_t)1 << p->left_shift);
        const int32_t shifted2 = ((int32_t)b[i * stride2] + p->input2_offset) * ((int32_t)1 << p->left_shift);
        const int32_t scaled1 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted1, p->input1_multiplier, (int)p->input1_shift);
        const int32_t scaled2 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted2, p->input2_multiplier, (int)p->input2_shift);
        const int32_t raw = mcu_mul_by_quantized_mul_smaller_than_one_exp(scaled1 + scaled2, p->output_multiplier,
                                                                          (int)p->output_shift) +
                            p->output_offset;
        out[i] = (int16_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

void mcu_add_s16(const mcu_add_s8_params *p, const int16_t *input1, const int16_t *input2, int16_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_s16, p, input1, input2,
                               output);
}

static void mul_row_s16(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                        int32_t stride2, int32_t out_offset, int32_t n)
{
    const mcu_mul_s8_params *p = (const mcu_mul_s8_params *)ctx->params;
    const int16_t *a = (const int16_t *)ctx->input1 + offset1;
    const int16_t *b = (const int16_t *)ctx->input2 + offset2;
    int16_t *out = (int16_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        /* Zero points are 0 for int16, so the product stays within 2^30. */
        const int32_t product = ((int32_t)a[i * stride1] + p->input1_offset) * ((int32_t)b[i * stride2] + p->input2_offset);
        const int32_t raw =
            mcu_mul_by_quantized_mul(product, p->output_multiplier, (int)p->output_shift) + p->output_offset;
        out[i] = (int16_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

void mcu_mul_s16(const mcu_mul_s8_params *p, const int16_t *input1, const int16_t *input2, int16_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_s16, p, input1, input2,
                               output);
}

/* The power-of-two path: `shifted` is the operand whose scale differs from
 * the output's (the other one's equals it); SUB keeps input1 - input2
 * whichever of the two was shifted. */
static void pot_s16(const mcu_add_s16_pot_params *p, const int16_t *input1, const int16_t *input2, int16_t *output,
                    int subtract)
{
    const int input1_is_shifted = p->input1_shift != 0;
    const int16_t *kept = input1_is_shifted ? input2 : input1;
    const int16_t *shifted = input1_is_shifted ? input1 : input2;
    const int right_shift = (int)-(input1_is_shifted ? p->input1_shift : p->input2_shift);
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        /* gemmlowp's int16 RoundingDivideByPOT gives the int32 one's result. */
        const int32_t scaled = mcu_rounding_divide_by_pot((int32_t)shifted[i], right_shift);
        int32_t sum;
        if (!subtract) {
            sum = scaled + kept[i];
        } else {
            sum = input1_is_shifted ? scaled - kept[i] : kept[i] - scaled;
        }
        /* SaturatingAdd / SaturatingSub on int16, then the activation clamp. */
        sum = mcu_clamp_s32(sum, INT16_MIN, INT16_MAX);
        output[i] = (int16_t)mcu_clamp_s32(sum, p->act_min, p->act_max);
    }
}

void mcu_add_s16_pot(const mcu_add_s16_pot_params *p, const int16_t *input1, const int16_t *input2, int16_t *output)
{
    pot_s16(p, input1, input2, output, 0);
}

void mcu_sub_s16_pot(const mcu_add_s16_pot_params *p, const int16_t *input1, const int16_t *input2, int16_t *output)
{
    pot_s16(p, input1, input2, output, 1);
}
