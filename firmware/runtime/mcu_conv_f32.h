/* Float CONV_2D and DEPTHWISE_CONV_2D (declared in mcu_conv.h). */
#ifndef MCU_CONV_F32_H
#define MCU_CONV_F32_H

#include "mcu_conv.h"

#endif /* MCU_CONV_F32_H */
