/* Follows reference_ops::Concatenation of TensorFlow Lite (a block copy per
 * input per outer index); the int8 rescaling path follows
 * reference_ops::Requantize element by element, the uint8 one
 * reference_ops::ConcatenationWithScaling (float scale and bias). */
#include "mcu_concat.h"

#include <string.h>

#include "mcu_quant.h"

void mcu_concatenation(const mcu_concatenation_params *p, const mcu_concatenation_tensors *t)
{
    const uint8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {
        (const uint8_t *)t->input0, (const uint8_t *)t->input1, (const uint8_t *)t->input2,
        (const uint8_t *)t->input3, (const uint8_t *)t->input4, (const uint8_t *)t->input5,
        (const uint8_t *)t->input6, (const uint8_t *)t->input7,
    };
    uint8_t *out = (uint8_t *)t->output;
    int32_t outer, i;
    for (outer = 0; outer < p->outer_size; ++outer) {
        for (i = 0; i < p->num_inputs; ++i) {
            const size_t bytes = (size_t)p->copy_bytes[i];
            const uint8_t *src = inputs[i] + (size_t)outer * bytes;
            if (src != out) {
                memmove(out, src, bytes);
            }
            out += bytes;
        }
    }
}

void mcu_concatenation_s8(const mcu_concatenation_s8_params *p, const mcu_concatenation_s8_tensors *t)
{
    const int8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {t->input0, t->input1, t->input2, t->input3,
                                                         t->input4, t->input5, t->input6, t->input7};
    int8_t *out = t->output;
    int32_t outer, i, j;
    for (outer = 0; outer < p->outer_size; ++outer) {
        for (i = 0; i < p->num_inputs; ++i) {
            const int32_t count = p->copy_bytes[i];
            const int8_t *src = inputs[i] + (size_t)outer * (size_t)count;
            if (!p->rescale[i]) {
                if (src != out) {
                    memmove(out, src, (size_t)count);
                }
            } else {
                for (j = 0; j < count; ++j) {
                    const int32_t q = mcu_mul_by_quantized_mul((int32_t)src[j] - p->input_zero_point[i],
                                                               p->multiplier[i], (int)p->shift[i]) +
                                      p->output_zero_point;
                    out[j] = (int8_t)mcu_clamp_s32(q, INT8_MIN, INT8_MAX);
                }
            }
            out += count;
        }
    }
}

void mcu_concatenation_u8(const mcu_concatenation_u8_params *p, const mcu_concatenation_u8_tensors *t)
{
    const uint8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {t->input0, t->input1, t->input2, t->input3,
                                                          t->input4, t->input5, t->input6, t->input7};
    uint8_t *out = t->output;
    int32_t outer, i, j;
    for (outer = 0; outer < p->outer_size; ++outer) {
        for (i = 0; i < p->num_inputs; ++i) {
            const int32_t count = p->copy_bytes[i];
            const uint8_t *src = inputs[i] + (size_t)outer * (size_t)count;
            if (!p->rescale[i]) {
                if (src != out) {
                    memmove(out, src, (size_t)count);
                }
            } else {
                const float scale = p->scale[i], bias = p->bias[i];
                for (j = 0; j < count; ++j) {
                    /* float product and sum, then std::round on the float. */
                    const float real = (float)src[j] * scale + bias;
                    const int32_t q = mcu_round_to_int32((double)real) + p->output_zero_point;
                    out[j] = (uint8_t)mcu_clamp_s32(q, 0, UINT8_MAX);
                }
            }
            out += count;
        }
    }
}
