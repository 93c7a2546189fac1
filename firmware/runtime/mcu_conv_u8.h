/* CONV_2D and DEPTHWISE_CONV_2D on uint8 tensors: the legacy (TF1 / Coral)
 * quantization, asymmetric per tensor for activations and weights alike.
 *
 * Unlike the int8 kernels (mcu_conv.h), the filter has a zero point of its
 * own and one multiplier serves every output channel, as TensorFlow Lite's
 * reference_ops::Conv and DepthwiseConv for uint8 compute:
 *   acc = sum((filter + filter_offset) * (input + input_offset)) + bias
 *   out = clamp(MultiplyByQuantizedMultiplier(acc) + output_offset). */
#ifndef MCU_CONV_U8_H
#define MCU_CONV_U8_H

#include "mcu_conv.h"

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point */
    int32_t output_offset; /* output zero point */
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_conv_u8_params;

/* bias may be NULL. */
void mcu_conv_2d_u8(const mcu_conv_u8_params *p, const uint8_t *input, const uint8_t *filter, const int32_t *bias,
                    uint8_t *output);
void mcu_depthwise_conv_2d_u8(const mcu_conv_u8_params *p, const uint8_t *input, const uint8_t *filter,
                              const int32_t *bias, uint8_t *output);

#endif /* MCU_CONV_U8_H */
