/* 16x8 AVERAGE_POOL_2D and MAX_POOL_2D: int16 values pass through with the
 * input's quantization (TFLite requires the output's to equal it). */
#ifndef MCU_POOL_S16_H
#define MCU_POOL_S16_H

#include "mcu_pool.h"

/* The int8 kernels' parameter block: the same fields. */
void mcu_average_pool_2d_s16(const mcu_pool_s8_params *p, const int16_t *input, int16_t *output);
void mcu_max_pool_2d_s16(const mcu_pool_s8_params *p, const int16_t *input, int16_t *output);

#endif /* MCU_POOL_S16_H */
