/* int8 3 x 3 depthwise convolutions with the DSP extension (no Helium), four
 * channels at a time with the filter and rescales prepared once per group. */
#ifndef MCU_DEPTHWISE_3X3_DSP_H
#define MCU_DEPTHWISE_3X3_DSP_H

#include "mcu_conv_internal.h"

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Writes the whole output and returns 1, or returns 0 having written
 * nothing when the convolution is not one this path takes (depth multiplier
 * 1 or a multiple of 4, a 3 x 3 filter, no dilation, a multiple of 4 channels, window offset
 * terms, rescales of the form it needs; under raster_walk an output apart
 * from the input or a whole number of pixels from it). */
int mcu_depthwise_3x3_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output);
#endif

#endif /* MCU_DEPTHWISE_3X3_DSP_H */
