/* Follows reference_ops::ResizeNearestNeighbor of TensorFlow Lite. */
#include "mcu_resize.h"

#include <string.h>

void mcu_resize_nearest_neighbor(const mcu_resize_nearest_neighbor_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t pixel = (size_t)p->pixel_bytes;
    const size_t row = (size_t)p->input_width * pixel;
    int32_t b, y, x;
    for (b = 0; b < p->batches; ++b) {
        const uint8_t *image = in + (size_t)b * (size_t)p->input_height * row;
        for (y = 0; y < p->output_height; ++y) {
            const uint8_t *source = image + (size_t)p->source_row[y] * row;
            for (x = 0; x < p->output_width; ++x) {
                memcpy(out, source + (size_t)p->source_column[x] * pixel, pixel);
                out += pixel;
            }
        }
    }
}
