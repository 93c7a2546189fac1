/* int8 depthwise convolutions of depth multiplier 1 on Helium: eight
 * channels per int16 vector, each tap's products widened to int32 by
 * VMULLB / VMULLT, one or two pixels per pass (mcu_depthwise_helium.c). */
#ifndef MCU_DEPTHWISE_HELIUM_H
#define MCU_DEPTHWISE_HELIUM_H

#include "mcu_conv_internal.h"

#if defined(MCU_MVE)
/* A run of `pixels` output pixels (`pixel_step` input bytes and `out_step`
 * output bytes apart) whose windows have the same taps inside the input,
 * x and w at the first of them.  Windows wholly `inside` take the input
 * offset from window_offset_terms, the others add it per tap. */
typedef struct {
    const depthwise_taps *taps;
    const int8_t *x;
    size_t pixel_step;
    int32_t pixels;
    const int8_t *w;
    int inside;
    const int32_t *bias;
    int8_t *out;
    size_t out_step;
} mcu_depthwise_run_m1;

/* Every channel of the run. */
void mcu_depthwise_run_m1_helium_s8(const mcu_conv_s8_params *p, const mcu_depthwise_run_m1 *run);
#endif

#endif /* MCU_DEPTHWISE_HELIUM_H */
