/* PAD / PADV2 and SPACE_TO_BATCH_ND of a tensor of up to MCU_MAX_RANK dimensions, any element size. */
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

/* SPACE_TO_BATCH_ND as reference_ops::SpaceToBatchND, on the 4-D view
 * (batch, height, width, depth bytes) (a 3-D input has width 1): output batch
 * ob holds the block position ((ob / batch) / block_w, (ob / batch) %
 * block_w) of input batch ob % batch; each output pixel's depth_bytes come
 * from the input pixel it covers, or are pad_byte where it falls in the
 * padding (the reference memsets the output zero point's byte). */
typedef struct {
    int32_t batch;
    int32_t input_h;
    int32_t input_w;
    int32_t output_batch;
    int32_t output_h;
    int32_t output_w;
    int32_t block_h;
    int32_t block_w;
    int32_t pad_top;
    int32_t pad_left;
    int32_t depth_bytes;
    int32_t pad_byte;
} mcu_space_to_batch_params;

void mcu_space_to_batch(const mcu_space_to_batch_params *p, const void *input, void *output);

#endif /* MCU_PAD_H */
