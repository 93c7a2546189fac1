/* Follows reference_ops::Split / Unpack of TensorFlow Lite: for each outer
 * index, each output's run of the axis is one block copy. */
#include "mcu_split.h"

#include <string.h>

void mcu_split(const mcu_split_params *p, const void *input, void *output0, void *output1, void *output2,
               void *output3, void *output4, void *output5, void *output6, void *output7, void *output8,
               void *output9, void *output10, void *output11, void *output12, void *output13, void *output14,
               void *output15)
{
    uint8_t *const outputs[MCU_SPLIT_MAX_OUTPUTS] = {
        (uint8_t *)output0,  (uint8_t *)output1,  (uint8_t *)output2,  (uint8_t *)output3,
        (uint8_t *)output4,  (uint8_t *)output5,  (uint8_t *)output6,  (uint8_t *)output7,
        (uint8_t *)output8,  (uint8_t *)output9,  (uint8_t *)output10, (uint8_t *)output11,
        (uint8_t *)output12, (uint8_t *)output13, (uint8_t *)output14, (uint8_t *)output15,
    };
    const uint8_t *in = (const uint8_t *)input;
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
