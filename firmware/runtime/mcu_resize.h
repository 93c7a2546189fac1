/* RESIZE_NEAREST_NEIGHBOR on NHWC tensors of any element type.
 *
 * Which input row and column each output row and column copies is computed
 * at generation time (TFLite's GetNearestNeighbor, float32 arithmetic) and
 * stored as two index tables, so the kernel only copies pixels.
 */
#ifndef MCU_RESIZE_H
#define MCU_RESIZE_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batches;
    int32_t input_height;
    int32_t input_width;
    int32_t output_height;
    int32_t output_width;
    int32_t pixel_bytes; /* depth * element bytes */
    const int32_t *source_row;    /* output_height entries */
    const int32_t *source_column; /* output_width entries */
} mcu_resize_nearest_neighbor_params;

void mcu_resize_nearest_neighbor(const mcu_resize_nearest_neighbor_params *p, const void *input, void *output);

#endif /* MCU_RESIZE_H */
