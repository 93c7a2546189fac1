/* int8 convolutions of few input channels (first layers: 1 to 4 channels,
 * windows of 4 to MCU_CONV_FEW_WINDOW_MAX values; mcu_conv_dsp_block.c
 * takes those of up to 32 values first) on cores with the DSP
 * extension but without Helium: two output pixels at a time, each window
 * copied once into a column with the input offset added and doubled as int16
 * pairs (the layout SXTB16 gives a filter word: values 0 and 2, then 1 and
 * 3), then two filters at a time against both columns with SMLAD.
 *
 * The padding enters the columns as 0 (the zero point plus the offset), so
 * that every window is one run of taps and needs no offset terms; a column's
 * last word has zeros past the window, against which the filter's last word
 * (read to its end, shifted down) brings zeros too.  The doubled sums give
 * the rescale in one SMMLAR, as mcu_depthwise_3x3_dsp.c explains (the same
 * bounds: |bias| <= 2^29, a window's sum stays under 64 * 255 * 128 < 2^21,
 * multipliers >= 0, right shifts 1 to 22).  Pixels go in raster order, two
 * at a time within the aligned groups of four (raster_walk): each pair's
 * windows are copied before its outputs are written. */
#include "mcu_conv_few_channels_dsp.h"

#include "mcu_conv_dsp_block.h"
#include "mcu_conv_dsp_block_internal.h"

#if defined(MCU_DSP) && !defined(MCU_MVE)

#define FEW_WORDS_MAX (MCU_CONV_FEW_WINDOW_MAX / 4)
#define FEW_BIAS_MAX (1 << 29)
#define FEW_SHIFT_MAX 22

static int few_channel_fits(const mcu_conv_s8_params *p, const int32_t *bias, int32_t c)
{
    const int32_t e = -p->output_shift[c];
    const int32_t b = bias ? bias[c] : 0;
    return p->output_multiplier[c] >= 0 && e >= 1 && e <= FEW_SHIFT_MAX && b <= FEW_BIAS_MAX && b >= -FEW_BIAS_MAX;
}

void mcu_conv_few_window_bytes(const mcu_conv_s8_params *p, const int8_t *input, const int32_t at[3], int8_t zero_point,
                             int8_t *bytes)
{
    const int32_t in_c = p->input_c, row = p->filter_w * in_c;
    const int32_t oy = at[1] * p->stride_h - p->pad_h, ox = at[2] * p->stride_w - p->pad_w;
    const int columns_inside = ox >= 0 && ox + (p->filter_w - 1) * p->dilation_w < p->input_w;
    int32_t r, k, c;
    for (r = 0; r < p->filter_h; ++r, bytes += row) {
        const int32_t iy = oy + r * p->dilation_h;
        if (iy < 0 || iy >= p->input_h) {
            for (c = 0; c < row; ++c) {
                bytes[c] = zero_point;
            }
        } else if (columns_inside && p->dilation_w == 1) {
            const int8_t *from = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, at[0], iy, ox, 0);
            for (c = 0; c + 4 <= row; c += 4) {
                const uint32_t word = mcu_load_s8x4(from + c);
                memcpy(bytes + c, &word, sizeof word);
            }
            for (; c < row; ++c) {
                bytes[c] = from[c];
            }
        } else {
            for (k = 0; k < p->filter_w; ++k) {
                const int32_t ix = ox + k * p->dilation_w;
                const int inside = ix >= 0 && ix < p->input_w;
                const int8_t *from = inside ? input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, at[0], iy, ix, 0)
                                            : input;
                for (c = 0; c < in_c; ++c) {
                    bytes[k * in_c + c] = inside ? from[c] : zero_point;
                }
            }
        }
    }
    for (c = 0; c < 3; ++c) {
        bytes[c] = zero_point; /* up to the word (bytes points past the window) */
    }
}

/* The column words of a window's bytes: per word of four values, values 0
 * and 2 then 1 and 3 as int16 pairs, offset added, doubled; stored every
 * other pair of words (two pixels interleave). */
static void few_column(const int8_t *bytes, int32_t words, int32_t offset2, int32_t *column)
{
    int32_t j;
    for (j = 0; j < words; ++j, column += 4) {
        const uint32_t word = mcu_load_s8x4(bytes + 4 * j);
        const int32_t even = mcu_s8x4_even_plus(word, offset2), odd = mcu_s8x4_odd_plus(word, offset2);
        column[0] = (int32_t)__sadd16(even, even);
        column[1] = (int32_t)__sadd16(odd, odd);
    }
}

/* A doubled sum rescaled to int8 (mcu_depthwise_3x3_dsp.c explains the
 * steps): `round` holds 2^(e-1) + output_offset * 2^e; `full`: the range is
 * all of int8 (one SSAT). */
static inline MCU_ALWAYS_INLINE int8_t few_requantize(int32_t acc2, int32_t multiplier, int32_t round, int32_t e,
                                                     int full, int32_t act_min, int32_t act_max)
{
    const int32_t v = mcu_smmlar(acc2, multiplier, round + (acc2 >> 31)) >> e;
    if (full) {
        return (int8_t)mcu_ssat8(v);
    }
    return (int8_t)(v < act_min ? act_min : (v > act_max ? act_max : v));
}

/* The filter's last word: its bytes 4 * (words - 1) .. window - 1 in the low
 * lanes, zeros above (read as the word ending at the window's last value). */
static inline MCU_ALWAYS_INLINE uint32_t few_last_word(const int8_t *filter, int32_t window, int32_t words)
{
    const int32_t missing = 4 * words - window; /* 0 .. 3 */
    return mcu_load_s8x4(filter + window - 4) >> (8 * missing);
}

/* Sums of two pixels' columns (interleaved) against filters f0 and f1:
 * sums[0] = pixel 0 . f0, [1] = pixel 0 . f1, [2] = pixel 1 . f0,
 * [3] = pixel 1 . f1, starting from start0 / start1. */
static inline MCU_ALWAYS_INLINE void few_dot_2x2(const int32_t *column, const int8_t *f0, const int8_t *f1,
                                                int32_t window, int32_t words, int32_t sums[4])
{
    int32_t s00 = sums[0], s01 = sums[1], s10 = sums[2], s11 = sums[3], j;
    uint32_t w0, w1;
    int32_t w_even, w_odd;
    for (j = words - 1; j > 0; --j, column += 4, f0 += 4, f1 += 4) {
        w0 = mcu_load_s8x4(f0);
        w_even = mcu_s8x4_even(w0);
        w_odd = mcu_s8x4_odd(w0);
        s00 = __smlad(column[0], w_even, s00);
        s00 = __smlad(column[1], w_odd, s00);
        s10 = __smlad(column[2], w_even, s10);
        s10 = __smlad(column[3], w_odd, s10);
        w1 = mcu_load_s8x4(f1);
        w_even = mcu_s8x4_even(w1);
        w_odd = mcu_s8x4_odd(w1);
        s01 = __smlad(column[0], w_even, s01);
        s01 = __smlad(column[1], w_odd, s01);
        s11 = __smlad(column[2], w_even, s11);
        s11 = __smlad(column[3], w_odd, s11);
    }
    /* f0 and f1 point at the last word now: read it ending at the window's end. */
    w0 = few_last_word(f0 - 4 * (words - 1), window, words);
    w_even = mcu_s8x4_even(w0);
    w_odd = mcu_s8x4_odd(w0);
    s00 = __smlad(column[0], w_even, s00);
    s00 = __smlad(column[1], w_odd, s00);
    s10 = __smlad(column[2], w_even, s10);
    s10 = __smlad(column[3], w_odd, s10);
    w1 = few_last_word(f1 - 4 * (words - 1), window, words);
    w_even = mcu_s8x4_even(w1);
    w_odd = mcu_s8x4_odd(w1);
    s01 = __smlad(column[0], w_even, s01);
    s01 = __smlad(column[1], w_odd, s01);
    s11 = __smlad(column[2], w_even, s11);
    s11 = __smlad(column[3], w_odd, s11);
    sums[0] = s00;
    sums[1] = s01;
    sums[2] = s10;
    sums[3] = s11;
}

/* Every channel of two pixels (`second`: whether there is a second to
 * store) from their interleaved columns, two filters at a time. */
static inline MCU_ALWAYS_INLINE void few_pixel_pair(const mcu_conv_s8_params *p, const int32_t *columns,
                                                    const int8_t *filter, const int32_t *bias, int8_t *out,
                                                    int second, int full)
{
    const int32_t out_c = p->output_c, window = p->filter_h * p->filter_w * p->input_c;
    const int32_t words = (window + 3) / 4, output_offset = p->output_offset;
    const int32_t act_min = p->act_min, act_max = p->act_max;
    const int32_t *multipliers = p->output_multiplier, *shifts = p->output_shift;
    int32_t c;
    for (c = 0; c < out_c; c += 2) {
        const int pair = c + 1 < out_c;
        const int32_t c1 = pair ? c + 1 : c;
        const int32_t e0 = -shifts[c], e1 = -shifts[c1];
        const int32_t round0 = (int32_t)((uint32_t)1 << (e0 - 1)) + output_offset * ((int32_t)1 << e0);
        const int32_t round1 = (int32_t)((uint32_t)1 << (e1 - 1)) + output_offset * ((int32_t)1 << e1);
        const int32_t m0 = multipliers[c], m1 = multipliers[c1];
        int32_t sums[4];
        sums[0] = sums[2] = bias ? 2 * bias[c] : 0;
        sums[1] = sums[3] = bias ? 2 * bias[c1] : 0;
        few_dot_2x2(columns, filter + (size_t)c * (size_t)window, filter + (size_t)c1 * (size_t)window, window, words,
                    sums);
        out[c] = few_requantize(sums[0], m0, round0, e0, full, act_min, act_max);
        if (pair) {
            out[c + 1] = few_requantize(sums[1], m1, round1, e1, full, act_min, act_max);
        }
        if (second) {
            out[out_c + c] = few_requantize(sums[2], m0, round0, e0, full, act_min, act_max);
            if (pair) {
                out[out_c + c + 1] = few_requantize(sums[3], m1, round1, e1, full, act_min, act_max);
            }
        }
    }
}

MCU_NOINLINE MCU_SOURCE_ORDER static void few_pixel_pair_full(const mcu_conv_s8_params *p, const int32_t *columns,
                                                              const int8_t *filter, const int32_t *bias,
                                                              int8_t *out, int second)
{
    few_pixel_pair(p, columns, filter, bias, out, second, 1);
}

MCU_NOINLINE MCU_SOURCE_ORDER static void few_pixel_pair_clamped(const mcu_conv_s8_params *p,
                                                                 const int32_t *columns, const int8_t *filter,
                                                                 const int32_t *bias, int8_t *out, int second)
{
    few_pixel_pair(p, columns, filter, bias, out, second, 0);
}

int mcu_conv_2d_s8_few_channels(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output)
{
    const int32_t out_c = p->output_c, window = p->filter_h * p->filter_w * p->input_c;
    const int32_t words = (window + 3) / 4, pixels = p->batches * p->output_h * p->output_w;
    const int32_t offset2 = mcu_s16x2_splat(p->input_offset);
    const int8_t zero_point = (int8_t)-p->input_offset;
    const int full = p->act_min == -128 && p->act_max == 127;
    int32_t columns[4 * FEW_WORDS_MAX];
    uint32_t bytes[FEW_WORDS_MAX + 1];
    int32_t first, c, at[3] = {0, 0, 0};
    if (p->input_c > 4 || p->filter_in_c_or_multiplier != p->input_c || window < 4 ||
        window > MCU_CONV_FEW_WINDOW_MAX) {
        return 0;
    }
    for (c = 0; c < out_c; ++c) {
        if (!few_channel_fits(p, bias, c)) {
            return 0;
        }
    }
    for (first = 0; first < pixels; first += 2) {
        const int second = first + 1 < pixels;
        int8_t *out = output + (size_t)first * (size_t)out_c;
        mcu_conv_few_window_bytes(p, input, at, zero_point, (int8_t *)bytes);
        few_column((const int8_t *)bytes, words, offset2, columns);
        raster_next(p, &at[0], &at[1], &at[2]);
        if (second) {
            mcu_conv_few_window_bytes(p, input, at, zero_point, (int8_t *)bytes);
            raster_next(p, &at[0], &at[1], &at[2]);
        }
        /* A lone last pixel repeats its column as the second. */
        few_column((const int8_t *)bytes, words, offset2, columns + 2);
        if (full) {
            few_pixel_pair_full(p, columns, filter, bias, out, second);
        } else {
            few_pixel_pair_clamped(p, columns, filter, bias, out, second);
        }
    }
    return 1;
}

/* Windows of 1-4 input channels (first layers) up to this many values
 * (FEW_BLOCK_TAPS_MAX in conv.py): eight pixels' lanes in `columns`, or
 * four pixels' (32 bytes a word) on the stack. */
#define FEW_BLOCK_WINDOW_MAX 32

/* Whether the first layer's channels all take mcu_conv_block8_channels_s8
 * (lanes doubled): as block_channel_kind's BLOCK_IN_ASM for sums starting
 * at the bias alone (the lanes hold the input offset). */
static int few_block_in_asm(const mcu_conv_s8_params *p, const int32_t *bias, int32_t window)
{
    int32_t oc;
    if (bias == NULL || window > BLOCK_DOUBLED_TAPS_MAX) {
        return 0;
    }
    for (oc = 0; oc < p->output_c; ++oc) {
        const int32_t e = -p->output_shift[oc], multiplier = p->output_multiplier[oc];
        if (multiplier < 0 || e > 31 || e < 1 || bias[oc] > BLOCK_DOUBLED_START_MAX ||
            bias[oc] < -BLOCK_DOUBLED_START_MAX) {
            return 0;
        }
    }
    return 1;
}

/* Every output channel of `pixels` (8 or 4) pixels whose windows (the input
 * offset added, padding and the last word's spare taps 0) are widened in
 * `lanes`, against filters `window` apart, each read a whole last word (its
 * spare taps meet 0); the last filter, whose word would run past the array,
 * from `last`, a zero-padded copy. */
static void few_block_channels_s8(const mcu_conv_s8_params *p, const int32_t *lanes, int32_t pixels,
                                  const int8_t *filter, const int8_t *last, const int32_t *bias, int32_t count,
                                  int8_t *out, int in_asm)
{
    const int32_t out_c = p->output_c, window = p->filter_h * p->filter_w * p->input_c;
    const int32_t words = (window + 3) / 4;
    const conv_output_range range = conv_output_range_of(p);
    const int full = p->act_min == -128 && p->act_max == 127;
    int32_t oc = 0, k;
    if (in_asm && pixels == BLOCK_PIXELS && count == BLOCK_PIXELS && out_c > 1) {
        const block_asm_job job = {lanes, words, filter, window, bias, NULL};
        block8_channels_in_asm(p, &job, 0, out_c - 1, out);
        oc = out_c - 1;
    }
    for (; oc < out_c; ++oc) {
        const int8_t *w = oc == out_c - 1 ? last : filter + (size_t)oc * (size_t)window;
        const mcu_prepared_mul m = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
        int32_t sums[BLOCK_PIXELS];
        sums[0] = (int32_t)((uint32_t)bias_plus(bias, oc, 0) << in_asm);
        if (pixels == BLOCK_PIXELS) {
            mcu_conv_block8_s8(lanes, w, words, sums);
        } else {
            mcu_conv_block4_s8(lanes, w, words, sums);
        }
        for (k = 0; k < count; ++k) {
            sums[k] >>= in_asm; /* doubled lanes: the doubled sum, even */
        }
        if (full) {
            store_channel_s8(&range, sums, count, &m, out + oc, (size_t)out_c, 1);
        } else {
            store_channel_s8(&range, sums, count, &m, out + oc, (size_t)out_c, 0);
        }
    }
}

/* The window of pixel at = (b, y, x) into `bytes` when it lies wholly
 * inside the input with dilation 1 across (most pixels): its rows copied a
 * word at a time; 0 (nothing written) otherwise. */
static int few_inside_window(const mcu_conv_s8_params *p, const int8_t *input, const int32_t at[3], int8_t *bytes)
{
    const int32_t row = p->filter_w * p->input_c, row_step = p->dilation_h * p->input_w * p->input_c;
    const int32_t oy = at[1] * p->stride_h - p->pad_h, ox = at[2] * p->stride_w - p->pad_w;
    const int8_t *from;
    int32_t r, c;
    if (p->dilation_w != 1 || oy < 0 || ox < 0 || oy + (p->filter_h - 1) * p->dilation_h >= p->input_h ||
        ox + p->filter_w > p->input_w) {
        return 0;
    }
    from = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, at[0], oy, ox, 0);
    for (r = 0; r < p->filter_h; ++r, from += row_step, bytes += row) {
        for (c = 0; c + 4 <= row; c += 4) {
            const uint32_t word = mcu_load_s8x4(from + c);
            /* Kept in a register: gcc would make the loop a memcpy call,
             * slower than these few words. */
            __asm__("" : : "r"(word));
            memcpy(bytes + c, &word, sizeof word);
        }
        for (; c < row; ++c) {
            const int8_t value = from[c];
            __asm__("" : : "r"(value));
            bytes[c] = value;
        }
    }
    return 1;
}

/* One window word's lanes at `to`: the offset added, doubled or not. */
static inline MCU_ALWAYS_INLINE void few_lanes_of(uint32_t word, int32_t offset2, int doubled, int32_t *to)
{
    const int32_t even = mcu_s8x4_even_plus(word, offset2), odd = mcu_s8x4_odd_plus(word, offset2);
    to[0] = doubled ? mcu_s16x2_double(even) : even;
    to[1] = doubled ? mcu_s16x2_double(odd) : odd;
}

static inline MCU_ALWAYS_INLINE uint32_t few_load16(const int8_t *at)
{
    uint16_t half;
    memcpy(&half, at, sizeof half);
    return half;
}

/* The lanes of a 3 x 3 window of 3 channels (RGB first layers) lying inside
 * the input, straight from its rows r0, r1, r2 (9 bytes each): the seven
 * words of the window's 27 values and the zero point, those straddling two
 * rows put together from both; `group` words between a pixel's words. */
static inline MCU_ALWAYS_INLINE void few_rgb_lanes(const int8_t *r0, size_t row_step, uint32_t zero_top,
                                                   int32_t offset2, int doubled, int32_t *to, size_t group)
{
    const int8_t *r1 = r0 + row_step, *r2 = r1 + row_step;
    few_lanes_of(mcu_load_s8x4(r0), offset2, doubled, to);
    few_lanes_of(mcu_load_s8x4(r0 + 4), offset2, doubled, to + group);
    few_lanes_of((uint32_t)(uint8_t)r0[8] | (mcu_load_s8x4(r1) << 8), offset2, doubled, to + 2 * group);
    few_lanes_of(mcu_load_s8x4(r1 + 3), offset2, doubled, to + 3 * group);
    few_lanes_of(few_load16(r1 + 7) | (few_load16(r2) << 16), offset2, doubled, to + 4 * group);
    few_lanes_of(mcu_load_s8x4(r2 + 2), offset2, doubled, to + 5 * group);
    few_lanes_of((mcu_load_s8x4(r2 + 5) >> 8) | zero_top, offset2, doubled, to + 6 * group);
}

/* Pixel at's window through few_rgb_lanes when it takes it: 3 x 3 x 3,
 * dilation 1, inside the input; 0 (nothing written) otherwise. */
static int few_rgb_window(const mcu_conv_s8_params *p, const int8_t *input, const int32_t at[3], int doubled,
                          int32_t *to, size_t group)
{
    const int32_t oy = at[1] * p->stride_h - p->pad_h, ox = at[2] * p->stride_w - p->pad_w;
    const uint32_t zero_top = (uint32_t)(uint8_t)-p->input_offset << 24;
    if (p->filter_h != 3 || p->filter_w != 3 || p->input_c != 3 || p->dilation_w != 1 || oy < 0 || ox < 0 ||
        oy + 2 * p->dilation_h >= p->input_h || ox + 3 > p->input_w) {
        return 0;
    }
    few_rgb_lanes(input + mcu_nhwc_offset(p->input_h, p->input_w, 3, at[0], oy, ox, 0),
                  (size_t)p->dilation_h * (size_t)p->input_w * 3u, zero_top, mcu_s16x2_splat(p->input_offset),
                  doubled, to, group);
    return 1;
}

/* A block of eight pixels from at = (b, y, x) on, all in output row y and
 * all through few_rgb_lanes (3 x 3 x 3, dilation 1, inside the input): its
 * lanes doubled, the rows walked stride_w pixels a step; 0 (nothing
 * written) for other blocks. */
static int few_rgb_block8(const mcu_conv_s8_params *p, const int8_t *input, const int32_t at[3], int32_t *lanes)
{
    const int32_t oy = at[1] * p->stride_h - p->pad_h, ox = at[2] * p->stride_w - p->pad_w;
    const uint32_t zero_top = (uint32_t)(uint8_t)-p->input_offset << 24;
    const int32_t offset2 = mcu_s16x2_splat(p->input_offset);
    const size_t step = 3u * (size_t)p->stride_w, row_step = (size_t)p->dilation_h * (size_t)p->input_w * 3u;
    const int8_t *r0;
    int32_t j;
    if (p->filter_h != 3 || p->filter_w != 3 || p->input_c != 3 || p->dilation_w != 1 ||
        at[2] + BLOCK_PIXELS > p->output_w || oy < 0 || ox < 0 || oy + 2 * p->dilation_h >= p->input_h ||
        ox + (BLOCK_PIXELS - 1) * p->stride_w + 3 > p->input_w) {
        return 0;
    }
    r0 = input + mcu_nhwc_offset(p->input_h, p->input_w, 3, at[0], oy, ox, 0);
    for (j = 0; j < BLOCK_PIXELS; ++j, r0 += step) {
        few_rgb_lanes(r0, row_step, zero_top, offset2, 1, lanes + 2 * j, 2u * BLOCK_PIXELS);
    }
    return 1;
}

int mcu_conv_few_channels_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c, words = (window + 3) / 4;
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    const int32_t offset2 = mcu_s16x2_splat(p->input_offset);
    const int8_t zero_point = (int8_t)-p->input_offset;
    const int eight = columns != NULL && MCU_CONV_BLOCK_BYTES(window) <= p->column_bytes;
    const int32_t block = eight ? BLOCK_PIXELS : SHORT_BLOCK_PIXELS;
    int32_t stack_lanes[2 * SHORT_BLOCK_PIXELS * (FEW_BLOCK_WINDOW_MAX / 4)];
    int32_t *const lanes = eight ? block_lanes(columns) : stack_lanes;
    uint32_t window_words[FEW_BLOCK_WINDOW_MAX / 4 + 1];
    int8_t last[FEW_BLOCK_WINDOW_MAX];
    int32_t first, j, k, at[3] = {0, 0, 0};
    int in_asm;
    if (p->input_c > 4 || p->filter_in_c_or_multiplier != p->input_c || window > FEW_BLOCK_WINDOW_MAX) {
        return 0;
    }
    in_asm = few_block_in_asm(p, bias, window);
    /* The last word's spare taps: the zero point (0 once offset); the rest
     * set for blocks whose repeated last pixel reads them. */
    memset(window_words, 0, sizeof window_words);
    for (k = window; k < 4 * words; ++k) {
        ((int8_t *)window_words)[k] = zero_point;
    }
    for (k = 0; k < 4 * words; ++k) {
        last[k] = (int8_t)(k < window ? filter[(size_t)(p->output_c - 1) * (size_t)window + (size_t)k] : 0);
    }
    for (first = 0; first < pixels; first += block) {
        const int32_t count = MCU_MIN(pixels - first, block);
        /* Fewer than five pixels left: a block of four (eight would be half empty). */
        const int32_t size = count > SHORT_BLOCK_PIXELS ? block : SHORT_BLOCK_PIXELS;
        const size_t group = 2u * (size_t)size;
        j = 0;
        if (in_asm && count == BLOCK_PIXELS && size == BLOCK_PIXELS && few_rgb_block8(p, input, at, lanes)) {
            at[2] += BLOCK_PIXELS - 1; /* the block's row holds all eight */
            raster_next(p, &at[0], &at[1], &at[2]);
            j = size;
        }
        for (; j < size; ++j) {
            /* Past the last pixel the block repeats it; its sums are not stored. */
            int32_t *to = lanes + 2 * j;
            if (j < count) {
                const int rgb = in_asm ? few_rgb_window(p, input, at, 1, to, group)
                                       : few_rgb_window(p, input, at, 0, to, group);
                if (rgb) {
                    raster_next(p, &at[0], &at[1], &at[2]);
                    continue;
                }
                if (!few_inside_window(p, input, at, (int8_t *)window_words)) {
                    mcu_conv_few_window_bytes(p, input, at, zero_point, (int8_t *)window_words);
                }
                raster_next(p, &at[0], &at[1], &at[2]);
            }
            for (k = 0; k < words; ++k, to += group) {
                few_lanes_of(window_words[k], offset2, in_asm, to);
            }
        }
        few_block_channels_s8(p, lanes, size, filter, last, bias, count,
                              output + (size_t)first * (size_t)p->output_c, in_asm);
    }
    return 1;
}

#else
typedef int mcu_conv_few_channels_dsp_unused; /* ISO C: a translation unit declares something */
#endif
