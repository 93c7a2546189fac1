/* 16x8 elementwise kernels: ADD, SUB and MUL on int16 activations
 * (symmetric, zero point 0 as TFLite requires for int16).
 *
 * The general ADD/SUB and MUL take the int8 kernels' parameter blocks
 * (mcu_add_s8_params, mcu_mul_s8_params): TFLite prepares both dtypes with
 * the same formulas, only ADD/SUB's left_shift is 15 instead of 20.  Like the
 * int8 kernels, each reads element i before writing it, so the output may
 * share the input's bytes. */
#ifndef MCU_ELEMENTWISE_S16_H
#define MCU_ELEMENTWISE_S16_H

#include "mcu_elementwise.h"

/* ADD/SUB with power-of-two scales (TFLite's pot_scale_int16 path, same
 * shapes only): the input whose scale differs from the output's is divided
 * by 2^shift with rounding, then the two are added (or subtracted) with
 * int16 saturation. */
typedef struct {
    int32_t size;
    int32_t input1_shift; /* <= 0; at most one of the two is non-zero */
    int32_t input2_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_add_s16_pot_params;

/* General rescaling ADD, and SUB as ADD with input2_multiplier negated (as
 * TFLite's sub.cc prepares int16 SUB), with broadcasting. */
void mcu_add_s16(const mcu_add_s8_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void mcu_add_s16_pot(const mcu_add_s16_pot_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void mcu_sub_s16_pot(const mcu_add_s16_pot_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void mcu_mul_s16(const mcu_mul_s8_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);

#endif /* MCU_ELEMENTWISE_S16_H */
