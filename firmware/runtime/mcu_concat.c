/* Follows reference_ops::Concatenation of TensorFlow Lite (a block copy per
 * input per outer index); the int8 rescaling path follows
 * reference_ops::Requantize element by element, the uint8 one
 * reference_ops::ConcatenationWithScaling (float scale and bias). */
#include "mcu_concat.h"

#include <string.h>

#include "mcu_quant.h"

void mcu_concatenation(const mcu_concatenation_params *p, const void *input0, const void *input1, const void *input2,
                       const void *input3, const void *input4, const void *input5, const void *input6,
                       const void *input7, void *output)
{
    const uint8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {
        (const uint8_t *)input0, (const uint8_t *)input1, (const uint8_t *)input2, (const uint8_t *)input3,
        (const uint8_t *)input4, (const uint8_t *)input5, (const uint8_t *)input6, (const uint8_t *)input7,
    };
    uint8_t *out = (uint8_t *)output;
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

void mcu_concatenation_s8(const mcu_concatenation_s8_params *p, const int8_t *input0, const int8_t *input1,
                          const int8_t *input2, const int8_t *input3, const int8_t *input4, const int8_t *input5,
                          const int8_t *input6, const int8_t *input7, int8_t *output)
{
    const int8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {input0, input1, input2, input3,
                                                         input4, input5, input6, input7};
    int8_t *out = output;
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

void mcu_concatenation_u8(const mcu_concatenation_u8_params *p, const uint8_t *input0, const uint8_t *input1,
                          const uint8_t *input2, const uint8_t *input3, const uint8_t *input4, const uint8_t *input5,
                          const uint8_t *input6, const uint8_t *input7, uint8_t *output)
{
    const uint8_t *const inputs[MCU_CONCAT_MAX_INPUTS] = {input0, input1, input2, input3,
                                                          input4, input5, input6, input7};
    uint8_t *out = output;
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
