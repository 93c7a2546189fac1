/* int8 convolutions of short windows on Helium (mcu_conv_helium_small.c). */
#ifndef MCU_CONV_HELIUM_SMALL_H
#define MCU_CONV_HELIUM_SMALL_H

#include "mcu_conv.h"
#include "mcu_dsp.h" /* MCU_MVE */
#include "mcu_window.h"

#if defined(MCU_MVE)

/* Windows of more than 16 and at most this many values may go through
 * mcu_conv_2d_s8_small_helium. */
#define MCU_CONV_SMALL_WINDOW_MAX 64

/* Windows of at most MCU_CONV_SMALL_WINDOW_MAX values whose rows of at most
 * 16 values are cheaper read in place (3x3 first layers), one output pixel
 * at a time (border windows through one column of filter_h x filter_w x
 * input_c bytes at `column`); 0 (nothing done) for the other layers. */
int mcu_conv_2d_s8_small_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *column);

/* The window of output pixel (b, wy's row, out_x) into `column`, window row
 * after window row, taps in the padding as the input zero point (the values
 * of mcu_conv_window_to_column), each run by vector moves and fills. */
void mcu_conv_window_to_column_helium(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                      const mcu_window_axis *wy, int32_t out_x, int8_t *column);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_SMALL_H */
