/* Follows TensorFlow Lite's reference_integer_ops::ConvPerChannel and
 * DepthwiseConvPerChannel for int16 input (conv.h / depthwise_conv.h).
 *
 * The sum of a window is computed exactly in int64 (each product of an int16
 * and an int8 is below 2^22 in magnitude), the bias added, and the int64
 * MultiplyByQuantizedMultiplier applied, whatever the bias type (conv.h's
 * int16 ConvPerChannel is a template on the bias type only; TFLM passes an
 * int32 bias to it as such). */
#include "mcu_conv_s16.h"

#include "mcu_quant.h"
#include "mcu_conv_geometry.h"

/* The window sum of one CONV_2D output (b, wy, wx, out_c). */
static int64_t conv_window_sum(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter, int32_t b,
                               const mcu_window_axis *wy, const mcu_window_axis *wx, int32_t out_c)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
    int64_t acc = 0;
    int32_t fy, fx, ic;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const int16_t *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                           mcu_window_input(wy, fy), mcu_window_input(wx, fx),
                                                           group_first_c);
            const int8_t *f_px = filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
            for (ic = 0; ic < filter_in_c; ++ic) {
                acc += (int32_t)in_px[ic] * (int32_t)f_px[ic];
            }
        }
    }
    return acc;
}

/* int64 bias, int32 bias (widened) or none: the sum stays in int64 either way. */
static int16_t requantize_s16(const mcu_conv_s16_params *p, int64_t acc, const int64_t *bias64, const int32_t *bias32,
                              int32_t out_c)
{
    int32_t scaled;
    if (bias64 != NULL) {
        acc += bias64[out_c];
    } else if (bias32 != NULL) {
        acc += bias32[out_c];
    }
    scaled = mcu_mul_by_quantized_mul_s64(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    return (int16_t)mcu_clamp_s32(scaled, p->act_min, p->act_max);
}

/* Memory-plan contract (mcu_planner/lowering/conv.py, WALKS): every kernel here writes
 * one output pixel at a time in raster order, reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
static void conv_2d_s16(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                        const int64_t *bias64, const int32_t *bias32, int16_t *output)
{
    int32_t out_c;
    int16_t *out = output;
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            const int64_t sum = conv_window_sum(p, input, filter, px.b, &px.wy, &px.wx, out_c);
            *out++ = requantize_s16(p, sum, bias64, bias32, out_c);
        }
    }
}

void mcu_conv_2d_s16(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter, const int64_t *bias,
                     int16_t *output)
{
    conv_2d_s16(p, input, filter, bias, NULL, output);
}

void mcu_conv_2d_s16_bias32(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                            const int32_t *bias, int16_t *output)
{
    conv_2d_s16(p, input, filter, NULL, bias, output);
}

void mcu_depthwise_conv_2d_s16(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                               const int64_t *bias, int16_t *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t out_c, fy, fx;
    int16_t *out = output;
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        /* Output channels in order: channel out_c = ic * multiplier + m reads
         * input channel ic, as the reference's (ic, m) loops. */
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            int64_t acc = 0;
            for (fy = px.wy.first; fy < px.wy.end; ++fy) {
                for (fx = px.wx.first; fx < px.wx.end; ++fx) {
                    const int16_t in = input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, px.b,
                                                             mcu_window_input(&px.wy, fy), mcu_window_input(&px.wx, fx),
                                                             out_c / multiplier)];
                    const int8_t f = filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
                    acc += (int32_t)in * (int32_t)f;
                }
            }
            *out++ = requantize_s16(p, acc, bias, NULL, out_c);
        }
    }
}
