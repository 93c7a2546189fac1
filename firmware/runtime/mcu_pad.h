/* PAD / PADV2 of a tensor of up to MCU_MAX_RANK dimensions, any element size. */
#ifndef MCU_PAD_H
#define MCU_PAD_H

#include "mcu_runtime.h"

typedef struct {
    int32_t element_bytes;
    int32_t output_elements;
    /* Input dimensions, padded to MCU_MAX_RANK with leading ones. */
    const int32_t *input_dims;
    /* Output strides in elements, one per (padded) dimension. */
    const int32_t *output_strides;
    /* Output element where input element 0 lands: sum of pad_before * stride. */
    int32_t output_origin;
    /* The bytes of one padding element (little-endian, as the tensor stores it). */
    const uint8_t *pad_value;
} mcu_pad_params;

void mcu_pad(const mcu_pad_params *p, const void *input, void *output);

#endif /* MCU_PAD_H */
