/* TRANSPOSE_CONV (int8, 16x8 and float32) on NHWC tensors; the filter is
 * TFLite's [output_c][filter_h][filter_w][input_c].
 *
 * TFLite's reference kernels scatter: every input element adds its products
 * into an int32 / int64 / float scratch the size of the output.  These gather
 * instead, one output element at a time, from the input pixels whose window
 * covers it, in the order the scatter reaches that element (input row, then
 * column, then channel), so no scratch buffer is needed and float sums round
 * the same way. */
#ifndef MCU_TRANSPOSE_CONV_H
#define MCU_TRANSPOSE_CONV_H

#include "mcu_conv_geometry.h"

/* The convolution geometry fields (mcu_conv_geometry.h) with the roles of
 * input and output swapped as TFLite's Prepare computes them: stride and
 * padding are those of the convolution that maps the output back to the
 * input (pad_h/pad_w: output rows/columns cut off before the first one
 * kept); dilation is 1 and filter_in_c_or_multiplier is input_c. */
typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    int32_t input_offset;  /* -input zero point (0 for int16) */
    int32_t output_offset; /* output zero point (0 for int16) */
    const int32_t *output_multiplier; /* one per output channel */
    const int32_t *output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_transpose_conv_params;

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    float act_min;
    float act_max;
} mcu_transpose_conv_f32_params;

/* bias may be NULL in each.  The output must not share bytes with the input. */
void mcu_transpose_conv_s8(const mcu_transpose_conv_params *p, const int8_t *input, const int8_t *filter,
                           const int32_t *bias, int8_t *output);
void mcu_transpose_conv_s16(const mcu_transpose_conv_params *p, const int16_t *input, const int8_t *filter,
                            const int64_t *bias, int16_t *output);
void mcu_transpose_conv_f32(const mcu_transpose_conv_f32_params *p, const float *input, const float *filter,
                            const float *bias, float *output);

#endif /* MCU_TRANSPOSE_CONV_H */
