/* RESHAPE, SQUEEZE, EXPAND_DIMS (and ZEROS_LIKE's fill): the bytes stay as they are, only the shape
 * changes.  Codegen calls this only when the plan did not give output and
 * input the same bytes.
 *
 * mcu_copy_window: a window of rows, each `row_bytes` long, from one buffer
 * to another whose rows are `input_pitch` and `output_pitch` bytes apart.  A
 * patched stage in a grid of patches (patches.py) gathers each patch's input
 * window out of the whole stage input with it, and scatters each patch of
 * its output into the whole stage output. */
#ifndef MCU_COPY_H
#define MCU_COPY_H

#include "mcu_runtime.h"

typedef struct {
    int32_t bytes;
} mcu_copy_params;

void mcu_copy(const mcu_copy_params *p, const void *input, void *output);

/* ZEROS_LIKE: `bytes` zero bytes (0, 0.0f and false are all-zero bytes); the
 * input's values are never read. */
void mcu_zero_fill(const mcu_copy_params *p, void *output);

typedef struct {
    int32_t rows;
    int32_t row_bytes;
    int32_t input_pitch;
    int32_t output_pitch;
} mcu_copy_window_params;

void mcu_copy_window(const mcu_copy_window_params *p, const void *input, void *output);

#endif /* MCU_COPY_H */
