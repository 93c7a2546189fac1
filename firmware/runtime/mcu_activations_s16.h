/* int16 activations (zero point 0): RELU, RELU6, LEAKY_RELU with the int8
 * kernels' parameter blocks (TFLite prepares both dtypes alike),
 * LOGISTIC / TANH by TFLite's interpolated sigmoid table, and ABS. */
#ifndef MCU_ACTIVATIONS_S16_H
#define MCU_ACTIVATIONS_S16_H

#include "mcu_activations.h"

/* The input rescaled to TFLite's table domain, (x * input_multiplier +
 * round) >> input_left_shift, where +-2^17 (LOGISTIC) stands for +-10.7;
 * the output scale is 1/32768. */
typedef struct {
    int32_t size;
    int32_t input_multiplier;
    int32_t input_left_shift;
} mcu_sigmoid_s16_params;

/* ABS as elementwise.cc: |x| (zero points 0), rescaled by input / output
 * scale where the scales differ, then saturated to int16; a tensor without
 * quantization (`saturate` 0) takes |x| cast back to int16, so |-32768|
 * stays -32768. */
typedef struct {
    int32_t size;
    int32_t needs_rescale;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t saturate;
} mcu_abs_s16_params;

void mcu_abs_s16(const mcu_abs_s16_params *p, const int16_t *input, int16_t *output);
void mcu_relu_s16(const mcu_relu_s8_params *p, const int16_t *input, int16_t *output);
void mcu_leaky_relu_s16(const mcu_leaky_relu_s8_params *p, const int16_t *input, int16_t *output);
void mcu_logistic_s16(const mcu_sigmoid_s16_params *p, const int16_t *input, int16_t *output);
void mcu_tanh_s16(const mcu_sigmoid_s16_params *p, const int16_t *input, int16_t *output);

#endif /* MCU_ACTIVATIONS_S16_H */
