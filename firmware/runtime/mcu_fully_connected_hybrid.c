/* Follows TensorFlow Lite's hybrid FULLY_CONNECTED (EvalHybridDense with
 * BatchQuantizeFloats and MatrixBatchVectorMultiplyAccumulate) step by step:
 * the input scale in float (the asymmetric zero point in double, as
 * AsymmetricQuantizeFloats), std::round of float products, int32 sums, and
 * output = bias + (float)sum * scale.
 *
 * No scratch memory: a batch row is quantized QUANT_CHUNK values at a time
 * into a stack buffer, and the int32 partial sums of all outputs wait in the
 * output tensor's own bytes (4 bytes each, like the floats they become). */
#include "mcu_fully_connected_hybrid.h"

#include <string.h>

#include "mcu_hybrid.h"

#define QUANT_CHUNK 64

static float activate(int32_t activation, float x)
{
    switch (activation) {
    case MCU_HYBRID_ACTIVATION_RELU:
        return 0.0f < x ? x : 0.0f; /* std::max(0.0f, x) */
    case MCU_HYBRID_ACTIVATION_RELU_N1_TO_1: {
        const float upper = 1.0f < x ? 1.0f : x; /* std::min(x, 1.0f) */
        return -1.0f < upper ? upper : -1.0f;
    }
    case MCU_HYBRID_ACTIVATION_RELU6: {
        const float upper = 6.0f < x ? 6.0f : x;
        return 0.0f < upper ? upper : 0.0f;
    }
    default:
        return x;
    }
}

static int32_t load_sum(const float *slot)
{
    int32_t sum;
    memcpy(&sum, slot, sizeof sum);
    return sum;
}

static void store_sum(float *slot, int32_t sum)
{
    memcpy(slot, &sum, sizeof sum);
}

void mcu_fully_connected_hybrid(const mcu_fully_connected_hybrid_params *p, const float *input, const int8_t *filter,
                                const float *bias, float *output)
{
    const size_t depth = (size_t)p->accum_depth, units = (size_t)p->output_depth;
    const size_t total = (size_t)p->batches * depth;
    int8_t chunk[QUANT_CHUNK];
    size_t i, o, start, n;
    int32_t b;
    /* IsZeroVector: an all-zero input leaves the bias. */
    for (i = 0; i < total && input[i] == 0.0f; ++i) {
    }
    if (i == total) {
        for (b = 0; b < p->batches; ++b) {
            for (o = 0; o < units; ++o) {
                output[(size_t)b * units + o] = activate(p->activation, bias ? bias[o] : 0.0f);
            }
        }
        return;
    }
    for (b = 0; b < p->batches; ++b) {
        const float *row = input + (size_t)b * depth;
        float *out = output + (size_t)b * units;
        const mcu_hybrid_quantization q = mcu_hybrid_quantization_of(row, p->accum_depth, p->asymmetric);
        for (o = 0; o < units; ++o) {
            store_sum(&out[o], 0);
        }
        for (start = 0; start < depth; start += n) {
            n = depth - start < QUANT_CHUNK ? depth - start : QUANT_CHUNK;
            for (i = 0; i < n; ++i) {
                chunk[i] = mcu_hybrid_quantize(&q, row[start + i]);
            }
            for (o = 0; o < units; ++o) {
                const int8_t *w = filter + o * depth + start;
                int32_t sum = load_sum(&out[o]);
                for (i = 0; i < n; ++i) {
                    sum += (int32_t)w[i] * (int32_t)chunk[i];
                }
                store_sum(&out[o], sum);
            }
        }
        for (o = 0; o < units; ++o) {
            /* Per tensor the filter scale is folded into the batch's factor
             * first; per channel the factor meets each channel's scale. */
            const float scale = p->per_channel ? q.scale * p->filter_scales[o] : q.scale * p->filter_scales[0];
            int32_t sum = load_sum(&out[o]);
            if (p->row_sums) {
                sum -= p->row_sums[o] * q.zero_point;
            }
            out[o] = activate(p->activation, (bias ? bias[o] : 0.0f) + (float)sum * scale);
        }
    }
}
