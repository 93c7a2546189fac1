/* Follows reference_integer_ops::ConvPerChannel and DepthwiseConvPerChannel
 * of TensorFlow Lite: every tap of a window inside the input, the input
 * offset added per tap; and TinyEngine's in-place depthwise convolution. */
#include "mcu_conv_reference.h"

#include "mcu_conv.h"
#include "mcu_conv_internal.h"

/* The reference loop: any grouping, input offset added per tap. */
void mcu_conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                      const int32_t *bias, int8_t *output)
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


/* The reference's sum for output channel out_c of one pixel: every tap of
 * the window inside the input, input channel in_c, input offset per tap. */
static int32_t depthwise_tap_sum_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, int32_t b,
                                    const mcu_window_axis *wy, const mcu_window_axis *wx, int32_t in_c, int32_t out_c)
{
    int32_t acc = 0, fy, fx;
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const int32_t in = input[mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, mcu_window_input(wy, fy),
                                                     mcu_window_input(wx, fx), in_c)];
            const int32_t f = filter[mcu_nhwc_offset(p->filter_h, p->filter_w, p->output_c, 0, fy, fx, out_c)];
            acc += f * (in + p->input_offset);
        }
    }
    return acc;
}

void mcu_depthwise_conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input,
                                                const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t b, out_y, out_x, ic, m;
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
                        const int32_t acc = depthwise_tap_sum_s8(p, input, filter, b, &wy, &wx, ic, out_c);
                        output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, out_c)] =
                            requantize_s8(p, acc, bias, out_c);
                    }
                }
            }
        }
    }
}


/* TinyEngine's in-place depthwise convolution (depth multiplier 1): channel
 * by channel, every output value of the channel goes to `scratch` (batches x
 * output_h x output_w values), then over the channel's bytes in `output`.
 * Input and output have the same channel count, so an output byte of channel
 * c is an input byte of channel c: with `output` at `input` (the plan puts
 * it there) a channel is overwritten only once no output needs it.  The sums
 * are the reference's (integers, any order). */
void mcu_depthwise_conv_2d_s8_in_place(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                       const int32_t *bias, int8_t *output, int8_t *scratch)
{
    int32_t c, b, out_y, out_x;
    for (c = 0; c < p->output_c; ++c) {
        int8_t *value = scratch;
        for (b = 0; b < p->batches; ++b) {
            for (out_y = 0; out_y < p->output_h; ++out_y) {
                const mcu_window_axis wy =
                    mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
                for (out_x = 0; out_x < p->output_w; ++out_x) {
                    const mcu_window_axis wx =
                        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                    *value++ = requantize_s8(p, depthwise_tap_sum_s8(p, input, filter, b, &wy, &wx, c, c), bias, c);
                }
            }
        }
        value = scratch;
        for (b = 0; b < p->batches; ++b) {
            for (out_y = 0; out_y < p->output_h; ++out_y) {
                for (out_x = 0; out_x < p->output_w; ++out_x) {
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, b, out_y, out_x, c)] = *value++;
                }
            }
        }
    }
}
