/* int8 depthwise convolutions (depth multiplier 1 or a multiple of 4) on
 * cores without Helium: four neighbouring channels per pass, their rescales
 * prepared once per run or group of pixels. */
#include "mcu_depthwise_dsp.h"

#if !defined(MCU_MVE)
#ifdef MCU_DSP
/* One tap of four neighbouring channels: one word of input and one of
 * filter; SXTAB16 adds the offset to channels 0 and 2 (1 and 3) at once, and
 * SMLABB / SMLATT multiply-accumulate the low / high halves, each into its
 * own channel's sum. */
static inline MCU_ALWAYS_INLINE void depthwise_tap4_s8(const int8_t *x, const int8_t *w, int32_t offset2,
                                                       int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3)
{
    const uint32_t wv = mcu_load_s8x4(w), xv = mcu_load_s8x4(x);
    const int32_t w_even = mcu_s8x4_even(wv), w_odd = mcu_s8x4_odd(wv);
    const int32_t x_even = mcu_s8x4_even_plus(xv, offset2), x_odd = mcu_s8x4_odd_plus(xv, offset2);
    *a0 = __smlabb(x_even, w_even, *a0);
    *a2 = __smlatt(x_even, w_even, *a2);
    *a1 = __smlabb(x_odd, w_odd, *a1);
    *a3 = __smlatt(x_odd, w_odd, *a3);
}

/* One tap of four channels that share the input value v (a depth
 * multiplier divisible by 4): SMLABB / SMLABT multiply it with the low /
 * high halves of the filter pairs. */
static inline MCU_ALWAYS_INLINE void depthwise_shared_tap4_s8(int32_t v, const int8_t *w, int32_t *a0, int32_t *a1,
                                                              int32_t *a2, int32_t *a3)
{
    const uint32_t wv = mcu_load_s8x4(w);
    const int32_t w_even = mcu_s8x4_even(wv), w_odd = mcu_s8x4_odd(wv);
    *a0 = __smlabb(v, w_even, *a0);
    *a2 = __smlabt(v, w_even, *a2);
    *a1 = __smlabb(v, w_odd, *a1);
    *a3 = __smlabt(v, w_odd, *a3);
}
#endif

/* A run of a depthwise convolution (mcu_conv_internal.h; depth multiplier
 * 1 or a multiple of 4), along a row or down a column.  Windows wholly
 * inside add the input offset through window_offset_terms, the others per
 * tap (SXTAB16 adds it in the same instruction).  Channels four at a time,
 * as depthwise_pixel4_s8 and depthwise_pixel4_shared_s8, but each group's
 * rescales prepared once for the whole run and its bias (and offset terms)
 * summed once.  Returns how many channels it wrote (out_c rounded down to a
 * multiple of 4). */
MCU_NOINLINE int32_t mcu_depthwise_run_s8(const mcu_conv_s8_params *p, const mcu_depthwise_run *run)
{
    const depthwise_taps *t = run->taps;
    const int8_t *x = run->x, *w = run->w;
    const size_t pixel_step = run->pixel_step, out_step = run->out_step;
    const int32_t pixels = run->pixels;
    const int inside = run->inside;
    const int32_t *bias = run->bias;
    int8_t *out = run->out;
    const int32_t out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier, rows = t->rows, cols = t->cols;
    const size_t input_row = t->input_row, input_tap = t->input_tap;
    const size_t filter_row = t->filter_row, filter_tap = t->filter_tap;
    const int32_t offset = inside ? 0 : p->input_offset;
    const conv_output_range range = conv_output_range_of(p);
#ifdef MCU_DSP
    const int32_t offset2 = mcu_s16x2_splat(offset);
#endif
    int32_t oc;
    for (oc = 0; oc + 4 <= out_c; oc += 4) {
        mcu_prepared_mul m[4];
        int32_t start[4], c, px;
        const int8_t *x_px = x + (multiplier == 1 ? oc : oc / multiplier);
        int8_t *o = out + oc;
        for (c = 0; c < 4; ++c) {
            m[c] = mcu_prepare_mul(p->output_multiplier[oc + c], (int)p->output_shift[oc + c]);
            start[c] = bias_plus(bias, oc + c, inside ? p->window_offset_terms[oc + c] : 0);
        }
        for (px = 0; px < pixels; ++px, x_px += pixel_step, o += out_step) {
            const int8_t *x_row = x_px, *w_row = w + oc;
            int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3], r, k;
            for (r = rows; r > 0; --r, x_row += input_row, w_row += filter_row) {
                const int8_t *xk = x_row, *wk = w_row;
#ifdef MCU_DSP
                if (multiplier == 1 && cols == 3) {
                    /* Three taps a row (3 x 3 filters inside the input): no
                     * loop counter or branch per tap. */
                    depthwise_tap4_s8(xk, wk, offset2, &a0, &a1, &a2, &a3);
                    depthwise_tap4_s8(xk + input_tap, wk + filter_tap, offset2, &a0, &a1, &a2, &a3);
                    depthwise_tap4_s8(xk + 2 * input_tap, wk + 2 * filter_tap, offset2, &a0, &a1, &a2, &a3);
                } else if (multiplier == 1) {
                    for (k = cols; k > 0; --k, xk += input_tap, wk += filter_tap) {
                        depthwise_tap4_s8(xk, wk, offset2, &a0, &a1, &a2, &a3);
                    }
                } else {
                    for (k = cols; k > 0; --k, xk += input_tap, wk += filter_tap) {
                        depthwise_shared_tap4_s8(*xk + offset, wk, &a0, &a1, &a2, &a3);
                    }
                }
#else
                for (k = cols; k > 0; --k, xk += input_tap, wk += filter_tap) {
                    const int32_t step = multiplier == 1 ? 1 : 0;
                    a0 += ((int32_t)xk[0] + offset) * (int32_t)wk[0];
                    a1 += ((int32_t)xk[step] + offset) * (int32_t)wk[1];
                    a2 += ((int32_t)xk[2 * step] + offset) * (int32_t)wk[2];
                    a3 += ((int32_t)xk[3 * step] + offset) * (int32_t)wk[3];
                }
#endif
            }
            o[0] = requantize_prepared_s8(&range, a0, &m[0]);
            o[1] = requantize_prepared_s8(&range, a1, &m[1]);
            o[2] = requantize_prepared_s8(&range, a2, &m[2]);
            o[3] = requantize_prepared_s8(&range, a3, &m[3]);
        }
    }
    return oc;
}

#ifdef MCU_DSP
/* depthwise_tap4_s8 without the input offset. */
static inline MCU_ALWAYS_INLINE void depthwise_inside_tap4_s8(const int8_t *x, const int8_t *w, int32_t *a0,
                                                              int32_t *a1, int32_t *a2, int32_t *a3)
{
    const uint32_t wv = mcu_load_s8x4(w), xv = mcu_load_s8x4(x);
    const int32_t w_even = mcu_s8x4_even(wv), w_odd = mcu_s8x4_odd(wv);
    const int32_t x_even = mcu_s8x4_even(xv), x_odd = mcu_s8x4_odd(xv);
    *a0 = __smlabb(x_even, w_even, *a0);
    *a2 = __smlatt(x_even, w_even, *a2);
    *a1 = __smlabb(x_odd, w_odd, *a1);
    *a3 = __smlatt(x_odd, w_odd, *a3);
}

/* depthwise_window_pixel4_s8 for a 3 x 3 window wholly inside the input:
 * nine taps in straight-line code, no per-tap offset (the window takes it
 * from window_offset_terms), so that the sums, pointers and steps stay in
 * registers. */
MCU_NOINLINE static void depthwise_inside3x3_pixel4_s8(const int8_t *x, const int8_t *w, size_t input_row,
                                                       size_t input_tap, size_t filter_tap, int32_t sums[4])
{
    int32_t a0 = sums[0], a1 = sums[1], a2 = sums[2], a3 = sums[3], r;
    for (r = 0; r < 3; ++r, x += input_row, w += 3 * filter_tap) {
        depthwise_inside_tap4_s8(x, w, &a0, &a1, &a2, &a3);
        depthwise_inside_tap4_s8(x + input_tap, w + filter_tap, &a0, &a1, &a2, &a3);
        depthwise_inside_tap4_s8(x + 2 * input_tap, w + 2 * filter_tap, &a0, &a1, &a2, &a3);
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}
#endif

/* Four neighbouring channels (depth multiplier 1) of one output pixel: the
 * sums start at sums[c] and take the products of the window's taps inside
 * the input (x: its first inside tap at the first channel; w: the filter
 * there), the input offset added per tap (`offset`, 0 for windows that take
 * it from window_offset_terms). */
MCU_NOINLINE static void depthwise_window_pixel4_s8(const depthwise_taps *t, const int8_t *x, const int8_t *w,
                                                    int32_t offset, int32_t sums[4])
{
    const size_t input_row = t->input_row, input_tap = t->input_tap;
    const size_t filter_row = t->filter_row, filter_tap = t->filter_tap;
    const int32_t cols = t->cols;
#ifdef MCU_DSP
    const int32_t offset2 = mcu_s16x2_splat(offset);
#endif
    int32_t a0 = sums[0], a1 = sums[1], a2 = sums[2], a3 = sums[3], r, k;
    for (r = t->rows; r > 0; --r, x += input_row, w += filter_row) {
        const int8_t *xk = x, *wk = w;
        for (k = cols; k > 0; --k, xk += input_tap, wk += filter_tap) {
#ifdef MCU_DSP
            depthwise_tap4_s8(xk, wk, offset2, &a0, &a1, &a2, &a3);
#else
            a0 += ((int32_t)xk[0] + offset) * (int32_t)wk[0];
            a1 += ((int32_t)xk[1] + offset) * (int32_t)wk[1];
            a2 += ((int32_t)xk[2] + offset) * (int32_t)wk[2];
            a3 += ((int32_t)xk[3] + offset) * (int32_t)wk[3];
#endif
        }
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}

/* depthwise_window_pixel4_s8 for a depth multiplier divisible by 4: the four
 * channels share one input value per tap (x: that value's first inside
 * tap). */
MCU_NOINLINE static void depthwise_shared_window_pixel4_s8(const depthwise_taps *t, const int8_t *x,
                                                           const int8_t *w, int32_t offset, int32_t sums[4])
{
    int32_t a0 = sums[0], a1 = sums[1], a2 = sums[2], a3 = sums[3], r, k;
    for (r = t->rows; r > 0; --r, x += t->input_row, w += t->filter_row) {
        const int8_t *xk = x, *wk = w;
        for (k = t->cols; k > 0; --k, xk += t->input_tap, wk += t->filter_tap) {
            const int32_t v = (int32_t)*xk + offset;
#ifdef MCU_DSP
            depthwise_shared_tap4_s8(v, wk, &a0, &a1, &a2, &a3);
#else
            a0 += v * (int32_t)wk[0];
            a1 += v * (int32_t)wk[1];
            a2 += v * (int32_t)wk[2];
            a3 += v * (int32_t)wk[3];
#endif
        }
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}

/* One output pixel's depthwise window: its taps inside the input from
 * (x, w), as depthwise_run lays them out. */
typedef struct {
    const int8_t *x;
    const int8_t *w;
    depthwise_taps taps;
    int inside;
} depthwise_window;

/* `count` (1 to 4) consecutive output pixels (raster order) of a depthwise
 * convolution with depth multiplier 1 or a multiple of 4, each with its own
 * window, channels
 * four at a time as mcu_depthwise_run_s8, each group's rescales prepared once
 * for all of them.  Returns how many
 * channels it wrote (out_c rounded down to a multiple of 4). */
MCU_NOINLINE static int32_t depthwise_windows4_s8(const mcu_conv_s8_params *p, const depthwise_window *win,
                                                  int32_t count, const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const conv_output_range range = conv_output_range_of(p);
    int32_t oc;
    for (oc = 0; oc + 4 <= out_c; oc += 4) {
        mcu_prepared_mul m[4];
        int32_t border_start[4], inside_start[4], c, px;
        int right_shifts;
        int8_t *o = out + oc;
        for (c = 0; c < 4; ++c) {
            m[c] = mcu_prepare_mul(p->output_multiplier[oc + c], (int)p->output_shift[oc + c]);
            border_start[c] = bias_plus(bias, oc + c, 0);
            inside_start[c] = bias_plus(bias, oc + c, p->window_offset_terms[oc + c]);
        }
        right_shifts = m[0].high_shift >= 0 && m[1].high_shift >= 0 && m[2].high_shift >= 0 && m[3].high_shift >= 0;
        for (px = 0; px < count; ++px, o += out_c) {
            const depthwise_window *v = &win[px];
            int32_t a[4];
#ifdef MCU_DSP
            if (multiplier == 1 && v->inside && v->taps.rows == 3 && v->taps.cols == 3) {
                a[0] = inside_start[0];
                a[1] = inside_start[1];
                a[2] = inside_start[2];
                a[3] = inside_start[3];
                depthwise_inside3x3_pixel4_s8(v->x + oc, v->w + oc, v->taps.input_row, v->taps.input_tap,
                                              v->taps.filter_tap, a);
            } else
#endif
            {
                const int32_t *start = v->inside ? inside_start : border_start;
                a[0] = start[0];
                a[1] = start[1];
                a[2] = start[2];
                a[3] = start[3];
                if (multiplier == 1) {
                    depthwise_window_pixel4_s8(&v->taps, v->x + oc, v->w + oc, v->inside ? 0 : p->input_offset, a);
                } else {
                    depthwise_shared_window_pixel4_s8(&v->taps, v->x + oc / multiplier, v->w + oc,
                                                      v->inside ? 0 : p->input_offset, a);
                }
            }
            if (right_shifts) {
                o[0] = requantize_right_shift_s8(&range, a[0], &m[0]);
                o[1] = requantize_right_shift_s8(&range, a[1], &m[1]);
                o[2] = requantize_right_shift_s8(&range, a[2], &m[2]);
                o[3] = requantize_right_shift_s8(&range, a[3], &m[3]);
            } else {
                o[0] = requantize_prepared_s8(&range, a[0], &m[0]);
                o[1] = requantize_prepared_s8(&range, a[1], &m[1]);
                o[2] = requantize_prepared_s8(&range, a[2], &m[2]);
                o[3] = requantize_prepared_s8(&range, a[3], &m[3]);
            }
        }
    }
    return oc;
}


/* The windows of the aligned groups of four raster pixels the plan assumes
 * (mcu_planner/lowering/conv.py, WALKS), one depthwise_windows4_s8 each, so
 * that the rescales are prepared once per group however its pixels' windows
 * meet the padding; the channels past the last multiple of 4 by the
 * reference loop. */
void mcu_depthwise_conv_2d_s8_raster_groups(const mcu_conv_s8_params *p, const int8_t *input,
                                               const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    depthwise_window win[4];
    int32_t b = 0, y = 0, x = 0, first, k, c;
    for (first = 0; first < pixels; first += 4) {
        const int32_t count = MCU_MIN(pixels - first, 4);
        int8_t *out = output + (size_t)first * (size_t)out_c;
        int32_t oc;
        for (k = 0; k < count; ++k) {
            const mcu_window_axis wy =
                mcu_window_axis_at(y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const mcu_window_axis wx =
                mcu_window_axis_at(x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
            depthwise_window *v = &win[k];
            v->taps.rows = MCU_MAX(wy.end - wy.first, 0);
            v->taps.cols = MCU_MAX(wx.end - wx.first, 0);
            v->taps.input_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
            v->taps.input_tap = (size_t)p->dilation_w * (size_t)in_c;
            v->taps.filter_row = (size_t)p->filter_w * (size_t)out_c;
            v->taps.filter_tap = (size_t)out_c;
            v->inside = v->taps.rows == p->filter_h && v->taps.cols == p->filter_w;
            v->x = input;
            v->w = filter;
            if (v->taps.rows > 0 && v->taps.cols > 0) {
                v->x += mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(&wy, wy.first),
                                        mcu_window_input(&wx, wx.first), 0);
                v->w += ((size_t)wy.first * (size_t)p->filter_w + (size_t)wx.first) * (size_t)out_c;
            } else {
                /* Every tap in the padding: no products. */
                v->taps.rows = 0;
                v->taps.cols = 0;
            }
            raster_next(p, &b, &y, &x);
        }
        oc = depthwise_windows4_s8(p, win, count, bias, out);
        for (k = 0; k < count && oc < out_c; ++k) {
            const depthwise_window *v = &win[k];
            for (c = oc; c < out_c; ++c) {
                const int8_t *x_c = v->x + c / multiplier;
                const int32_t acc = v->inside
                                        ? p->window_offset_terms[c] + depthwise_window_s8(&v->taps, x_c, v->w + c, 0)
                                        : depthwise_window_s8(&v->taps, x_c, v->w + c, p->input_offset);
                out[(size_t)k * (size_t)out_c + (size_t)c] = requantize_s8(p, acc, bias, c);
            }
        }
    }
}

#else
typedef int mcu_depthwise_dsp_unused; /* ISO C: a translation unit declares something */
#endif /* !MCU_MVE */
