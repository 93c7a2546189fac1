/* int8 depthwise convolutions of depth multiplier 1 on Helium: eight
 * channels per int16 vector, each tap's products widened to int32 by
 * VMULLB / VMULLT, one or two pixels per pass (mcu_depthwise_helium.c). */
#ifndef MCU_DEPTHWISE_HELIUM_H
#define MCU_DEPTHWISE_HELIUM_H

#include "mcu_conv_internal.h"

#if defined(MCU_MVE)
/* Every channel of the run (mcu_conv_internal.h). */
void mcu_depthwise_run_m1_helium_s8(const mcu_conv_s8_params *p, const mcu_depthwise_run *run);
#endif

#endif /* MCU_DEPTHWISE_HELIUM_H */
