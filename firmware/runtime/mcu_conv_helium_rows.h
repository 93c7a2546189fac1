/* Rows of int8 values against every filter on Helium (mcu_conv_helium_rows.c). */
#ifndef MCU_CONV_HELIUM_ROWS_H
#define MCU_CONV_HELIUM_ROWS_H

#include "mcu_conv.h"
#include "mcu_dsp.h" /* MCU_MVE */

#if defined(MCU_MVE)

/* `count` (1 to 4) rows of `n` int8 values each: pixels of a pointwise
 * convolution, or windows copied into columns. */
typedef struct mcu_helium_rows {
    const int8_t *row[4];
    int32_t count;
    int32_t n;
} mcu_helium_rows;

/* A loop over four whole rows of `vectors` sixteen-byte vectors, the last
 * partial (`tail`) or not, against the filters of every whole group of four
 * channels (mcu_conv.h, MCU_CONV_ROWS_S8); or (`columns` not NULL, the
 * others 0) a whole windows layer the columns entry hands over
 * (MCU_CONV_INTERLEAVED_S8, mcu_conv_helium_interleaved.c). */
struct mcu_conv_rows_s8 {
    int32_t vectors;
    int32_t tail;
    void (*run)(const mcu_conv_s8_params *p, const struct mcu_helium_rows *r, const int8_t *filter,
                const int32_t *bias, int8_t *out);
    void (*columns)(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                    int8_t *output, int8_t *column_space);
};

/* The rows against every filter (`n` values each, one after another):
 * channel oc of row k goes to out[k * output_c + oc], requantized. */
void mcu_helium_conv_rows_s8(const mcu_conv_s8_params *p, const mcu_helium_rows *r, const int8_t *filter,
                             const int32_t *bias, int8_t *out);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_ROWS_H */
