/* What the int8 convolution families (mcu_conv_*.c, mcu_depthwise_*.c)
 * share: requantization of their sums, the columns' sizes and copies, the
 * inside ranges and the raster walk.  Not part of the runtime's interface. */
#ifndef MCU_CONV_INTERNAL_H
#define MCU_CONV_INTERNAL_H

#include "mcu_conv.h"
#include "mcu_dsp.h"
#include "mcu_quant.h"
#include "mcu_window.h"

#include <string.h>

static inline MCU_ALWAYS_INLINE int8_t requantize_s8(const mcu_conv_s8_params *p, int32_t acc, const int32_t *bias,
                                                int32_t out_c)
{
    /* The prepared form costs less than mcu_mul_by_quantized_mul even for
     * one sum: 32-bit rounding terms instead of 64-bit variable shifts. */
    const mcu_prepared_mul m = mcu_prepare_mul(p->output_multiplier[out_c], (int)p->output_shift[out_c]);
    if (bias) {
        acc += bias[out_c];
    }
    acc = mcu_apply_prepared_mul(acc, &m);
    return (int8_t)mcu_clamp_s32(acc + p->output_offset, p->act_min, p->act_max);
}

/* The output stage of requantize_s8 for a sum that already holds the bias,
 * with the channel's multiplier prepared once (mcu_prepare_mul). */
typedef struct {
    int32_t output_offset;
    int32_t act_min;
    int32_t act_max;
} conv_output_range;

static inline MCU_ALWAYS_INLINE conv_output_range conv_output_range_of(const mcu_conv_s8_params *p)
{
    conv_output_range r;
    r.output_offset = p->output_offset;
    r.act_min = p->act_min;
    r.act_max = p->act_max;
    return r;
}

static inline MCU_ALWAYS_INLINE int8_t requantize_prepared_s8(const conv_output_range *r, int32_t acc,
                                                              const mcu_prepared_mul *m)
{
    return (int8_t)mcu_clamp_s32(mcu_apply_prepared_mul(acc, m) + r->output_offset, r->act_min, r->act_max);
}

/* requantize_prepared_s8 for a multiplier with m->high_shift >= 0. */
static inline MCU_ALWAYS_INLINE int8_t requantize_right_shift_s8(const conv_output_range *r, int32_t acc,
                                                                 const mcu_prepared_mul *m)
{
    return (int8_t)mcu_clamp_s32(mcu_apply_prepared_right_shift(acc, m) + r->output_offset, r->act_min, r->act_max);
}

/* Sums {pixel 0 channel c, pixel 0 c + 1, pixel 1 c, pixel 1 c + 1} plus
 * add0 / add1, rescaled by m0 / m1 and stored at out[0], out[1],
 * out[out_step], out[out_step + 1] (without a second channel or pixel, only
 * the first). */
static inline MCU_ALWAYS_INLINE void requantize_2x2_prepared_store(const conv_output_range *range,
                                                                   const int32_t acc[4], int32_t add0, int32_t add1,
                                                                   const mcu_prepared_mul *m0,
                                                                   const mcu_prepared_mul *m1, int has_pair,
                                                                   int has_second, int8_t *out, size_t out_step)
{
    out[0] = requantize_prepared_s8(range, mcu_add_wrap_s32(acc[0], add0), m0);
    if (has_pair) {
        out[1] = requantize_prepared_s8(range, mcu_add_wrap_s32(acc[1], add1), m1);
    }
    if (has_second) {
        out[out_step] = requantize_prepared_s8(range, mcu_add_wrap_s32(acc[2], add0), m0);
        if (has_pair) {
            out[out_step + 1] = requantize_prepared_s8(range, mcu_add_wrap_s32(acc[3], add1), m1);
        }
    }
}

/* Bias (when there is one) plus `term`, wrapping as int32 sums do. */
static inline MCU_ALWAYS_INLINE int32_t bias_plus(const int32_t *bias, int32_t out_c, int32_t term)
{
    return bias ? mcu_add_wrap_s32(bias[out_c], term) : term;
}

#if defined(MCU_MVE)
/* requantize_s8 on four lanes whose channels are `channels` (their multiplier,
 * shift and bias gathered); int32 adds wrap as the scalar ones do. */
static inline int32x4_t requantize_s8x4_gather(const mcu_conv_s8_params *p, int32x4_t acc, const int32_t *bias,
                                                uint32x4_t channels)
{
    if (bias) {
        acc = vaddq_s32(acc, vldrwq_gather_shifted_offset_s32(bias, channels));
    }
    acc = mcu_mul_by_quantized_mul_x4(acc, vldrwq_gather_shifted_offset_s32(p->output_multiplier, channels),
                                      vldrwq_gather_shifted_offset_s32(p->output_shift, channels));
    acc = vaddq_n_s32(acc, p->output_offset);
    return vminq_s32(vmaxq_s32(acc, vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
}

/* Channels out_c .. out_c + 3, stored as four int8. */
static inline void requantize_s8x4_store(const mcu_conv_s8_params *p, int32x4_t acc, const int32_t *bias,
                                         int32_t out_c, int8_t *out)
{
    if (bias) {
        acc = vaddq_s32(acc, vldrwq_s32(bias + out_c));
    }
    acc = mcu_mul_by_quantized_mul_x4(acc, vldrwq_s32(p->output_multiplier + out_c),
                                      vldrwq_s32(p->output_shift + out_c));
    acc = vaddq_n_s32(acc, p->output_offset);
    vstrbq_s32(out + out_c, vminq_s32(vmaxq_s32(acc, vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max)));
}

/* A 2 x 2 block: sums {pixel 0 channel c, pixel 0 c + 1, pixel 1 c, pixel 1
 * c + 1} to out[c], out[c + 1], out[output_c + c], out[output_c + c + 1].
 * Without a second channel (pixel) its lanes repeat the first channel and
 * are not stored. */
static inline void requantize_s8_2x2_store(const mcu_conv_s8_params *p, const int32_t sums[4], const int32_t *bias,
                                           int32_t out_c, int has_pair, int has_second, int8_t *out)
{
    const uint32_t c0 = (uint32_t)out_c, c1 = c0 + (has_pair ? 1u : 0u), row = (uint32_t)p->output_c;
    const uint32_t lane_channels[4] = {c0, c1, c0, c1};
    const uint32_t lane_offsets[4] = {c0, c0 + 1u, row + c0, row + c0 + 1u};
    const mve_pred16_t lanes = (mve_pred16_t)((has_pair ? 0xFFFFu : 0x0F0Fu) & (has_second ? 0xFFFFu : 0x00FFu));
    const int32x4_t q = requantize_s8x4_gather(p, vldrwq_s32(sums), bias, vldrwq_u32(lane_channels));
    vstrbq_scatter_offset_p_s32(out, vldrwq_u32(lane_offsets), q, lanes);
}
#endif


/* Windows of at most this many values (filter_h * filter_w * input_c) are
 * copied whole into columns of the kernel's `columns` scratch (planned in the
 * arena by mcu_planner/lowering/conv.py, p->column_bytes long), several output
 * pixels at a time, so that every window is one run of taps however short
 * its rows are and wherever it lies (5 x 5 x 32 and 3 x 3 x 112 fit).  The
 * four Helium columns then take at most 4 KiB of the arena; longer windows
 * are read in place (mcu_conv_helium.c). */
#define MCU_CONV_COLUMN_MAX 1024
#if defined(MCU_MVE)
/* Helium takes four output pixels per pass (mcu_helium_conv_rows_s8). */
#define MCU_CONV_COLUMNS 4
#else
#define MCU_CONV_COLUMNS 2
#endif

/* memcpy and memset for the short runs of a column: with Helium sixteen
 * bytes a step (the C library's may take one). */
static inline MCU_ALWAYS_INLINE void column_copy(int8_t *to, const int8_t *from, size_t n)
{
#if defined(MCU_MVE)
    for (; n >= 16u; n -= 16u, to += 16, from += 16) {
        vst1q_s8(to, vld1q_s8(from));
    }
    if (n > 0u) {
        const mve_pred16_t lanes = vctp8q((uint32_t)n);
        vstrbq_p_s8(to, vldrbq_z_s8(from, lanes), lanes);
    }
#else
    memcpy(to, from, n);
#endif
}

static inline MCU_ALWAYS_INLINE void column_fill(int8_t *to, int value, size_t n)
{
#if defined(MCU_MVE)
    const int8x16_t v = vdupq_n_s8((int8_t)value);
    for (; n >= 16u; n -= 16u, to += 16) {
        vst1q_s8(to, v);
    }
    if (n > 0u) {
        vstrbq_p_s8(to, v, vctp8q((uint32_t)n));
    }
#else
    memset(to, value, n);
#endif
}

/* The output coordinates [*first, *end) along one axis whose windows lie
 * wholly inside the input: origin = out * stride - pad at or past 0, and the
 * last tap, origin + (taps - 1) * dilation, before input_size. */
static inline void conv_inside_range(int32_t output_size, int32_t stride, int32_t pad, int32_t dilation, int32_t taps,
                              int32_t input_size, int32_t *first, int32_t *end)
{
    const int32_t last_origin = input_size - 1 - (taps - 1) * dilation; /* the largest origin inside */
    *first = MCU_MIN((pad + stride - 1) / stride, output_size);
    *end = last_origin + pad < 0 ? *first : MCU_MAX(*first, MCU_MIN((last_origin + pad) / stride + 1, output_size));
}

/* The raster pixel after (*b, *y, *x). */
static inline MCU_ALWAYS_INLINE void raster_next(const mcu_conv_s8_params *p, int32_t *b, int32_t *y, int32_t *x)
{
    if (++*x == p->output_w) {
        *x = 0;
        if (++*y == p->output_h) {
            *y = 0;
            ++*b;
        }
    }
}

/* Taps of a depthwise window: `rows` x `cols` values `tap` apart in a row and
 * `row` apart between rows, in the input and in the filter. */
typedef struct {
    int32_t rows;
    int32_t cols;
    size_t input_row;
    size_t input_tap;
    size_t filter_row;
    size_t filter_tap;
} depthwise_taps;

/* A run of `pixels` output pixels of a depthwise convolution (`pixel_step`
 * input bytes and `out_step` output bytes apart) whose windows have the same
 * taps inside the input, x and w at the first of them (x: the first inside
 * tap of the first pixel; w: the filter at that tap; out: its first
 * channel).  Windows wholly `inside` take the input offset from
 * window_offset_terms, the others add it per tap. */
typedef struct {
    const depthwise_taps *taps;
    const int8_t *x;
    size_t pixel_step;
    int32_t pixels;
    const int8_t *w;
    int inside;
    const int32_t *bias;
    int8_t *out;
    size_t out_step;
} mcu_depthwise_run;

static inline int32_t depthwise_window_s8(const depthwise_taps *t, const int8_t *x, const int8_t *w, int32_t offset)
{
    int32_t acc = 0, r, k;
    for (r = 0; r < t->rows; ++r, x += t->input_row, w += t->filter_row) {
        const int8_t *xk = x, *wk = w;
        for (k = 0; k < t->cols; ++k, xk += t->input_tap, wk += t->filter_tap) {
            acc += ((int32_t)*xk + offset) * (int32_t)*wk;
        }
    }
    return acc;
}

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Four taps of two pixels (words a0, a1) against two filters (b0, b1), added
 * to s00 = a0.b0, s01 = a0.b1, s10 = a1.b0, s11 = a1.b1: the 2 x 2 block of
 * the DSP dot products below. */
static inline MCU_ALWAYS_INLINE void smlad_words_2x2(uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1, int32_t *s00,
                                                     int32_t *s01, int32_t *s10, int32_t *s11)
{
    const int32_t a0_even = mcu_s8x4_even(a0), a0_odd = mcu_s8x4_odd(a0);
    const int32_t a1_even = mcu_s8x4_even(a1), a1_odd = mcu_s8x4_odd(a1);
    int32_t b_even = mcu_s8x4_even(b0), b_odd = mcu_s8x4_odd(b0);
    *s00 = __smlad(a0_even, b_even, *s00);
    *s00 = __smlad(a0_odd, b_odd, *s00);
    *s10 = __smlad(a1_even, b_even, *s10);
    *s10 = __smlad(a1_odd, b_odd, *s10);
    b_even = mcu_s8x4_even(b1);
    b_odd = mcu_s8x4_odd(b1);
    *s01 = __smlad(a0_even, b_even, *s01);
    *s01 = __smlad(a0_odd, b_odd, *s01);
    *s11 = __smlad(a1_even, b_even, *s11);
    *s11 = __smlad(a1_odd, b_odd, *s11);
}
#endif

#endif /* MCU_CONV_INTERNAL_H */
