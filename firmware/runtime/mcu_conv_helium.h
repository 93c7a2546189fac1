/* Helium (M-profile vector extension, Cortex-M55) blocks of the int8
 * convolutions in mcu_conv.c: several output pixels per pass, so that each
 * filter vector is loaded once for all of them, and requantization on four
 * lanes at a time.
 *
 * Both blocks take windows wholly inside the input (or copied with the input
 * zero point in their padding), whose input offset window_offset_terms adds
 * once per output: int32 sums wrap the same in any order, so the values are
 * those of the reference loops.  Nothing here is compiled without MCU_MVE. */
#ifndef MCU_CONV_HELIUM_H
#define MCU_CONV_HELIUM_H

#include "mcu_conv.h"
#include "mcu_dsp.h"
#include "mcu_quant.h"

#if defined(MCU_MVE)

/* What requantization reads from the parameters, loaded once per call: the
 * stores through int8 pointers could alias any of it, so the compiler would
 * otherwise reload it for every output channel. */
typedef struct {
    const int32_t *multiplier;
    const int32_t *shift;
    const int32_t *bias;
    int32_t output_offset;
    int32x4_t act_min;
    int32x4_t act_max;
} mcu_helium_requant;

static inline MCU_ALWAYS_INLINE mcu_helium_requant mcu_helium_requant_of(const mcu_conv_s8_params *p,
                                                                         const int32_t *bias)
{
    mcu_helium_requant q;
    q.multiplier = p->output_multiplier;
    q.shift = p->output_shift;
    q.bias = bias;
    q.output_offset = p->output_offset;
    q.act_min = vdupq_n_s32(p->act_min);
    q.act_max = vdupq_n_s32(p->act_max);
    return q;
}

/* Lane r of `acc`, output channel oc of pixel r (its bytes at out + oc +
 * offsets[r]), requantized and stored for the lanes `pixels` selects. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_channel(const mcu_helium_requant *q, int32x4_t acc, int32_t oc,
                                                              uint32x4_t offsets, mve_pred16_t pixels, int8_t *out)
{
    if (q->bias) {
        acc = vaddq_n_s32(acc, q->bias[oc]);
    }
    acc = mcu_mul_by_quantized_mul_x4_n(acc, q->multiplier[oc], q->shift[oc]);
    acc = vaddq_n_s32(acc, q->output_offset);
    acc = vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max);
    vstrbq_scatter_offset_p_s32(out + oc, offsets, acc, pixels);
}

static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_lanes(int32_t s0, int32_t s1, int32_t s2, int32_t s3)
{
    int32x4_t v = vdupq_n_s32(s0);
    v = vsetq_lane_s32(s1, v, 1);
    v = vsetq_lane_s32(s2, v, 2);
    return vsetq_lane_s32(s3, v, 3);
}

/* `count` (1 to 4) rows of `n` int8 values -- pixels of a pointwise
 * convolution, or windows copied into columns -- against every filter (`n`
 * values each, one after another): channel oc of row r goes to
 * out[r * output_c + oc].  Sixteen values per VMLADAVA, the last n % 16
 * tail-predicated; rows past `count` repeat row 0 and are not stored.  Rows
 * of at most 16 values stay in registers across all the filters. */
MCU_NOINLINE static void mcu_helium_conv_rows_s8(const mcu_conv_s8_params *p, const int8_t *const rows[4],
                                                 int32_t count, const int8_t *filter, int32_t n,
                                                 const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c;
    const int32_t *terms = p->window_offset_terms;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c);
    const mve_pred16_t pixels = vctp32q((uint32_t)count);
    const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
    const int32_t blocks = n >> 4;
    const int8_t *r0 = rows[0];
    const int8_t *r1 = count > 1 ? rows[1] : r0;
    const int8_t *r2 = count > 2 ? rows[2] : r0;
    const int8_t *r3 = count > 3 ? rows[3] : r0;
    int32_t oc;
    if (n <= 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)n);
        const int8x16_t a0 = vldrbq_z_s8(r0, lanes), a1 = vldrbq_z_s8(r1, lanes);
        const int8x16_t a2 = vldrbq_z_s8(r2, lanes), a3 = vldrbq_z_s8(r3, lanes);
        for (oc = 0; oc < out_c; ++oc, filter += n) {
            const int8x16_t w = vldrbq_z_s8(filter, lanes);
            const int32x4_t sums =
                mcu_helium_lanes(vmladavq_s8(a0, w), vmladavq_s8(a1, w), vmladavq_s8(a2, w), vmladavq_s8(a3, w));
            mcu_helium_store_channel(&q, vaddq_n_s32(sums, terms[oc]), oc, offsets, pixels, out);
        }
        return;
    }
    for (oc = 0; oc < out_c; ++oc) {
        const int8_t *x0 = r0, *x1 = r1, *x2 = r2, *x3 = r3;
        int32_t s0 = terms[oc], s1 = s0, s2 = s0, s3 = s0, k;
        for (k = blocks; k > 0; --k) {
            const int8x16_t w = vldrbq_s8(filter);
            s0 = vmladavaq_s8(s0, vldrbq_s8(x0), w);
            s1 = vmladavaq_s8(s1, vldrbq_s8(x1), w);
            s2 = vmladavaq_s8(s2, vldrbq_s8(x2), w);
            s3 = vmladavaq_s8(s3, vldrbq_s8(x3), w);
            filter += 16;
            x0 += 16;
            x1 += 16;
            x2 += 16;
            x3 += 16;
        }
        if (n & 15) {
            const int8x16_t w = vldrbq_z_s8(filter, tail);
            s0 = vmladavaq_s8(s0, vldrbq_z_s8(x0, tail), w);
            s1 = vmladavaq_s8(s1, vldrbq_z_s8(x1, tail), w);
            s2 = vmladavaq_s8(s2, vldrbq_z_s8(x2, tail), w);
            s3 = vmladavaq_s8(s3, vldrbq_z_s8(x3, tail), w);
            filter += n & 15;
        }
        mcu_helium_store_channel(&q, mcu_helium_lanes(s0, s1, s2, s3), oc, offsets, pixels, out);
    }
}

/* Channels oc .. oc + 3 (the lanes `lanes` selects) of one pixel, the bias
 * already in `acc`. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_pixel(const mcu_helium_requant *q, int32x4_t acc,
                                                            int32x4_t multiplier, mcu_shift_x4 shift,
                                                            mve_pred16_t lanes, int8_t *out)
{
    acc = vaddq_n_s32(mcu_mul_by_quantized_mul_x4_split(acc, multiplier, shift), q->output_offset);
    vstrbq_p_s32(out, vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max), lanes);
}

/* The taps of the depthwise windows of a pass (mcu_helium_depthwise_s8),
 * the same for its pixels: `rows` x `cols` taps inside the input, `tap`
 * bytes apart, and rows row[i] bytes apart for pixel i (a window read in
 * place and one copied into a column can share a pass); windows wholly
 * `inside` take the input offset from window_offset_terms, the others add
 * `offset` to every tap.  Output pixels are `out_step` bytes apart. */
typedef struct {
    size_t row[4];
    size_t tap;
    int32_t rows;
    int32_t cols;
    int32_t offset;
    int inside;
    size_t out_step;
} mcu_helium_taps;

/* Loads four int8 values widened to int32 lanes: all of them, or (a tail of
 * channels) those `lanes` selects, the others 0. */
static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_load_s8x4(const int8_t *at, int full, mve_pred16_t lanes)
{
    return full ? vldrbq_s32(at) : vldrbq_z_s32(at, lanes);
}

/* The same plus the input offset when `with_offset` (windows reaching into
 * the padding). */
static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_load_input_s8x4(const int8_t *at, int full, mve_pred16_t lanes,
                                                                     int with_offset, int32_t offset)
{
    const int32x4_t v = mcu_helium_load_s8x4(at, full, lanes);
    return with_offset ? vaddq_n_s32(v, offset) : v;
}

/* Channels oc .. oc + 3 (those `lanes` selects unless `full`) of the pixels
 * of mcu_helium_depthwise_s8. */
static inline MCU_ALWAYS_INLINE void mcu_helium_depthwise_group(const mcu_conv_s8_params *p, const int8_t *const x[4],
                                                                int32_t count, const mcu_helium_taps *taps,
                                                                const int8_t *filter, const mcu_helium_requant *q,
                                                                const size_t row[4], int32_t oc, int full,
                                                                int with_offset, mve_pred16_t lanes, int8_t *out)
{
    const int32_t out_c = p->output_c, multiplier = p->filter_in_c_or_multiplier;
    const int32_t filter_h = taps->rows, filter_w = taps->cols, offset = with_offset ? taps->offset : 0;
    const size_t input_tap = taps->tap, out_step = taps->out_step;
    const size_t filter_row = (size_t)p->filter_w * (size_t)out_c, filter_tap = (size_t)out_c;
    const size_t in_c = multiplier == 1 ? (size_t)oc : (size_t)(oc / multiplier);
    /* The bias joins the offset terms up front: one add for the four pixels. */
    const int32x4_t bias = q->bias ? vldrwq_z_s32(q->bias + oc, lanes) : vdupq_n_s32(0);
    const int32x4_t terms = with_offset ? bias : vaddq_s32(vldrwq_z_s32(p->window_offset_terms + oc, lanes), bias);
    int32x4_t a0 = terms, a1 = terms, a2 = terms, a3 = terms;
    const int8_t *x0 = x[0] + in_c, *x1 = x[1] + in_c, *x2 = x[2] + in_c, *x3 = x[3] + in_c;
    const int8_t *w_row = filter + oc;
    int32_t r, k;
    for (r = 0; r < filter_h; ++r, w_row += filter_row) {
        const int8_t *wk = w_row;
        const int8_t *x0k = x0, *x1k = x1, *x2k = x2, *x3k = x3;
        if (multiplier == 1) {
            for (k = 0; k < filter_w; ++k, wk += filter_tap) {
                const int32x4_t w = mcu_helium_load_s8x4(wk, full, lanes);
                a0 = vaddq_s32(a0, vmulq_s32(mcu_helium_load_input_s8x4(x0k, full, lanes, with_offset, offset), w));
                a1 = vaddq_s32(a1, vmulq_s32(mcu_helium_load_input_s8x4(x1k, full, lanes, with_offset, offset), w));
                a2 = vaddq_s32(a2, vmulq_s32(mcu_helium_load_input_s8x4(x2k, full, lanes, with_offset, offset), w));
                a3 = vaddq_s32(a3, vmulq_s32(mcu_helium_load_input_s8x4(x3k, full, lanes, with_offset, offset), w));
                x0k += input_tap;
                x1k += input_tap;
                x2k += input_tap;
                x3k += input_tap;
            }
        } else {
            for (k = 0; k < filter_w; ++k, wk += filter_tap) {
                const int32x4_t w = mcu_helium_load_s8x4(wk, full, lanes);
                a0 = vmlaq_n_s32(a0, w, *x0k + offset);
                a1 = vmlaq_n_s32(a1, w, *x1k + offset);
                a2 = vmlaq_n_s32(a2, w, *x2k + offset);
                a3 = vmlaq_n_s32(a3, w, *x3k + offset);
                x0k += input_tap;
                x1k += input_tap;
                x2k += input_tap;
                x3k += input_tap;
            }
        }
        x0 += row[0];
        x1 += row[1];
        x2 += row[2];
        x3 += row[3];
    }
    {
        const int32x4_t multipliers = vldrwq_z_s32(q->multiplier + oc, lanes);
        const mcu_shift_x4 shifts = mcu_split_shift_x4(vldrwq_z_s32(q->shift + oc, lanes));
        int8_t *o = out + oc;
        mcu_helium_store_pixel(q, a0, multipliers, shifts, lanes, o);
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

/* `count` (1 to 4) output pixels of a depthwise convolution with depth
 * multiplier 1 or a multiple of 4 whose windows have the same taps inside
 * the input (`taps`): x[i] is the first inside tap of pixel i's window,
 * filter the filter at that tap, out pixel 0's first channel.  Every channel,
 * four (the lanes) at a time, each filter vector loaded once for the pixels.
 * Multiplier 1: lane c reads input channel oc + c; a multiple of 4: the four
 * lanes read one input value, channel oc / multiplier.  Pixels past `count`
 * repeat pixel 0 and are not stored. */
MCU_NOINLINE static void mcu_helium_depthwise_s8(const mcu_conv_s8_params *p, const int8_t *const x[4], int32_t count,
                                                 const mcu_helium_taps *taps, const int8_t *filter,
                                                 const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    /* Read once: the int8 stores could alias taps, so the compiler would
     * otherwise reload the steps for every channel group. */
    const size_t row[4] = {taps->row[0], taps->row[1], taps->row[2], taps->row[3]};
    const int8_t *px[4];
    int32_t oc;
    px[0] = x[0];
    px[1] = count > 1 ? x[1] : x[0];
    px[2] = count > 2 ? x[2] : x[0];
    px[3] = count > 3 ? x[3] : x[0];
    if (taps->inside) {
        for (oc = 0; oc + 4 <= out_c; oc += 4) {
            mcu_helium_depthwise_group(p, px, count, taps, filter, &q, row, oc, 1, 0, vctp32q(4u), out);
        }
    } else {
        for (oc = 0; oc + 4 <= out_c; oc += 4) {
            mcu_helium_depthwise_group(p, px, count, taps, filter, &q, row, oc, 1, 1, vctp32q(4u), out);
        }
    }
    if (oc < out_c) {
        mcu_helium_depthwise_group(p, px, count, taps, filter, &q, row, oc, 0, !taps->inside,
                                   vctp32q((uint32_t)(out_c - oc)), out);
    }
}

/* A pass of mcu_helium_conv_runs_s8: up to four output pixels of a
 * convolution of one group whose windows have the same columns inside the
 * input.  Each window row is `cols` runs of `run` contiguous int8 values
 * (with dilation_w 1 one run: the row's inside taps, all channels),
 * `input_col` bytes apart in the input and `filter_col` in the filter; window
 * rows are dilation_h input rows (`input_row` bytes each) and `filter_row`
 * filter bytes apart, filters `filter_size` apart.  A window row outside the
 * input reads `zero_row` (the input zero point, as long as a row's runs
 * reach) instead, which with the input offset adds nothing.  With every
 * column inside (`inside`) the sums start at window_offset_terms; otherwise
 * they add `offset` times the sum of the filter taps they read -- the same
 * as adding the offset to every value read. */
typedef struct {
    int32_t filter_h;
    int32_t dilation_h;
    int32_t input_h;
    int32_t cols;
    int32_t run;
    size_t input_row;
    size_t input_col;
    size_t filter_row;
    size_t filter_col;
    size_t filter_size;
    int32_t offset;
    int inside;
    const int8_t *zero_row;
    /* Per pixel: its first inside column at input row 0 of its image, the
     * input row of its window row 0 (negative in the padding), its output
     * offset. */
    const int8_t *column[4];
    int32_t origin[4];
    uint32_t out[4];
} mcu_helium_conv_pass;

/* Adds the products of one run of `n` values of four pixels (x0 .. x3) and a
 * filter (w) to s[0..3], and with `sum_filter` the filter values to *w_sum:
 * sixteen values per VMLADAVA, the last n % 16 predicated. */
static inline MCU_ALWAYS_INLINE void mcu_helium_run4_s8(const int8_t *x0, const int8_t *x1, const int8_t *x2,
                                                        const int8_t *x3, const int8_t *w, int32_t n, int sum_filter,
                                                        int32_t s[4], int32_t *w_sum)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], f = *w_sum, k;
    for (k = n >> 4; k > 0; --k) {
        const int8x16_t wv = vldrbq_s8(w);
        s0 = vmladavaq_s8(s0, vldrbq_s8(x0), wv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(x1), wv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(x2), wv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(x3), wv);
        if (sum_filter) {
            f = vaddvaq_s8(f, wv);
        }
        w += 16;
        x0 += 16;
        x1 += 16;
        x2 += 16;
        x3 += 16;
    }
    if (n & 15) {
        const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
        const int8x16_t wv = vldrbq_z_s8(w, tail);
        s0 = vmladavaq_s8(s0, vldrbq_z_s8(x0, tail), wv);
        s1 = vmladavaq_s8(s1, vldrbq_z_s8(x1, tail), wv);
        s2 = vmladavaq_s8(s2, vldrbq_z_s8(x2, tail), wv);
        s3 = vmladavaq_s8(s3, vldrbq_z_s8(x3, tail), wv);
        if (sum_filter) {
            f = vaddvaq_s8(f, wv);
        }
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    *w_sum = f;
}

/* Window row r of pixel k of the pass: its first inside column, or the zero
 * row when the row lies in the padding. */
static inline MCU_ALWAYS_INLINE const int8_t *mcu_helium_pass_row(const mcu_helium_conv_pass *t, int32_t k, int32_t r)
{
    const int32_t y = t->origin[k] + r * t->dilation_h;
    return (uint32_t)y < (uint32_t)t->input_h ? t->column[k] + (size_t)y * t->input_row : t->zero_row;
}

/* One output channel's sums over the pass's windows (w: its filter at the
 * first inside column), added to s[]. */
static inline MCU_ALWAYS_INLINE void mcu_helium_pass_channel_s8(const mcu_helium_conv_pass *t, const int8_t *w,
                                                                int sum_filter, int32_t s[4])
{
    int32_t w_sum = 0, r, c;
    for (r = 0; r < t->filter_h; ++r, w += t->filter_row) {
        const int8_t *x0 = mcu_helium_pass_row(t, 0, r), *x1 = mcu_helium_pass_row(t, 1, r);
        const int8_t *x2 = mcu_helium_pass_row(t, 2, r), *x3 = mcu_helium_pass_row(t, 3, r);
        for (c = 0; c < t->cols; ++c) {
            const size_t at = (size_t)c * t->input_col;
            mcu_helium_run4_s8(x0 + at, x1 + at, x2 + at, x3 + at, w + (size_t)c * t->filter_col, t->run, sum_filter,
                               s, &w_sum);
        }
    }
    if (sum_filter) {
        const int32_t term = (int32_t)((uint32_t)t->offset * (uint32_t)w_sum);
        for (c = 0; c < 4; ++c) {
            s[c] = mcu_add_wrap_s32(s[c], term);
        }
    }
}

/* The `count` (1 to 4) output pixels of `pass`, read in place, so that
 * windows of any length need no column; filter: the first filter at the
 * pass's first inside column.  Every output channel, each filter vector
 * loaded once for the four pixels; pixels past `count` repeat pixel 0 and
 * are not stored. */
MCU_NOINLINE static void mcu_helium_conv_pass_s8(const mcu_conv_s8_params *p, const mcu_helium_conv_pass *pass,
                                                 int32_t count, const int8_t *filter, const int32_t *bias,
                                                 int8_t *out)
{
    mcu_helium_conv_pass t = *pass; /* a copy: the int8 stores could alias it */
    const int32_t out_c = p->output_c;
    const int32_t *terms = p->window_offset_terms;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const mve_pred16_t pixels = vctp32q((uint32_t)count);
    uint32x4_t offsets;
    int32_t oc, k;
    for (k = count; k < 4; ++k) {
        t.column[k] = t.column[0];
        t.origin[k] = t.origin[0];
        t.out[k] = t.out[0];
    }
    offsets = vldrwq_u32(t.out);
    for (oc = 0; oc < out_c; ++oc, filter += t.filter_size) {
        int32_t s[4];
        if (t.inside) {
            s[0] = s[1] = s[2] = s[3] = terms[oc];
            mcu_helium_pass_channel_s8(&t, filter, 0, s);
        } else {
            s[0] = s[1] = s[2] = s[3] = 0;
            mcu_helium_pass_channel_s8(&t, filter, 1, s);
        }
        mcu_helium_store_channel(&q, vldrwq_s32(s), oc, offsets, pixels, out);
    }
}

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_H */
