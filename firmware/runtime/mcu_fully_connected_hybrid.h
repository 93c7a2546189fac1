/* FULLY_CONNECTED of a hybrid (dynamic-range) model: float32 input and
 * output, int8 weights with one scale per tensor or per output.
 *
 * As TensorFlow Lite's EvalHybrid, each batch row of the input is quantized
 * to int8 when the op runs -- symmetrically (scale max|x| / 127) or, with
 * asymmetric_quantize_inputs, over [min(x, 0), max(x, 0)] with a zero point
 * -- multiplied with the weights in exact int32 sums, and the sums rescaled
 * to float and added to the bias. */
#ifndef MCU_FULLY_CONNECTED_HYBRID_H
#define MCU_FULLY_CONNECTED_HYBRID_H

#include "mcu_runtime.h"

/* Fused activations, applied as tensor_utils::ApplyActivationToVector. */
#define MCU_HYBRID_ACTIVATION_NONE 0
#define MCU_HYBRID_ACTIVATION_RELU 1
#define MCU_HYBRID_ACTIVATION_RELU_N1_TO_1 2
#define MCU_HYBRID_ACTIVATION_RELU6 3

typedef struct {
    int32_t batches;
    int32_t output_depth;
    int32_t accum_depth;
    int32_t asymmetric;   /* the op's asymmetric_quantize_inputs */
    int32_t per_channel;  /* 0: filter_scales[0] for every output */
    const float *filter_scales;
    const int32_t *row_sums; /* per output, the sum of its weights (asymmetric inputs); else NULL */
    int32_t activation;      /* MCU_HYBRID_ACTIVATION_* */
} mcu_fully_connected_hybrid_params;

/* bias may be NULL.  output holds the int32 sums while they accumulate. */
void mcu_fully_connected_hybrid(const mcu_fully_connected_hybrid_params *p, const float *input, const int8_t *filter,
                                const float *bias, float *output);

#endif /* MCU_FULLY_CONNECTED_HYBRID_H */
