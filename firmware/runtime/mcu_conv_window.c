/* The int8 convolutions of one group with window offset terms on every core:
 * windows copied into columns (cores without Helium) or read in place as
 * runs of contiguous taps, two output channels and, where neighbouring
 * windows lie inside the input, two output pixels at a time. */
#include "mcu_conv_window.h"

#include "mcu_conv.h"
#include "mcu_conv_internal.h"


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


/* Two input runs (two output pixels) against two filters:
 * sums = {x0.w0, x0.w1, x1.w0, x1.w1}. */
MCU_NOINLINE void mcu_conv_dot2x2_s8(const int8_t *x0, const int8_t *x1, const int8_t *w0, const int8_t *w1, int32_t n,
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

/* Every output channel of the pair's pixels, two channels at a time;
 * window_offset_terms adds the input offset. */
void mcu_conv_pixel_pair_s8(const mcu_conv_s8_params *p, const mcu_conv_pixel_pair *pair, const int8_t *filter,
                            int32_t n, const int32_t *bias)
{
    const int8_t *const x0 = pair->x[0], *const x1 = pair->x[1];
    const int has_second = pair->has_second;
    int8_t *const out0 = pair->out;
    const int32_t out_c = p->output_c;
    const int32_t *terms = p->window_offset_terms;
    const conv_output_range range = conv_output_range_of(p);
    int8_t *out1 = out0 + out_c;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2) {
        const int has_pair = oc + 1 < out_c;
        const int8_t *w0 = filter + (size_t)oc * (size_t)n;
        int32_t acc[4];
        mcu_conv_dot2x2_s8(x0, x1, w0, has_pair ? w0 + n : w0, n, acc);
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

/* The window of output pixel (b, wy's row, out_x) as filter_h x filter_w x
 * input_c values; taps in the padding hold the input zero point, which the
 * input offset turns into 0, so the window's sum is the dot product plus
 * window_offset_terms, exactly the reference's sum over the inside taps. */
void mcu_conv_window_to_column(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
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



/* One group, windows up to MCU_CONV_COLUMN_MAX values: each pair of output
 * pixels is two columns against the whole filters. */
void mcu_conv_2d_s8_columns(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c;
    int8_t *out = output;
    int32_t b, out_y, out_x;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; out_x += 2) {
                const int has_second = out_x + 1 < p->output_w;
                int8_t *const second = columns + window;
                mcu_conv_window_to_column(p, input, b, &wy, out_x, columns);
                if (has_second) {
                    mcu_conv_window_to_column(p, input, b, &wy, out_x + 1, second);
                }
                const mcu_conv_pixel_pair pair = {{columns, has_second ? second : columns}, has_second, out};
                mcu_conv_pixel_pair_s8(p, &pair, filter, window, bias);
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
                mcu_conv_dot2x2_s8(x, x + pixel_step, w0 + f, w1 + f, run, sums);
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

/* Every output channel, two at a time, of one output pixel whose window has
 * `rows` x `cols` taps inside the input from x_first (its first inside tap;
 * filter: the first filter at that tap); a window wholly `inside` takes the
 * input offset from window_offset_terms, the others add it per tap. */
static void one_group_pixel_s8(const mcu_conv_s8_params *p, const int8_t *x_first, int32_t rows, int32_t cols,
                               int inside, const int8_t *filter, const int32_t *bias, int8_t *out)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const size_t filter_size = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)in_c;
    const size_t in_row_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    const size_t in_tap_step = (size_t)p->dilation_w * (size_t)in_c;
    const size_t filter_row_step = (size_t)p->filter_w * (size_t)in_c;
    /* Runs per window row and their length. */
    const int32_t runs = p->dilation_w == 1 ? 1 : cols;
    const int32_t run = p->dilation_w == 1 ? cols * in_c : in_c;
    const int32_t *terms = p->window_offset_terms;
    int32_t oc, r, k;
    if (rows <= 0 || cols <= 0) {
        rows = 0; /* every tap in the padding: no products */
    }
    for (oc = 0; oc < out_c; oc += 2) {
        const int has_pair = oc + 1 < out_c;
        const int8_t *w0 = filter + (size_t)oc * filter_size;
        const int8_t *w1 = has_pair ? w0 + filter_size : w0;
        int32_t acc0 = inside ? terms[oc] : 0;
        int32_t acc1 = inside && has_pair ? terms[oc + 1] : 0;
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
        out[oc] = requantize_s8(p, acc0, bias, oc);
        if (has_pair) {
            out[oc + 1] = requantize_s8(p, acc1, bias, oc + 1);
        }
    }
}

/* One group, any window: the taps of a window inside the input are runs of
 * contiguous values (a whole window row when dilation_w is 1), visited for
 * two output channels at a time, and for two output pixels at a time where
 * neighbouring windows both lie inside the input. */
void mcu_conv_2d_s8_one_group(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const size_t pixel_step = (size_t)p->stride_w * (size_t)in_c;
    int8_t *out = output;
    int32_t b, out_y, out_x;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x, out += out_c) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
                const int32_t rows = wy.end - wy.first, cols = wx.end - wx.first;
                const int inside = rows == p->filter_h && cols == p->filter_w;
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
                one_group_pixel_s8(p, x_first, rows, cols, inside, filter + f_first, bias, out);
            }
        }
    }
}
