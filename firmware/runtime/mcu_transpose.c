#include "mcu_transpose.h"

#include <string.h>

/* Visits the output in row-major order, so writes are sequential; the input
 * offset follows the permuted strides. */
#define MCU_TRANSPOSE_LOOP(T)                                                                             \
    do {                                                                                                  \
        const T *in = (const T *)input;                                                                   \
        T *out = (T *)output;                                                                             \
        int32_t i0, i1, i2, i3, i4, i5;                                                                   \
        for (i0 = 0; i0 < d[0]; ++i0)                                                                     \
            for (i1 = 0; i1 < d[1]; ++i1)                                                                 \
                for (i2 = 0; i2 < d[2]; ++i2)                                                             \
                    for (i3 = 0; i3 < d[3]; ++i3)                                                         \
                        for (i4 = 0; i4 < d[4]; ++i4) {                                                   \
                            const size_t base = (size_t)i0 * (size_t)s[0] + (size_t)i1 * (size_t)s[1] +   \
                                                (size_t)i2 * (size_t)s[2] + (size_t)i3 * (size_t)s[3] +   \
                                                (size_t)i4 * (size_t)s[4];                                \
                            for (i5 = 0; i5 < d[5]; ++i5) {                                               \
                                *out++ = in[base + (size_t)i5 * (size_t)s[5]];                            \
                            }                                                                             \
                        }                                                                                 \
    } while (0)

void mcu_transpose(const mcu_transpose_params *p, const void *input, void *output)
{
    const int32_t *d = p->output_dims;
    const int32_t *s = p->input_strides;
    switch (p->element_bytes) {
    case 1:
        MCU_TRANSPOSE_LOOP(uint8_t);
        break;
    case 2:
        MCU_TRANSPOSE_LOOP(uint16_t);
        break;
    case 4:
        MCU_TRANSPOSE_LOOP(uint32_t);
        break;
    default: {
        /* Wider elements (int64): byte copies. */
        const uint8_t *in = (const uint8_t *)input;
        uint8_t *out = (uint8_t *)output;
        const size_t eb = (size_t)p->element_bytes;
        int32_t i0, i1, i2, i3, i4, i5;
        for (i0 = 0; i0 < d[0]; ++i0)
            for (i1 = 0; i1 < d[1]; ++i1)
                for (i2 = 0; i2 < d[2]; ++i2)
                    for (i3 = 0; i3 < d[3]; ++i3)
                        for (i4 = 0; i4 < d[4]; ++i4)
                            for (i5 = 0; i5 < d[5]; ++i5) {
                                const size_t src = (size_t)i0 * (size_t)s[0] + (size_t)i1 * (size_t)s[1] +
                                                   (size_t)i2 * (size_t)s[2] + (size_t)i3 * (size_t)s[3] +
                                                   (size_t)i4 * (size_t)s[4] + (size_t)i5 * (size_t)s[5];
                                memcpy(out, in + src * eb, eb);
                                out += eb;
                            }
        break;
    }
    }
}
