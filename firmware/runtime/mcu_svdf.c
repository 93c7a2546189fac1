#include "mcu_svdf.h"

#include <string.h>

#include "mcu_quant.h"

/* Drop the oldest activation of every filter: the whole state moves left by
 * one element; each filter's last slot then holds the next filter's oldest
 * value until the caller overwrites it with the new activation. */
static void shift_state(void *state, size_t elements, size_t element_bytes)
{
    if (elements > 1u) {
        memmove(state, (uint8_t *)state + element_bytes, (elements - 1u) * element_bytes);
    }
}

void mcu_svdf_s8(const mcu_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,
                 const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output,
                 int32_t *filter_sums)
{
    const int32_t memory = p->memory_size;
    int32_t b, f, u, i;
    shift_state(state, (size_t)p->batches * (size_t)p->num_filters * (size_t)memory, sizeof *state);

    /* Feature activations, requantized to the int16 state (zero point 0). */
    for (b = 0; b < p->batches; ++b) {
        const int8_t *x = input + b * p->input_size;
        const int8_t *row = weights_feature;
        int16_t *newest = state + (size_t)b * (size_t)p->num_filters * (size_t)memory + (memory - 1);
        for (f = 0; f < p->num_filters; ++f) {
            int32_t acc = 0;
            for (i = 0; i < p->input_size; ++i) {
                acc = mcu_add_wrap_s32(acc, (int32_t)row[i] * ((int32_t)x[i] - p->input_zero_point));
            }
            row += p->input_size;
            acc = mcu_mul_by_quantized_mul(acc, p->feature_multiplier, (int)p->feature_shift);
            *newest = (int16_t)mcu_clamp_s32(acc, INT16_MIN, INT16_MAX);
            newest += memory;
        }
    }

    /* Each filter's history . its time weights. */
    for (b = 0; b < p->batches; ++b) {
        const int16_t *history = state + (size_t)b * (size_t)p->num_filters * (size_t)memory;
        const int16_t *time = weights_time;
        int32_t *sums = filter_sums + b * p->num_filters;
        for (f = 0; f < p->num_filters; ++f) {
            int32_t acc = 0;
            for (i = 0; i < memory; ++i) {
                acc = mcu_add_wrap_s32(acc, (int32_t)time[i] * (int32_t)history[i]);
            }
            sums[f] = acc;
            time += memory;
            history += memory;
        }
    }

    /* Bias plus the sum of each unit's rank filters (TFLite keeps these in a
     * second int32 temporary; integer sums need no buffer to come out the
     * same), then the output scale. */
    for (b = 0; b < p->batches; ++b) {
        const int32_t *sums = filter_sums + b * p->num_filters;
        int8_t *out = output + b * p->num_units;
        for (u = 0; u < p->num_units; ++u) {
            int32_t acc = bias != NULL ? bias[u] : 0;
            int32_t r, scaled;
            for (r = 0; r < p->rank; ++r) {
                acc = mcu_add_wrap_s32(acc, sums[u * p->rank + r]);
            }
            scaled = mcu_mul_by_quantized_mul(acc, p->output_multiplier, (int)p->output_shift);
            out[u] = (int8_t)mcu_clamp_s32(mcu_add_wrap_s32(scaled, p->output_zero_point), INT8_MIN, INT8_MAX);
        }
    }
}

/* Float sums in TFLite's order on x86, where its tensor_utils are the NEON
 * ones through NEON_2_SSE: four lanes, lane j summing terms j, j+4, j+8 ...
 * of the largest multiple of four; then the lanes added in order
 * (AccumulateNeonLane), then the remaining terms one by one. */
static float lanes_total(const float lane[4])
{
    return lane[0] + lane[1] + lane[2] + lane[3];
}

/* sum(a[i] * b[i]) (NeonVectorVectorDotProduct). */
static float dot_f32(const float *a, const float *b, int32_t n)
{
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int32_t blocked = n - n % 4;
    float sum;
    int32_t i, j;
    for (i = 0; i < blocked; i += 4) {
        for (j = 0; j < 4; ++j) {
            lane[j] += a[i + j] * b[i + j];
        }
    }
    sum = lanes_total(lane);
    for (i = blocked; i < n; ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}

/* *acc += sum(a[i] * b[i]), the remaining terms added to *acc itself
 * (NeonMatrixBatchVectorMultiplyAccumulate, one row). */
static void accumulate_dot_f32(float *acc, const float *a, const float *b, int32_t n)
{
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int32_t blocked = n - n % 4;
    int32_t i, j;
    for (i = 0; i < blocked; i += 4) {
        for (j = 0; j < 4; ++j) {
            lane[j] += a[i + j] * b[i + j];
        }
    }
    *acc += lanes_total(lane);
    for (i = blocked; i < n; ++i) {
        *acc += a[i] * b[i];
    }
}

/* sum(a[i]) (NeonReductionSumVector, one output). */
static float sum_f32(const float *a, int32_t n)
{
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int32_t blocked = n - n % 4;
    float sum;
    int32_t i, j;
    for (i = 0; i < blocked; i += 4) {
        for (j = 0; j < 4; ++j) {
            lane[j] += a[i + j];
        }
    }
    sum = lanes_total(lane);
    for (i = blocked; i < n; ++i) {
        sum += a[i];
    }
    return sum;
}

/* std::max(lo, std::min(x, hi)) as TFLite's ApplyActivationToVector writes
 * them: NaN and the sign of zero come out as there. */
static float activate(float x, int32_t activation)
{
    float lo, hi, y;
    switch (activation) {
    case 1:
        return 0.0f < x ? x : 0.0f;
    case 2:
        lo = -1.0f;
        hi = 1.0f;
        break;
    case 3:
        lo = 0.0f;
        hi = 6.0f;
        break;
    default:
        return x;
    }
    y = hi < x ? hi : x;
    return lo < y ? y : lo;
}

void mcu_svdf_f32(const mcu_svdf_f32_params *p, const float *input, const float *weights_feature,
                  const float *weights_time, const float *bias, float *state, float *output, float *filter_sums)
{
    const int32_t memory = p->memory_size;
    int32_t b, f, u, i;
    shift_state(state, (size_t)p->batches * (size_t)p->num_filters * (size_t)memory, sizeof *state);

    /* Feature activations: scratch cleared, then each dot product added to
     * it (MatrixBatchVectorMultiplyAccumulate), then copied to the state. */
    for (b = 0; b < p->batches; ++b) {
        const float *x = input + b * p->input_size;
        const float *row = weights_feature;
        float *sums = filter_sums + b * p->num_filters;
        for (f = 0; f < p->num_filters; ++f) {
            sums[f] = 0.0f;
            accumulate_dot_f32(&sums[f], row, x, p->input_size);
            row += p->input_size;
        }
    }
    for (i = 0; i < p->batches * p->num_filters; ++i) {
        state[(size_t)i * (size_t)memory + (size_t)(memory - 1)] = filter_sums[i];
    }

    for (b = 0; b < p->batches; ++b) {
        const float *history = state + (size_t)b * (size_t)p->num_filters * (size_t)memory;
        const float *time = weights_time;
        float *sums = filter_sums + b * p->num_filters;
        for (f = 0; f < p->num_filters; ++f) {
            sums[f] = dot_f32(time, history, memory);
            time += memory;
            history += memory;
        }
    }

    for (b = 0; b < p->batches; ++b) {
        const float *sums = filter_sums + b * p->num_filters;
        float *out = output + b * p->num_units;
        for (u = 0; u < p->num_units; ++u) {
            out[u] = sum_f32(sums + u * p->rank, p->rank);
            if (bias != NULL) {
                out[u] += bias[u];
            }
            out[u] = activate(out[u], p->activation);
        }
    }
}
