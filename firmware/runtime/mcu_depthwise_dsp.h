/* int8 depthwise convolutions on cores without Helium: four channels at a
 * time (SMLABB / SMLATT with the DSP extension, C loops without it). */
#ifndef MCU_DEPTHWISE_DSP_H
#define MCU_DEPTHWISE_DSP_H

#include "mcu_conv_internal.h"

#if !defined(MCU_MVE)
/* The run's channels in groups of four (mcu_conv_internal.h); returns how
 * many channels it wrote (out_c rounded down to a multiple of 4). */
int32_t mcu_depthwise_run_s8(const mcu_conv_s8_params *p, const mcu_depthwise_run *run);
/* The aligned groups of four raster pixels of raster_walk. */
void mcu_depthwise_conv_2d_s8_raster_groups(const mcu_conv_s8_params *p, const int8_t *input,
                                            const int8_t *filter, const int32_t *bias, int8_t *output);
#endif

#endif /* MCU_DEPTHWISE_DSP_H */
