/* Elementwise activations: LOGISTIC and TANH (int8 and uint8, by table),
 * RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU and HARD_SWISH (int8, uint8 --
 * with the int8 parameters -- and float32).
 *
 * Every kernel reads element i before writing element i, so the output may
 * share bytes with the input.
 */
#ifndef MCU_ACTIVATIONS_H
#define MCU_ACTIVATIONS_H

#include "mcu_runtime.h"

/* output[i] = table[(uint8_t)input[i]]: TFLite's reference int8 LOGISTIC and
 * TANH are exactly a 256-entry table built at Prepare time. */
typedef struct {
    int32_t size;
    const int8_t *table;
} mcu_lut_s8_params;

/* The same for uint8: output[i] = table[input[i]]. */
typedef struct {
    int32_t size;
    const uint8_t *table;
} mcu_lut_u8_params;

/* int8 (and, with the same parameters, uint8) RELU / RELU6 / RELU_N1_TO_1 (TFLite's ReluX): rescale from the input to
 * the output quantization, then clamp. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_relu_s8_params;

/* float32 RELU family: clamp to [act_min, act_max]. */
typedef struct {
    int32_t size;
    float act_min;
    float act_max;
} mcu_relu_f32_params;

typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t identity_multiplier; /* applied to inputs >= zero point */
    int32_t identity_shift;
    int32_t alpha_multiplier; /* applied to inputs below it */
    int32_t alpha_shift;
} mcu_leaky_relu_s8_params;

typedef struct {
    int32_t size;
    float alpha;
} mcu_leaky_relu_f32_params;

/* TFLite's HardSwishParams: 16-bit fixed-point multipliers and exponents. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t reluish_multiplier; /* int16 fixed point */
    int32_t reluish_exponent;
    int32_t output_multiplier; /* int16 fixed point */
    int32_t output_exponent;   /* <= 0 */
} mcu_hard_swish_s8_params;

typedef struct {
    int32_t size;
} mcu_hard_swish_f32_params;

void mcu_lut_s8(const mcu_lut_s8_params *p, const int8_t *input, int8_t *output);
void mcu_relu_s8(const mcu_relu_s8_params *p, const int8_t *input, int8_t *output);
void mcu_lut_u8(const mcu_lut_u8_params *p, const uint8_t *input, uint8_t *output);
void mcu_relu_u8(const mcu_relu_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_relu_f32(const mcu_relu_f32_params *p, const float *input, float *output);
void mcu_leaky_relu_s8(const mcu_leaky_relu_s8_params *p, const int8_t *input, int8_t *output);
void mcu_leaky_relu_f32(const mcu_leaky_relu_f32_params *p, const float *input, float *output);
void mcu_hard_swish_s8(const mcu_hard_swish_s8_params *p, const int8_t *input, int8_t *output);
void mcu_leaky_relu_u8(const mcu_leaky_relu_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_hard_swish_u8(const mcu_hard_swish_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_hard_swish_f32(const mcu_hard_swish_f32_params *p, const float *input, float *output);

#endif /* MCU_ACTIVATIONS_H */
