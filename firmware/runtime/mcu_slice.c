/* Follows reference_ops::StridedSlice of TensorFlow Lite: output elements in
 * row-major order, each copied from its strided input position. */
#include "mcu_slice.h"

#include <string.h>

void mcu_strided_slice(const mcu_strided_slice_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t *n = p->counts;
    const int32_t *s = p->steps;
    const size_t bytes = (size_t)p->element_bytes;
    /* A unit innermost step makes each innermost run one block copy. */
    const int contiguous = s[4] == 1;
    const size_t run_bytes = (size_t)n[4] * bytes;
    int32_t i0, i1, i2, i3, i4;
    for (i0 = 0; i0 < n[0]; ++i0) {
        for (i1 = 0; i1 < n[1]; ++i1) {
            for (i2 = 0; i2 < n[2]; ++i2) {
                for (i3 = 0; i3 < n[3]; ++i3) {
                    const int32_t base = p->first + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
                    if (contiguous) {
                        memcpy(out, in + (size_t)base * bytes, run_bytes);
                        out += run_bytes;
                    } else {
                        for (i4 = 0; i4 < n[4]; ++i4) {
                            memcpy(out, in + (size_t)(base + i4 * s[4]) * bytes, bytes);
                            out += bytes;
                        }
                    }
                }
            }
        }
    }
}
