/* Follows reference_ops::Gather of TensorFlow Lite: one block copy per
 * (batch, outer, coordinate). */
#include "mcu_gather.h"

#include <string.h>

static int64_t mcu_gather_index(const mcu_gather_params *p, const void *indices, int32_t i)
{
    if (p->index_bytes == 2) {
        return ((const int16_t *)indices)[i];
    }
    if (p->index_bytes == 8) {
        return ((const int64_t *)indices)[i];
    }
    return ((const int32_t *)indices)[i];
}

mcu_status mcu_gather(const mcu_gather_params *p, const void *input, const void *indices, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t inner = (size_t)p->inner_bytes;
    int32_t batch, outer, coord;
    for (batch = 0; batch < p->batch_size; ++batch) {
        for (outer = 0; outer < p->outer_size; ++outer) {
            const uint8_t *block = in + ((size_t)batch * (size_t)p->outer_size + (size_t)outer) *
                                            (size_t)p->axis_size * inner;
            for (coord = 0; coord < p->coord_size; ++coord) {
                const int64_t index = mcu_gather_index(p, indices, batch * p->coord_size + coord);
                if (index < 0 || index >= p->axis_size) {
                    return MCU_STATUS_INDEX_OUT_OF_RANGE;
                }
                memcpy(out, block + (size_t)index * inner, inner);
                out += inner;
            }
        }
    }
    return MCU_STATUS_OK;
}
