/* Follows reference_ops::Gather of TensorFlow Lite: one block copy per
 * (batch, outer, coordinate); reference_ops::GatherNd: one slice copy per
 * index tuple; and dynamic_update_slice.cc: the operand copied, then one
 * copy per innermost row of the update. */
#include "mcu_gather.h"

#include <string.h>

static int64_t read_index(int32_t index_bytes, const void *indices, int32_t i)
{
    if (index_bytes == 2) {
        return ((const int16_t *)indices)[i];
    }
    if (index_bytes == 8) {
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
                const int64_t index = read_index(p->index_bytes, indices, batch * p->coord_size + coord);
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

mcu_status mcu_gather_nd(const mcu_gather_nd_params *p, const void *input, const void *indices, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t slice_bytes = (size_t)p->slice_size * (size_t)p->element_bytes;
    const int32_t count = p->n_slices * p->indices_nd;
    int32_t i, j;
    for (i = 0; i < count; ++i) {
        const int64_t index = read_index(p->index_bytes, indices, i);
        if (index < 0 || index >= p->dims[i % p->indices_nd]) {
            return MCU_STATUS_INDEX_OUT_OF_RANGE;
        }
    }
    for (i = 0; i < p->n_slices; ++i) {
        int64_t from = 0;
        for (j = 0; j < p->indices_nd; ++j) {
            from += read_index(p->index_bytes, indices, i * p->indices_nd + j) * (int64_t)p->dims_to_count[j];
        }
        memcpy(out, in + (size_t)from * (size_t)p->element_bytes, slice_bytes);
        out += slice_bytes;
    }
    return MCU_STATUS_OK;
}

void mcu_gather_axes(const mcu_gather_axes_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t eb = (size_t)p->element_bytes;
    const int32_t *d = p->output_dims;
    const int32_t *o0 = p->axis_offsets + p->axis_starts[0], *o1 = p->axis_offsets + p->axis_starts[1];
    const int32_t *o2 = p->axis_offsets + p->axis_starts[2], *o3 = p->axis_offsets + p->axis_starts[3];
    const int32_t *o4 = p->axis_offsets + p->axis_starts[4], *o5 = p->axis_offsets + p->axis_starts[5];
    int32_t i0, i1, i2, i3, i4, i5;
    for (i0 = 0; i0 < d[0]; ++i0)
        for (i1 = 0; i1 < d[1]; ++i1)
            for (i2 = 0; i2 < d[2]; ++i2)
                for (i3 = 0; i3 < d[3]; ++i3)
                    for (i4 = 0; i4 < d[4]; ++i4) {
                        const int32_t base = o0[i0] + o1[i1] + o2[i2] + o3[i3] + o4[i4];
                        for (i5 = 0; i5 < d[5]; ++i5) {
                            memcpy(out, in + (size_t)(base + o5[i5]) * eb, eb);
                            out += eb;
                        }
                    }
}

void mcu_dynamic_update_slice(const mcu_dynamic_update_slice_params *p, const void *operand, const void *update,
                              const void *start_indices, void *output)
{
    const int32_t *od = p->operand_dims;
    const int32_t *ud = p->update_dims;
    const size_t eb = (size_t)p->element_bytes;
    const int32_t first_indexed = MCU_MAX_RANK - p->index_count;
    const uint8_t *from = (const uint8_t *)update;
    uint8_t *out = (uint8_t *)output;
    const size_t row_bytes = (size_t)ud[MCU_MAX_RANK - 1] * eb;
    int32_t stride[MCU_MAX_RANK];
    int32_t origin = 0, elements = 1;
    int32_t d, i0, i1, i2, i3, i4;
    for (d = MCU_MAX_RANK - 1; d >= 0; --d) {
        stride[d] = elements;
        elements *= od[d];
    }
    for (d = first_indexed; d < MCU_MAX_RANK; ++d) {
        /* Clamped in 64 bits before narrowing, as ClampStartIndices does. */
        const int64_t highest = (int64_t)od[d] - (int64_t)ud[d];
        int64_t start = read_index(p->index_bytes, start_indices, d - first_indexed);
        start = start < 0 ? 0 : start > highest ? highest : start;
        origin += (int32_t)start * stride[d];
    }
    /* TFLite runs this op in place when it can: then there is nothing to copy. */
    if (output != operand) {
        memcpy(output, operand, (size_t)elements * eb);
    }
    for (i0 = 0; i0 < ud[0]; ++i0)
        for (i1 = 0; i1 < ud[1]; ++i1)
            for (i2 = 0; i2 < ud[2]; ++i2)
                for (i3 = 0; i3 < ud[3]; ++i3)
                    for (i4 = 0; i4 < ud[4]; ++i4) {
                        const int32_t row =
                            origin + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3] + i4 * stride[4];
                        memcpy(out + (size_t)row * eb, from, row_bytes);
                        from += row_bytes;
                    }
}
