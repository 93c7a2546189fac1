/* Follows reference_ops::QuantizedMeanOrSum (int8, uint8) and reference_ops::Mean
 * (float) of TensorFlow Lite, and its ReduceGeneric for SUM (float) and
 * REDUCE_MAX (float, int8). */
#include "mcu_mean.h"

#include <float.h>

#include "mcu_quant.h"
#include "mcu_reduce_walk.h"

/* int8 and uint8 (is_signed 0): QuantizedMeanOrSum<T> computes alike. */
static void mean_8bit(const mcu_mean_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    const int32_t lowest = is_signed ? INT8_MIN : 0, highest = is_signed ? INT8_MAX : UINT8_MAX;
    int32_t k[MCU_MAX_RANK] = {0};
    do {
        const size_t base = mcu_reduce_offset(p->input_strides, k);
        int32_t r[MCU_MAX_RANK] = {0};
        int32_t acc = 0;
        do {
            acc += mcu_widen_8bit(input[base + mcu_reduce_offset(p->input_strides, r)], is_signed);
        } while (mcu_reduce_next(r, p->reduced_dims));
        acc -= p->input_zero_point * p->count;
        acc = mcu_mul_by_quantized_mul(acc, p->multiplier, (int)p->shift) + p->output_zero_point;
        *output++ = (uint8_t)mcu_clamp_s32(acc, lowest, highest);
    } while (mcu_reduce_next(k, p->kept_dims));
}

void mcu_mean_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output)
{
    mean_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_mean_u8(const mcu_mean_s8_params *p, const uint8_t *input, uint8_t *output)
{
    mean_8bit(p, input, 0, output);
}

/* SUM of int8 as LiteRT's reference kernel computes it: its int8 SUM goes
 * through QuantizedMeanOrSum with the tensors' bytes read and written as
 * uint8 (reduce.cc passes GetTensorData<uint8_t>), so each byte counts 0..255
 * and the result is clamped to 0..255 before it is stored as a byte. */
void mcu_sum_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output)
{
    mean_8bit(p, (const uint8_t *)input, 0, (uint8_t *)output);
}

void mcu_mean_f32(const mcu_mean_f32_params *p, const float *input, float *output)
{
    int32_t k[MCU_MAX_RANK] = {0};
    do {
        const size_t base = mcu_reduce_offset(p->input_strides, k);
        int32_t r[MCU_MAX_RANK] = {0};
        float sum = 0.0f;
        do {
            sum += input[base + mcu_reduce_offset(p->input_strides, r)];
        } while (mcu_reduce_next(r, p->reduced_dims));
        *output++ = sum / (float)p->count;
    } while (mcu_reduce_next(k, p->kept_dims));
}

/* ReduceGeneric: each output starts at the reducer's initial value and takes
 * its reduced elements in row-major order. */
#define MCU_REDUCE(name, params_t, T, init, step)                                    \
    void name(const params_t *p, const T *input, T *output)                          \
    {                                                                                \
        int32_t k[MCU_MAX_RANK] = {0};                                               \
        do {                                                                         \
            const size_t base = mcu_reduce_offset(p->input_strides, k);                      \
            int32_t r[MCU_MAX_RANK] = {0};                                           \
            T current = (init);                                                      \
            do {                                                                     \
                const T in = input[base + mcu_reduce_offset(p->input_strides, r)];           \
                current = (step);                                                    \
            } while (mcu_reduce_next(r, p->reduced_dims));                                 \
            *output++ = current;                                                     \
        } while (mcu_reduce_next(k, p->kept_dims));                                        \
    }

MCU_REDUCE(mcu_sum_f32, mcu_mean_f32_params, float, 0.0f, current + in)
/* std::numeric_limits<T>::lowest(), and (in > current) ? in : current. */
MCU_REDUCE(mcu_reduce_max_f32, mcu_mean_f32_params, float, -FLT_MAX, in > current ? in : current)
MCU_REDUCE(mcu_reduce_max_s8, mcu_mean_f32_params, int8_t, INT8_MIN, in > current ? in : current)
/* std::numeric_limits<T>::max(), and (in < current) ? in : current. */
MCU_REDUCE(mcu_reduce_min_f32, mcu_mean_f32_params, float, FLT_MAX, in < current ? in : current)
MCU_REDUCE(mcu_reduce_min_s8, mcu_mean_f32_params, int8_t, INT8_MAX, in < current ? in : current)
