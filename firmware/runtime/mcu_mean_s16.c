/* Follows reference_ops::QuantizedMeanOrSum for int16 in TensorFlow Lite:
 * the int8 arithmetic on int16 values. */
#include "mcu_mean_s16.h"

#include "mcu_quant.h"
#include "mcu_reduce_walk.h"

void mcu_mean_s16(const mcu_mean_s8_params *p, const int16_t *input, int16_t *output)
{
    int32_t k[MCU_MAX_RANK] = {0};
    do {
        const size_t base = mcu_reduce_offset(p->input_strides, k);
        int32_t r[MCU_MAX_RANK] = {0};
        int32_t acc = 0;
        do {
            acc += input[base + mcu_reduce_offset(p->input_strides, r)];
        } while (mcu_reduce_next(r, p->reduced_dims));
        acc -= p->input_zero_point * p->count;
        acc = mcu_mul_by_quantized_mul(acc, p->multiplier, (int)p->shift) + p->output_zero_point;
        *output++ = (int16_t)mcu_clamp_s32(acc, INT16_MIN, INT16_MAX);
    } while (mcu_reduce_next(k, p->kept_dims));
}
