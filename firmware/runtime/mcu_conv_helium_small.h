/* int8 first layers on Helium (mcu_conv_helium_small.c). */
#ifndef MCU_CONV_HELIUM_SMALL_H
#define MCU_CONV_HELIUM_SMALL_H

#include "mcu_conv.h"
#include "mcu_dsp.h" /* MCU_MVE */
#include "mcu_window.h"

#if defined(MCU_MVE)

/* A first layer's windows four at a time through the pass p->first names
 * (MCU_CONV_FIRST_S8), each window copied into a column of whole vectors
 * (MCU_CONV_COLUMNS of them at `columns`); 0 (nothing done) when p->first
 * is NULL or those columns do not fit p->column_bytes. */
int mcu_conv_2d_s8_first_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns);

/* The window of output pixel (b, wy's row, out_x) into `column`, window row
 * after window row, taps in the padding as the input zero point (the values
 * of mcu_conv_window_to_column), each run by vector moves and fills. */
void mcu_conv_window_to_column_helium(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                      const mcu_window_axis *wy, int32_t out_x, int8_t *column);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_SMALL_H */
