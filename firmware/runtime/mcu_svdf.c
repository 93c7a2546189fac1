#include "mcu_svdf.h"

#include <string.h>

#include "mcu_dsp.h"
#include "mcu_fully_connected.h"
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

/* shift_state for the int16 state, in place and front to back: each pass
 * reads its elements before it writes the lower ones, and never reads an
 * element an earlier pass wrote (the library memmove goes byte by byte). */
static void shift_state_s16(int16_t *state, size_t elements)
{
    int32_t left = (int32_t)elements - 1;
#if defined(MCU_MVE)
    /* Sixteen per pass, both vectors loaded before either is stored; the
     * last 1 to 15 predicated. */
    for (; left >= 16; left -= 16, state += 16) {
        const int16x8_t low = vld1q_s16(state + 1), high = vld1q_s16(state + 9);
        vst1q_s16(state, low);
        vst1q_s16(state + 8, high);
    }
    for (; left > 0; left -= 8, state += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        vstrhq_p_s16(state, vldrhq_z_s16(state + 1, lanes), lanes);
    }
#elif defined(MCU_DSP)
    /* Two elements per word; the loads are unaligned, which these cores allow. */
    for (; left >= 2; left -= 2, state += 2) {
        uint32_t pair;
        memcpy(&pair, state + 1, sizeof pair);
        memcpy(state, &pair, sizeof pair);
    }
    if (left == 1) {
        state[0] = state[1];
    }
#else
    for (; left > 0; --left, ++state) {
        state[0] = state[1];
    }
#endif
}

/* sum(a[i] * b[i]) over int16 values, wrapping as the reference's int32 sum
 * does on x86 (modulo 2^32: the order of the additions does not matter). */
static int32_t dot_s16(const int16_t *a, const int16_t *b, int32_t n)
{
    int32_t acc = 0;
#if defined(MCU_MVE)
    for (; n >= 8; n -= 8, a += 8, b += 8) {
        acc = vmladavaq_s16(acc, vld1q_s16(a), vld1q_s16(b));
    }
    if (n > 0) {
        const mve_pred16_t lanes = vctp16q((uint32_t)n);
        acc = vmladavaq_p_s16(acc, vldrhq_z_s16(a, lanes), vldrhq_z_s16(b, lanes), lanes);
    }
#else
#if defined(MCU_DSP)
    /* SMLAD adds both products of a pair of int16 halves; its sum is the
     * low 32 bits of the exact one. */
    for (; n >= 2; n -= 2, a += 2, b += 2) {
        uint32_t wa, wb;
        memcpy(&wa, a, sizeof wa);
        memcpy(&wb, b, sizeof wb);
        acc = __smlad((int32_t)wa, (int32_t)wb, acc);
    }
#endif
    for (; n > 0; --n, ++a, ++b) {
        acc = mcu_add_wrap_s32(acc, (int32_t)*a * (int32_t)*b);
    }
#endif
    return acc;
}

/* One filter's feature activation, the input zero point subtracted per term. */
static int32_t feature_per_term(const mcu_svdf_s8_params *p, const int8_t *x, const int8_t *row)
{
    int32_t acc = 0, i;
    for (i = 0; i < p->input_size; ++i) {
        acc = mcu_add_wrap_s32(acc, (int32_t)row[i] * ((int32_t)x[i] - p->input_zero_point));
    }
    return acc;
}

/* The feature activation requantized to the int16 state (zero point 0). */
static int16_t feature_to_state(const mcu_svdf_s8_params *p, int32_t acc)
{
    return (int16_t)mcu_clamp_s32(mcu_mul_by_quantized_mul(acc, p->feature_multiplier, (int)p->feature_shift),
                                  INT16_MIN, INT16_MAX);
}

#if defined(MCU_MVE)
/* feature_to_state on four filters' sums plus their folded terms, stored
 * `memory_size` elements apart: mcu_mul_by_quantized_mul_n_x4 is
 * mcu_mul_by_quantized_mul per lane, VQSHL by 16 then VSHR by 16 clamps an
 * int32 to the int16 range. */
MCU_NOINLINE static void features4_to_state(const mcu_svdf_s8_params *p, const int32_t *sums, const int32_t *offsets,
                                            int16_t *newest)
{
    const int32_t shift = p->feature_shift;
    int32x4_t value = vaddq_s32(vld1q_s32(sums), vld1q_s32(offsets));
    value = mcu_mul_by_quantized_mul_n_x4(value, p->feature_multiplier, shift > 0 ? shift & 31 : 0,
                                          vdupq_n_s32(shift < 0 ? shift : 0));
    vstrhq_scatter_shifted_offset_s32(newest, vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)p->memory_size),
                                      vshrq_n_s32(vqshlq_n_s32(value, 16), 16));
}

/* Rank 1: units four at a time, each its bias plus its filter's sum, to the
 * int8 output (VQSHL by 24 then VSHR by 24 clamps to the int8 range). */
static void units4_rank1(const mcu_svdf_s8_params *p, const int32_t *sums, const int32_t *bias, int8_t *out,
                         int32_t units)
{
    const int32_t shift = p->output_shift;
    const int32_t left_shift = shift > 0 ? shift & 31 : 0;
    const int32x4_t right = vdupq_n_s32(shift < 0 ? shift : 0);
    int32_t u;
    for (u = 0; u < units; u += 4) {
        int32x4_t value = vld1q_s32(sums + u);
        if (bias != NULL) {
            value = vaddq_s32(value, vld1q_s32(bias + u));
        }
        value = vaddq_n_s32(mcu_mul_by_quantized_mul_n_x4(value, p->output_multiplier, left_shift, right),
                            p->output_zero_point);
        vstrbq_s32(out + u, vshrq_n_s32(vqshlq_n_s32(value, 24), 24));
    }
}
#endif

void mcu_svdf_s8(const mcu_svdf_s8_params *p, const mcu_svdf_s8_tensors *t)
{
    const int8_t *const input = t->input, *const weights_feature = t->weights_feature;
    const int16_t *const weights_time = t->weights_time;
    const int32_t *const bias = t->bias;
    int16_t *const state = t->state;
    int8_t *const output = t->output;
    int32_t *const filter_sums = t->filter_sums;
    const int32_t memory = p->memory_size;
    int32_t b, f, u, k;
    shift_state_s16(state, (size_t)p->batches * (size_t)p->num_filters * (size_t)memory);

    /* Feature activations: raw inner products four filters at a time plus
     * each filter's folded zero-point term (or the per-term loop). */
    for (b = 0; b < p->batches; ++b) {
        const int8_t *x = input + b * p->input_size;
        int16_t *newest = state + (size_t)b * (size_t)p->num_filters * (size_t)memory + (memory - 1);
        f = 0;
        if (p->feature_offsets != NULL) {
            for (; f + 4 <= p->num_filters; f += 4) {
                int32_t sums[4];
                mcu_dot4_s8(x, weights_feature + (size_t)f * (size_t)p->input_size, p->input_size, sums);
#if defined(MCU_MVE)
                features4_to_state(p, sums, p->feature_offsets + f, newest + (size_t)f * (size_t)memory);
                (void)k;
#else
                for (k = 0; k < 4; ++k) {
                    newest[(size_t)(f + k) * (size_t)memory] =
                        feature_to_state(p, mcu_add_wrap_s32(sums[k], p->feature_offsets[f + k]));
                }
#endif
            }
        }
        for (; f < p->num_filters; ++f) {
            newest[(size_t)f * (size_t)memory] =
                feature_to_state(p, feature_per_term(p, x, weights_feature + (size_t)f * (size_t)p->input_size));
        }
    }

    /* Each filter's history . its time weights. */
    for (b = 0; b < p->batches; ++b) {
        const int16_t *history = state + (size_t)b * (size_t)p->num_filters * (size_t)memory;
        int32_t *sums = filter_sums + b * p->num_filters;
        for (f = 0; f < p->num_filters; ++f) {
            sums[f] = dot_s16(weights_time + (size_t)f * (size_t)memory, history + (size_t)f * (size_t)memory, memory);
        }
    }

    /* Bias plus the sum of each unit's rank filters (TFLite keeps these in a
     * second int32 temporary; integer sums need no buffer to come out the
     * same), then the output scale. */
    for (b = 0; b < p->batches; ++b) {
        const int32_t *sums = filter_sums + b * p->num_filters;
        int8_t *out = output + b * p->num_units;
        u = 0;
#if defined(MCU_MVE)
        if (p->rank == 1) {
            u = p->num_units & ~(int32_t)3;
            units4_rank1(p, sums, bias, out, u);
        }
#endif
        for (; u < p->num_units; ++u) {
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

void mcu_svdf_f32(const mcu_svdf_f32_params *p, const mcu_svdf_f32_tensors *t)
{
    const float *const input = t->input, *const weights_feature = t->weights_feature;
    const float *const weights_time = t->weights_time;
    const float *const bias = t->bias;
    float *const state = t->state;
    float *const output = t->output;
    float *const filter_sums = t->filter_sums;
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
