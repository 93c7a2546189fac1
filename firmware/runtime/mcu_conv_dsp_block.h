/* int8 convolutions of one group in blocks of eight pixels by one channel on
 * cores with the DSP extension and no Helium (mcu_conv_dsp_block.c). */
#ifndef MCU_CONV_DSP_BLOCK_H
#define MCU_CONV_DSP_BLOCK_H

#include "mcu_conv.h"
#include "mcu_conv_few_channels_dsp.h"

/* Bytes of `columns` the blocks need for `n` taps per pixel: eight pixels'
 * taps widened to int16 (64 bytes per four taps, the last 1-3 taps rounded
 * up to four) and 3 bytes to word-align them.  conv_columns_bytes in
 * mcu_planner/lowering/conv.py plans the same amount (BLOCK_BYTES). */
#define MCU_CONV_BLOCK_BYTES(n) (3 + 64 * (((n) + 3) / 4))

/* A window's: the lanes, and with input_c not a multiple of 4 one int8
 * window before them (BLOCK_BYTES in conv.py). */
#define MCU_CONV_WINDOW_BLOCK_BYTES(input_c, window) (((input_c) % 4 ? (window) : 0) + MCU_CONV_BLOCK_BYTES(window))

/* Layers of fewer input channels (first layers) go elsewhere
 * (BLOCK_MIN_CHANNELS in conv.py). */
#define MCU_CONV_BLOCK_MIN_CHANNELS 5

/* Pointwise (1x1, no padding) at any stride on MCU_CONV_BLOCK_MIN_CHANNELS
 * or more input channels; 0 (nothing written) when `columns` is NULL or
 * shorter than MCU_CONV_BLOCK_BYTES(input_c). */
int mcu_conv_1x1_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                          int8_t *output, int8_t *columns);

/* Any window of one group on MCU_CONV_BLOCK_MIN_CHANNELS or more input
 * channels, widened straight from the input (or through an int8 column
 * when input_c is not a multiple of 4), padding as the input zero point;
 * 0 (nothing written) when `columns` is NULL or shorter than
 * MCU_CONV_WINDOW_BLOCK_BYTES. */
int mcu_conv_window_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, int8_t *columns);

#endif /* MCU_CONV_DSP_BLOCK_H */
