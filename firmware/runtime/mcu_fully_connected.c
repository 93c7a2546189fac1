/* Follows TensorFlow Lite's FULLY_CONNECTED as its interpreter runs it:
 * int8 through ruy, whose output rescale rounds once (not the double rounding
 * of the reference convolution kernels); float as reference_ops. */
#include "mcu_fully_connected.h"

#include "mcu_quant.h"

void mcu_fully_connected_s8(const mcu_fully_connected_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output)
{
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_row = input + (size_t)b * (size_t)p->accum_depth;
        for (o = 0; o < p->output_depth; ++o) {
            const int8_t *filter_row = filter + (size_t)o * (size_t)p->accum_depth;
            const int32_t q = p->per_channel ? o : 0;
            int32_t acc = 0;
            for (d = 0; d < p->accum_depth; ++d) {
                acc += ((int32_t)filter_row[d] + p->filter_offset) * ((int32_t)in_row[d] + p->input_offset);
            }
            if (bias) {
                acc += bias[o];
            }
            acc = mcu_mul_by_quantized_mul_single_round(acc, p->output_multiplier[q], (int)p->output_shift[q]);
            acc += p->output_offset;
            output[(size_t)b * (size_t)p->output_depth + (size_t)o] = (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
        }
    }
}

void mcu_fully_connected_f32(const mcu_fully_connected_f32_params *p, const float *input, const float *filter,
                             const float *bias, float *output)
{
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const float *in_row = input + (size_t)b * (size_t)p->accum_depth;
        for (o = 0; o < p->output_depth; ++o) {
            const float *filter_row = filter + (size_t)o * (size_t)p->accum_depth;
            float total = 0.0f;
            for (d = 0; d < p->accum_depth; ++d) {
                total += in_row[d] * filter_row[d];
            }
            output[(size_t)b * (size_t)p->output_depth + (size_t)o] =
                mcu_clamp_f32(total + (bias ? bias[o] : 0.0f), p->act_min, p->act_max);
        }
    }
}
