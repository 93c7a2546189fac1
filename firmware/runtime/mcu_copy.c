#include "mcu_copy.h"

#include <string.h>

void mcu_copy(const mcu_copy_params *p, const void *input, void *output)
{
    /* memmove: a plan may overlap the two buffers without aliasing them exactly. */
    if (input != output) {
        memmove(output, input, (size_t)p->bytes);
    }
}

void mcu_copy_window(const mcu_copy_window_params *p, const void *input, void *output)
{
    const uint8_t *from = (const uint8_t *)input;
    uint8_t *to = (uint8_t *)output;
    for (int32_t row = 0; row < p->rows; ++row) {
        /* memcpy: a patch buffer never shares bytes with the whole tensor it is copied from or to
         * (both are alive at the step, and the plan is verified). */
        memcpy(to, from, (size_t)p->row_bytes);
        from += p->input_pitch;
        to += p->output_pitch;
    }
}

void mcu_zero_fill(const mcu_copy_params *p, void *output)
{
    memset(output, 0, (size_t)p->bytes);
}
