/* TRANSPOSE of a tensor of up to MCU_MAX_RANK dimensions, any element size. */
#ifndef MCU_TRANSPOSE_H
#define MCU_TRANSPOSE_H

#include "mcu_runtime.h"

typedef struct {
    int32_t element_bytes;
    /* Output dimensions, padded to MCU_MAX_RANK with leading ones. */
    const int32_t *output_dims;
    /* For each output dimension, the input stride (in elements) of the input
     * dimension it comes from (perm applied to the input strides). */
    const int32_t *input_strides;
} mcu_transpose_params;

void mcu_transpose(const mcu_transpose_params *p, const void *input, void *output);

#endif /* MCU_TRANSPOSE_H */
