/* int8 convolutions of short windows on Helium (mcu_conv_helium_small.c). */
#ifndef MCU_CONV_HELIUM_SMALL_H
#define MCU_CONV_HELIUM_SMALL_H

#include "mcu_conv.h"
#include "mcu_dsp.h" /* MCU_MVE */

#if defined(MCU_MVE)

/* Windows of more than 16 and at most this many values go through
 * mcu_conv_2d_s8_small_helium (shorter ones stay in registers four pixels at
 * a time in mcu_conv_helium.c, which costs less when there are many filters). */
#define MCU_CONV_SMALL_WINDOW_MAX 64

/* One output pixel at a time through one column of filter_h x filter_w x
 * input_c bytes at `column`. */
void mcu_conv_2d_s8_small_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *column);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_SMALL_H */
