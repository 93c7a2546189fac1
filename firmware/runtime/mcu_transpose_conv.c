/* Follows TensorFlow Lite's reference_ops::TransposeConv (float32) and
 * reference_integer_ops::TransposeConv (int8 with an int32 accumulator, int16
 * with an int64 one), gathering where they scatter (see the header). */
#include "mcu_transpose_conv.h"

#include "mcu_quant.h"
#include "mcu_window.h"

/* Input coordinates [first, end) whose window covers output coordinate
 * `out_pos` along one axis: input i reaches outputs i * stride - pad + tap for
 * tap in [0, taps). */
typedef struct {
    int32_t first;
    int32_t end;
    int32_t tap_of_first; /* the filter tap input `first` uses; one stride less per later input */
} gather_axis;

static gather_axis gather_axis_at(int32_t out_pos, int32_t stride, int32_t pad, int32_t taps, int32_t input_size)
{
    gather_axis axis;
    const int32_t reach = out_pos + pad; /* = i * stride + tap */
    /* Smallest i with tap = reach - i * stride < taps: i > (reach - taps) / stride. */
    const int32_t low = reach - taps + 1;
    axis.first = low <= 0 ? 0 : (low + stride - 1) / stride;
    /* Largest i with tap >= 0: i <= reach / stride (none when reach < 0). */
    axis.end = reach < 0 ? 0 : MCU_MIN(reach / stride + 1, input_size);
    if (axis.end < axis.first) {
        axis.end = axis.first;
    }
    axis.tap_of_first = reach - axis.first * stride;
    return axis;
}

/* The exact sum of one output element's products (input + input_offset) *
 * filter, for the integer kernels: each product is below 2^24 in magnitude. */
#define MCU_TRANSPOSE_CONV_SUM(in_t)                                                                           \
    static int64_t transpose_conv_sum_##in_t(const mcu_transpose_conv_params *p, const in_t *input,            \
                                             const int8_t *filter, int32_t b, const gather_axis *gy,           \
                                             const gather_axis *gx, int32_t out_c)                             \
    {                                                                                                          \
        int64_t acc = 0;                                                                                       \
        int32_t iy, ix, ic;                                                                                    \
        for (iy = gy->first; iy < gy->end; ++iy) {                                                             \
            const int32_t fy = gy->tap_of_first - (iy - gy->first) * p->stride_h;                             \
            for (ix = gx->first; ix < gx->end; ++ix) {                                                         \
                const int32_t fx = gx->tap_of_first - (ix - gx->first) * p->stride_w;                          \
                const in_t *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, iy, ix, 0); \
                const int8_t *f_px =                                                                           \
                    filter + mcu_nhwc_offset(p->filter_h, p->filter_w, p->input_c, out_c, fy, fx, 0);          \
                for (ic = 0; ic < p->input_c; ++ic) {                                                          \
                    acc += ((int32_t)in_px[ic] + p->input_offset) * (int32_t)f_px[ic];                         \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        return acc;                                                                                            \
    }

MCU_TRANSPOSE_CONV_SUM(int8_t)
MCU_TRANSPOSE_CONV_SUM(int16_t)

/* Calls `element` for every output element in order, with the input pixels
 * whose windows cover it. */
typedef void (*element_fn)(const mcu_transpose_conv_params *p, const void *input, const int8_t *filter,
                           const void *bias, void *output, size_t out_index, int32_t b, const gather_axis *gy,
                           const gather_axis *gx, int32_t out_c);

static void for_each_output(const mcu_transpose_conv_params *p, const void *input, const int8_t *filter,
                            const void *bias, void *output, element_fn element)
{
    int32_t b, oy, ox, oc;
    size_t out_index = 0;
    for (b = 0; b < p->batches; ++b) {
        for (oy = 0; oy < p->output_h; ++oy) {
            const gather_axis gy = gather_axis_at(oy, p->stride_h, p->pad_h, p->filter_h, p->input_h);
            for (ox = 0; ox < p->output_w; ++ox) {
                const gather_axis gx = gather_axis_at(ox, p->stride_w, p->pad_w, p->filter_w, p->input_w);
                for (oc = 0; oc < p->output_c; ++oc) {
                    element(p, input, filter, bias, output, out_index++, b, &gy, &gx, oc);
                }
            }
        }
    }
}

static void element_s8(const mcu_transpose_conv_params *p, const void *input, const int8_t *filter,
                       const void *bias, void *output, size_t out_index, int32_t b, const gather_axis *gy,
                       const gather_axis *gx, int32_t out_c)
{
    /* The reference's int32 scratch wraps; so does this (unsigned, defined in C). */
    uint32_t acc = (uint32_t)(uint64_t)transpose_conv_sum_int8_t(p, (const int8_t *)input, filter, b, gy, gx, out_c);
    int32_t scaled;
    if (bias != NULL) {
        acc += (uint32_t)((const int32_t *)bias)[out_c];
    }
    scaled = mcu_mul_by_quantized_mul((int32_t)acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    ((int8_t *)output)[out_index] = (int8_t)mcu_clamp_s32(scaled + p->output_offset, p->act_min, p->act_max);
}

static void element_s16(const mcu_transpose_conv_params *p, const void *input, const int8_t *filter,
                        const void *bias, void *output, size_t out_index, int32_t b, const gather_axis *gy,
                        const gather_axis *gx, int32_t out_c)
{
    int64_t acc = transpose_conv_sum_int16_t(p, (const int16_t *)input, filter, b, gy, gx, out_c);
    int32_t scaled;
    if (bias != NULL) {
        acc += ((const int64_t *)bias)[out_c];
    }
    scaled = mcu_mul_by_quantized_mul_s64(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    ((int16_t *)output)[out_index] = (int16_t)mcu_clamp_s32(scaled, p->act_min, p->act_max);
}

void mcu_transpose_conv_s8(const mcu_transpose_conv_params *p, const int8_t *input, const int8_t *filter,
                           const int32_t *bias, int8_t *output)
{
    for_each_output(p, input, filter, bias, output, element_s8);
}

void mcu_transpose_conv_s16(const mcu_transpose_conv_params *p, const int16_t *input, const int8_t *filter,
                            const int64_t *bias, int16_t *output)
{
    for_each_output(p, input, filter, bias, output, element_s16);
}

void mcu_transpose_conv_f32(const mcu_transpose_conv_f32_params *p, const float *input, const float *filter,
                            const float *bias, float *output)
{
    int32_t b, oy, ox, oc, iy, ix, ic;
    for (b = 0; b < p->batches; ++b) {
        for (oy = 0; oy < p->output_h; ++oy) {
            const gather_axis gy = gather_axis_at(oy, p->stride_h, p->pad_h, p->filter_h, p->input_h);
            for (ox = 0; ox < p->output_w; ++ox) {
                const gather_axis gx = gather_axis_at(ox, p->stride_w, p->pad_w, p->filter_w, p->input_w);
                float *out_px = output + mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, oy, ox, 0);
                for (oc = 0; oc < p->output_c; ++oc) {
                    float acc = 0.0f;
                    for (iy = gy.first; iy < gy.end; ++iy) {
                        const int32_t fy = gy.tap_of_first - (iy - gy.first) * p->stride_h;
                        for (ix = gx.first; ix < gx.end; ++ix) {
                            const int32_t fx = gx.tap_of_first - (ix - gx.first) * p->stride_w;
                            const float *in_px =
                                input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, iy, ix, 0);
                            const float *f_px =
                                filter + mcu_nhwc_offset(p->filter_h, p->filter_w, p->input_c, oc, fy, fx, 0);
                            for (ic = 0; ic < p->input_c; ++ic) {
                                acc += in_px[ic] * f_px[ic];
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    out_px[oc] = mcu_clamp_f32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}
