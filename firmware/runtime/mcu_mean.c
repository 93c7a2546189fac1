/* Follows reference_ops::QuantizedMeanOrSum (int8) and reference_ops::Mean
 * (float) of TensorFlow Lite, and its ReduceGeneric for SUM (float) and
 * REDUCE_MAX (float, int8). */
#include "mcu_mean.h"

#include <float.h>

#include "mcu_quant.h"

/* Output offset into the input of kept index k[] (the first reduced element). */
static size_t mean_base(const int32_t *strides, const int32_t *k)
{
    size_t base = 0;
    int i;
    for (i = 0; i < MCU_MAX_RANK; ++i) {
        base += (size_t)k[i] * (size_t)strides[i];
    }
    return base;
}

/* Steps idx[] through dims[] in row-major order; 0 when it wraps around. */
static int mean_next(int32_t *idx, const int32_t *dims)
{
    int i;
    for (i = MCU_MAX_RANK - 1; i >= 0; --i) {
        if (++idx[i] < dims[i]) {
            return 1;
        }
        idx[i] = 0;
    }
    return 0;
}

/* QuantizedMeanOrSum: the int32 sum of the reduced values, less the zero
 * point times the count, rescaled; the bytes read and clamped as uint8 when
 * as_uint8 (see mcu_sum_s8), else as int8. */
static void quantized_mean_or_sum(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output, int as_uint8)
{
    const int32_t low = as_uint8 ? 0 : INT8_MIN;
    const int32_t high = as_uint8 ? UINT8_MAX : INT8_MAX;
    int32_t k[MCU_MAX_RANK] = {0};
    do {
        const size_t base = mean_base(p->input_strides, k);
        int32_t r[MCU_MAX_RANK] = {0};
        int32_t acc = 0;
        do {
            const int8_t value = input[base + mean_base(p->input_strides, r)];
            acc += as_uint8 ? (int32_t)(uint8_t)value : (int32_t)value;
        } while (mean_next(r, p->reduced_dims));
        acc -= p->input_zero_point * p->count;
        acc = mcu_mul_by_quantized_mul(acc, p->multiplier, (int)p->shift) + p->output_zero_point;
        acc = mcu_clamp_s32(acc, low, high);
        *output++ = as_uint8 ? (int8_t)(uint8_t)acc : (int8_t)acc;
    } while (mean_next(k, p->kept_dims));
}

void mcu_mean_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output)
{
    quantized_mean_or_sum(p, input, output, 0);
}

/* SUM of int8 as LiteRT's reference kernel computes it: its int8 SUM goes
 * through QuantizedMeanOrSum with the tensors' bytes read and written as
 * uint8 (reduce.cc passes GetTensorData<uint8_t>), so each byte counts 0..255
 * and the result is clamped to 0..255 before it is stored as a byte. */
void mcu_sum_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output)
{
    quantized_mean_or_sum(p, input, output, 1);
}

void mcu_mean_f32(const mcu_mean_f32_params *p, const float *input, float *output)
{
    int32_t k[MCU_MAX_RANK] = {0};
    do {
        const size_t base = mean_base(p->input_strides, k);
        int32_t r[MCU_MAX_RANK] = {0};
        float sum = 0.0f;
        do {
            sum += input[base + mean_base(p->input_strides, r)];
        } while (mean_next(r, p->reduced_dims));
        *output++ = sum / (float)p->count;
    } while (mean_next(k, p->kept_dims));
}

/* ReduceGeneric: each output starts at the reducer's initial value and takes
 * its reduced elements in row-major order. */
#define MCU_REDUCE(name, params_t, T, init, step)                                    \
    void name(const params_t *p, const T *input, T *output)                          \
    {                                                                                \
        int32_t k[MCU_MAX_RANK] = {0};                                               \
        do {                                                                         \
            const size_t base = mean_base(p->input_strides, k);                      \
            int32_t r[MCU_MAX_RANK] = {0};                                           \
            T current = (init);                                                      \
            do {                                                                     \
                const T in = input[base + mean_base(p->input_strides, r)];           \
                current = (step);                                                    \
            } while (mean_next(r, p->reduced_dims));                                 \
            *output++ = current;                                                     \
        } while (mean_next(k, p->kept_dims));                                        \
    }

MCU_REDUCE(mcu_sum_f32, mcu_mean_f32_params, float, 0.0f, current + in)
/* std::numeric_limits<T>::lowest(), and (in > current) ? in : current. */
MCU_REDUCE(mcu_reduce_max_f32, mcu_mean_f32_params, float, -FLT_MAX, in > current ? in : current)
MCU_REDUCE(mcu_reduce_max_s8, mcu_mean_f32_params, int8_t, INT8_MIN, in > current ? in : current)
