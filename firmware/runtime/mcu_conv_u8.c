/* Follows reference_ops::Conv (uint8) and reference_ops::DepthwiseConv
 * (uint8) of TensorFlow Lite.  Both round the output with
 * MultiplyByQuantizedMultiplier; the sums are exact int32 arithmetic, so
 * visiting only the taps inside the input (mcu_window.h) gives the same
 * result as the reference's skipped padding taps. */
#include "mcu_conv_u8.h"

#include "mcu_quant.h"
#include "mcu_conv_geometry.h"

static uint8_t requantize_u8(const mcu_conv_u8_params *p, int32_t acc, const int32_t *bias, int32_t out_c)
{
    if (bias) {
        acc += bias[out_c];
    }
    acc = mcu_mul_by_quantized_mul(acc, p->output_multiplier, (int)p->output_shift);
    return (uint8_t)mcu_clamp_s32(acc + p->output_offset, p->act_min, p->act_max);
}

/* sum((w + filter_offset) * (x + input_offset)) over n contiguous taps. */
static int32_t dot_u8(const uint8_t *x, const uint8_t *w, int32_t n, int32_t input_offset, int32_t filter_offset)
{
    int32_t acc = 0, i;
    for (i = 0; i < n; ++i) {
        acc += ((int32_t)w[i] + filter_offset) * ((int32_t)x[i] + input_offset);
    }
    return acc;
}

/* Memory-plan contract (mcu_planner/lowering/conv.py, WALKS): both kernels write one
 * output pixel at a time in raster order, reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
void mcu_conv_2d_u8(const mcu_conv_u8_params *p, const uint8_t *input, const uint8_t *filter, const int32_t *bias,
                    uint8_t *output)
{
    const int32_t filter_in_c = p->filter_in_c_or_multiplier;
    const int32_t filters_per_group = p->output_c / (p->input_c / filter_in_c);
    int32_t out_c, fy, fx;
    uint8_t *out = output;
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            const int32_t group_first_c = (out_c / filters_per_group) * filter_in_c;
            int32_t acc = 0;
            for (fy = px.wy.first; fy < px.wy.end; ++fy) {
                for (fx = px.wx.first; fx < px.wx.end; ++fx) {
                    const uint8_t *in_px =
                        input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, px.b, mcu_window_input(&px.wy, fy),
                                                mcu_window_input(&px.wx, fx), group_first_c);
                    const uint8_t *f_px =
                        filter + mcu_nhwc_offset(p->filter_h, p->filter_w, filter_in_c, out_c, fy, fx, 0);
                    acc += dot_u8(in_px, f_px, filter_in_c, p->input_offset, p->filter_offset);
                }
            }
            *out++ = requantize_u8(p, acc, bias, out_c);
        }
    }
}

void mcu_depthwise_conv_2d_u8(const mcu_conv_u8_params *p, const uint8_t *input, const uint8_t *filter,
                              const int32_t *bias, uint8_t *output)
{
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    const size_t input_tap = (size_t)p->dilation_w * (size_t)p->input_c;
    const size_t filter_tap = (size_t)p->output_c;
    int32_t out_c, fy, fx;
    uint8_t *out = output;
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        /* Output channels in order: channel out_c reads input channel
         * out_c / multiplier, as the reference's (ic, m) loops. */
        for (out_c = 0; out_c < p->output_c; ++out_c) {
            int32_t acc = 0;
            /* A window with no column inside the input sums nothing
             * (and must not form a pointer to its first column). */
            for (fy = px.wy.first; fy < px.wy.end && px.wx.first < px.wx.end; ++fy) {
                const uint8_t *x = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, px.b,
                                                           mcu_window_input(&px.wy, fy),
                                                           mcu_window_input(&px.wx, px.wx.first), out_c / multiplier);
                const uint8_t *w =
                    filter + ((size_t)fy * (size_t)p->filter_w + (size_t)px.wx.first) * filter_tap + (size_t)out_c;
                for (fx = px.wx.first; fx < px.wx.end; ++fx, x += input_tap, w += filter_tap) {
                    acc += ((int32_t)*w + p->filter_offset) * ((int32_t)*x + p->input_offset);
                }
            }
            *out++ = requantize_u8(p, acc, bias, out_c);
        }
    }
}
