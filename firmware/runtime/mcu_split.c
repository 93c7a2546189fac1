/* Follows reference_ops::Split / Unpack of TensorFlow Lite: for each outer
 * index, each output's run of the axis is one block copy. */
#include "mcu_split.h"

#include <string.h>

void mcu_split(const mcu_split_params *p, const mcu_split_tensors *t)
{
    uint8_t *const outputs[MCU_SPLIT_MAX_OUTPUTS] = {
        (uint8_t *)t->output0,  (uint8_t *)t->output1,  (uint8_t *)t->output2,  (uint8_t *)t->output3,
        (uint8_t *)t->output4,  (uint8_t *)t->output5,  (uint8_t *)t->output6,  (uint8_t *)t->output7,
        (uint8_t *)t->output8,  (uint8_t *)t->output9,  (uint8_t *)t->output10, (uint8_t *)t->output11,
        (uint8_t *)t->output12, (uint8_t *)t->output13, (uint8_t *)t->output14, (uint8_t *)t->output15,
    };
    const uint8_t *in = (const uint8_t *)t->input;
    int32_t outer, k;
    for (outer = 0; outer < p->outer_size; ++outer) {
        const uint8_t *src = in + (size_t)outer * (size_t)p->input_block_bytes;
        for (k = 0; k < p->num_outputs; ++k) {
            const size_t bytes = (size_t)p->copy_bytes[k];
            uint8_t *dst = outputs[k] + (size_t)outer * bytes;
            if (dst != src) {
                memmove(dst, src, bytes);
            }
            src += bytes;
        }
    }
}
