/* int8 convolutions of 1 to 4 input channels (first layers) with the DSP
 * extension (no Helium): two pixels by two filters through SMLAD. */
#ifndef MCU_CONV_FEW_CHANNELS_DSP_H
#define MCU_CONV_FEW_CHANNELS_DSP_H

#include "mcu_conv_internal.h"

/* The longest window (filter_h * filter_w * input_c) this path copies. */
#define MCU_CONV_FEW_WINDOW_MAX 64

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Writes the whole output and returns 1, or returns 0 having written
 * nothing when the convolution is not one this path takes (one group of at
 * most 4 input channels, windows of 4 to MCU_CONV_FEW_WINDOW_MAX values,
 * rescales of the form it needs). */
int mcu_conv_2d_s8_few_channels(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output);
/* The window of output pixel at = (b, y, x) into `bytes` (window values,
 * then 3 more of the input zero point, up to the word), the padding as the
 * zero point; for windows of 1 to 4 input channels. */
void mcu_conv_few_window_bytes(const mcu_conv_s8_params *p, const int8_t *input, const int32_t at[3],
                               int8_t zero_point, int8_t *bytes);
#endif

/* Windows of up to 32 values on 1-4 input channels (first layers), the
 * input offset added as the windows are widened (no offset terms): eight
 * pixels at a time with MCU_CONV_BLOCK_BYTES(window) of `columns`, else
 * four on the stack; 0 (nothing written) for other shapes. */
int mcu_conv_few_channels_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, int8_t *columns);

#endif /* MCU_CONV_FEW_CHANNELS_DSP_H */
