/* Helium's inner loop of the int8 convolution chunks (mcu_conv_helium_long.c;
 * the chunks' entry, mcu_conv_2d_s8_chunks_helium, is in mcu_conv_helium.h).
 * Nothing here is compiled without MCU_MVE. */
#ifndef MCU_CONV_HELIUM_LONG_H
#define MCU_CONV_HELIUM_LONG_H

#include "mcu_dsp.h"

#if defined(MCU_MVE)

/* `pairs` pairs of output channels (filters `filter_size` bytes apart from
 * `filter` on) against the first `n` values of an interleaved column of
 * four pixels (16 values of pixel 0, of pixel 1, 2, 3, then the next 16 of
 * each): pair i adds to sums[8 i .. 8 i + 3] (pixels 0-3 against its first
 * filter) and sums[8 i + 4 .. 8 i + 7] (its second).  The last n % 16
 * filter values are loaded under a tail predicate (the other lanes 0), so
 * the column's slots past n (16 values a pixel, planned) may hold
 * anything. */
typedef struct {
    const int8_t *column;
    const int8_t *filter;
    int32_t filter_size;
    int32_t n;
    int32_t pairs;
    int32_t *sums;
} mcu_helium_dot_pairs;

void mcu_helium_dot4x2_s8(const mcu_helium_dot_pairs *job);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_LONG_H */
