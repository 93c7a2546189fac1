/* Writes the output from its first byte to its last: the padding before each
 * innermost input row, the row, and after the last row the rest of the
 * padding; the same bytes as TFLite's reference PadImpl.
 *
 * Memory-plan contract (mcu_planner/lowering/shape_ops.py, its facts: walks.pad_facts): for a
 * 4-D tensor padded along height and width only, output pixels are written in
 * raster order (batch, row, column), each inside pixel right after its one
 * input pixel is read.  The plan may start the output inside, or just before,
 * the input this op reads for the last time, as far as that walk never writes
 * an input byte still to be read (mcu_planner/memory/overlap.py).  A change of the
 * walk must change the kernel's entry there; tests/test_overlap.py runs it
 * bit-exact at the tightest overlap the entry allows. */
#include "mcu_pad.h"

#include <string.h>

/* Output elements [from, to) take the padding value. */
static void fill(const mcu_pad_params *p, uint8_t *out, size_t from, size_t to)
{
    const size_t eb = (size_t)p->element_bytes;
    size_t e;
    if (to <= from) {
        return;
    }
    if (eb == 1) {
        memset(out + from, p->pad_value[0], to - from);
        return;
    }
    for (e = from; e < to; ++e) {
        memcpy(out + e * eb, p->pad_value, eb);
    }
}

void mcu_pad(const mcu_pad_params *p, const void *input, void *output)
{
    const size_t eb = (size_t)p->element_bytes;
    const int32_t *d = p->input_dims;
    const int32_t *s = p->output_strides;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t row = (size_t)d[5];
    size_t written = 0; /* output elements written so far, from the start */
    int32_t i0, i1, i2, i3, i4;
    for (i0 = 0; i0 < d[0]; ++i0)
        for (i1 = 0; i1 < d[1]; ++i1)
            for (i2 = 0; i2 < d[2]; ++i2)
                for (i3 = 0; i3 < d[3]; ++i3)
                    for (i4 = 0; i4 < d[4]; ++i4) {
                        const size_t dst = (size_t)p->output_origin + (size_t)i0 * (size_t)s[0] +
                                           (size_t)i1 * (size_t)s[1] + (size_t)i2 * (size_t)s[2] +
                                           (size_t)i3 * (size_t)s[3] + (size_t)i4 * (size_t)s[4];
                        fill(p, out, written, dst);
                        memcpy(out + dst * eb, in, row * eb);
                        in += row * eb;
                        written = dst + row;
                    }
    fill(p, out, written, (size_t)p->output_elements);
}

void mcu_space_to_batch(const mcu_space_to_batch_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t depth = (size_t)p->depth_bytes;
    int32_t ob, oh, ow;
    for (ob = 0; ob < p->output_batch; ++ob) {
        const int32_t b = ob % p->batch;
        const int32_t shift_w = (ob / p->batch) % p->block_w;
        const int32_t shift_h = (ob / p->batch) / p->block_w;
        for (oh = 0; oh < p->output_h; ++oh) {
            const int32_t ih = oh * p->block_h + shift_h - p->pad_top;
            for (ow = 0; ow < p->output_w; ++ow) {
                const int32_t iw = ow * p->block_w + shift_w - p->pad_left;
                if (ih < 0 || ih >= p->input_h || iw < 0 || iw >= p->input_w) {
                    memset(out, p->pad_byte, depth);
                } else {
                    memcpy(out, in + (((size_t)b * (size_t)p->input_h + (size_t)ih) * (size_t)p->input_w + (size_t)iw) * depth,
                           depth);
                }
                out += depth;
            }
        }
    }
}
