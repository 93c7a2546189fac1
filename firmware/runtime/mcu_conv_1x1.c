/* int8 pointwise convolutions: a matrix product of the input pixels and the
 * filters: on the M4/M7 in blocks of eight pixels (mcu_conv_dsp_block.c)
 * when the columns scratch holds them, else two pixels by two channels at
 * a time (SMLAD, with the filter pairs interleaved into the columns
 * scratch); four pixels per Helium pass on the M55 (mcu_conv_helium_rows.c). */
#include "mcu_conv_1x1.h"

#include "mcu_conv.h"
#include "mcu_conv_dsp_block.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_helium.h"
#include "mcu_conv_window.h"

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* mcu_conv_dot2x2_s8 for runs of whole words against two filters interleaved word by
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

/* mcu_conv_dot2x2_s8 for two neighbouring pixels against two neighbouring filters,
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
                    mcu_conv_dot2x2_s8(xk, has_second ? xk + in_step : xk, w0, w0 + (size_t)(oc1 - oc) * in_step, in_c, acc);
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
 * pixels by two channels per mcu_conv_dot2x2_s8. */
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
                mcu_conv_dot2x2_s8(x, has_second ? x + in_step : x, w0, w1, in_c, acc);
            }
#else
            (void)columns; /* without DSP the filters are read in place */
            mcu_conv_dot2x2_s8(x, has_second ? x + in_step : x, w0, w1, in_c, acc);
#endif
            requantize_2x2_prepared_store(&range, acc, add0, add1, &m0, &m1, has_pair, has_second, out, out_step);
        }
    }
}
#endif


/* Pointwise (1x1 filter, no padding, one group): a matrix product of the
 * strided input pixels and the filter, two pixels by two channels at a time. */
void mcu_conv_1x1_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output, int8_t *columns)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels_per_image = p->output_h * p->output_w;
    const int32_t pixels = p->batches * pixels_per_image;
    int32_t pixel;
#if defined(MCU_MVE)
    mcu_conv_1x1_helium_s8(p, input, filter, bias, output);
    (void)columns; /* Helium reads the filters in place */
    return;
#else
#if defined(MCU_DSP)
    if (mcu_conv_1x1_block_s8(p, input, filter, bias, output, columns)) {
        return;
    }
#endif
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
        {
            const mcu_conv_pixel_pair pair = {{x[0], x[1]}, has_second, output + (size_t)pixel * (size_t)out_c};
            mcu_conv_pixel_pair_s8(p, &pair, filter, in_c, bias);
        }
    }
}
