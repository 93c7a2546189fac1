/* Follows reference_ops::Conv and DepthwiseConv (float) of TensorFlow Lite:
 * the same loop nesting, so float sums are added in the same order. */
#include "mcu_conv_f32.h"

#include "mcu_quant.h"
#include "mcu_window.h"

static float bias_and_clamp_f32(const mcu_conv_f32_params *p, float total, const float *bias, int32_t out_c)
{
    return mcu_clamp_f32(total + (bias ? bias[out_c] : 0.0f), p->act_min, p->act_max);
}



/* Four output channels of one group per pass: the input value each tap reads
 * is loaded once for all four, and the four sums are independent chains (a
 * single float sum waits on each add's latency).  Each channel's sum still
 * adds its products in the reference's order (fy, fx, ic), so the outputs are
 * the reference's to the bit. */
static void conv_f32_channels4(const mcu_conv_f32_params *p, const float *input, const float *filter,
                               const float *bias, float *output, int32_t b, const mcu_window_axis *wy,
                               const mcu_window_axis *wx, int32_t out_c, int32_t group_first_c)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filter_stride = p->filter_h * p->filter_w * filter_in_c;
    float total0 = 0.0f, total1 = 0.0f, total2 = 0.0f, total3 = 0.0f;
    int32_t fy, fx, ic;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const float *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                         mcu_window_input(wy, fy), mcu_window_input(wx, fx),
                                                         group_first_c);
            const float *f0 = filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
            const float *f1 = f0 + filter_stride;
            const float *f2 = f1 + filter_stride;
            const float *f3 = f2 + filter_stride;
            for (ic = 0; ic < filter_in_c; ++ic) {
                const float in = in_px[ic];
                total0 += in * f0[ic];
                total1 += in * f1[ic];
                total2 += in * f2[ic];
                total3 += in * f3[ic];
            }
        }
    }
    output[out_c] = bias_and_clamp_f32(p, total0, bias, out_c);
    output[out_c + 1] = bias_and_clamp_f32(p, total1, bias, out_c + 1);
    output[out_c + 2] = bias_and_clamp_f32(p, total2, bias, out_c + 2);
    output[out_c + 3] = bias_and_clamp_f32(p, total3, bias, out_c + 3);
}

/* The sum of output channel out_c of group_first_c's group at one pixel, its
 * products in the reference's order (fy, fx, ic). */
static float conv_f32_sum(const mcu_conv_f32_params *p, const float *input, const float *filter, int32_t b,
                          const mcu_window_axis *wy, const mcu_window_axis *wx, int32_t out_c, int32_t group_first_c)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    float total = 0.0f;
    int32_t fy, fx, ic;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const float *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                         mcu_window_input(wy, fy), mcu_window_input(wx, fx),
                                                         group_first_c);
            const float *f_px = filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
            for (ic = 0; ic < filter_in_c; ++ic) {
                total += in_px[ic] * f_px[ic];
            }
        }
    }
    return total;
}

void mcu_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter, const float *bias,
                     float *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t b, out_y, out_x, out_c;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                float *out_px = output + mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, 0);
                for (out_c = 0; out_c < p->output_c;) {
                    const int32_t group = out_c / filters_per_group;
                    const int32_t group_first_c = group * filter_in_c;
                    if (out_c + 4 <= (group + 1) * filters_per_group) {
                        conv_f32_channels4(p, input, filter, bias, out_px, b, &wy, &wx, out_c, group_first_c);
                        out_c += 4;
                    } else {
                        out_px[out_c] = bias_and_clamp_f32(
                            p, conv_f32_sum(p, input, filter, b, &wy, &wx, out_c, group_first_c), bias, out_c);
                        ++out_c;
                    }
                }
            }
        }
    }
}


/* The sum of output channel out_c at one pixel, its taps in the reference's
 * order (fy, fx). */
static float depthwise_f32_sum(const mcu_conv_f32_params *p, const float *input, const float *filter, int32_t b,
                               const mcu_window_axis *wy, const mcu_window_axis *wx, int32_t out_c)
{
    const int32_t ic = out_c / p->filter_in_c_or_multiplier;
    float total = 0.0f;
    int32_t fy, fx;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            total += input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, mcu_window_input(wy, fy),
                                           mcu_window_input(wx, fx), ic)] *
                     filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
        }
    }
    return total;
}

/* Four output channels per pass, as conv_f32_channels4: four independent sums,
 * each in the reference's order. */
static void depthwise_f32_channels4(const mcu_conv_f32_params *p, const float *input, const float *filter,
                                    const float *bias, float *out_px, int32_t b, const mcu_window_axis *wy,
                                    const mcu_window_axis *wx, int32_t out_c)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    const int32_t ic0 = out_c / multiplier, ic1 = (out_c + 1) / multiplier;
    const int32_t ic2 = (out_c + 2) / multiplier, ic3 = (out_c + 3) / multiplier;
    float total0 = 0.0f, total1 = 0.0f, total2 = 0.0f, total3 = 0.0f;
    int32_t fy, fx;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const float *in_px = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                         mcu_window_input(wy, fy), mcu_window_input(wx, fx), 0);
            const float *f_px = filter + mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c);
            total0 += in_px[ic0] * f_px[0];
            total1 += in_px[ic1] * f_px[1];
            total2 += in_px[ic2] * f_px[2];
            total3 += in_px[ic3] * f_px[3];
        }
    }
    out_px[out_c] = bias_and_clamp_f32(p, total0, bias, out_c);
    out_px[out_c + 1] = bias_and_clamp_f32(p, total1, bias, out_c + 1);
    out_px[out_c + 2] = bias_and_clamp_f32(p, total2, bias, out_c + 2);
    out_px[out_c + 3] = bias_and_clamp_f32(p, total3, bias, out_c + 3);
}

void mcu_depthwise_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter,
                               const float *bias, float *output)
{
    int32_t b, out_y, out_x, out_c;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                float *out_px = output + mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, 0);
                for (out_c = 0; out_c + 4 <= p->output_c; out_c += 4) {
                    depthwise_f32_channels4(p, input, filter, bias, out_px, b, &wy, &wx, out_c);
                }
                for (; out_c < p->output_c; ++out_c) {
                    out_px[out_c] =
                        bias_and_clamp_f32(p, depthwise_f32_sum(p, input, filter, b, &wy, &wx, out_c), bias, out_c);
                }
            }
        }
    }
}
