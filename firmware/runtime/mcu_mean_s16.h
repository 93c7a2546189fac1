/* int16 MEAN (zero point 0), with the int8 kernel's parameter block. */
#ifndef MCU_MEAN_S16_H
#define MCU_MEAN_S16_H

#include "mcu_mean.h"

void mcu_mean_s16(const mcu_mean_s8_params *p, const int16_t *input, int16_t *output);

#endif /* MCU_MEAN_S16_H */
