/* Helium's inner loop of the int8 convolution chunks (mcu_conv_helium_long.c;
 * the chunks' entry, mcu_conv_2d_s8_chunks_helium, is in mcu_conv_helium.h).
 * Nothing here is compiled without MCU_MVE. */
#ifndef MCU_CONV_HELIUM_LONG_H
#define MCU_CONV_HELIUM_LONG_H

#include "mcu_dsp.h"

#if defined(MCU_MVE)

/* sums[0..3] (pixels 0-3 against filters[0]) and sums[4..7] (against
 * filters[1]) plus the products of the first `n` values of an interleaved
 * column (16 values of pixel 0, of pixel 1, 2, 3, then the next 16 of each)
 * and of each filter.  The last n % 16 filter values are loaded under a
 * tail predicate (the other lanes 0), so the column's slots past n (16
 * values a pixel, planned) may hold anything. */
void mcu_helium_dot4x2_s8(const int8_t *column, const int8_t *const filters[2], int32_t n, int32_t sums[8]);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_LONG_H */
