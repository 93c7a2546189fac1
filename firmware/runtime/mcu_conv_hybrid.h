/* CONV_2D and DEPTHWISE_CONV_2D of a hybrid (dynamic-range) model: float32
 * input and output, int8 weights, float32 bias.
 *
 * As TensorFlow Lite's hybrid convolutions, each batch image is quantized to
 * int8 when the op runs -- symmetrically for a CONV_2D with one filter scale
 * (EvalHybrid), asymmetrically for per-channel scales and for every
 * DEPTHWISE_CONV_2D (EvalHybridPerChannel) -- the taps inside the input are
 * summed in int32 and the sum is rescaled to float:
 *   scales_first == 0: (float)sum * filter_scale[c] * input_scale
 *   scales_first == 1: (float)sum * (filter_scale[c] * input_scale)
 * then the bias is added and the fused activation's bounds applied. */
#ifndef MCU_CONV_HYBRID_H
#define MCU_CONV_HYBRID_H

#include "mcu_conv.h"

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    int32_t asymmetric;   /* quantize the input with a zero point */
    int32_t per_channel;  /* 0: filter_scales[0] for every output channel */
    int32_t scales_first; /* the order of the float rescale, see above */
    const float *filter_scales;
    float act_min;
    float act_max;
} mcu_conv_hybrid_params;

/* bias may be NULL. */
void mcu_conv_2d_hybrid(const mcu_conv_hybrid_params *p, const float *input, const int8_t *filter, const float *bias,
                        float *output);
void mcu_depthwise_conv_2d_hybrid(const mcu_conv_hybrid_params *p, const float *input, const int8_t *filter,
                                  const float *bias, float *output);

#endif /* MCU_CONV_HYBRID_H */
