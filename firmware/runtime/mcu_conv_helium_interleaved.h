/* int8 CONV_2D windows of whole sixteen-byte vectors in interleaved
 * columns on Helium (mcu_conv_helium_interleaved.c): the layers the
 * generator names MCU_CONV_INTERLEAVED_S8(4, 2) (mcu_conv.h) in their
 * params take it from mcu_conv_2d_s8_columns_helium. */
#ifndef MCU_CONV_HELIUM_INTERLEAVED_H
#define MCU_CONV_HELIUM_INTERLEAVED_H

#include "mcu_conv.h"

#endif /* MCU_CONV_HELIUM_INTERLEAVED_H */
