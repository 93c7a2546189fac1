/* Follows reference_integer_ops::Add / BroadcastAdd (int8 ADD, and SUB via
 * the negated input2 multiplier), reference_integer_ops::Mul / BroadcastMul
 * (int8 MUL), reference_ops' uint8 Add / Sub / Mul (the same arithmetic on
 * uint8 values) and reference_ops Add/Sub/Mul for float32 in TensorFlow Lite. */
#include "mcu_elementwise.h"

#include "mcu_broadcast.h"
#include "mcu_quant.h"

/* int8 and uint8 (is_signed 0) rows compute alike. */
static void add_row_8bit(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                         int32_t stride2, int32_t out_offset, int32_t n, int is_signed)
{
    const mcu_add_s8_params *p = (const mcu_add_s8_params *)ctx->params;
    const uint8_t *a = (const uint8_t *)ctx->input1 + offset1;
    const uint8_t *b = (const uint8_t *)ctx->input2 + offset2;
    uint8_t *out = (uint8_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        /* |value + offset| <= 255, so shifting left by 20 cannot overflow. */
        const int32_t value1 = mcu_widen_8bit(a[i * stride1], is_signed) + p->input1_offset;
        const int32_t value2 = mcu_widen_8bit(b[i * stride2], is_signed) + p->input2_offset;
        const int32_t shifted1 = value1 * ((int32_t)1 << p->left_shift);
        const int32_t shifted2 = value2 * ((int32_t)1 << p->left_shift);
        const int32_t scaled1 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted1, p->input1_multiplier, (int)p->input1_shift);
        const int32_t scaled2 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted2, p->input2_multiplier, (int)p->input2_shift);
        const int32_t raw = mcu_mul_by_quantized_mul_smaller_than_one_exp(scaled1 + scaled2, p->output_multiplier,
                                                                          (int)p->output_shift) +
                            p->output_offset;
        out[i] = (uint8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

static void mul_row_8bit(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                         int32_t stride2, int32_t out_offset, int32_t n, int is_signed)
{
    const mcu_mul_s8_params *p = (const mcu_mul_s8_params *)ctx->params;
    const uint8_t *a = (const uint8_t *)ctx->input1 + offset1;
    const uint8_t *b = (const uint8_t *)ctx->input2 + offset2;
    uint8_t *out = (uint8_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t product = (mcu_widen_8bit(a[i * stride1], is_signed) + p->input1_offset) *
                                (mcu_widen_8bit(b[i * stride2], is_signed) + p->input2_offset);
        const int32_t raw =
            mcu_mul_by_quantized_mul(product, p->output_multiplier, (int)p->output_shift) + p->output_offset;
        out[i] = (uint8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

#define MCU_ROW_8BIT(name, row_8bit, is_signed)                                                                 \
    static void name(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,      \
                     int32_t stride2, int32_t out_offset, int32_t n)                                            \
    {                                                                                                           \
        row_8bit(ctx, offset1, stride1, offset2, stride2, out_offset, n, is_signed);                             \
    }

MCU_ROW_8BIT(add_row_s8, add_row_8bit, 1)
MCU_ROW_8BIT(add_row_u8, add_row_8bit, 0)
MCU_ROW_8BIT(mul_row_s8, mul_row_8bit, 1)
MCU_ROW_8BIT(mul_row_u8, mul_row_8bit, 0)

MCU_BROADCAST_ROW(add_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x + y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(sub_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x - y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(mul_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x * y, p->act_min, p->act_max))

void mcu_add_s8(const mcu_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_s8, p, input1, input2,
                               output);
}

void mcu_mul_s8(const mcu_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_s8, p, input1, input2,
                               output);
}

void mcu_add_u8(const mcu_add_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_u8, p, input1, input2,
                               output);
}

void mcu_mul_u8(const mcu_mul_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_u8, p, input1, input2,
                               output);
}

void mcu_add_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_f32, p, input1, input2,
                               output);
}

void mcu_sub_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, sub_row_f32, p, input1, input2,
                               output);
}

void mcu_mul_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_f32, p, input1, input2,
                               output);
}
