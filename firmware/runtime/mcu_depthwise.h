/* int8 depthwise convolutions with window offset terms: runs of pixels
 * whose windows share their taps inside the input, or the raster groups of
 * raster_walk. */
#ifndef MCU_DEPTHWISE_H
#define MCU_DEPTHWISE_H

#include "mcu_conv.h"

void mcu_depthwise_conv_2d_s8_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                      const int32_t *bias, int8_t *output);

#endif /* MCU_DEPTHWISE_H */
