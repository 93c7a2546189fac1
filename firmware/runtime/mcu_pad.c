/* Fills the output with the padding value, then copies each innermost input
 * row to its place: the same bytes as TFLite's reference PadImpl. */
#include "mcu_pad.h"

#include <string.h>

void mcu_pad(const mcu_pad_params *p, const void *input, void *output)
{
    const size_t eb = (size_t)p->element_bytes;
    const int32_t *d = p->input_dims;
    const int32_t *s = p->output_strides;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t row_bytes = (size_t)d[5] * eb;
    int32_t i0, i1, i2, i3, i4;
    size_t e;
    if (eb == 1) {
        memset(out, p->pad_value[0], (size_t)p->output_elements);
    } else {
        for (e = 0; e < (size_t)p->output_elements; ++e) {
            memcpy(out + e * eb, p->pad_value, eb);
        }
    }
    for (i0 = 0; i0 < d[0]; ++i0)
        for (i1 = 0; i1 < d[1]; ++i1)
            for (i2 = 0; i2 < d[2]; ++i2)
                for (i3 = 0; i3 < d[3]; ++i3)
                    for (i4 = 0; i4 < d[4]; ++i4) {
                        const size_t dst = (size_t)p->output_origin + (size_t)i0 * (size_t)s[0] +
                                           (size_t)i1 * (size_t)s[1] + (size_t)i2 * (size_t)s[2] +
                                           (size_t)i3 * (size_t)s[3] + (size_t)i4 * (size_t)s[4];
                        memcpy(out + dst * eb, in, row_bytes);
                        in += row_bytes;
                    }
}
