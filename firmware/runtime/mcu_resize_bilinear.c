/* Follows reference_ops::ResizeBilinear (float32, uint8) and the integer
 * ResizeBilinear (int8) of TensorFlow Lite term by term: the float blend
 * multiplies and adds in the reference's order, so with -ffp-contract=off
 * every output is the reference's float. */
#include "mcu_resize_bilinear.h"

#include "mcu_quant.h"

#define FRACTION_ONE ((int32_t)1 << 10)

/* The blend of reference_ops::ResizeBilinear<T> for one value. */
static float blend_float(float v00, float v10, float v01, float v11, float dy, float dx)
{
    return v00 * (1 - dy) * (1 - dx) + v10 * dy * (1 - dx) + v01 * (1 - dy) * dx + v11 * dy * dx;
}

/* Offsets of the four pixels to blend for output (b, y, x), channel 0. */
typedef struct {
    size_t p00, p10, p01, p11;
} corners;

/* Both params structs start with the geometry fields; the macro reads them. */
#define CORNERS_AT(p, b, y, x)                                                                                 \
    corners_at((p)->input_height, (p)->input_width, (p)->depth, b, (p)->row_lower[y], (p)->row_upper[y],     \
               (p)->column_lower[x], (p)->column_upper[x])

static corners corners_at(int32_t input_height, int32_t input_width, int32_t depth, int32_t b, int32_t y0,
                          int32_t y1, int32_t x0, int32_t x1)
{
    const size_t row = (size_t)input_width * (size_t)depth;
    const size_t image = (size_t)b * (size_t)input_height * row;
    const size_t row0 = image + (size_t)y0 * row, row1 = image + (size_t)y1 * row;
    const size_t column0 = (size_t)x0 * (size_t)depth, column1 = (size_t)x1 * (size_t)depth;
    corners c;
    c.p00 = row0 + column0;
    c.p10 = row1 + column0;
    c.p01 = row0 + column1;
    c.p11 = row1 + column1;
    return c;
}

void mcu_resize_bilinear_f32(const mcu_resize_bilinear_float_params *p, const float *input, float *output)
{
    int32_t b, y, x;
    size_t c;
    for (b = 0; b < p->batches; ++b) {
        for (y = 0; y < p->output_height; ++y) {
            for (x = 0; x < p->output_width; ++x) {
                const corners k = CORNERS_AT(p, b, y, x);
                for (c = 0; c < (size_t)p->depth; ++c) {
                    *output++ = blend_float(input[k.p00 + c], input[k.p10 + c], input[k.p01 + c], input[k.p11 + c],
                                            p->row_fraction[y], p->column_fraction[x]);
                }
            }
        }
    }
}

void mcu_resize_bilinear_u8(const mcu_resize_bilinear_float_params *p, const uint8_t *input, uint8_t *output)
{
    int32_t b, y, x;
    size_t c;
    for (b = 0; b < p->batches; ++b) {
        for (y = 0; y < p->output_height; ++y) {
            for (x = 0; x < p->output_width; ++x) {
                const corners k = CORNERS_AT(p, b, y, x);
                for (c = 0; c < (size_t)p->depth; ++c) {
                    const float v = blend_float((float)input[k.p00 + c], (float)input[k.p10 + c],
                                                (float)input[k.p01 + c], (float)input[k.p11 + c], p->row_fraction[y],
                                                p->column_fraction[x]);
                    /* Rounded half away from zero, as the reference does for
                     * integer types; a blend of values in [0, 255] with
                     * weights summing to 1 stays in range. */
                    *output++ = (uint8_t)mcu_round_to_int32((double)v);
                }
            }
        }
    }
}

/* The integer blend of one value, in 1/2^20ths, rounded half away from zero. */
static int32_t blend_integer(int32_t v00, int32_t v10, int32_t v01, int32_t v11, int32_t dy, int32_t dx)
{
    const int64_t sum = (int64_t)v00 * (FRACTION_ONE - dy) * (FRACTION_ONE - dx) +
                        (int64_t)v10 * dy * (FRACTION_ONE - dx) + (int64_t)v01 * (FRACTION_ONE - dy) * dx +
                        (int64_t)v11 * dy * dx;
    const int64_t round = sum > 0 ? ((int64_t)1 << 19) : -((int64_t)1 << 19);
    /* C division truncates toward zero, as C++'s. */
    return (int32_t)((sum + round) / ((int64_t)1 << 20));
}

/* int8 and int16 (ResizeBilinearInteger<T>): the same arithmetic. */
static void resize_bilinear_integer(const mcu_resize_bilinear_int_params *p, const int8_t *input8,
                                    const int16_t *input16, int8_t *output8, int16_t *output16)
{
    int32_t b, y, x;
    size_t c, out = 0;
    for (b = 0; b < p->batches; ++b) {
        for (y = 0; y < p->output_height; ++y) {
            const int32_t dy = p->row_fraction[y];
            for (x = 0; x < p->output_width; ++x) {
                const int32_t dx = p->column_fraction[x];
                const corners k = CORNERS_AT(p, b, y, x);
                for (c = 0; c < (size_t)p->depth; ++c, ++out) {
                    if (input16) {
                        output16[out] = (int16_t)blend_integer(input16[k.p00 + c], input16[k.p10 + c],
                                                               input16[k.p01 + c], input16[k.p11 + c], dy, dx);
                    } else {
                        output8[out] = (int8_t)blend_integer(input8[k.p00 + c], input8[k.p10 + c], input8[k.p01 + c],
                                                             input8[k.p11 + c], dy, dx);
                    }
                }
            }
        }
    }
}

void mcu_resize_bilinear_s8(const mcu_resize_bilinear_int_params *p, const int8_t *input, int8_t *output)
{
    resize_bilinear_integer(p, input, NULL, output, NULL);
}

void mcu_resize_bilinear_s16(const mcu_resize_bilinear_int_params *p, const int16_t *input, int16_t *output)
{
    resize_bilinear_integer(p, NULL, input, NULL, output);
}
