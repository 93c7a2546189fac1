/* int8 depthwise convolutions with window offset terms: the output in runs
 * of pixels whose windows have the same taps inside the input (on Helium
 * mcu_depthwise_helium.c for depth multiplier 1, passes of four pixels for
 * multiples of 4, the walk and kernels the generator names per layer,
 * MCU_DEPTHWISE_S8; without it mcu_depthwise_dsp.c's four channels at a
 * time; 3 x 3 filters with the DSP extension first take
 * mcu_depthwise_3x3_dsp.c, from mcu_conv.c's mcu_depthwise_conv_2d_s8_3x3),
 * and under raster_walk in the aligned raster groups the plan assumes. */
#include "mcu_depthwise.h"

#include "mcu_conv.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_helium.h"
#include "mcu_depthwise_dsp.h"
#include "mcu_depthwise_helium.h"

#if defined(MCU_MVE)
/* Channels oc .. oc + 3 (those `lanes` selects unless `full`) of the pixels
 * of mcu_helium_depthwise_any_s8 (a depth multiplier that is a multiple of 4:
 * the four lanes read one input value); with `single` (a constant at every
 * call, like `full` and `with_offset`) of pixel 0 alone, without the three
 * pixels' loads and products a pass of one pixel would discard. */
static inline MCU_ALWAYS_INLINE void mcu_helium_depthwise_group(const mcu_conv_s8_params *p, const int8_t *const x[4],
                                                                int32_t count, const mcu_helium_taps *taps,
                                                                const int8_t *filter, const mcu_helium_requant *q,
                                                                const size_t row[4], int32_t oc, int full,
                                                                int with_offset, int single, mve_pred16_t lanes,
                                                                int8_t *out)
{
    const int32_t out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const int32_t filter_h = taps->rows, filter_w = taps->cols, offset = with_offset ? taps->offset : 0;
    const size_t input_tap = taps->tap, out_step = taps->out_step;
    const size_t filter_row = (size_t)p->filter_w * (size_t)out_c, filter_tap = (size_t)out_c;
    const size_t in_c = (size_t)(oc / multiplier);
    /* The bias joins the offset terms up front: one add for the four pixels. */
    const int32x4_t bias = q->bias ? vldrwq_z_s32(q->bias + oc, lanes) : vdupq_n_s32(0);
    const int32x4_t terms = with_offset ? bias : vaddq_s32(vldrwq_z_s32(p->window_offset_terms + oc, lanes), bias);
    int32x4_t a0 = terms, a1 = terms, a2 = terms, a3 = terms;
    const int8_t *x0 = x[0] + in_c, *x1 = x[1] + in_c, *x2 = x[2] + in_c, *x3 = x[3] + in_c;
    const int8_t *w_row = filter + oc;
    int32_t r, k;
    if (single && filter_w == 1) {
        /* One pixel under a column of taps (the (k, 1) filters of streaming
         * models): one loop over the rows, not a loop of one tap in each. */
        const size_t x_row = row[0];
        for (r = 0; r < filter_h; ++r, w_row += filter_row, x0 += x_row) {
            a0 = vmlaq_n_s32(a0, mcu_helium_load_s8x4(w_row, full, lanes), *x0 + offset);
        }
    } else {
        for (r = 0; r < filter_h; ++r, w_row += filter_row) {
            const int8_t *wk = w_row;
            const int8_t *x0k = x0, *x1k = x1, *x2k = x2, *x3k = x3;
            for (k = 0; k < filter_w; ++k, wk += filter_tap) {
                const int32x4_t w = mcu_helium_load_s8x4(wk, full, lanes);
                a0 = vmlaq_n_s32(a0, w, *x0k + offset);
                x0k += input_tap;
                if (!single) {
                    a1 = vmlaq_n_s32(a1, w, *x1k + offset);
                    a2 = vmlaq_n_s32(a2, w, *x2k + offset);
                    a3 = vmlaq_n_s32(a3, w, *x3k + offset);
                    x1k += input_tap;
                    x2k += input_tap;
                    x3k += input_tap;
                }
            }
            x0 += row[0];
            if (!single) {
                x1 += row[1];
                x2 += row[2];
                x3 += row[3];
            }
        }
    }
    {
        const int32x4_t multipliers = vldrwq_z_s32(q->multiplier + oc, lanes);
        const mcu_shift_x4 shifts = mcu_split_shift_x4(vldrwq_z_s32(q->shift + oc, lanes));
        int8_t *o = out + oc;
        mcu_helium_store_pixel(q, a0, multipliers, shifts, lanes, o);
        if (single) {
            return;
        }
        if (count > 1) {
            mcu_helium_store_pixel(q, a1, multipliers, shifts, lanes, o + out_step);
        }
        if (count > 2) {
            mcu_helium_store_pixel(q, a2, multipliers, shifts, lanes, o + 2 * out_step);
        }
        if (count > 3) {
            mcu_helium_store_pixel(q, a3, multipliers, shifts, lanes, o + 3 * out_step);
        }
    }
}

/* Every channel of the pass of mcu_helium_depthwise_any_s8, four at a time
 * (`single`: see mcu_helium_depthwise_group). */
static inline MCU_ALWAYS_INLINE void mcu_helium_depthwise_channels(const mcu_conv_s8_params *p,
                                                                   const int8_t *const x[4], int32_t count,
                                                                   const mcu_helium_taps *taps, const int8_t *filter,
                                                                   const mcu_helium_requant *q, const size_t row[4],
                                                                   int single, int8_t *out)
{
    const int32_t out_c = p->output_c;
    int32_t oc;
    if (taps->inside) {
        for (oc = 0; oc + 4 <= out_c; oc += 4) {
            mcu_helium_depthwise_group(p, x, count, taps, filter, q, row, oc, 1, 0, single, vctp32q(4u), out);
        }
    } else {
        for (oc = 0; oc + 4 <= out_c; oc += 4) {
            mcu_helium_depthwise_group(p, x, count, taps, filter, q, row, oc, 1, 1, single, vctp32q(4u), out);
        }
    }
    if (oc < out_c) {
        mcu_helium_depthwise_group(p, x, count, taps, filter, q, row, oc, 0, !taps->inside, single,
                                   vctp32q((uint32_t)(out_c - oc)), out);
    }
}

/* `count` (1 to 4) output pixels of a depthwise convolution with depth
 * multiplier 1 or a multiple of 4 whose windows have the same taps inside
 * the input (`taps`): x[i] is the first inside tap of pixel i's window,
 * filter the filter at that tap, out pixel 0's first channel.  Every channel,
 * four (the lanes) at a time, each filter vector loaded once for the pixels.
 * Multiplier 1: lane c reads input channel oc + c; a multiple of 4: the four
 * lanes read one input value, channel oc / multiplier.  Pixels past `count`
 * repeat pixel 0 and are not stored; a pass of one pixel computes it alone. */
MCU_NOINLINE static void mcu_helium_depthwise_any_s8(const mcu_conv_s8_params *p, const int8_t *const x[4],
                                                     int32_t count, const mcu_helium_taps *taps, const int8_t *filter,
                                                     const int32_t *bias, int8_t *out)
{
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    /* Read once: the int8 stores could alias taps, so the compiler would
     * otherwise reload the steps for every channel group. */
    const size_t row[4] = {taps->row[0], taps->row[1], taps->row[2], taps->row[3]};
    const int8_t *px[4];
    px[0] = x[0];
    px[1] = count > 1 ? x[1] : x[0];
    px[2] = count > 2 ? x[2] : x[0];
    px[3] = count > 3 ? x[3] : x[0];
    if (count == 1) {
        /* The last pixel of a run, a border pixel, a one-pixel output row. */
        mcu_helium_depthwise_channels(p, px, count, taps, filter, &q, row, 1, out);
    } else {
        mcu_helium_depthwise_channels(p, px, count, taps, filter, &q, row, 0, out);
    }
}

#endif

/* A run's kernel on Helium: every channel of the run (the one
 * MCU_DEPTHWISE_S8 names: mcu_depthwise_helium.c for multiplier 1,
 * depthwise_run_4n_helium for multiples of 4).  Without Helium there is one
 * kernel, depthwise_run_dsp, which depthwise_run calls directly (NULL). */
typedef void depthwise_run_kernel(const mcu_conv_s8_params *p, const mcu_depthwise_run *run);

#if defined(MCU_MVE)
/* A multiple of 4: passes of four pixels (mcu_helium_depthwise_any_s8). */
static void depthwise_run_4n_helium(const mcu_conv_s8_params *p, const mcu_depthwise_run *run)
{
    const depthwise_taps *t = run->taps;
    mcu_helium_taps helium;
    const int8_t *xs[4];
    int32_t px, count, k;
    for (k = 0; k < 4; ++k) {
        helium.row[k] = t->input_row;
    }
    helium.tap = t->input_tap;
    helium.rows = t->rows;
    helium.cols = t->cols;
    helium.offset = p->input_offset;
    helium.inside = run->inside;
    helium.out_step = run->out_step;
    for (px = 0; px < run->pixels; px += count) {
        count = MCU_MIN(run->pixels - px, 4);
        for (k = 0; k < count; ++k) {
            xs[k] = run->x + (size_t)(px + k) * run->pixel_step;
        }
        mcu_helium_depthwise_any_s8(p, xs, count, &helium, run->w, run->bias, run->out + (size_t)px * run->out_step);
    }
}
#else
/* The channels in groups of four (mcu_depthwise_dsp.c), the reference loop
 * for the rest; inline in depthwise_run, whose stack frame it shares (the
 * M4's deepest path runs through it). */
static inline MCU_ALWAYS_INLINE void depthwise_run_dsp(const mcu_conv_s8_params *p, const mcu_depthwise_run *run)
{
    const int32_t out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const int32_t oc = mcu_depthwise_run_s8(p, run);
    int32_t px;
    for (px = 0; px < run->pixels && oc < out_c; ++px) {
        const int8_t *x_px = run->x + (size_t)px * run->pixel_step;
        int8_t *o = run->out + (size_t)px * run->out_step;
        int32_t c;
        for (c = oc; c < out_c; ++c) {
            const int8_t *x_c = x_px + c / multiplier;
            const int32_t acc = run->inside
                                    ? p->window_offset_terms[c] + depthwise_window_s8(run->taps, x_c, run->w + c, 0)
                                    : depthwise_window_s8(run->taps, x_c, run->w + c, p->input_offset);
            o[c] = requantize_s8(p, acc, run->bias, c);
        }
    }
}
#endif

/* `pixels` output pixels from (b, out_y, out_x) on, along the row or down the
 * column (`down`), whose windows have the taps of the first one inside the
 * input: one run for `kernel` (without Helium, depthwise_run_dsp). */
static void depthwise_run(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                          const int32_t *bias, int32_t b, int32_t out_y, int32_t out_x, int32_t pixels, int down,
                          int8_t *output, depthwise_run_kernel *kernel)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const mcu_window_axis wy =
        mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const size_t pixel_step = down ? (size_t)p->stride_h * (size_t)p->input_w * (size_t)in_c
                                   : (size_t)p->stride_w * (size_t)in_c;
    const size_t out_step = down ? (size_t)p->output_w * (size_t)out_c : (size_t)out_c;
    int8_t *out = output + mcu_nhwc_offset(p->output_h, p->output_w, out_c, b, out_y, out_x, 0);
    const int8_t *x = input;
    const int8_t *w = filter;
    depthwise_taps taps;
    int inside;
    taps.rows = MCU_MAX(wy.end - wy.first, 0);
    taps.cols = MCU_MAX(wx.end - wx.first, 0);
    taps.input_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    taps.input_tap = (size_t)p->dilation_w * (size_t)in_c;
    taps.filter_row = (size_t)p->filter_w * (size_t)out_c;
    taps.filter_tap = (size_t)out_c;
    inside = taps.rows == p->filter_h && taps.cols == p->filter_w;
    if (taps.rows > 0 && taps.cols > 0) {
        x += mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(&wy, wy.first),
                             mcu_window_input(&wx, wx.first), 0);
        w += ((size_t)wy.first * (size_t)p->filter_w + (size_t)wx.first) * (size_t)out_c;
    } else {
        /* Every tap in the padding: no products, and no pixel steps taken. */
        taps.rows = 0;
        taps.cols = 0;
    }
    {
        const mcu_depthwise_run run = {
            &taps, x, taps.rows > 0 ? pixel_step : 0u, pixels, w, inside, bias, out, out_step,
        };
#if defined(MCU_MVE)
        kernel(p, &run);
#else
        (void)kernel;
        depthwise_run_dsp(p, &run);
#endif
    }
}

/* Depth multiplier 1 or a multiple of 4: the output in runs
 * whose windows share their taps inside the input -- the inside pixels row
 * by row (or column by column), each border column down the inside rows, and
 * the border rows' pixels (their inside stretch as one run).  Inline in each
 * caller (a named walk on Helium), which then takes no frame of its own on
 * the way to the kernel. */
static inline MCU_ALWAYS_INLINE void depthwise_conv_2d_s8_runs(const mcu_conv_s8_params *p, const int8_t *input,
                                                               const int8_t *filter, const int32_t *bias,
                                                               int8_t *output, depthwise_run_kernel *kernel)
{
    int32_t x_first, x_end, y_first, y_end, b, y, x;
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first, &x_end);
    conv_inside_range(p->output_h, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h, &y_first, &y_end);
    /* Inside pixels in runs along the rows, or down the columns when those
     * are longer (a one-column output). */
    const int inside_down = y_end - y_first > x_end - x_first;
    for (b = 0; b < p->batches; ++b) {
        for (y = 0; y < p->output_h; ++y) {
            const int border_row = y < y_first || y >= y_end;
            if (x_end > x_first && (border_row || !inside_down)) {
                depthwise_run(p, input, filter, bias, b, y, x_first, x_end - x_first, 0, output, kernel);
            }
            for (x = 0; border_row && x < p->output_w; ++x) {
                if (x < x_first || x >= x_end) {
                    depthwise_run(p, input, filter, bias, b, y, x, 1, 0, output, kernel);
                }
            }
        }
        for (x = 0; y_end > y_first && x < p->output_w; ++x) {
            if (x < x_first || x >= x_end || inside_down) {
                depthwise_run(p, input, filter, bias, b, y_first, x, y_end - y_first, 1, output, kernel);
            }
        }
    }
}


#if defined(MCU_MVE)
/* Up to four raster pixels whose windows have the same taps inside the
 * input (mcu_helium_depthwise_any_s8, depthwise_group_m1_helium). */
typedef void depthwise_group_kernel(const mcu_conv_s8_params *p, const int8_t *const xs[4], int32_t count,
                                    const mcu_helium_taps *taps, const int8_t *w, const int32_t *bias,
                                    int8_t *out);

static int same_taps(const mcu_window_axis *y0, const mcu_window_axis *x0, const mcu_window_axis *y1,
                     const mcu_window_axis *x1)
{
    return y0->first == y1->first && y0->end == y1->end && x0->first == x1->first && x0->end == x1->end;
}

/* The `count` pixels of a pass of depthwise_group_helium with depth
 * multiplier 1 (mcu_depthwise_helium.c): one run when their windows are
 * the same distance apart (channels outermost, as mcu_helium_depthwise_any_s8),
 * else two at a time in raster order. */
static inline MCU_ALWAYS_INLINE void depthwise_group_m1_helium(const mcu_conv_s8_params *p, const int8_t *const xs[4],
                                                               int32_t count, const mcu_helium_taps *taps,
                                                               const int8_t *w, const int32_t *bias, int8_t *out)
{
    depthwise_taps t;
    mcu_depthwise_run run;
    int32_t k, pair;
    t.rows = taps->rows;
    t.cols = taps->cols;
    t.input_row = taps->row[0];
    t.input_tap = taps->tap;
    t.filter_row = (size_t)p->filter_w * (size_t)p->output_c;
    t.filter_tap = (size_t)p->output_c;
    run.taps = &t;
    run.x = xs[0];
    run.w = w;
    run.inside = taps->inside;
    run.bias = bias;
    run.out = out;
    run.out_step = taps->out_step;
    if (count > 2 && xs[1] >= xs[0] && xs[2] - xs[1] == xs[1] - xs[0] &&
        (count == 3 || xs[3] - xs[2] == xs[1] - xs[0])) {
        run.pixel_step = (size_t)(xs[1] - xs[0]);
        run.pixels = count;
        mcu_depthwise_run_m1_helium_s8(p, &run);
        return;
    }
    for (k = 0; k < count; k += pair) {
        pair = k + 1 < count && xs[k + 1] >= xs[k] ? 2 : 1;
        run.x = xs[k];
        run.pixel_step = pair == 2 ? (size_t)(xs[k + 1] - xs[k]) : 0u;
        run.pixels = pair;
        run.out = out + (size_t)k * taps->out_step;
        mcu_depthwise_run_m1_helium_s8(p, &run);
    }
}

/* One aligned group of `count` raster pixels from pixel (b, y, x) on: each
 * run of consecutive pixels whose windows have the same taps inside the
 * input in one Helium pass, read in place, so that every channel still sees
 * its pixels in raster order (KERNEL_ORDERS' channel_wise). */
static inline MCU_ALWAYS_INLINE void depthwise_group_helium(const mcu_conv_s8_params *p, const int8_t *input,
                                                            const int8_t *filter, const int32_t *bias, int32_t b,
                                                            int32_t y, int32_t x, int32_t count, int8_t *out,
                                                            depthwise_group_kernel *kernel)
{
    const size_t in_place_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)p->input_c;
    int32_t done = 0;
    while (done < count) {
        const mcu_window_axis wy0 =
            mcu_window_axis_at(y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
        const mcu_window_axis wx0 =
            mcu_window_axis_at(x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
        const int empty = wy0.end <= wy0.first || wx0.end <= wx0.first;
        const int8_t *xs[4];
        mcu_helium_taps taps;
        const int8_t *w = filter;
        int32_t n = 0, k;
        taps.offset = p->input_offset;
        taps.out_step = (size_t)p->output_c;
        taps.tap = (size_t)p->dilation_w * (size_t)p->input_c;
        taps.rows = empty ? 0 : wy0.end - wy0.first;
        taps.cols = empty ? 0 : wx0.end - wx0.first;
        taps.inside = taps.rows == p->filter_h && taps.cols == p->filter_w;
        if (!empty) {
            w += ((size_t)wy0.first * (size_t)p->filter_w + (size_t)wx0.first) * (size_t)p->output_c;
        }
        while (done + n < count) {
            const mcu_window_axis wy =
                mcu_window_axis_at(y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const mcu_window_axis wx =
                mcu_window_axis_at(x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
            if (!same_taps(&wy0, &wx0, &wy, &wx)) {
                break;
            }
            /* Same taps: each window's first inside tap is its origin moved by wy0.first, wx0.first taps. */
            xs[n] = empty ? input
                          : input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                    mcu_window_input(&wy, wy0.first), mcu_window_input(&wx, wx0.first),
                                                    0);
            taps.row[n] = in_place_row;
            ++n;
            raster_next(p, &b, &y, &x);
        }
        for (k = n; k < 4; ++k) {
            taps.row[k] = in_place_row; /* the pass repeats pixel 0 there */
        }
        kernel(p, xs, n, &taps, w, bias, out + (size_t)done * (size_t)p->output_c);
        done += n;
    }
}

/* Over a shared buffer with Helium: the aligned groups of four raster pixels
 * the plan assumes, one pass each.  Inline in each named walk, so that the
 * deepest depthwise path (raster groups under a planned overlap) takes no
 * frame of its own. */
static inline MCU_ALWAYS_INLINE void depthwise_conv_2d_s8_groups_helium(const mcu_conv_s8_params *p,
                                                                        const int8_t *input, const int8_t *filter,
                                                                        const int32_t *bias, int8_t *output,
                                                                        depthwise_group_kernel *kernel)
{
    const int32_t pixels = p->batches * p->output_h * p->output_w, per_image = p->output_h * p->output_w;
    int32_t first;
    for (first = 0; first < pixels; first += 4) {
        const int32_t yx = first % per_image;
        depthwise_group_helium(p, input, filter, bias, first / per_image, yx / p->output_w, yx % p->output_w,
                               MCU_MIN(pixels - first, 4), output + (size_t)first * (size_t)p->output_c, kernel);
    }
}

/* The walks MCU_DEPTHWISE_S8(multiplier, raster) names (mcu_conv.h): each refers to
 * its own kernels only, so that --gc-sections drops the others. */
struct mcu_depthwise_s8 {
    void (*walk)(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                 int8_t *output);
    int32_t multiplier_1; /* the layers it takes: depth multiplier 1, else a multiple of 4 */
    int32_t raster;       /* the raster groups of raster_walk, else runs */
};

static void multiplier_1_runs(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output)
{
    depthwise_conv_2d_s8_runs(p, input, filter, bias, output, mcu_depthwise_run_m1_helium_s8);
}

static void multiplier_1_raster(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output)
{
    depthwise_conv_2d_s8_groups_helium(p, input, filter, bias, output, depthwise_group_m1_helium);
}

static void multiplier_4n_runs(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    depthwise_conv_2d_s8_runs(p, input, filter, bias, output, depthwise_run_4n_helium);
}

static void multiplier_4n_raster(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output)
{
    depthwise_conv_2d_s8_groups_helium(p, input, filter, bias, output, mcu_helium_depthwise_any_s8);
}

const mcu_depthwise_s8 mcu_depthwise_s8_1_0 = {multiplier_1_runs, 1, 0};
const mcu_depthwise_s8 mcu_depthwise_s8_1_1 = {multiplier_1_raster, 1, 1};
const mcu_depthwise_s8 mcu_depthwise_s8_4_0 = {multiplier_4n_runs, 0, 0};
const mcu_depthwise_s8 mcu_depthwise_s8_4_1 = {multiplier_4n_raster, 0, 1};

/* Whether the layer's named walk takes it (the generator names it from the
 * same multiplier and raster_walk; a hand-written mismatch takes the channel
 * loop, which any walk order allows). */
static int named_walk_takes(const mcu_conv_s8_params *p)
{
    const mcu_depthwise_s8 *named = p->depthwise;
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    return named != NULL && (named->multiplier_1 ? multiplier == 1 : multiplier % 4 == 0) &&
           named->raster == (p->raster_walk != 0);
}
#endif



/* With window_offset_terms: windows wholly inside the input take the offset
 * from there (a per-tap offset of 0); windows reaching into the padding add
 * it per tap. */
void mcu_depthwise_conv_2d_s8_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const int32_t *terms = p->window_offset_terms;
    depthwise_taps taps;
    int8_t *out = output;
    int32_t b, out_y, out_x, oc;
    taps.input_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    taps.input_tap = (size_t)p->dilation_w * (size_t)in_c;
    taps.filter_row = (size_t)p->filter_w * (size_t)out_c;
    taps.filter_tap = (size_t)out_c;
#if defined(MCU_MVE)
    if (named_walk_takes(p)) {
        p->depthwise->walk(p, input, filter, bias, output);
        return;
    }
#else
    /* Under a planned overlap (raster_walk) the aligned groups of four
     * raster pixels the plan assumes (mcu_planner/lowering/conv.py, WALKS). */
    if ((multiplier == 1 || multiplier % 4 == 0) && !p->raster_walk) {
        depthwise_conv_2d_s8_runs(p, input, filter, bias, output, NULL);
        return;
    }
    if (multiplier == 1 || multiplier % 4 == 0) {
        mcu_depthwise_conv_2d_s8_raster_groups(p, input, filter, bias, output);
        return;
    }
#endif
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x, out += out_c) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                const int inside = wy.end - wy.first == p->filter_h && wx.end - wx.first == p->filter_w;
                const int8_t *x_first = input;
                const int8_t *w_first = filter;
                taps.rows = MCU_MAX(wy.end - wy.first, 0);
                taps.cols = MCU_MAX(wx.end - wx.first, 0);
                if (taps.rows > 0 && taps.cols > 0) {
                    x_first += mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(&wy, wy.first),
                                               mcu_window_input(&wx, wx.first), 0);
                    w_first += ((size_t)wy.first * (size_t)p->filter_w + (size_t)wx.first) * (size_t)out_c;
                } else {
                    taps.rows = 0;
                }
                for (oc = 0; oc < out_c; ++oc) {
                    const int8_t *x = x_first + oc / multiplier;
                    const int32_t acc = inside ? terms[oc] + depthwise_window_s8(&taps, x, w_first + oc, 0)
                                               : depthwise_window_s8(&taps, x, w_first + oc, p->input_offset);
                    out[oc] = requantize_s8(p, acc, bias, oc);
                }
            }
        }
    }
}
