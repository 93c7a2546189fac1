/* int8 depthwise convolutions of depth multiplier 1 on Helium
 * (mcu_depthwise_helium.h): eight channels of one tap per VLDRB.S16, their
 * products with the filter widened to int32 by VMULLB (even channels) and
 * VMULLT (odd ones), so that one multiply gives four sums' products without
 * the widening loads of four-lane int32 vectors; two pixels of a run share
 * each filter load.  The even and odd sums are requantized as two vectors
 * and narrowed back into channel order (VMOVNB / VMOVNT) for one store.
 *
 * Products: (x + offset) lies in [-255, 255] and the filter in [-128, 127],
 * so each fits int32, and int32 sums wrap the same in any order: the values
 * are those of the reference loops.  Nothing here is compiled without
 * MCU_MVE. */
#include "mcu_depthwise_helium.h"

#if defined(MCU_MVE)
#include "mcu_conv_helium.h"

/* What a run's channel groups share, loaded once per run. */
typedef struct {
    const depthwise_taps *taps;
    size_t pixel_step;
    size_t out_step;
    int16_t offset;
    int inside;
    const int32_t *terms;
    int32_t out_c;
    mcu_helium_requant q;
} dw8_run;

static inline MCU_ALWAYS_INLINE int16x8_t dw8_load(const int8_t *at, int full, mve_pred16_t lanes)
{
    return full ? vldrbq_s16(at) : vldrbq_z_s16(at, lanes);
}

/* Four int32 values at `at` + offsets (even or odd channels), those `lanes`
 * selects unless `full`. */
static inline MCU_ALWAYS_INLINE int32x4_t dw8_gather(const int32_t *at, uint32x4_t offsets, int full,
                                                     mve_pred16_t lanes)
{
    return full ? vldrwq_gather_shifted_offset_s32(at, offsets) : vldrwq_gather_shifted_offset_z_s32(at, offsets, lanes);
}

static inline MCU_ALWAYS_INLINE int32x4_t dw8_requantize(const mcu_helium_requant *q, int32x4_t acc,
                                                         int32x4_t multiplier, mcu_shift_x4 shift)
{
    acc = vaddq_n_s32(mcu_mul_by_quantized_mul_x4_split(acc, multiplier, shift), q->output_offset);
    return vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max);
}

/* The requantization of channels oc .. oc + 7 as even and odd lanes, and
 * the sums every pixel starts from (the bias, and inside the input the
 * window offset terms), loaded once for a run's pixels. */
typedef struct {
    int32x4_t start[2];
    int32x4_t multiplier[2];
    mcu_shift_x4 shift[2];
} dw8_channels;

static inline MCU_ALWAYS_INLINE void dw8_store(const mcu_helium_requant *q, const dw8_channels *c, int32x4_t even,
                                               int32x4_t odd, int full, mve_pred16_t lanes, int8_t *out)
{
    /* The low halves of the even sums' int32 lanes are their int16 values:
     * VMOVNT puts the odd ones between them, in channel order. */
    const int32x4_t low = dw8_requantize(q, even, c->multiplier[0], c->shift[0]);
    const int16x8_t v = vmovntq_s32(vreinterpretq_s16_s32(low), dw8_requantize(q, odd, c->multiplier[1], c->shift[1]));
    if (full) {
        vstrbq_s16(out, v);
    } else {
        vstrbq_p_s16(out, v, lanes);
    }
}

/* One tap of dw8_pass: the filter vector at wk against the input at xk
 * (and pixel_step bytes on for a `pair`), products added to acc: pixel 0's
 * even and odd channels, then pixel 1's. */
static inline MCU_ALWAYS_INLINE void dw8_tap(const int8_t *xk, const int8_t *wk, size_t pixel_step, int16_t offset,
                                             int inside, int pair, int full, mve_pred16_t lanes, int32x4_t acc[4])
{
    const int16x8_t wv = dw8_load(wk, full, lanes);
    int16x8_t v = dw8_load(xk, full, lanes);
    if (!inside) {
        v = vaddq_n_s16(v, offset);
    }
    acc[0] = vaddq_s32(acc[0], vmullbq_int_s16(v, wv));
    acc[1] = vaddq_s32(acc[1], vmulltq_int_s16(v, wv));
    if (pair) {
        v = dw8_load(xk + pixel_step, full, lanes);
        if (!inside) {
            v = vaddq_n_s16(v, offset);
        }
        acc[2] = vaddq_s32(acc[2], vmullbq_int_s16(v, wv));
        acc[3] = vaddq_s32(acc[3], vmulltq_int_s16(v, wv));
    }
}

/* Channels oc .. oc + 7 (those `lanes` selects unless `full`) of one pixel,
 * or of two (`pair`, the second pixel_step input and out_step output bytes
 * after the first); `inside`, `pair` and `full` are constants at each call. */
static inline MCU_ALWAYS_INLINE void dw8_pass(const dw8_run *run, const depthwise_taps *taps,
                                              const dw8_channels *c, const int8_t *x, const int8_t *w, int inside, int pair, int full, mve_pred16_t lanes,
                                              int8_t *out)
{
    /* Read once: the int8 stores could alias the steps. */
    const int32_t rows = taps->rows, cols = taps->cols;
    const size_t input_row = taps->input_row, input_tap = taps->input_tap;
    const size_t filter_row = taps->filter_row, filter_tap = taps->filter_tap;
    const size_t pixel_step = run->pixel_step;
    const int16_t offset = run->offset;
    int32x4_t acc[4];
    const int8_t *xr = x, *wr = w;
    int32_t r, k;
    acc[0] = acc[2] = c->start[0];
    acc[1] = acc[3] = c->start[1];
    if (cols == 1) {
        /* A column of taps (the (k, 1) filters of streaming models): one
         * loop, not a loop of one tap in each row. */
        for (r = 0; r < rows; ++r, xr += input_row, wr += filter_row) {
            dw8_tap(xr, wr, pixel_step, offset, inside, pair, full, lanes, acc);
        }
    } else {
        for (r = 0; r < rows; ++r, xr += input_row, wr += filter_row) {
            const int8_t *xk = xr, *wk = wr;
            for (k = 0; k < cols; ++k, xk += input_tap, wk += filter_tap) {
                dw8_tap(xk, wk, pixel_step, offset, inside, pair, full, lanes, acc);
            }
        }
    }
    dw8_store(&run->q, c, acc[0], acc[1], full, lanes, out);
    if (pair) {
        dw8_store(&run->q, c, acc[2], acc[3], full, lanes, out + run->out_step);
    }
}

/* Channels oc .. oc + 7 of every pixel of the run, two at a time and a last
 * one alone.  `inside` (a constant at each call): 1, windows inside the
 * input, their offset from window_offset_terms; 0, windows in the padding,
 * the offset added per tap; -1, either (shared->inside), the passes read
 * the input as it is and the padding's windows start from the offset times
 * the sum of the filter taps they read (the same for the run's pixels): one
 * copy of the loops for the channel tails. */
static inline MCU_ALWAYS_INLINE void dw8_group(const dw8_run *shared, const int8_t *x, int32_t pixels,
                                               const int8_t *w, int32_t oc, int32_t remaining, int inside, int full,
                                               int8_t *out)
{
    /* A copy the stores cannot alias, so that each pass keeps the steps in
     * registers or reloads them cheaply. */
    const depthwise_taps taps = *shared->taps;
    const dw8_run *run = shared;
    const mve_pred16_t lanes = full ? vctp16q(8u) : vctp16q((uint32_t)remaining);
    const mve_pred16_t even_lanes = full ? vctp32q(4u) : vctp32q((uint32_t)(remaining + 1) / 2u);
    const mve_pred16_t odd_lanes = full ? vctp32q(4u) : vctp32q((uint32_t)remaining / 2u);
    const uint32x4_t even = vidupq_n_u32(0u, 2), odd = vidupq_n_u32(1u, 2);
    const int32_t *bias = run->q.bias;
    const size_t pixel_step = run->pixel_step, out_step = run->out_step;
    dw8_channels c;
    int32_t px, r, k;
    c.start[0] = bias ? dw8_gather(bias + oc, even, full, even_lanes) : vdupq_n_s32(0);
    c.start[1] = bias ? dw8_gather(bias + oc, odd, full, odd_lanes) : vdupq_n_s32(0);
    if (inside == 1 || (inside < 0 && run->inside)) {
        c.start[0] = vaddq_s32(c.start[0], dw8_gather(run->terms + oc, even, full, even_lanes));
        c.start[1] = vaddq_s32(c.start[1], dw8_gather(run->terms + oc, odd, full, odd_lanes));
    } else if (inside < 0) {
        const int16x8_t offset = vdupq_n_s16(run->offset);
        const int8_t *wr = w + oc;
        for (r = 0; r < taps.rows; ++r, wr += taps.filter_row) {
            const int8_t *wk = wr;
            for (k = 0; k < taps.cols; ++k, wk += taps.filter_tap) {
                const int16x8_t wv = dw8_load(wk, full, lanes);
                c.start[0] = vaddq_s32(c.start[0], vmullbq_int_s16(offset, wv));
                c.start[1] = vaddq_s32(c.start[1], vmulltq_int_s16(offset, wv));
            }
        }
    }
    if (inside < 0) {
        inside = 1; /* the passes of a tail read the input as it is */
    }
    c.multiplier[0] = dw8_gather(run->q.multiplier + oc, even, full, even_lanes);
    c.multiplier[1] = dw8_gather(run->q.multiplier + oc, odd, full, odd_lanes);
    c.shift[0] = mcu_split_shift_x4(dw8_gather(run->q.shift + oc, even, full, even_lanes));
    c.shift[1] = mcu_split_shift_x4(dw8_gather(run->q.shift + oc, odd, full, odd_lanes));
    x += oc;
    w += oc;
    out += oc;
    for (px = 0; px + 2 <= pixels; px += 2, x += 2 * pixel_step, out += 2 * out_step) {
        dw8_pass(run, &taps, &c, x, w, inside, 1, full, lanes, out);
    }
    if (px < pixels) {
        dw8_pass(run, &taps, &c, x, w, inside, 0, full, lanes, out);
    }
}

/* dw8_group for whole groups inside the input or not, and for a tail: each
 * in its own frame, so that the stack holds one of them at a time. */
MCU_NOINLINE static void dw8_group_inside(const dw8_run *run, const int8_t *x, int32_t pixels, const int8_t *w,
                                          int32_t oc, int8_t *out)
{
    dw8_group(run, x, pixels, w, oc, 8, 1, 1, out);
}

MCU_NOINLINE static void dw8_group_border(const dw8_run *run, const int8_t *x, int32_t pixels, const int8_t *w,
                                          int32_t oc, int8_t *out)
{
    dw8_group(run, x, pixels, w, oc, 8, 0, 1, out);
}

MCU_NOINLINE static void dw8_tail(const dw8_run *run, const int8_t *x, int32_t pixels, const int8_t *w, int32_t oc,
                                  int8_t *out)
{
    dw8_group(run, x, pixels, w, oc, run->out_c - oc, -1, 0, out);
}

void mcu_depthwise_run_m1_helium_s8(const mcu_conv_s8_params *p, const mcu_depthwise_run *args)
{
    dw8_run run;
    int32_t oc;
    const int8_t *x = args->x, *w = args->w;
    const int32_t pixels = args->pixels;
    const int inside = args->inside;
    int8_t *out = args->out;
    run.taps = args->taps;
    run.pixel_step = args->pixel_step;
    run.out_step = args->out_step;
    run.offset = (int16_t)p->input_offset;
    run.inside = inside;
    run.terms = p->window_offset_terms;
    run.q = mcu_helium_requant_of(p, args->bias);
    run.out_c = p->output_c;
    for (oc = 0; oc + 8 <= run.out_c; oc += 8) {
        if (inside) {
            dw8_group_inside(&run, x, pixels, w, oc, out);
        } else {
            dw8_group_border(&run, x, pixels, w, oc, out);
        }
    }
    if (oc < run.out_c) {
        dw8_tail(&run, x, pixels, w, oc, out);
    }
}
#endif
