/* Follows TensorFlow Lite's reference_integer_ops::ConvPerChannel and
 * DepthwiseConvPerChannel for int16 input (conv.h / depthwise_conv.h).
 *
 * The sum of a window is computed exactly in int64 (each product of an int16
 * and an int8 is below 2^22 in magnitude), the bias added, and the int64
 * MultiplyByQuantizedMultiplier applied, whatever the bias type (conv.h's
 * int16 ConvPerChannel is a template on the bias type only; TFLM passes an
 * int32 bias to it as such).
 *
 * The fast paths (no dilation, no groups, depth multiplier 1) add the
 * products in int32 runs of at most S16_PRODUCTS_IN_INT32 and widen each run
 * to int64: every product is at most 2^22 in magnitude (-32768 * -128), so
 * 511 of them sum to less than 2^31 and the run's int32 sum is exact; exact
 * sums added in any order give the reference's int64 sum.  On the DSP
 * extension SMLAD adds two products at a time, on Helium VMLADAVA eight. */
#include "mcu_conv_s16.h"

#include <string.h>

#include "mcu_conv_geometry.h"
#include "mcu_dsp.h"
#include "mcu_quant.h"

#define S16_PRODUCTS_IN_INT32 511
/* The longest window gathered into a column on the stack (zeros where the
 * window lies in the padding: the 16x8 input zero point is 0, so a padded
 * tap adds a zero product, as the reference's skipped one adds nothing). */
#define S16_COLUMN_MAX 64
/* Output channels per pass over a window. */
#define S16_CHANNEL_BLOCK 4

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
static inline int64_t with_bias_s16(int64_t acc, const int64_t *bias64, const int32_t *bias32, int32_t out_c)
{
    if (bias64 != NULL) {
        return acc + bias64[out_c];
    }
    return bias32 != NULL ? acc + bias32[out_c] : acc;
}

static inline int16_t output_s16(const mcu_conv_s16_params *p, int64_t acc, int32_t out_c)
{
    const int32_t scaled = mcu_mul_by_quantized_mul_s64(acc, p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    return (int16_t)mcu_clamp_s32(scaled, p->act_min, p->act_max);
}

static int16_t requantize_s16(const mcu_conv_s16_params *p, int64_t acc, const int64_t *bias64, const int32_t *bias32,
                              int32_t out_c)
{
    return output_s16(p, with_bias_s16(acc, bias64, bias32, out_c), out_c);
}

/* acc[k] += sum_i x[i] * w[k * w_stride + i] over n <= S16_PRODUCTS_IN_INT32
 * values, for output channels k < count (count <= S16_CHANNEL_BLOCK; missing
 * channels reread channel 0's filter and are dropped). */
MCU_NOINLINE MCU_SOURCE_ORDER static void dot_block_s16(const int16_t *x, const int8_t *w, int32_t w_stride, int32_t n, int32_t count,
                                       int64_t acc[S16_CHANNEL_BLOCK])
{
    const int8_t *const w0 = w;
    const int8_t *const w1 = count > 1 ? w0 + w_stride : w0;
    const int8_t *const w2 = count > 2 ? w1 + w_stride : w0;
    const int8_t *const w3 = count > 3 ? w2 + w_stride : w0;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t i = 0;
#if defined(MCU_MVE)
    for (; i < n; i += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)(n - i));
        const int16x8_t xv = vldrhq_z_s16(x + i, lanes);
        a0 = vmladavaq_s16(a0, xv, vldrbq_z_s16(w0 + i, lanes));
        a1 = vmladavaq_s16(a1, xv, vldrbq_z_s16(w1 + i, lanes));
        a2 = vmladavaq_s16(a2, xv, vldrbq_z_s16(w2 + i, lanes));
        a3 = vmladavaq_s16(a3, xv, vldrbq_z_s16(w3 + i, lanes));
    }
#elif defined(MCU_DSP)
    for (; i + 4 <= n; i += 4) {
        /* x0..x3 as the pairs (x0, x2) and (x1, x3) that SXTB16 makes of
         * four weights (bytes 0, 2 and 1, 3). */
        uint32_t lo, hi, word;
        int32_t x02, x13;
        memcpy(&lo, x + i, sizeof lo);
        memcpy(&hi, x + i + 2, sizeof hi);
        __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(x02) : "r"(lo), "r"(hi));
        __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(x13) : "r"(hi), "r"(lo));
        word = mcu_load_s8x4(w0 + i);
        a0 = __smlad(mcu_s8x4_even(word), x02, a0);
        a0 = __smlad(mcu_s8x4_odd(word), x13, a0);
        word = mcu_load_s8x4(w1 + i);
        a1 = __smlad(mcu_s8x4_even(word), x02, a1);
        a1 = __smlad(mcu_s8x4_odd(word), x13, a1);
        word = mcu_load_s8x4(w2 + i);
        a2 = __smlad(mcu_s8x4_even(word), x02, a2);
        a2 = __smlad(mcu_s8x4_odd(word), x13, a2);
        word = mcu_load_s8x4(w3 + i);
        a3 = __smlad(mcu_s8x4_even(word), x02, a3);
        a3 = __smlad(mcu_s8x4_odd(word), x13, a3);
    }
#endif
    for (; i < n; ++i) {
        const int32_t xi = x[i];
        a0 += xi * w0[i];
        a1 += xi * w1[i];
        a2 += xi * w2[i];
        a3 += xi * w3[i];
    }
    acc[0] += a0;
    acc[1] += a1;
    acc[2] += a2;
    acc[3] += a3;
}

/* One pixel's window as `rows` runs of `run` values: input runs `in_step`
 * apart, filter runs `f_step` apart, each output channel's filter `f_stride`
 * further on. */
typedef struct {
    const int16_t *in;
    int32_t in_step;
    const int8_t *f;
    int32_t f_step;
    int32_t f_stride;
    int32_t rows;
    int32_t run;
} s16_window_runs;

/* The window sums of one pixel, written requantized to out[0, output_c). */
static void conv_pixel_s16(const mcu_conv_s16_params *p, const s16_window_runs *win, const int64_t *bias64,
                           const int32_t *bias32, int16_t *out)
{
    int32_t oc, r, k;
    for (oc = 0; oc < p->output_c; oc += S16_CHANNEL_BLOCK) {
        const int32_t count = MCU_MIN(S16_CHANNEL_BLOCK, p->output_c - oc);
        int64_t acc[S16_CHANNEL_BLOCK] = {0, 0, 0, 0};
        for (r = 0; r < win->rows; ++r) {
            dot_block_s16(win->in + (size_t)r * (size_t)win->in_step,
                          win->f + (size_t)oc * (size_t)win->f_stride + (size_t)r * (size_t)win->f_step,
                          win->f_stride, win->run, count, acc);
        }
        for (k = 0; k < count; ++k) {
            out[oc + k] = output_s16(p, with_bias_s16(acc[k], bias64, bias32, oc + k), oc + k);
        }
    }
}

/* Whether conv_2d_s16_fast computes this convolution: no dilation, no
 * groups, and a filter row short enough for one int32 run. */
static int conv_s16_has_fast_path(const mcu_conv_s16_params *p)
{
    return p->dilation_h == 1 && p->dilation_w == 1 && p->filter_in_c_or_multiplier == p->input_c &&
           p->filter_w * p->input_c <= S16_PRODUCTS_IN_INT32;
}

/* Small windows are gathered into a column (one run over the whole filter);
 * 1x1 filters read the input pixel in place; other windows run row by row
 * over the taps inside the input. */
static void conv_2d_s16_fast(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                             const int64_t *bias64, const int32_t *bias32, int16_t *output)
{
    const int32_t in_c = p->input_c;
    const int32_t window = p->filter_h * p->filter_w * in_c;
    const int gather = window <= S16_COLUMN_MAX && p->filter_h * p->filter_w > 1;
    int16_t column[S16_COLUMN_MAX];
    int16_t *out = output;
    mcu_conv_pixel px;
    s16_window_runs win;
    win.f_stride = window;
    win.f_step = p->filter_w * in_c;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        if (gather) {
            int32_t fy, fx;
            int16_t *col = column;
            for (fy = 0; fy < p->filter_h; ++fy) {
                for (fx = 0; fx < p->filter_w; ++fx, col += in_c) {
                    if (fy >= px.wy.first && fy < px.wy.end && fx >= px.wx.first && fx < px.wx.end) {
                        memcpy(col,
                               input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, px.b, px.wy.origin + fy,
                                                       px.wx.origin + fx, 0),
                               (size_t)in_c * sizeof *col);
                    } else {
                        memset(col, 0, (size_t)in_c * sizeof *col);
                    }
                }
            }
            win.in = column;
            win.in_step = 0;
            win.f = filter;
            win.rows = 1;
            win.run = window;
        } else {
            win.in = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, px.b, px.wy.origin + px.wy.first,
                                             px.wx.origin + px.wx.first, 0);
            win.in_step = p->input_w * in_c;
            win.f = filter + ((size_t)px.wy.first * (size_t)p->filter_w + (size_t)px.wx.first) * (size_t)in_c;
            win.rows = px.wy.end - px.wy.first;
            win.run = (px.wx.end - px.wx.first) * in_c;
        }
        conv_pixel_s16(p, &win, bias64, bias32, out);
        out += p->output_c;
    }
}

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* sums[k] += the products of channel k of one window row: `cols` taps
 * `channels` apart.  Channels (0, 1) and (2, 3) are the halves of two input
 * words; SXTB16 splits four weights into (0, 2) and (1, 3).  Out of line, so
 * that the loop keeps its sums in registers. */
MCU_NOINLINE static void depthwise_row_x4_s16(const int16_t *in, const int8_t *f, int32_t channels, int32_t cols,
                                              int32_t sums[S16_CHANNEL_BLOCK])
{
    int32_t a0 = sums[0], a1 = sums[1], a2 = sums[2], a3 = sums[3];
    int32_t q;
    for (q = 0; q < cols; ++q, in += channels, f += channels) {
        uint32_t x01, x23;
        const uint32_t word = mcu_load_s8x4(f);
        const int32_t w02 = mcu_s8x4_even(word), w13 = mcu_s8x4_odd(word);
        memcpy(&x01, in, sizeof x01);
        memcpy(&x23, in + 2, sizeof x23);
        a0 = __smlabb((int32_t)x01, w02, a0);
        a1 = __smlatb((int32_t)x01, w13, a1);
        a2 = __smlabt((int32_t)x23, w02, a2);
        a3 = __smlatt((int32_t)x23, w13, a3);
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}
#endif

/* DEPTHWISE_CONV_2D with depth multiplier 1 and no dilation, S16_CHANNEL_BLOCK
 * channels per pass over the taps inside the input (windows of at most
 * S16_PRODUCTS_IN_INT32 taps: each channel's sum is one int32 run). */
static void depthwise_s16_fast(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                               const int64_t *bias, int16_t *output)
{
    const int32_t channels = p->output_c;
    const size_t in_row = (size_t)p->input_w * (size_t)channels, f_row = (size_t)p->filter_w * (size_t)channels;
    int16_t *out = output;
    mcu_conv_pixel px;
    for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) {
        const int16_t *const in0 = input + mcu_nhwc_offset(p->input_h, p->input_w, channels, px.b,
                                                            px.wy.origin + px.wy.first, px.wx.origin + px.wx.first, 0);
        const int8_t *const f0 =
            filter + ((size_t)px.wy.first * (size_t)p->filter_w + (size_t)px.wx.first) * (size_t)channels;
        const int32_t rows = px.wy.end - px.wy.first, cols = px.wx.end - px.wx.first;
        int32_t c, r, q, k;
        for (c = 0; c < channels; c += S16_CHANNEL_BLOCK) {
            const int32_t count = MCU_MIN(S16_CHANNEL_BLOCK, channels - c);
            int32_t sums[S16_CHANNEL_BLOCK];
#if defined(MCU_MVE)
            const mve_pred16_t lanes = vctp32q((uint32_t)count);
            int32x4_t acc = vdupq_n_s32(0);
            for (r = 0; r < rows; ++r) {
                const int16_t *in = in0 + (size_t)r * in_row + c;
                const int8_t *f = f0 + (size_t)r * f_row + c;
                for (q = 0; q < cols; ++q, in += channels, f += channels) {
                    acc = vaddq_s32(acc, vmulq_s32(vldrhq_z_s32(in, lanes), vldrbq_z_s32(f, lanes)));
                }
            }
            vst1q_s32(sums, acc);
#else
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            const int32_t c1 = count > 1 ? 1 : 0, c2 = count > 2 ? 2 : 0, c3 = count > 3 ? 3 : 0;
            sums[0] = sums[1] = sums[2] = sums[3] = 0;
            for (r = 0; r < rows; ++r) {
                const int16_t *in = in0 + (size_t)r * in_row + c;
                const int8_t *f = f0 + (size_t)r * f_row + c;
#if defined(MCU_DSP)
                if (count == S16_CHANNEL_BLOCK) {
                    depthwise_row_x4_s16(in, f, channels, cols, sums);
                    continue;
                }
#endif
                for (q = 0; q < cols; ++q, in += channels, f += channels) {
                    a0 += in[0] * f[0];
                    a1 += in[c1] * f[c1];
                    a2 += in[c2] * f[c2];
                    a3 += in[c3] * f[c3];
                }
            }
            sums[0] += a0;
            sums[1] += a1;
            sums[2] += a2;
            sums[3] += a3;
#endif
            for (k = 0; k < count; ++k) {
                out[c + k] = output_s16(p, with_bias_s16(sums[k], bias, NULL, c + k), c + k);
            }
        }
        out += channels;
    }
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
    if (conv_s16_has_fast_path(p)) {
        conv_2d_s16_fast(p, input, filter, bias64, bias32, output);
        return;
    }
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
    if (multiplier == 1 && p->dilation_h == 1 && p->dilation_w == 1 &&
        p->filter_h * p->filter_w <= S16_PRODUCTS_IN_INT32) {
        depthwise_s16_fast(p, input, filter, bias, output);
        return;
    }
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
