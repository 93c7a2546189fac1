/* int8 convolutions of one group on any core, with window offset terms:
 * runs of contiguous taps against two filters at a time (SMLAD with the DSP
 * extension, VMLADAVA with Helium), windows copied into columns or read in
 * place. */
#ifndef MCU_CONV_WINDOW_H
#define MCU_CONV_WINDOW_H

#include "mcu_conv.h"
#include "mcu_window.h"

/* Two input runs (two output pixels) against two filters:
 * sums = {x0.w0, x0.w1, x1.w0, x1.w1}. */
void mcu_conv_dot2x2_s8(const int8_t *x0, const int8_t *x1, const int8_t *w0, const int8_t *w1, int32_t n,
                        int32_t sums[4]);
/* Two output pixels whose taps are contiguous: x[k] the first of pixel k's
 * (with one pixel, has_second 0, x[1] = x[0]), out the first channel of the
 * first pixel (the second's follow it). */
typedef struct {
    const int8_t *x[2];
    int has_second;
    int8_t *out;
} mcu_conv_pixel_pair;
/* Every output channel of the pair's pixels, whose `n` taps are against
 * filters `n` apart. */
void mcu_conv_pixel_pair_s8(const mcu_conv_s8_params *p, const mcu_conv_pixel_pair *pair, const int8_t *filter,
                            int32_t n, const int32_t *bias);
/* The window of output pixel (b, wy's row, out_x) as filter_h x filter_w x
 * input_c values, the padding as the input zero point. */
void mcu_conv_window_to_column(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                               const mcu_window_axis *wy, int32_t out_x, int8_t *column);
/* Windows of up to MCU_CONV_COLUMN_MAX values, two columns (2 x window bytes
 * at `columns`) per pair of output pixels. */
void mcu_conv_2d_s8_columns(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int8_t *columns);
/* Any window, read in place. */
void mcu_conv_2d_s8_one_group(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output);

#endif /* MCU_CONV_WINDOW_H */
