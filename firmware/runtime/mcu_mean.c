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
/* EvalLogic: true and in && current; false and in || current (bool bytes). */
MCU_REDUCE(mcu_reduce_all_b8, mcu_mean_f32_params, uint8_t, 1u, (uint8_t)(in != 0u && current != 0u))
MCU_REDUCE(mcu_reduce_any_b8, mcu_mean_f32_params, uint8_t, 0u, (uint8_t)(in != 0u || current != 0u))

/* One running sum per (outer, inner) position; ADD_TO(acc, x) is the
 * element type's addition (wrapping for the integers). */
#define MCU_CUMSUM(name, T, ADD_TO)                                                                        \
    void name(const mcu_cumsum_params *p, const T *input, T *output)                                      \
    {                                                                                                      \
        int32_t outer, inner, k;                                                                           \
        for (outer = 0; outer < p->outer_size; ++outer) {                                                  \
            for (inner = 0; inner < p->inner_size; ++inner) {                                              \
                const size_t base = (size_t)outer * (size_t)p->axis_size * (size_t)p->inner_size + (size_t)inner; \
                T acc = 0;                                                                                 \
                for (k = 0; k < p->axis_size; ++k) {                                                       \
                    const int32_t at = p->reverse ? p->axis_size - 1 - k : k;                              \
                    const size_t index = base + (size_t)at * (size_t)p->inner_size;                        \
                    if (p->exclusive) {                                                                    \
                        output[index] = acc;                                                               \
                        acc = ADD_TO(acc, input[index]);                                                   \
                    } else {                                                                               \
                        acc = ADD_TO(acc, input[index]);                                                   \
                        output[index] = acc;                                                               \
                    }                                                                                      \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
    }

#define MCU_ADD_F32(a, b) ((a) + (b))
#define MCU_ADD_WRAP_S32(a, b) ((int32_t)((uint32_t)(a) + (uint32_t)(b)))
#define MCU_ADD_WRAP_S64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
MCU_CUMSUM(mcu_cumsum_f32, float, MCU_ADD_F32)
MCU_CUMSUM(mcu_cumsum_s32, int32_t, MCU_ADD_WRAP_S32)
MCU_CUMSUM(mcu_cumsum_s64, int64_t, MCU_ADD_WRAP_S64)
