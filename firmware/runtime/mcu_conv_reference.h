/* The reference loops of the int8 convolutions (any grouping, input offset
 * added per tap), for filters without window offset terms. */
#ifndef MCU_CONV_REFERENCE_H
#define MCU_CONV_REFERENCE_H

#include "mcu_conv.h"

void mcu_conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output);
void mcu_depthwise_conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input,
                                             const int8_t *filter, const int32_t *bias, int8_t *output);

#endif /* MCU_CONV_REFERENCE_H */
