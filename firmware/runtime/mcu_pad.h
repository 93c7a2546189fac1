/* PAD / PADV2 / MIRROR_PAD of a tensor of up to MCU_MAX_RANK dimensions, any element size. */
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

/* MIRROR_PAD: every output element copies one input element.  Along each
 * (padded) dimension d, output index i reads the input at element offset
 * axis_offsets[axis_starts[d] + i] (the mirrored index times the input
 * stride, computed at generation time); the offsets of all dimensions add. */
typedef struct {
    int32_t element_bytes;
    const int32_t *output_dims; /* padded to MCU_MAX_RANK with leading ones */
    const int32_t *axis_starts; /* MCU_MAX_RANK entries into axis_offsets */
    const int32_t *axis_offsets;
} mcu_mirror_pad_params;

void mcu_mirror_pad(const mcu_mirror_pad_params *p, const void *input, void *output);

#endif /* MCU_PAD_H */
