/* SOFTMAX (and float LOG_SOFTMAX) over the last dimension. */
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

/* LOG_SOFTMAX, float32 (no beta). */
typedef struct {
    int32_t outer_size;
    int32_t depth;
} mcu_log_softmax_f32_params;

typedef struct {
    int32_t outer_size;
    int32_t depth;
    int32_t input_multiplier; /* beta * input scale / (10 / 65535) */
    int32_t input_shift;
    const int16_t *exp_lut;                 /* 513 entries: exp over [-10, 0] */
    const int16_t *one_over_one_plus_x_lut; /* 513 entries: 1 / (1 + x) over [0, 1] */
} mcu_softmax_s16_params;

/* Output quantization is fixed by TFLite: scale 1/256, zero point -128. */
void mcu_softmax_s8(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output);
/* int8 input, int16 output with zero point -32768 (the reference's
 * Softmax<int8_t, int16_t>: the same fixed point, 16 output bits). */
void mcu_softmax_s8_s16(const mcu_softmax_s8_params *p, const int8_t *input, int16_t *output);
/* uint8 in and out: scale 1/256, zero point 0. */
void mcu_softmax_u8(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output);
/* The same three for long rows (the generator names them from the row
 * length, mcu_planner/lowering/softmax.py SOFTMAX_LANES_MIN_DEPTH): on
 * Helium four lanes at a time, elsewhere the same code as the ones above.
 * Shorter rows take those, so that their firmware does not link the lanes'
 * code (1.8 KB) for a few values per inference. */
void mcu_softmax_s8_long_rows(const mcu_softmax_s8_params *p, const int8_t *input, int8_t *output);
void mcu_softmax_u8_long_rows(const mcu_softmax_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_softmax_s8_s16_long_rows(const mcu_softmax_s8_params *p, const int8_t *input, int16_t *output);
void mcu_softmax_f32(const mcu_softmax_f32_params *p, const float *input, float *output);
void mcu_log_softmax_f32(const mcu_log_softmax_f32_params *p, const float *input, float *output);
/* int16 in and out, zero points 0 (TFLite's SoftmaxInt16: lookup tables). */
void mcu_softmax_s16(const mcu_softmax_s16_params *p, const int16_t *input, int16_t *output);

#endif /* MCU_SOFTMAX_H */
