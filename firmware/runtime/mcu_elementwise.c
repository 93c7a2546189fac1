/* Follows reference_integer_ops::Add / BroadcastAdd (int8 ADD, and SUB via
 * the negated input2 multiplier), reference_integer_ops::Mul / BroadcastMul
 * (int8 MUL) and reference_ops Add/Sub/Mul for float32 in TensorFlow Lite. */
#include "mcu_elementwise.h"

#include "mcu_quant.h"

void mcu_for_each_row(int32_t rank, const int32_t *dims, const int32_t *strides1, const int32_t *strides2,
                      mcu_row_fn row, const void *params, const void *input1, const void *input2, void *output)
{
    const mcu_row_context ctx = {params, input1, input2, output};
    int32_t index[MCU_MAX_RANK] = {0};
    const int32_t inner = rank - 1;
    const int32_t n = dims[inner];
    int32_t offset1 = 0, offset2 = 0, out_offset = 0;
    int32_t d;
    for (;;) {
        row(&ctx, offset1, strides1[inner], offset2, strides2[inner], out_offset, n);
        out_offset += n;
        /* Advance the outer index like an odometer. */
        for (d = inner - 1; d >= 0; --d) {
            offset1 += strides1[d];
            offset2 += strides2[d];
            if (++index[d] < dims[d]) {
                break;
            }
            offset1 -= strides1[d] * dims[d];
            offset2 -= strides2[d] * dims[d];
            index[d] = 0;
        }
        if (d < 0) {
            return;
        }
    }
}

static void add_row_s8(const mcu_row_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2, int32_t stride2,
                       int32_t out_offset, int32_t n)
{
    const mcu_add_s8_params *p = (const mcu_add_s8_params *)ctx->params;
    const int8_t *a = (const int8_t *)ctx->input1 + offset1;
    const int8_t *b = (const int8_t *)ctx->input2 + offset2;
    int8_t *out = (int8_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        /* |value + offset| <= 255, so shifting left by 20 cannot overflow. */
        const int32_t shifted1 = ((int32_t)a[i * stride1] + p->input1_offset) * ((int32_t)1 << p->left_shift);
        const int32_t shifted2 = ((int32_t)b[i * stride2] + p->input2_offset) * ((int32_t)1 << p->left_shift);
        const int32_t scaled1 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted1, p->input1_multiplier, (int)p->input1_shift);
        const int32_t scaled2 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted2, p->input2_multiplier, (int)p->input2_shift);
        const int32_t raw = mcu_mul_by_quantized_mul_smaller_than_one_exp(scaled1 + scaled2, p->output_multiplier,
                                                                          (int)p->output_shift) +
                            p->output_offset;
        out[i] = (int8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

static void mul_row_s8(const mcu_row_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2, int32_t stride2,
                       int32_t out_offset, int32_t n)
{
    const mcu_mul_s8_params *p = (const mcu_mul_s8_params *)ctx->params;
    const int8_t *a = (const int8_t *)ctx->input1 + offset1;
    const int8_t *b = (const int8_t *)ctx->input2 + offset2;
    int8_t *out = (int8_t *)ctx->output + out_offset;
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t product = ((int32_t)a[i * stride1] + p->input1_offset) * ((int32_t)b[i * stride2] + p->input2_offset);
        const int32_t raw =
            mcu_mul_by_quantized_mul(product, p->output_multiplier, (int)p->output_shift) + p->output_offset;
        out[i] = (int8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
}

MCU_BROADCAST_ROW(add_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x + y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(sub_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x - y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(mul_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x * y, p->act_min, p->act_max))

void mcu_add_s8(const mcu_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_s8, p, input1, input2, output);
}

void mcu_mul_s8(const mcu_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_s8, p, input1, input2, output);
}

void mcu_add_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_f32, p, input1, input2, output);
}

void mcu_sub_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_row(p->rank, p->dims, p->input1_strides, p->input2_strides, sub_row_f32, p, input1, input2, output);
}

void mcu_mul_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_f32, p, input1, input2, output);
}
