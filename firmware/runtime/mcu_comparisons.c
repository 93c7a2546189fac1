/* Follows TensorFlow Lite's comparisons.cc (reference_ops::Comparison /
 * BroadcastComparison4DSlow and their quantized variants) and select.cc
 * (reference_ops::Select / BroadcastSelect5DSlow) and logical.cc. */
#include "mcu_comparisons.h"

#include <string.h>

#include "mcu_broadcast.h"
#include "mcu_quant.h"

/* One loop per comparison, the switch outside it; VALUE1 / VALUE2 turn a
 * stored element into the value compared. */
#define MCU_COMPARE_LOOP(OP)                                                                                   \
    for (i = 0; i < n; ++i) {                                                                                 \
        out[i] = (uint8_t)(VALUE1(a[i * stride1]) OP VALUE2(b[i * stride2]));                                  \
    }

#define MCU_COMPARE_ROW(name, params_t, in_t)                                                                  \
    static void name(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,        \
                     int32_t stride2, int32_t out_offset, int32_t n)                                             \
    {                                                                                                            \
        const params_t *p = (const params_t *)ctx->params;                                                       \
        const in_t *a = (const in_t *)ctx->input1 + offset1;                                                     \
        const in_t *b = (const in_t *)ctx->input2 + offset2;                                                     \
        uint8_t *out = (uint8_t *)ctx->output + out_offset;                                                      \
        int32_t i;                                                                                               \
        (void)p;                                                                                                 \
        switch (p->comparison) {                                                                                 \
        case MCU_COMPARE_EQUAL:                                                                                  \
            MCU_COMPARE_LOOP(==)                                                                                 \
            break;                                                                                               \
        case MCU_COMPARE_NOT_EQUAL:                                                                              \
            MCU_COMPARE_LOOP(!=)                                                                                 \
            break;                                                                                               \
        case MCU_COMPARE_GREATER:                                                                                \
            MCU_COMPARE_LOOP(>)                                                                                  \
            break;                                                                                               \
        case MCU_COMPARE_GREATER_EQUAL:                                                                          \
            MCU_COMPARE_LOOP(>=)                                                                                 \
            break;                                                                                               \
        case MCU_COMPARE_LESS:                                                                                   \
            MCU_COMPARE_LOOP(<)                                                                                  \
            break;                                                                                               \
        default:                                                                                                 \
            MCU_COMPARE_LOOP(<=)                                                                                 \
            break;                                                                                               \
        }                                                                                                        \
    }

#define MCU_COMPARE_KERNEL(name, params_t, in_t)                                                               \
    MCU_COMPARE_ROW(name##_row, params_t, in_t)                                                                \
    void name(const params_t *p, const in_t *input1, const in_t *input2, uint8_t *output)                      \
    {                                                                                                          \
        mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, name##_row, p,      \
                                   input1, input2, output);                                                    \
    }

/* Stored values compared as they are. */
#define VALUE1(x) (x)
#define VALUE2(x) (x)
MCU_COMPARE_KERNEL(mcu_compare_f32, mcu_comparison_params, float)
MCU_COMPARE_KERNEL(mcu_compare_s16, mcu_comparison_params, int16_t)
MCU_COMPARE_KERNEL(mcu_compare_s32, mcu_comparison_params, int32_t)
MCU_COMPARE_KERNEL(mcu_compare_s64, mcu_comparison_params, int64_t)
MCU_COMPARE_KERNEL(mcu_compare_u8, mcu_comparison_params, uint8_t)
#undef VALUE1
#undef VALUE2

/* The quantized comparisons' rescale of one input. */
static int32_t rescaled(int32_t stored, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift)
{
    return mcu_mul_by_quantized_mul_smaller_than_one_exp((offset + stored) * ((int32_t)1 << left_shift), multiplier,
                                                         (int)shift);
}

#define VALUE1(x) rescaled((x), p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift)
#define VALUE2(x) rescaled((x), p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift)
MCU_COMPARE_KERNEL(mcu_compare_s8_quantized, mcu_comparison_q8_params, int8_t)
MCU_COMPARE_KERNEL(mcu_compare_u8_quantized, mcu_comparison_q8_params, uint8_t)
#undef VALUE1
#undef VALUE2

/* logical.cc: std::logical_and / logical_or / logical_not of bool values. */
MCU_BROADCAST_ROW(logical_and_row, mcu_logical_params, uint8_t, uint8_t, (uint8_t)(x != 0 && y != 0))
MCU_BROADCAST_ROW(logical_or_row, mcu_logical_params, uint8_t, uint8_t, (uint8_t)(x != 0 || y != 0))

void mcu_logical_and(const mcu_logical_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, logical_and_row, p, input1,
                               input2, output);
}

void mcu_logical_or(const mcu_logical_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, logical_or_row, p, input1,
                               input2, output);
}

void mcu_logical_not(const mcu_logical_not_params *p, const uint8_t *input, uint8_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        output[i] = (uint8_t)(input[i] == 0);
    }
}

static void copy_element(uint8_t *to, const uint8_t *from, int32_t bytes)
{
    switch (bytes) {
    case 1:
        *to = *from;
        break;
    default:
        memcpy(to, from, (size_t)bytes);
        break;
    }
}

void mcu_select(const mcu_select_params *p, const uint8_t *condition, const void *x, const void *y, void *output)
{
    const uint8_t *xs = (const uint8_t *)x, *ys = (const uint8_t *)y;
    uint8_t *out = (uint8_t *)output;
    const int32_t bytes = p->element_bytes;
    int32_t index[MCU_MAX_RANK] = {0};
    int32_t c = 0, xi = 0, yi = 0, d;
    for (;;) {
        copy_element(out, condition[c] ? xs + (size_t)xi * (size_t)bytes : ys + (size_t)yi * (size_t)bytes, bytes);
        out += bytes;
        /* Advance the output index like an odometer, each input by its strides. */
        for (d = p->rank - 1; d >= 0; --d) {
            c += p->condition_strides[d];
            xi += p->x_strides[d];
            yi += p->y_strides[d];
            if (++index[d] < p->dims[d]) {
                break;
            }
            c -= p->condition_strides[d] * p->dims[d];
            xi -= p->x_strides[d] * p->dims[d];
            yi -= p->y_strides[d] * p->dims[d];
            index[d] = 0;
        }
        if (d < 0) {
            return;
        }
    }
}
