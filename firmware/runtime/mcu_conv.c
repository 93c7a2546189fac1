/* Follows reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel and
 * reference_ops::Conv / DepthwiseConv (float) of TensorFlow Lite: same loop
 * nesting, so float sums are added in the same order. */
#include "mcu_conv.h"

#include "mcu_quant.h"

static size_t nhwc(int32_t h_size, int32_t w_size, int32_t c_size, int32_t b, int32_t y, int32_t x, int32_t c)
{
    return (((size_t)b * (size_t)h_size + (size_t)y) * (size_t)w_size + (size_t)x) * (size_t)c_size + (size_t)c;
}

void mcu_conv_2d_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                    int8_t *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t b, out_y, out_x, out_c, fy, fx, ic;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_h;
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_w;
                for (out_c = 0; out_c < p->output_c; ++out_c) {
                    const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
                    int32_t acc = 0;
                    for (fy = 0; fy < p->filter_h; ++fy) {
                        const int32_t in_y = in_y_origin + p->dilation_h * fy;
                        if (in_y < 0 || in_y >= p->input_h) {
                            continue;
                        }
                        for (fx = 0; fx < p->filter_w; ++fx) {
                            const int32_t in_x = in_x_origin + p->dilation_w * fx;
                            const int8_t *in_px;
                            const int8_t *f_px;
                            if (in_x < 0 || in_x >= p->input_w) {
                                continue;
                            }
                            in_px = input + nhwc(p->input_h, p->input_w, p->input_c, b, in_y, in_x, group_first_c);
                            f_px = filter + nhwc(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                            for (ic = 0; ic < filter_in_c; ++ic) {
                                acc += (int32_t)f_px[ic] * ((int32_t)in_px[ic] + p->input_offset);
                            }
                        }
                    }
                    if (bias) {
                        acc += bias[out_c];
                    }
                    acc = mcu_mul_by_quantized_mul(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
                    acc += p->output_offset;
                    output[nhwc(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                        (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
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
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_h;
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_w;
                for (out_c = 0; out_c < p->output_c; ++out_c) {
                    const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
                    float total = 0.0f;
                    for (fy = 0; fy < p->filter_h; ++fy) {
                        const int32_t in_y = in_y_origin + p->dilation_h * fy;
                        if (in_y < 0 || in_y >= p->input_h) {
                            continue;
                        }
                        for (fx = 0; fx < p->filter_w; ++fx) {
                            const int32_t in_x = in_x_origin + p->dilation_w * fx;
                            const float *in_px;
                            const float *f_px;
                            if (in_x < 0 || in_x >= p->input_w) {
                                continue;
                            }
                            in_px = input + nhwc(p->input_h, p->input_w, p->input_c, b, in_y, in_x, group_first_c);
                            f_px = filter + nhwc(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                            for (ic = 0; ic < filter_in_c; ++ic) {
                                total += in_px[ic] * f_px[ic];
                            }
                        }
                    }
                    output[nhwc(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                        mcu_clamp_f32(total + (bias ? bias[out_c] : 0.0f), p->act_min, p->act_max);
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
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_h;
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_w;
                for (ic = 0; ic < p->input_c; ++ic) {
                    for (m = 0; m < multiplier; ++m) {
                        const int32_t out_c = m + ic * multiplier;
                        int32_t acc = 0;
                        for (fy = 0; fy < p->filter_h; ++fy) {
                            const int32_t in_y = in_y_origin + p->dilation_h * fy;
                            if (in_y < 0 || in_y >= p->input_h) {
                                continue;
                            }
                            for (fx = 0; fx < p->filter_w; ++fx) {
                                const int32_t in_x = in_x_origin + p->dilation_w * fx;
                                if (in_x < 0 || in_x >= p->input_w) {
                                    continue;
                                }
                                acc += (int32_t)filter[nhwc(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)] *
                                       ((int32_t)input[nhwc(p->input_h, p->input_w, p->input_c, b, in_y, in_x, ic)] +
                                        p->input_offset);
                            }
                        }
                        if (bias) {
                            acc += bias[out_c];
                        }
                        acc = mcu_mul_by_quantized_mul(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
                        acc += p->output_offset;
                        output[nhwc(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                            (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
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
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_h;
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_w;
                for (ic = 0; ic < p->input_c; ++ic) {
                    for (m = 0; m < multiplier; ++m) {
                        const int32_t out_c = m + ic * multiplier;
                        float total = 0.0f;
                        for (fy = 0; fy < p->filter_h; ++fy) {
                            const int32_t in_y = in_y_origin + p->dilation_h * fy;
                            if (in_y < 0 || in_y >= p->input_h) {
                                continue;
                            }
                            for (fx = 0; fx < p->filter_w; ++fx) {
                                const int32_t in_x = in_x_origin + p->dilation_w * fx;
                                if (in_x < 0 || in_x >= p->input_w) {
                                    continue;
                                }
                                total += input[nhwc(p->input_h, p->input_w, p->input_c, b, in_y, in_x, ic)] *
                                         filter[nhwc(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
                            }
                        }
                        output[nhwc(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                            mcu_clamp_f32(total + (bias ? bias[out_c] : 0.0f), p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
