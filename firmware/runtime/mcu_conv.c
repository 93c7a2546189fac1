/* Follows reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel and
 * reference_ops::Conv / DepthwiseConv (float) of TensorFlow Lite: same loop
 * nesting, so float sums are added in the same order. */
#include "mcu_conv.h"

#include "mcu_conv_helium.h"
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

static float bias_and_clamp_f32(const mcu_conv_f32_params *p, float total, const float *bias, int32_t out_c)
{
    return mcu_clamp_f32(total + (bias ? bias[out_c] : 0.0f), p->act_min, p->act_max);
}

/* The reference loop: any grouping, input offset added per tap. */
static void conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
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

/* Sums of products over runs of `n` contiguous taps.  The `_offset`
 * variants add the input offset to every input value (windows that reach into
 * the padding); the others leave it to window_offset_terms.  With MCU_DSP
 * four taps at a time go through SMLAD, the rest (n % 4) through the C loop.
 *
 * One input run against two filters: each input value is loaded once. */
MCU_NOINLINE static void dot2_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t *acc0,
                                 int32_t *acc1)
{
    int32_t s0 = 0, s1 = 0;
    const int8_t *const end = x + n;
#if defined(MCU_MVE)
    int32_t left;
    for (left = n; left > 0; left -= 16, x += 16, w0 += 16, w1 += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)left);
        const int8x16_t a = vldrbq_z_s8(x, lanes);
        s0 = vmladavaq_s8(s0, a, vldrbq_z_s8(w0, lanes));
        s1 = vmladavaq_s8(s1, a, vldrbq_z_s8(w1, lanes));
    }
    x = end; /* nothing left for the loop below */
#elif defined(MCU_DSP)
    const int8_t *const end4 = x + (n & ~(int32_t)3);
    while (x != end4) {
        const uint32_t a = mcu_load_s8x4(x), b0 = mcu_load_s8x4(w0), b1 = mcu_load_s8x4(w1);
        const int32_t a_even = mcu_s8x4_even(a), a_odd = mcu_s8x4_odd(a);
        x += 4;
        w0 += 4;
        w1 += 4;
        s0 = __smlad(a_even, mcu_s8x4_even(b0), s0);
        s0 = __smlad(a_odd, mcu_s8x4_odd(b0), s0);
        s1 = __smlad(a_even, mcu_s8x4_even(b1), s1);
        s1 = __smlad(a_odd, mcu_s8x4_odd(b1), s1);
    }
#endif
    while (x != end) {
        const int32_t v = *x++;
        s0 += v * *w0++;
        s1 += v * *w1++;
    }
    *acc0 += s0;
    *acc1 += s1;
}

MCU_NOINLINE static void dot2_offset_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n,
                                        int32_t offset, int32_t *acc0, int32_t *acc1)
{
    int32_t s0 = 0, s1 = 0;
    const int8_t *const end = x + n;
#if defined(MCU_MVE)
    /* Eight values per vector, widened to int16 so that value + offset fits;
     * the filter lanes past the run load as 0 and cancel their products. */
    int32_t left;
    for (left = n; left > 0; left -= 8, x += 8, w0 += 8, w1 += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        const int16x8_t a = vaddq_n_s16(vldrbq_z_s16(x, lanes), (int16_t)offset);
        s0 = vmladavaq_s16(s0, a, vldrbq_z_s16(w0, lanes));
        s1 = vmladavaq_s16(s1, a, vldrbq_z_s16(w1, lanes));
    }
    x = end; /* nothing left for the loop below */
#elif defined(MCU_DSP)
    const int8_t *const end4 = x + (n & ~(int32_t)3);
    const int32_t offset2 = mcu_s16x2_splat(offset);
    while (x != end4) {
        const uint32_t a = mcu_load_s8x4(x), b0 = mcu_load_s8x4(w0), b1 = mcu_load_s8x4(w1);
        const int32_t a_even = mcu_s8x4_even_plus(a, offset2), a_odd = mcu_s8x4_odd_plus(a, offset2);
        x += 4;
        w0 += 4;
        w1 += 4;
        s0 = __smlad(a_even, mcu_s8x4_even(b0), s0);
        s0 = __smlad(a_odd, mcu_s8x4_odd(b0), s0);
        s1 = __smlad(a_even, mcu_s8x4_even(b1), s1);
        s1 = __smlad(a_odd, mcu_s8x4_odd(b1), s1);
    }
#endif
    while (x != end) {
        const int32_t v = (int32_t)*x++ + offset;
        s0 += v * *w0++;
        s1 += v * *w1++;
    }
    *acc0 += s0;
    *acc1 += s1;
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

/* Two input runs (two output pixels) against two filters:
 * sums = {x0.w0, x0.w1, x1.w0, x1.w1}. */
MCU_NOINLINE static void dot2x2_s8(const int8_t *x0, const int8_t *x1, const int8_t *w0, const int8_t *w1, int32_t n,
                                   int32_t sums[4])
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    const int8_t *const end = x0 + n;
#if defined(MCU_MVE)
    int32_t left;
    for (left = n; left > 0; left -= 16, x0 += 16, x1 += 16, w0 += 16, w1 += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)left);
        const int8x16_t a0 = vldrbq_z_s8(x0, lanes), a1 = vldrbq_z_s8(x1, lanes);
        const int8x16_t b0 = vldrbq_z_s8(w0, lanes), b1 = vldrbq_z_s8(w1, lanes);
        s00 = vmladavaq_s8(s00, a0, b0);
        s01 = vmladavaq_s8(s01, a0, b1);
        s10 = vmladavaq_s8(s10, a1, b0);
        s11 = vmladavaq_s8(s11, a1, b1);
    }
    x0 = end; /* nothing left for the loop below */
#elif defined(MCU_DSP)
    const int8_t *const end4 = x0 + (n & ~(int32_t)3);
    while (x0 != end4) {
        const uint32_t a0 = mcu_load_s8x4(x0), a1 = mcu_load_s8x4(x1);
        const uint32_t b0 = mcu_load_s8x4(w0), b1 = mcu_load_s8x4(w1);
        x0 += 4;
        x1 += 4;
        w0 += 4;
        w1 += 4;
        smlad_words_2x2(a0, a1, b0, b1, &s00, &s01, &s10, &s11);
    }
#endif
    while (x0 != end) {
        const int32_t a0 = *x0++, a1 = *x1++, b0 = *w0++, b1 = *w1++;
        s00 += a0 * b0;
        s01 += a0 * b1;
        s10 += a1 * b0;
        s11 += a1 * b1;
    }
    sums[0] = s00;
    sums[1] = s01;
    sums[2] = s10;
    sums[3] = s11;
}

/* Every output channel of two pixels (or one: has_second 0, x1 = x0) whose
 * `n` taps are contiguous in x0 and x1, against filters `n` apart, two
 * channels at a time; window_offset_terms adds the input offset. */
static void conv_pixel_pair_s8(const mcu_conv_s8_params *p, const int8_t *x0, const int8_t *x1,
                               const int8_t *filter, int32_t n, const int32_t *bias, int has_second, int8_t *out0)
{
    const int32_t out_c = p->output_c;
    const int32_t *terms = p->window_offset_terms;
    const conv_output_range range = conv_output_range_of(p);
    int8_t *out1 = out0 + out_c;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2) {
        const int has_pair = oc + 1 < out_c;
        const int8_t *w0 = filter + (size_t)oc * (size_t)n;
        int32_t acc[4];
        dot2x2_s8(x0, x1, w0, has_pair ? w0 + n : w0, n, acc);
#if defined(MCU_MVE)
        acc[0] += terms[oc];
        acc[2] += terms[oc];
        if (has_pair) {
            acc[1] += terms[oc + 1];
            acc[3] += terms[oc + 1];
        }
        requantize_s8_2x2_store(p, acc, bias, oc, has_pair, has_second, out0);
        (void)out1;
        (void)range;
#else
        {
            /* Each channel's rescale prepared once for both pixels. */
            const mcu_prepared_mul m0 = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
            const int32_t add0 = bias_plus(bias, oc, terms[oc]);
            out0[oc] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[0], add0), &m0);
            if (has_second) {
                out1[oc] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[2], add0), &m0);
            }
            if (has_pair) {
                const mcu_prepared_mul m1 =
                    mcu_prepare_mul(p->output_multiplier[oc + 1], (int)p->output_shift[oc + 1]);
                const int32_t add1 = bias_plus(bias, oc + 1, terms[oc + 1]);
                out0[oc + 1] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[1], add1), &m1);
                if (has_second) {
                    out1[oc + 1] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[3], add1), &m1);
                }
            }
        }
#endif
    }
}

/* Windows of at most this many values (filter_h * filter_w * input_c) are
 * copied whole into columns of the kernel's `columns` scratch (planned in the
 * arena by mcu_planner/lowering/conv.py, p->column_bytes long), several output
 * pixels at a time, so that every window is one run of taps however short
 * its rows are and wherever it lies (a ResNet 3 x 3 x 64 window fits). */
#define MCU_CONV_COLUMN_MAX 640
#if defined(MCU_MVE)
/* Helium takes four output pixels per pass (mcu_helium_conv_rows_s8). */
#define MCU_CONV_COLUMNS 4
#else
#define MCU_CONV_COLUMNS 2
#endif

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* dot2x2_s8 for runs of whole words against two filters interleaved word by
 * word (`pairs`: four values of filter 0, the same four of filter 1, ...):
 * one filter pointer instead of two, so that the loop's sums, pointers and
 * halves all fit in the core's registers. */
MCU_NOINLINE MCU_SOURCE_ORDER static void dot2x2_pairs_s8(const int8_t *x0, const int8_t *x1, const int8_t *pairs,
                                                          int32_t n, int32_t sums[4])
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    const int8_t *const end = x0 + n;
    while (x0 != end) {
        const uint32_t a0 = mcu_load_s8x4(x0), a1 = mcu_load_s8x4(x1);
        const uint32_t b0 = mcu_load_s8x4(pairs), b1 = mcu_load_s8x4(pairs + 4);
        x0 += 4;
        x1 += 4;
        pairs += 8;
        smlad_words_2x2(a0, a1, b0, b1, &s00, &s01, &s10, &s11);
    }
    sums[0] = s00;
    sums[1] = s01;
    sums[2] = s10;
    sums[3] = s11;
}
#endif

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Four taps of dot2x2_adjacent_s8 at x and w. */
static inline MCU_ALWAYS_INLINE void dot2x2_adjacent_word_s8(const int8_t *x, const int8_t *w, size_t step,
                                                             int32_t *s00, int32_t *s01, int32_t *s10, int32_t *s11)
{
    smlad_words_2x2(mcu_load_s8x4(x), mcu_load_s8x4(x + step), mcu_load_s8x4(w), mcu_load_s8x4(w + step), s00, s01,
                    s10, s11);
}

/* dot2x2_s8 for two neighbouring pixels against two neighbouring filters,
 * both `n` (a multiple of 4) apart, as in a pointwise convolution with
 * stride 1: one offset register reaches the second pixel and the second
 * filter, and eight taps a pass halve the loop's overhead. */
MCU_NOINLINE MCU_SOURCE_ORDER static void dot2x2_adjacent_s8(const int8_t *x, const int8_t *w, int32_t n,
                                                             int32_t sums[4])
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    const size_t step = (size_t)n;
    const int8_t *const end = x + (n & ~(int32_t)7);
    while (x != end) {
        dot2x2_adjacent_word_s8(x, w, step, &s00, &s01, &s10, &s11);
        dot2x2_adjacent_word_s8(x + 4, w + 4, step, &s00, &s01, &s10, &s11);
        x += 8;
        w += 8;
    }
    if (n & 4) {
        dot2x2_adjacent_word_s8(x, w, step, &s00, &s01, &s10, &s11);
    }
    sums[0] = s00;
    sums[1] = s01;
    sums[2] = s10;
    sums[3] = s11;
}
#endif

#if !defined(MCU_MVE)
/* Pointwise with stride 1 in raster order (raster_walk): the aligned groups
 * of four pixels KERNEL_ORDERS declares, each against every channel pair,
 * so that a channel's rescale is prepared and its bias and offset terms
 * summed once per group; two pixels by two channels per dot product. */
MCU_NOINLINE static void conv_1x1_stride1_raster_s8(const mcu_conv_s8_params *p, const int8_t *input,
                                                    const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    const size_t in_step = (size_t)in_c, out_step = (size_t)out_c;
    const int32_t *terms = p->window_offset_terms;
    const conv_output_range range = conv_output_range_of(p);
    int32_t first, oc, k;
    for (first = 0; first < pixels; first += 4) {
        const int32_t count = MCU_MIN(pixels - first, 4);
        const int8_t *x = input + (size_t)first * in_step;
        int8_t *out = output + (size_t)first * out_step;
        for (oc = 0; oc < out_c; oc += 2) {
            const int has_pair = oc + 1 < out_c;
            const int32_t oc1 = has_pair ? oc + 1 : oc;
            const int8_t *w0 = filter + (size_t)oc * in_step;
            const mcu_prepared_mul m0 = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
            const mcu_prepared_mul m1 = mcu_prepare_mul(p->output_multiplier[oc1], (int)p->output_shift[oc1]);
            const int32_t add0 = bias_plus(bias, oc, terms[oc]), add1 = bias_plus(bias, oc1, terms[oc1]);
#if defined(MCU_DSP)
            if (count == 4 && has_pair && (in_c & 3) == 0) {
                /* A whole group: sums {pixel k channel oc, pixel k oc + 1} at 2k. */
                int32_t acc[8];
                int8_t *o = out + oc;
                dot2x2_adjacent_s8(x, w0, in_c, acc);
                dot2x2_adjacent_s8(x + 2 * in_step, w0, in_c, acc + 4);
                if (m0.high_shift >= 0 && m1.high_shift >= 0) {
                    for (k = 0; k < 4; ++k, o += out_step) {
                        o[0] = requantize_right_shift_s8(&range, mcu_add_wrap_s32(acc[2 * k], add0), &m0);
                        o[1] = requantize_right_shift_s8(&range, mcu_add_wrap_s32(acc[2 * k + 1], add1), &m1);
                    }
                } else {
                    for (k = 0; k < 4; ++k, o += out_step) {
                        o[0] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[2 * k], add0), &m0);
                        o[1] = requantize_prepared_s8(&range, mcu_add_wrap_s32(acc[2 * k + 1], add1), &m1);
                    }
                }
                continue;
            }
#endif
            for (k = 0; k < count; k += 2) {
                const int has_second = k + 1 < count;
                const int8_t *xk = x + (size_t)k * in_step;
                int8_t *o = out + (size_t)k * out_step + oc;
                int32_t acc[4];
#if defined(MCU_DSP)
                if (has_pair && has_second && (in_c & 3) == 0) {
                    dot2x2_adjacent_s8(xk, w0, in_c, acc);
                } else
#endif
                {
                    dot2x2_s8(xk, has_second ? xk + in_step : xk, w0, w0 + (size_t)(oc1 - oc) * in_step, in_c, acc);
                }
                requantize_2x2_prepared_store(&range, acc, add0, add1, &m0, &m1, has_pair, has_second, o, out_step);
            }
        }
    }
}
#endif

#if !defined(MCU_MVE)
/* Pointwise with stride 1: the pixels are consecutive runs of input_c
 * values.  Channel pairs outermost, so that each channel's rescale is
 * prepared and its bias and offset terms summed once for all pixels; two
 * pixels by two channels per dot2x2_s8. */
static void conv_1x1_stride1_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    const size_t in_step = (size_t)in_c, out_step = (size_t)out_c;
    const int32_t *terms = p->window_offset_terms;
    const conv_output_range range = conv_output_range_of(p);
    int32_t oc, pixel;
    for (oc = 0; oc < out_c; oc += 2) {
        const int has_pair = oc + 1 < out_c;
        const int32_t oc1 = has_pair ? oc + 1 : oc;
        const int8_t *w0 = filter + (size_t)oc * in_step;
        const int8_t *w1 = filter + (size_t)oc1 * in_step;
        const mcu_prepared_mul m0 = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
        const mcu_prepared_mul m1 = mcu_prepare_mul(p->output_multiplier[oc1], (int)p->output_shift[oc1]);
        const int32_t add0 = bias_plus(bias, oc, terms[oc]), add1 = bias_plus(bias, oc1, terms[oc1]);
        const int8_t *x = input;
        int8_t *out = output + oc;
#if defined(MCU_DSP)
        /* Runs of whole words: the two filters interleaved word by word into
         * the column buffer, read through one pointer for all pixels. */
        int8_t *const pairs = columns;
        const int interleave = columns != NULL && (in_c & 3) == 0 && 2 * in_c <= p->column_bytes;
        int32_t k;
        for (k = 0; interleave && k < in_c; k += 4) {
            memcpy(pairs + 2 * k, w0 + k, 4);
            memcpy(pairs + 2 * k + 4, w1 + k, 4);
        }
#endif
        for (pixel = 0; pixel < pixels; pixel += 2, x += 2 * in_step, out += 2 * out_step) {
            const int has_second = pixel + 1 < pixels;
            int32_t acc[4];
#if defined(MCU_DSP)
            if (interleave) {
                dot2x2_pairs_s8(x, has_second ? x + in_step : x, pairs, in_c, acc);
            } else {
                dot2x2_s8(x, has_second ? x + in_step : x, w0, w1, in_c, acc);
            }
#else
            (void)columns; /* without DSP the filters are read in place */
            dot2x2_s8(x, has_second ? x + in_step : x, w0, w1, in_c, acc);
#endif
            requantize_2x2_prepared_store(&range, acc, add0, add1, &m0, &m1, has_pair, has_second, out, out_step);
        }
    }
}
#endif

/* Pointwise (1x1 filter, no padding, one group): a matrix product of the
 * strided input pixels and the filter, two pixels by two channels at a time. */
static void conv_1x1_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output, int8_t *columns)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels_per_image = p->output_h * p->output_w;
    const int32_t pixels = p->batches * pixels_per_image;
    int32_t pixel;
#if defined(MCU_MVE)
    for (pixel = 0; pixel < pixels; pixel += 4) {
        const int32_t count = MCU_MIN(pixels - pixel, 4);
        const int8_t *x[4];
        int32_t k;
        for (k = 0; k < count; ++k) {
            const int32_t b = (pixel + k) / pixels_per_image, yx = (pixel + k) % pixels_per_image;
            x[k] = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, (yx / p->output_w) * p->stride_h,
                                           (yx % p->output_w) * p->stride_w, 0);
        }
        mcu_helium_conv_rows_s8(p, x, count, filter, in_c, bias, output + (size_t)pixel * (size_t)out_c);
    }
    (void)columns; /* Helium reads the filters in place */
    return;
#else
    if (p->stride_h == 1 && p->stride_w == 1) {
        if (p->raster_walk) {
            conv_1x1_stride1_raster_s8(p, input, filter, bias, output);
        } else {
            conv_1x1_stride1_s8(p, input, filter, bias, output, columns);
        }
        return;
    }
#endif
    for (pixel = 0; pixel < pixels; pixel += 2) {
        const int has_second = pixel + 1 < pixels;
        const int8_t *x[2];
        int k;
        for (k = 0; k < 2; ++k) {
            const int32_t at = has_second ? pixel + k : pixel;
            const int32_t b = at / pixels_per_image, yx = at % pixels_per_image;
            x[k] = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, (yx / p->output_w) * p->stride_h,
                                           (yx % p->output_w) * p->stride_w, 0);
        }
        conv_pixel_pair_s8(p, x[0], x[1], filter, in_c, bias, has_second,
                           output + (size_t)pixel * (size_t)out_c);
    }
}


/* The window of output pixel (b, wy's row, out_x) as filter_h x filter_w x
 * input_c values; taps in the padding hold the input zero point, which the
 * input offset turns into 0, so the window's sum is the dot product plus
 * window_offset_terms, exactly the reference's sum over the inside taps. */
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

static void conv_window_to_column(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                  const mcu_window_axis *wy, int32_t out_x, int8_t *column)
{
    const int32_t in_c = p->input_c;
    const int zero_point = -p->input_offset; /* an int8 value */
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const size_t row_bytes = (size_t)p->filter_w * (size_t)in_c;
    int32_t fy, fx;
    for (fy = 0; fy < p->filter_h; ++fy, column += row_bytes) {
        if (fy < wy->first || fy >= wy->end) {
            column_fill(column, zero_point, row_bytes);
        } else if (p->dilation_w == 1 && wx.end > wx.first) {
            /* The inside taps are one run of the input row; the padding
             * before and after them holds the zero point. */
            const size_t before = (size_t)wx.first * (size_t)in_c;
            const size_t inside = (size_t)(wx.end - wx.first) * (size_t)in_c;
            column_fill(column, zero_point, before);
            column_copy(column + before,
                        input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(wy, fy),
                                                mcu_window_input(&wx, wx.first), 0),
                        inside);
            column_fill(column + before + inside, zero_point, row_bytes - before - inside);
        } else {
            for (fx = 0; fx < p->filter_w; ++fx) {
                int8_t *tap = column + (size_t)fx * (size_t)in_c;
                if (fx < wx.first || fx >= wx.end) {
                    column_fill(tap, zero_point, (size_t)in_c);
                } else {
                    column_copy(tap,
                                input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(wy, fy),
                                                        mcu_window_input(&wx, fx), 0),
                                (size_t)in_c);
                }
            }
        }
    }
}

#if defined(MCU_MVE)
/* Helium: four output pixels per pass, in output order across rows and
 * images, each window copied into a column. */
static void conv_2d_s8_columns_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                      const int32_t *bias, int8_t *output, int8_t *column_space)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c;
    const int8_t *columns[MCU_CONV_COLUMNS];
    int8_t *first_out = output;
    int32_t b, out_y, out_x, count = 0;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                int8_t *column = column_space + (size_t)count * (size_t)window;
                conv_window_to_column(p, input, b, &wy, out_x, column);
                columns[count] = column;
                if (++count == MCU_CONV_COLUMNS) {
                    mcu_helium_conv_rows_s8(p, columns, count, filter, window, bias, first_out);
                    first_out += (size_t)p->output_c * (size_t)count;
                    count = 0;
                }
            }
        }
    }
    if (count > 0) {
        mcu_helium_conv_rows_s8(p, columns, count, filter, window, bias, first_out);
    }
}


#endif

/* One group, windows up to MCU_CONV_COLUMN_MAX values: each pair of output
 * pixels is two columns against the whole filters. */
static void conv_2d_s8_columns(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c;
    int8_t *out = output;
    int32_t b, out_y, out_x;
#if defined(MCU_MVE)
    conv_2d_s8_columns_helium(p, input, filter, bias, output, columns);
    return;
#endif
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; out_x += 2) {
                const int has_second = out_x + 1 < p->output_w;
                int8_t *const second = columns + window;
                conv_window_to_column(p, input, b, &wy, out_x, columns);
                if (has_second) {
                    conv_window_to_column(p, input, b, &wy, out_x + 1, second);
                }
                conv_pixel_pair_s8(p, columns, has_second ? second : columns, filter, window, bias, has_second, out);
                out += (size_t)p->output_c * (has_second ? 2u : 1u);
            }
        }
    }
}

/* Two neighbouring output pixels whose windows both lie wholly inside the
 * input: the same taps, `pixel_step` apart, against two filters at a time. */
MCU_NOINLINE static void conv_2d_s8_inside_pair(const mcu_conv_s8_params *p, const int8_t *x_first,
                                                size_t pixel_step, const int8_t *filter, const int32_t *bias,
                                                int8_t *out)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const size_t filter_size = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)in_c;
    const size_t in_row_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    const size_t in_tap_step = (size_t)p->dilation_w * (size_t)in_c;
    const size_t filter_row_step = (size_t)p->filter_w * (size_t)in_c;
    /* Runs per window row and their length. */
    const int32_t runs = p->dilation_w == 1 ? 1 : p->filter_w;
    const int32_t run = p->dilation_w == 1 ? p->filter_w * in_c : in_c;
    const int32_t *terms = p->window_offset_terms;
    int32_t oc, r, k;
    for (oc = 0; oc < out_c; oc += 2) {
        const int has_pair = oc + 1 < out_c;
        const int8_t *w0 = filter + (size_t)oc * filter_size;
        const int8_t *w1 = has_pair ? w0 + filter_size : w0;
        int32_t acc[4];
        acc[0] = acc[2] = terms[oc];
        acc[1] = acc[3] = has_pair ? terms[oc + 1] : 0;
        for (r = 0; r < p->filter_h; ++r) {
            for (k = 0; k < runs; ++k) {
                const int8_t *x = x_first + (size_t)r * in_row_step + (size_t)k * in_tap_step;
                const size_t f = (size_t)r * filter_row_step + (size_t)k * (size_t)in_c;
                int32_t sums[4];
                dot2x2_s8(x, x + pixel_step, w0 + f, w1 + f, run, sums);
                acc[0] += sums[0];
                acc[1] += sums[1];
                acc[2] += sums[2];
                acc[3] += sums[3];
            }
        }
#if defined(MCU_MVE)
        requantize_s8_2x2_store(p, acc, bias, oc, has_pair, 1, out);
        continue;
#endif
        out[oc] = requantize_s8(p, acc[0], bias, oc);
        out[out_c + oc] = requantize_s8(p, acc[2], bias, oc);
        if (has_pair) {
            out[oc + 1] = requantize_s8(p, acc[1], bias, oc + 1);
            out[out_c + oc + 1] = requantize_s8(p, acc[3], bias, oc + 1);
        }
    }
}

/* One group, any window: the taps of a window inside the input are runs of
 * contiguous values (a whole window row when dilation_w is 1), visited for
 * two output channels at a time, and for two output pixels at a time where
 * neighbouring windows both lie inside the input. */
static void conv_2d_s8_one_group(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const size_t filter_size = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)in_c;
    const size_t in_row_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    const size_t in_tap_step = (size_t)p->dilation_w * (size_t)in_c;
    const size_t filter_row_step = (size_t)p->filter_w * (size_t)in_c;
    const size_t pixel_step = (size_t)p->stride_w * (size_t)in_c;
    const int32_t *terms = p->window_offset_terms;
    int8_t *out = output;
    int32_t b, out_y, out_x, oc, r, k;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x, out += out_c) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                const int32_t rows = wy.end - wy.first, cols = wx.end - wx.first;
                const int inside = rows == p->filter_h && cols == p->filter_w;
                /* Runs per window row and their length. */
                const int32_t runs = p->dilation_w == 1 ? 1 : cols;
                const int32_t run = p->dilation_w == 1 ? cols * in_c : in_c;
                const int8_t *x_first = input;
                size_t f_first = 0;
                if (rows > 0 && cols > 0) {
                    x_first += mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(&wy, wy.first),
                                               mcu_window_input(&wx, wx.first), 0);
                    f_first = ((size_t)wy.first * (size_t)p->filter_w + (size_t)wx.first) * (size_t)in_c;
                }
                /* Under raster_walk a pair must not straddle two aligned
                 * groups of four (KERNEL_ORDERS). */
                const int pair_in_group =
                    !p->raster_walk || (((b * p->output_h + out_y) * p->output_w + out_x) & 3) != 3;
                if (inside && pair_in_group && out_x + 1 < p->output_w) {
                    const mcu_window_axis next =
                        mcu_window_axis_at(out_x + 1, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                    if (next.end - next.first == p->filter_w) {
                        conv_2d_s8_inside_pair(p, x_first, pixel_step, filter, bias, out);
                        ++out_x;
                        out += out_c;
                        continue;
                    }
                }
                for (oc = 0; oc < out_c; oc += 2) {
                    const int has_pair = oc + 1 < out_c;
                    const int8_t *w0 = filter + (size_t)oc * filter_size + f_first;
                    const int8_t *w1 = has_pair ? w0 + filter_size : w0;
                    int32_t acc0 = inside ? terms[oc] : 0;
                    int32_t acc1 = inside && has_pair ? terms[oc + 1] : 0;
                    if (rows > 0 && cols > 0) {
                        for (r = 0; r < rows; ++r) {
                            for (k = 0; k < runs; ++k) {
                                const int8_t *x = x_first + (size_t)r * in_row_step + (size_t)k * in_tap_step;
                                const size_t f = (size_t)r * filter_row_step + (size_t)k * (size_t)in_c;
                                if (inside) {
                                    dot2_s8(x, w0 + f, w1 + f, run, &acc0, &acc1);
                                } else {
                                    dot2_offset_s8(x, w0 + f, w1 + f, run, p->input_offset, &acc0, &acc1);
                                }
                            }
                        }
                    }
                    out[oc] = requantize_s8(p, acc0, bias, oc);
                    if (has_pair) {
                        out[oc + 1] = requantize_s8(p, acc1, bias, oc + 1);
                    }
                }
            }
        }
    }
}

/* The output coordinates [*first, *end) along one axis whose windows lie
 * wholly inside the input: origin = out * stride - pad at or past 0, and the
 * last tap, origin + (taps - 1) * dilation, before input_size. */
static void conv_inside_range(int32_t output_size, int32_t stride, int32_t pad, int32_t dilation, int32_t taps,
                              int32_t input_size, int32_t *first, int32_t *end)
{
    const int32_t last_origin = input_size - 1 - (taps - 1) * dilation; /* the largest origin inside */
    *first = MCU_MIN((pad + stride - 1) / stride, output_size);
    *end = last_origin + pad < 0 ? *first : MCU_MAX(*first, MCU_MIN((last_origin + pad) / stride + 1, output_size));
}

#if defined(MCU_MVE)
/* Bytes of one window row's span in the input: what a zero row must hold. */
static size_t conv_row_span(const mcu_conv_s8_params *p)
{
    return ((size_t)(p->filter_w - 1) * (size_t)p->dilation_w + 1u) * (size_t)p->input_c;
}

/* Starts `t`, a pass over output pixels whose windows have the inside
 * columns of `wx`; returns the offset of the first inside column in a
 * filter. */
static size_t conv_pass_begin(const mcu_conv_s8_params *p, const mcu_window_axis *wx, const int8_t *zero_row,
                              mcu_helium_conv_pass *t)
{
    const int32_t in_c = p->input_c, cols = MCU_MAX(wx->end - wx->first, 0);
    t->filter_h = p->filter_h;
    t->dilation_h = p->dilation_h;
    t->input_h = p->input_h;
    t->cols = p->dilation_w == 1 ? MCU_MIN(cols, 1) : cols;
    t->run = p->dilation_w == 1 ? cols * in_c : in_c;
    t->input_row = (size_t)p->input_w * (size_t)in_c;
    t->input_col = (size_t)p->dilation_w * (size_t)in_c;
    t->filter_row = (size_t)p->filter_w * (size_t)in_c;
    t->filter_col = (size_t)in_c;
    t->filter_size = (size_t)p->filter_h * t->filter_row;
    t->offset = p->input_offset;
    t->inside = cols == p->filter_w;
    t->zero_row = zero_row;
    return cols > 0 ? (size_t)wx->first * (size_t)in_c : 0u;
}

/* Output pixel `index` (raster order) as pixel k of pass t. */
static void conv_pass_pixel(const mcu_conv_s8_params *p, const int8_t *input, int32_t index, int32_t k,
                            mcu_helium_conv_pass *t)
{
    const int32_t per_image = p->output_h * p->output_w, b = index / per_image;
    const int32_t y = (index % per_image) / p->output_w, x = index % p->output_w;
    const mcu_window_axis wx =
        mcu_window_axis_at(x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const int32_t column = wx.end > wx.first ? mcu_window_input(&wx, wx.first) : 0;
    t->column[k] = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, 0, column, 0);
    t->origin[k] = y * p->stride_h - p->pad_h;
    t->out[k] = (uint32_t)index * (uint32_t)p->output_c;
}

static int same_columns(const mcu_window_axis *a, const mcu_window_axis *b)
{
    return a->first == b->first && a->end == b->end;
}

/* Windows longer than a column holds, read in place (mcu_helium_conv_pass_s8):
 * passes of four pixels whose windows have the same inside columns -- down
 * each border column, and along the rows between them -- or, under
 * raster_walk, the pixels of each aligned group of four sorted by their
 * inside columns.  Window rows in the padding read `zero_row` (`zero_bytes`
 * long); returns 0 without doing anything when the windows reach into the
 * padding rows and that is too short. */
static int conv_2d_s8_long_windows_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                          const int32_t *bias, int8_t *output, int8_t *zero_row, size_t zero_bytes)
{
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    mcu_helium_conv_pass t;
    int32_t y_first, y_end, x_first, x_end, first, count, k, j, b, y, x;
    conv_inside_range(p->output_h, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h, &y_first, &y_end);
    if (y_first > 0 || y_end < p->output_h) {
        if (zero_row == NULL || zero_bytes < conv_row_span(p)) {
            return 0;
        }
        column_fill(zero_row, -p->input_offset, conv_row_span(p));
    }
    if (p->raster_walk) {
        for (first = 0; first < pixels; first += 4) {
            const int32_t group = MCU_MIN(pixels - first, 4);
            mcu_window_axis wx[4];
            int done[4] = {0, 0, 0, 0};
            for (k = 0; k < group; ++k) {
                wx[k] = mcu_window_axis_at((first + k) % p->output_w, p->stride_w, p->pad_w, p->dilation_w,
                                           p->filter_w, p->input_w);
            }
            for (k = 0; k < group; ++k) {
                size_t filter_first;
                if (done[k]) {
                    continue;
                }
                filter_first = conv_pass_begin(p, &wx[k], zero_row, &t);
                for (count = 0, j = k; j < group; ++j) {
                    if (!done[j] && same_columns(&wx[j], &wx[k])) {
                        conv_pass_pixel(p, input, first + j, count++, &t);
                        done[j] = 1;
                    }
                }
                mcu_helium_conv_pass_s8(p, &t, count, filter + filter_first, bias, output);
            }
        }
        return 1;
    }
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first, &x_end);
    /* x = -1: the columns [x_first, x_end) whose windows lie inside; then
     * each other column on its own. */
    for (x = -1; x < p->output_w; ++x) {
        const int32_t from = x < 0 ? x_first : x, to = x < 0 ? x_end : x + 1;
        const mcu_window_axis wx =
            mcu_window_axis_at(from, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
        size_t filter_first;
        if (from >= to || (x >= x_first && x < x_end)) {
            continue;
        }
        filter_first = conv_pass_begin(p, &wx, zero_row, &t);
        count = 0;
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < p->output_h; ++y) {
                for (k = from; k < to; ++k) {
                    conv_pass_pixel(p, input, (b * p->output_h + y) * p->output_w + k, count, &t);
                    if (++count == 4) {
                        mcu_helium_conv_pass_s8(p, &t, count, filter + filter_first, bias, output);
                        count = 0;
                    }
                }
            }
        }
        if (count > 0) {
            mcu_helium_conv_pass_s8(p, &t, count, filter + filter_first, bias, output);
        }
    }
    return 1;
}
#endif

/* Memory-plan contract (mcu_planner/lowering/traits.py, KERNEL_ORDERS): with
 * p->raster_walk set, every path below writes output pixels in raster order
 * (batch, row, column), at most four at a time (two without Helium), each
 * block reading only its own windows (reads and writes interleaved within
 * the block).
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
void mcu_conv_2d_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                    int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c;
    if (p->window_offset_terms == NULL || p->filter_in_c_or_multiplier != p->input_c) {
        conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
    } else if (p->filter_h == 1 && p->filter_w == 1 && p->pad_h == 0 && p->pad_w == 0) {
        conv_1x1_s8(p, input, filter, bias, output, columns);
    } else if (columns != NULL && window <= MCU_CONV_COLUMN_MAX && MCU_CONV_COLUMNS * window <= p->column_bytes) {
        conv_2d_s8_columns(p, input, filter, bias, output, columns);
    } else {
#if defined(MCU_MVE)
        if (conv_2d_s8_long_windows_helium(p, input, filter, bias, output, columns, (size_t)p->column_bytes)) {
            return;
        }
#endif
        conv_2d_s8_one_group(p, input, filter, bias, output);
    }
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

static void depthwise_conv_2d_s8_per_tap_offset(const mcu_conv_s8_params *p, const int8_t *input,
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

/* A run of `pixels` output pixels of a depthwise convolution (depth
 * multiplier 1 or a multiple of 4) whose windows have the same taps inside
 * the input: along a row or down a column, `pixel_step` bytes apart in the
 * input and `out_step` in the output (x: the first inside tap of the first
 * pixel; w: the filter at that tap; out: its first channel).  Windows wholly
 * inside add the input offset through window_offset_terms (`inside`), the
 * others per tap (SXTAB16 adds it in the same instruction).  Channels four at
 * a time, as depthwise_pixel4_s8 and depthwise_pixel4_shared_s8, but each
 * group's rescales prepared once for the whole run and its bias (and offset
 * terms) summed once.  Returns how many channels it wrote (out_c rounded
 * down to a multiple of 4). */
MCU_NOINLINE static int32_t depthwise_run_s8(const mcu_conv_s8_params *p, const depthwise_taps *t, const int8_t *x,
                                             size_t pixel_step, int32_t pixels, const int8_t *w, int inside,
                                             const int32_t *bias, int8_t *out, size_t out_step)
{
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
 * four at a time as depthwise_run_s8, each group's rescales prepared once
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

#endif

/* `pixels` output pixels from (b, out_y, out_x) on, along the row or down the
 * column (`down`), whose windows have the taps of the first one inside the
 * input: Helium passes of four pixels (mcu_helium_depthwise_s8), or without
 * Helium depthwise_run_s8 for the channels in groups of four and the
 * reference loop for the rest. */
static void depthwise_run(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                          const int32_t *bias, int32_t b, int32_t out_y, int32_t out_x, int32_t pixels, int down,
                          int8_t *output)
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
    int32_t px;
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
#if defined(MCU_MVE)
    {
        mcu_helium_taps helium;
        const int8_t *xs[4];
        int32_t count, k;
        for (k = 0; k < 4; ++k) {
            helium.row[k] = taps.input_row;
        }
        helium.tap = taps.input_tap;
        helium.rows = taps.rows;
        helium.cols = taps.cols;
        helium.offset = p->input_offset;
        helium.inside = inside;
        helium.out_step = out_step;
        for (px = 0; px < pixels; px += count) {
            count = MCU_MIN(pixels - px, 4);
            for (k = 0; k < count; ++k) {
                xs[k] = x + (taps.rows > 0 ? (size_t)(px + k) * pixel_step : 0u);
            }
            mcu_helium_depthwise_s8(p, xs, count, &helium, w, bias, out + (size_t)px * out_step);
        }
    }
#else
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    const int32_t oc =
        depthwise_run_s8(p, &taps, x, taps.rows > 0 ? pixel_step : 0u, pixels, w, inside, bias, out, out_step);
    for (px = 0; px < pixels && oc < out_c; ++px) {
        const int8_t *x_px = x + (taps.rows > 0 ? (size_t)px * pixel_step : 0u);
        int8_t *o = out + (size_t)px * out_step;
        int32_t c;
        for (c = oc; c < out_c; ++c) {
            const int8_t *x_c = x_px + c / multiplier;
            const int32_t acc = inside ? p->window_offset_terms[c] + depthwise_window_s8(&taps, x_c, w + c, 0)
                                       : depthwise_window_s8(&taps, x_c, w + c, p->input_offset);
            o[c] = requantize_s8(p, acc, bias, c);
        }
    }
#endif
}

/* Depth multiplier 1 or a multiple of 4: the output in runs
 * whose windows share their taps inside the input -- the inside pixels row
 * by row (or column by column), each border column down the inside rows, and
 * the border rows' pixels (their inside stretch as one run). */
static void depthwise_conv_2d_s8_runs(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                      const int32_t *bias, int8_t *output)
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
                depthwise_run(p, input, filter, bias, b, y, x_first, x_end - x_first, 0, output);
            }
            for (x = 0; border_row && x < p->output_w; ++x) {
                if (x < x_first || x >= x_end) {
                    depthwise_run(p, input, filter, bias, b, y, x, 1, 0, output);
                }
            }
        }
        for (x = 0; y_end > y_first && x < p->output_w; ++x) {
            if (x < x_first || x >= x_end || inside_down) {
                depthwise_run(p, input, filter, bias, b, y_first, x, y_end - y_first, 1, output);
            }
        }
    }
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

#if defined(MCU_MVE)
static int same_taps(const mcu_window_axis *y0, const mcu_window_axis *x0, const mcu_window_axis *y1,
                     const mcu_window_axis *x1)
{
    return y0->first == y1->first && y0->end == y1->end && x0->first == x1->first && x0->end == x1->end;
}

/* One aligned group of `count` raster pixels from pixel (b, y, x) on: each
 * run of consecutive pixels whose windows have the same taps inside the
 * input in one Helium pass, read in place, so that every channel still sees
 * its pixels in raster order (KERNEL_ORDERS' channel_wise). */
static void depthwise_group_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int32_t b, int32_t y, int32_t x, int32_t count,
                                   int8_t *out)
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
        mcu_helium_depthwise_s8(p, xs, n, &taps, w, bias, out + (size_t)done * (size_t)p->output_c);
        done += n;
    }
}

/* Over a shared buffer with Helium: the aligned groups of four raster pixels
 * the plan assumes, one pass each. */
static void depthwise_conv_2d_s8_groups_helium(const mcu_conv_s8_params *p, const int8_t *input,
                                               const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t pixels = p->batches * p->output_h * p->output_w, per_image = p->output_h * p->output_w;
    int32_t first;
    for (first = 0; first < pixels; first += 4) {
        const int32_t yx = first % per_image;
        depthwise_group_helium(p, input, filter, bias, first / per_image, yx / p->output_w, yx % p->output_w,
                               MCU_MIN(pixels - first, 4), output + (size_t)first * (size_t)p->output_c);
    }
}
#endif

#if !defined(MCU_MVE)
/* The windows of the aligned groups of four raster pixels the plan assumes
 * (lowering/traits.py, KERNEL_ORDERS), one depthwise_windows4_s8 each, so
 * that the rescales are prepared once per group however its pixels' windows
 * meet the padding; the channels past the last multiple of 4 by the
 * reference loop. */
static void depthwise_conv_2d_s8_raster_groups(const mcu_conv_s8_params *p, const int8_t *input,
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
#endif

/* Depth multiplier 1 or a multiple of 4 under a planned overlap
 * (raster_walk): the raster walk in the aligned groups of four pixels the
 * plan assumes
 * (lowering/traits.py, KERNEL_ORDERS), each group in runs of pixels whose
 * windows have the same taps inside the input -- along a row, or down a
 * one-column output. */
static void depthwise_conv_2d_s8_raster4(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output)
{
#if defined(MCU_MVE)
    depthwise_conv_2d_s8_groups_helium(p, input, filter, bias, output);
    return;
#else
    depthwise_conv_2d_s8_raster_groups(p, input, filter, bias, output);
    return;
#endif
}

/* With window_offset_terms: windows wholly inside the input take the offset
 * from there (a per-tap offset of 0); windows reaching into the padding add
 * it per tap. */
static void depthwise_conv_2d_s8_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
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
    if ((multiplier == 1 || multiplier % 4 == 0) && !p->raster_walk) {
        depthwise_conv_2d_s8_runs(p, input, filter, bias, output);
        return;
    }
    if (multiplier == 1 || multiplier % 4 == 0) {
        depthwise_conv_2d_s8_raster4(p, input, filter, bias, output);
        return;
    }
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

/* Memory-plan contract (mcu_planner/lowering/traits.py, KERNEL_ORDERS): with
 * p->raster_walk set, the int8 depthwise kernel writes output pixels in
 * raster order (batch, row, column) in the aligned groups of four its entry
 * declares, each group reading only its own windows
 * (depthwise_conv_2d_s8_raster4; the per-tap-offset path one pixel at a
 * time); the runs along whole rows and down columns run only without it.
 * With depth multiplier 1 each channel's pixels also go in raster order,
 * each read before it is written (KERNEL_ORDERS' channel_wise): four
 * channels of one pixel after another in depthwise_windows4_s8 and the
 * reference loop, all four pixels' sums before their stores in Helium's
 * mcu_helium_depthwise_s8.
 * The float one (and mcu_conv_2d_f32) writes one pixel at a time in raster
 * order, reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
void mcu_depthwise_conv_2d_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output)
{
    if (p->window_offset_terms == NULL) {
        depthwise_conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
    } else {
        depthwise_conv_2d_s8_windows(p, input, filter, bias, output);
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
