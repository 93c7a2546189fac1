/* Fixed-point arithmetic shared by the quantized kernels, bit-exact with
 * TensorFlow Lite's reference kernels and gemmlowp.  One header per family:
 *   mcu_requant.h      requantisation (multiplier and shift), int32 clamps;
 *   mcu_float_round.h  float clamp and float-to-int32 roundings;
 *   mcu_fixedpoint.h   gemmlowp's int32 / int16 fixed point (exp, logistic,
 *                      tanh, reciprocal), the inverse square root multiplier;
 *   mcu_fp16_table.h   exact tables of the int16 logistic and tanh.
 * A kernel may include just the one it needs; this header includes all. */
#ifndef MCU_QUANT_H
#define MCU_QUANT_H

#include "mcu_requant.h"
#include "mcu_float_round.h"
#include "mcu_fixedpoint.h"
#include "mcu_fp16_table.h"

#endif /* MCU_QUANT_H */
