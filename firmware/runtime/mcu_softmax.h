/* SOFTMAX over the last dimension. */
#ifndef MCU_SOFTMAX_H
#define MCU_SOFTMAX_H

#include "mcu_runtime.h"

typedef struct {
    int32_t outer_size; /* product of all dimensions but the last */
    int32_t depth;      /* last dimension */
    int32_t input_multiplier;  /* beta * input scale, fixed point (see quant.py) */
    int32_t input_left_shift;
    int32_t diff_min; /* differences from the row max below this give exp() == 0 */
} mcu_softmax_s8_params;

typedef struct {
    int32_t outer_size;
    int32_t depth;
    float beta;
} mcu_softmax_f32_params;

/* Output quantization is fixed by TFLite: scale 1/256, zero point -128. */
void mcu_softmax_s8(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output);
/* uint8 takes the same parameters; output scale 1/256, zero point 0. */
void mcu_softmax_u8(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_softmax_f32(const mcu_softmax_f32_params *p, const float *input, float *output);

#endif /* MCU_SOFTMAX_H */
