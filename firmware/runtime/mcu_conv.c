/* Follows reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel and
 * reference_ops::Conv / DepthwiseConv (float) of TensorFlow Lite: same loop
 * nesting, so float sums are added in the same order. */
#include "mcu_conv.h"

#include "mcu_quant.h"
#include "mcu_window.h"

static int8_t requantize_s8(const mcu_conv_s8_params *p, int32_t acc, const int32_t *bias, int32_t out_c)
{
    if (bias) {
        acc += bias[out_c];
    }
    acc = mcu_mul_by_quantized_mul(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    return (int8_t)mcu_clamp_s32(acc + p->output_offset, p->act_min, p->act_max);
}

static float bias_and_clamp_f32(const mcu_conv_f32_params *p, float total, const float *bias, int32_t out_c)
{
    return mcu_clamp_f32(total + (bias ? bias[out_c] : 0.0f), p->act_min, p->act_max);
}

void mcu_conv_2d_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                    int8_t *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t b, out_y, out_x, out_c, fy, fx, ic;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                for (out_c = 0; out_c < p->output_c; ++out_c) {
                    const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
                    int32_t acc = 0;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const int8_t *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                                          mcu_window_input(&wy, fy),
                                                                          mcu_window_input(&wx, fx), group_first_c);
                            const int8_t *f_px =
                                filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                            for (ic = 0; ic < filter_in_c; ++ic) {
                                acc += (int32_t)f_px[ic] * ((int32_t)in_px[ic] + p->input_offset);
                            }
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                        requantize_s8(p, acc, bias, out_c);
                }
            }
        }
    }
}

void mcu_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter, const float *bias,
                     float *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t b, out_y, out_x, out_c, fy, fx, ic;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                for (out_c = 0; out_c < p->output_c; ++out_c) {
                    const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
                    float total = 0.0f;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const float *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                                         mcu_window_input(&wy, fy),
                                                                         mcu_window_input(&wx, fx), group_first_c);
                            const float *f_px =
                                filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                            for (ic = 0; ic < filter_in_c; ++ic) {
                                total += in_px[ic] * f_px[ic];
                            }
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                        bias_and_clamp_f32(p, total, bias, out_c);
                }
            }
        }
    }
}

void mcu_depthwise_conv_2d_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t b, out_y, out_x, ic, m, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                for (ic = 0; ic < p->input_c; ++ic) {
                    for (m = 0; m < multiplier; ++m) {
                        const int32_t out_c = m + ic * multiplier;
                        int32_t acc = 0;
                        for (fy = wy.first; fy < wy.end; ++fy) {
                            for (fx = wx.first; fx < wx.end; ++fx) {
                                const int32_t in = input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                                         mcu_window_input(&wy, fy),
                                                                         mcu_window_input(&wx, fx), ic)];
                                const int32_t f =
                                    filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
                                acc += f * (in + p->input_offset);
                            }
                        }
                        output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                            requantize_s8(p, acc, bias, out_c);
                    }
                }
            }
        }
    }
}

void mcu_depthwise_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter,
                               const float *bias, float *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t b, out_y, out_x, ic, m, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                for (ic = 0; ic < p->input_c; ++ic) {
                    for (m = 0; m < multiplier; ++m) {
                        const int32_t out_c = m + ic * multiplier;
                        float total = 0.0f;
                        for (fy = wy.first; fy < wy.end; ++fy) {
                            for (fx = wx.first; fx < wx.end; ++fx) {
                                const float in = input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                                       mcu_window_input(&wy, fy),
                                                                       mcu_window_input(&wx, fx), ic)];
                                const float f =
                                    filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
                                total += in * f;
                            }
                        }
                        output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                            bias_and_clamp_f32(p, total, bias, out_c);
                    }
                }
            }
        }
    }
}
