/* Follows TensorFlow Lite's hybrid convolutions: EvalHybrid (one filter
 * scale: symmetric input, optimized_ops::HybridConv, whose im2col pads with
 * the quantized zero 0), EvalHybridPerChannel with
 * reference_ops::HybridConvPerChannel and, for DEPTHWISE_CONV_2D,
 * reference_integer_ops::DepthwiseConvHybridPerChannel (asymmetric input,
 * taps outside the image skipped).  Each input value is quantized where a
 * window reads it (mcu_hybrid.h), so no scratch buffer is needed. */
#include "mcu_conv_hybrid.h"

#include "mcu_hybrid.h"
#include "mcu_quant.h"
#include "mcu_conv_geometry.h"

static float rescale_and_clamp(const mcu_conv_hybrid_params *p, const mcu_hybrid_quantization *q, int32_t acc,
                               const float *bias, int32_t out_c)
{
    const float filter_scale = p->filter_scales[p->per_channel ? out_c : 0];
    float value;
    if (p->scales_first) {
        /* HybridConv folds the filter scale into the batch factor first; the
         * depthwise kernel multiplies the two scales first too. */
        value = (float)acc * (filter_scale * q->scale);
    } else {
        value = (float)acc * filter_scale * q->scale;
    }
    if (bias) {
        value += bias[out_c];
    }
    return mcu_clamp_f32(value, p->act_min, p->act_max);
}

/* Each batch's image is quantized on its own: once, as the walk enters it. */
static void enter_image(const mcu_conv_hybrid_params *p, const float *input, const mcu_conv_pixel *px,
                        mcu_hybrid_quantization *q)
{
    if (px->out_y == 0 && px->out_x == 0) {
        const int32_t image = p->input_h * p->input_w * p->input_c;
        *q = mcu_hybrid_quantization_of(input + (size_t)px->b * (size_t)image, image, p->asymmetric);
    }
}

void mcu_conv_2d_hybrid(const mcu_conv_hybrid_params *p, const float *input, const int8_t *filter, const float *bias,
                        float *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t out_c, fy, fx, ic;
    float *out = output;
    mcu_hybrid_quantization q = {0};
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        enter_image(p, input, &px, &q);
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
            int32_t acc = 0;
            for (fy = px.wy.first; fy < px.wy.end; ++fy) {
                for (fx = px.wx.first; fx < px.wx.end; ++fx) {
                    const float *in_px =
                        input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, px.b, mcu_window_input(&px.wy, fy),
                                                mcu_window_input(&px.wx, fx), group_first_c);
                    const int8_t *f_px =
                        filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                    for (ic = 0; ic < filter_in_c; ++ic) {
                        acc += (int32_t)f_px[ic] * ((int32_t)mcu_hybrid_quantize(&q, in_px[ic]) - q.zero_point);
                    }
                }
            }
            *out++ = rescale_and_clamp(p, &q, acc, bias, out_c);
        }
    }
}

void mcu_depthwise_conv_2d_hybrid(const mcu_conv_hybrid_params *p, const float *input, const int8_t *filter,
                                  const float *bias, float *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t out_c, fy, fx;
    float *out = output;
    mcu_hybrid_quantization q = {0};
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        enter_image(p, input, &px, &q);
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            int32_t acc = 0;
            for (fy = px.wy.first; fy < px.wy.end; ++fy) {
                for (fx = px.wx.first; fx < px.wx.end; ++fx) {
                    const float x = input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, px.b,
                                                          mcu_window_input(&px.wy, fy), mcu_window_input(&px.wx, fx),
                                                          out_c / multiplier)];
                    const int32_t w = filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
                    acc += w * ((int32_t)mcu_hybrid_quantize(&q, x) - q.zero_point);
                }
            }
            *out++ = rescale_and_clamp(p, &q, acc, bias, out_c);
        }
    }
}
