/* The geometry fields every convolution parameter block starts with
 * (CONV_2D and DEPTHWISE_CONV_2D, every dtype: mcu_conv.h, mcu_conv_s16.h). */
#ifndef MCU_CONV_GEOMETRY_H
#define MCU_CONV_GEOMETRY_H

#include "mcu_runtime.h"

/* Geometry shared by both convolutions (both dtypes). */
#define MCU_CONV_GEOMETRY_FIELDS                                                  \
    int32_t batches;                                                              \
    int32_t input_h;                                                              \
    int32_t input_w;                                                              \
    int32_t input_c;                                                              \
    int32_t filter_h;                                                             \
    int32_t filter_w;                                                             \
    int32_t output_h;                                                             \
    int32_t output_w;                                                             \
    int32_t output_c;                                                             \
    int32_t stride_h;                                                             \
    int32_t stride_w;                                                             \
    int32_t dilation_h;                                                           \
    int32_t dilation_w;                                                           \
    int32_t pad_h;                                                                \
    int32_t pad_w;                                                                \
    /* CONV_2D: input channels each filter sees (input_c / groups); \
     * DEPTHWISE_CONV_2D: the depth multiplier. */                               \
    int32_t filter_in_c_or_multiplier;

#endif /* MCU_CONV_GEOMETRY_H */
