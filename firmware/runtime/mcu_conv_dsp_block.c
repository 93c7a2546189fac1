/* int8 convolutions of one group on cores with the DSP extension but no
 * Helium (Cortex-M4, M7, M33): blocks of eight output pixels by one output
 * channel.
 *
 * The eight pixels' taps (a pointwise pixel's input channels, or a window,
 * straight from the input or through an int8 column) are widened once to
 * int16 pairs in the `columns` scratch, in the order SXTB16 splits a filter
 * word into: for every four taps t..t+3 of each pixel the pairs (t, t+2)
 * and (t+1, t+3), the eight pixels side by side.  Every filter word is then
 * split once (two SXTB16) and feeds sixteen SMLADs, two per pixel, and the
 * widening is shared by all the output channels.  The input offset is in
 * window_offset_terms (the padding of a window holds the input zero point),
 * so the inner loop adds products only: the same products as the reference
 * kernel in another order, hence the same int32 sums.  The filters are read
 * in place, int8.  Where the channels' sums fit (block_channel_kind) the
 * lanes are doubled, and mcu_conv_block8_channels_s8 rescales the doubled
 * sums with one SMMLAR; channels whose output is one value whatever the
 * input are written without sums.
 *
 * Pixels go in aligned groups of eight in raster order, each group's taps all
 * read before any of its outputs is written: every group of four WALKS
 * declares for the int8 CONV_2D entries (mcu_planner/lowering/conv.py) is read no later
 * and written no earlier than that walk does, with or without raster_walk.
 * A pointwise layer's last one or two pixels go through
 * mcu_conv_pixel_pair_s8 (mcu_conv_window.c), a pair as that walk allows.
 *
 * First layers (1-4 input channels) take the same sums in
 * mcu_conv_few_channels_dsp.c. */
#include "mcu_conv_dsp_block.h"

#include "mcu_conv_dsp_block_asm.h"
#include "mcu_conv_dsp_block_internal.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_window.h"

#if defined(MCU_DSP) && !defined(MCU_MVE)

/* The `n` taps at x, pixel j of a block of `pixels`, widened into `lanes`
 * (word aligned): n / 4 groups of 2 x pixels words (pixel j's pairs at 2j,
 * 2j + 1), then each pixel's last n % 4 taps as plain int16, four per
 * pixel (the rest 0). */
static void widen_pixel(const int8_t *x, int32_t j, int32_t pixels, int32_t n, int32_t *lanes, int doubled)
{
    const int32_t words = n / 4, tail = n % 4;
    const size_t group = 2u * (size_t)pixels;
    int16_t *last = (int16_t *)(void *)(lanes + group * (size_t)words) + 4 * j;
    int32_t *to = lanes + 2 * j;
    int32_t k;
    if (doubled) {
        for (k = 0; k < words; ++k, x += 4, to += group) {
            const uint32_t word = mcu_load_s8x4(x);
            to[0] = mcu_s16x2_double(mcu_s8x4_even(word));
            to[1] = mcu_s16x2_double(mcu_s8x4_odd(word));
        }
    } else {
        for (k = 0; k < words; ++k, x += 4, to += group) {
            const uint32_t word = mcu_load_s8x4(x);
            to[0] = mcu_s8x4_even(word);
            to[1] = mcu_s8x4_odd(word);
        }
    }
    for (k = 0; tail && k < 4; ++k) {
        last[k] = (int16_t)(k < tail ? x[k] * (1 + doubled) : 0);
    }
}

/* A full block's pixels widened doubled when they are eight consecutive
 * runs of n (a multiple of 4) taps from x on (pointwise, stride 1): word by
 * word across the eight pixels, without widen_pixel's call per pixel. */
static void widen_block8_doubled(const int8_t *x, int32_t n, int32_t *lanes)
{
    const size_t step = (size_t)n;
    int32_t *const end = lanes + 4 * n;
    for (; lanes != end; lanes += 2 * BLOCK_PIXELS, x += 4) {
        const int8_t *from = x;
        int32_t j;
        for (j = 0; j < 2 * BLOCK_PIXELS; j += 2, from += step) {
            const uint32_t word = mcu_load_s8x4(from);
            lanes[j] = mcu_s16x2_double(mcu_s8x4_even(word));
            lanes[j + 1] = mcu_s16x2_double(mcu_s8x4_odd(word));
        }
    }
}

/* `words` groups of one pixel's lanes from `to` on (`group` words apart):
 * the int8 taps at x widened, or with x NULL the input zero point's pair
 * `zero` in every lane. */
static void widen_words(const int8_t *x, int32_t zero, int32_t *to, int32_t words, size_t group, int doubled)
{
    int32_t *const end = to + group * (size_t)words;
    if (x == NULL) {
        for (; to != end; to += group) {
            to[0] = zero;
            to[1] = zero;
        }
        return;
    }
    if (doubled) {
        for (; to != end; to += group, x += 4) {
            const uint32_t word = mcu_load_s8x4(x);
            to[0] = mcu_s16x2_double(mcu_s8x4_even(word));
            to[1] = mcu_s16x2_double(mcu_s8x4_odd(word));
        }
        return;
    }
    for (; to != end; to += group, x += 4) {
        const uint32_t word = mcu_load_s8x4(x);
        to[0] = mcu_s8x4_even(word);
        to[1] = mcu_s8x4_odd(word);
    }
}

/* The window of output pixel (b, wy's row, out_x) widened straight from the
 * input into the lanes at `to` (pixel j's first, `group` words apart), for
 * input_c a multiple of 4: every run of inside taps and of padding is then
 * whole words.  Taps in the padding hold the input zero point, as in
 * mcu_conv_window_to_column. */
static void widen_window(const mcu_conv_s8_params *p, const int8_t *input, int32_t b, const mcu_window_axis *wy,
                         int32_t out_x, int32_t *to, size_t group, int doubled)
{
    const int32_t tap_words = p->input_c / 4, row_words = p->filter_w * tap_words;
    const int32_t zero = mcu_s16x2_splat(-p->input_offset * (1 + doubled));
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const size_t tap_lanes = group * (size_t)tap_words;
    int32_t fy, fx;
    for (fy = 0; fy < p->filter_h; ++fy) {
        if (fy < wy->first || fy >= wy->end || wx.end <= wx.first) {
            widen_words(NULL, zero, to, row_words, group, doubled);
            to += group * (size_t)row_words;
            continue;
        }
        widen_words(NULL, zero, to, wx.first * tap_words, group, doubled);
        to += tap_lanes * (size_t)wx.first;
        for (fx = wx.first; fx < wx.end; fx = p->dilation_w == 1 ? wx.end : fx + 1) {
            /* With dilation 1 the inside taps are one run of the input row. */
            const int32_t taps = p->dilation_w == 1 ? wx.end - wx.first : 1;
            widen_words(input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b, mcu_window_input(wy, fy),
                                                mcu_window_input(&wx, fx), 0),
                        0, to, taps * tap_words, group, doubled);
            to += tap_lanes * (size_t)taps;
        }
        widen_words(NULL, zero, to, (p->filter_w - wx.end) * tap_words, group, doubled);
        to += tap_lanes * (size_t)(p->filter_w - wx.end);
    }
}

/* How each output channel's sums go: through mcu_conv_block8_channels_s8
 * (doubled lanes), not at all (the output is the same for every input:
 * the rescale is monotonic, and at both ends of the sums' range, start +-
 * n 128 * 128, it gives one value -- dead channels whose bias is far
 * outside what the products reach), or through the C loop. */
enum { BLOCK_IN_C, BLOCK_IN_ASM, BLOCK_CONSTANT };

#define BLOCK_KINDS_MAX 256 /* channels past these: classified block by block */
typedef struct {
    uint32_t in_asm[BLOCK_KINDS_MAX / 32];
    uint32_t constant[BLOCK_KINDS_MAX / 32];
    int doubled; /* the lanes doubled (then every in_asm channel fits) */
    int all_in_asm;
    int any_constant;
} block_kinds;

static int block_channel_kind(const mcu_conv_s8_params *p, const int32_t *bias, int32_t n, int doubled, int32_t oc)
{
    const int32_t e = -p->output_shift[oc], multiplier = p->output_multiplier[oc];
    const int64_t start = (int64_t)bias_plus(bias, oc, p->window_offset_terms[oc]);
    const int64_t reach = (int64_t)n * 128 * 128;
    /* Only a channel whose sums never reach 0 is worth the two rescales:
     * dead channels are far from it, and the test is an optimisation (the
     * other paths give the same bytes), which a small op must not pay for
     * on every channel. */
    if (multiplier >= 0 && e >= 0 && (start - reach > 0 || start + reach < 0) && start - reach > INT32_MIN &&
        start + reach < INT32_MAX) {
        const conv_output_range range = conv_output_range_of(p);
        const mcu_prepared_mul m = mcu_prepare_mul(multiplier, (int)p->output_shift[oc]);
        if (requantize_prepared_s8(&range, (int32_t)(start - reach), &m) ==
            requantize_prepared_s8(&range, (int32_t)(start + reach), &m)) {
            return BLOCK_CONSTANT;
        }
    }
    if (doubled && multiplier >= 0 && e <= 31 && e >= 1 && start <= BLOCK_DOUBLED_START_MAX &&
        start >= -BLOCK_DOUBLED_START_MAX) {
        return BLOCK_IN_ASM;
    }
    return BLOCK_IN_C;
}

/* The kinds of a convolution's channels, windows of `n` taps. */
static void block_classify(const mcu_conv_s8_params *p, const int32_t *bias, int32_t n, block_kinds *kinds)
{
    int32_t oc;
    memset(kinds, 0, sizeof *kinds);
    kinds->doubled = bias != NULL && n <= BLOCK_DOUBLED_TAPS_MAX;
    kinds->all_in_asm = kinds->doubled;
    for (oc = 0; oc < p->output_c; ++oc) {
        const int kind = block_channel_kind(p, bias, n, kinds->doubled, oc);
        kinds->all_in_asm = kinds->all_in_asm && kind == BLOCK_IN_ASM;
        kinds->any_constant = kinds->any_constant || kind == BLOCK_CONSTANT;
        if (oc < BLOCK_KINDS_MAX) {
            kinds->in_asm[oc / 32] |= (uint32_t)(kind == BLOCK_IN_ASM) << (oc % 32);
            kinds->constant[oc / 32] |= (uint32_t)(kind == BLOCK_CONSTANT) << (oc % 32);
        }
    }
}

/* Sorting the channels pays only in full blocks: fewer than BLOCK_PIXELS
 * pixels in all (a streaming model's step: one or two) never reach the
 * assembly, and skipping their constant channels saves less than the
 * sorting costs (vad's one-pixel pointwise layers: 266 ticks, not 410).
 * Unsorted, every channel takes the C loop or the pixel pairs. */
static void block_classify_worth_it(const mcu_conv_s8_params *p, const int32_t *bias, int32_t n, int32_t pixels,
                                    block_kinds *kinds)
{
    if (pixels >= BLOCK_PIXELS) {
        block_classify(p, bias, n, kinds);
    } else {
        memset(kinds, 0, sizeof *kinds);
    }
}

static inline MCU_ALWAYS_INLINE int block_kind(const mcu_conv_s8_params *p, const int32_t *bias, int32_t n, const block_kinds *kinds,
                      int32_t oc)
{
    if (oc >= BLOCK_KINDS_MAX) {
        return block_channel_kind(p, bias, n, kinds->doubled, oc);
    }
    if ((kinds->in_asm[oc / 32] >> (oc % 32)) & 1u) {
        return BLOCK_IN_ASM;
    }
    return (kinds->constant[oc / 32] >> (oc % 32)) & 1u ? BLOCK_CONSTANT : BLOCK_IN_C;
}

/* A block's lanes: `pixels` (8 or 4) pixels' `n` taps, `count` of them
 * stored, `doubled` or not; `pixel0` the op's first output pixel once the
 * first block has written it (NULL in that block). */
typedef struct {
    const int32_t *lanes;
    int32_t pixels;
    int32_t n;
    int32_t count;
    int doubled;
    const int8_t *pixel0;
} block_lanes_of;

/* Channel oc of a block through the C loop: the sums of the lanes from 0,
 * then added to bias + offset term; filter w; outputs out[j * output_c]. */
static void block_channel_in_c(const mcu_conv_s8_params *p, const block_lanes_of *l, const int8_t *w,
                               const int32_t *bias, int32_t oc, int8_t *out)
{
    const int32_t words = l->n / 4, tail = l->n % 4;
    const int16_t *last = (const int16_t *)(const void *)(l->lanes + 2 * l->pixels * words);
    const conv_output_range range = conv_output_range_of(p);
    const mcu_prepared_mul m = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
    const int32_t start = bias_plus(bias, oc, p->window_offset_terms[oc]);
    int32_t sums[BLOCK_PIXELS], j, k;
    sums[0] = 0;
    if (l->pixels == BLOCK_PIXELS) {
        mcu_conv_block8_s8(l->lanes, w, words, sums);
    } else {
        mcu_conv_block4_s8(l->lanes, w, words, sums);
    }
    for (j = 0; j < l->count; ++j) {
        for (k = 0; k < tail; ++k) {
            sums[j] += (int32_t)last[4 * j + k] * (int32_t)w[4 * words + k];
        }
        sums[j] = mcu_add_wrap_s32(start, sums[j] >> l->doubled); /* doubled: even */
    }
    if (p->act_min == -128 && p->act_max == 127) {
        store_channel_s8(&range, sums, l->count, &m, out, (size_t)p->output_c, 1);
    } else {
        store_channel_s8(&range, sums, l->count, &m, out, (size_t)p->output_c, 0);
    }
}

/* Constant channels oc, oc + 1, ... of the first BLOCK_KINDS_MAX, as long
 * as they last, copied from pixel 0 into a later block of `count` pixels
 * (an even number); the channel past them. */
static int32_t block_constant_run(const block_kinds *kinds, const int8_t *pixel0, int32_t oc, int32_t count,
                                  size_t step, int8_t *out)
{
    const int32_t last = MCU_MIN(BLOCK_KINDS_MAX, (int32_t)step);
    do {
        const int8_t value = pixel0[oc];
        int8_t *o = out + oc;
        int32_t j;
        for (j = count; j > 0; j -= 2, o += 2 * step) {
            o[0] = value;
            o[step] = value;
        }
        ++oc;
    } while (oc < last && (kinds->constant[oc / 32] >> (oc % 32)) & 1u);
    return oc;
}

/* Every output channel of a block against filters `n` apart, by kind; the
 * outputs at out + j * output_c. */
static void block_channels_s8(const mcu_conv_s8_params *p, const block_lanes_of *l, const int8_t *filter,
                              const int32_t *bias, const block_kinds *kinds, int8_t *out)
{
    const int32_t out_c = p->output_c, n = l->n;
    const int asm_block = l->count == BLOCK_PIXELS && n % 4 == 0;
    const block_asm_job job = {l->lanes, n / 4, filter, n, bias, p->window_offset_terms};
    int32_t oc = 0, end, j;
    if (asm_block && kinds->all_in_asm) {
        block8_channels_in_asm(p, &job, 0, out_c, out);
        return;
    }
    while (oc < out_c) {
        const int kind = block_kind(p, bias, n, kinds, oc);
        if (kind == BLOCK_IN_ASM && asm_block) {
            for (end = oc + 1; end < out_c && block_kind(p, bias, n, kinds, end) == BLOCK_IN_ASM; ++end) {
            }
            block8_channels_in_asm(p, &job, oc, end, out);
            oc = end;
            continue;
        }
        if (kind == BLOCK_CONSTANT && l->pixel0 != NULL && l->count % 2 == 0 && oc < BLOCK_KINDS_MAX) {
            oc = block_constant_run(kinds, l->pixel0, oc, l->count, (size_t)out_c, out);
            continue;
        }
        if (kind == BLOCK_CONSTANT) {
            /* The first block works the value out, later ones copy it. */
            int8_t *o = out + oc, value;
            if (l->pixel0 != NULL) {
                value = l->pixel0[oc];
            } else {
                const conv_output_range range = conv_output_range_of(p);
                const mcu_prepared_mul m = mcu_prepare_mul(p->output_multiplier[oc], (int)p->output_shift[oc]);
                value = requantize_prepared_s8(&range, bias_plus(bias, oc, p->window_offset_terms[oc]), &m);
            }
            for (j = l->count; j > 0; --j, o += out_c) {
                *o = value;
            }
        } else {
            block_channel_in_c(p, l, filter + (size_t)oc * (size_t)n, bias, oc, out + oc);
        }
        ++oc;
    }
}

int mcu_conv_1x1_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                          int8_t *output, int8_t *columns)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels_per_image = p->output_h * p->output_w;
    const int32_t pixels = p->batches * pixels_per_image;
    int32_t *lanes;
    int32_t first, j;
    block_kinds kinds;
    block_lanes_of block_of;
    if (columns == NULL || in_c < MCU_CONV_BLOCK_MIN_CHANNELS || MCU_CONV_BLOCK_BYTES(in_c) > p->column_bytes) {
        return 0;
    }
    lanes = block_lanes(columns);
    block_classify_worth_it(p, bias, in_c, pixels, &kinds);
    for (first = 0; first < pixels; first += BLOCK_PIXELS) {
        const int32_t count = MCU_MIN(pixels - first, BLOCK_PIXELS);
        const int32_t block = count > SHORT_BLOCK_PIXELS ? BLOCK_PIXELS : SHORT_BLOCK_PIXELS;
        const int8_t *x[SHORT_BLOCK_PIXELS];
        if (count == BLOCK_PIXELS && kinds.doubled && in_c % 4 == 0 && p->stride_h == 1 && p->stride_w == 1) {
            widen_block8_doubled(input + (size_t)first * (size_t)in_c, in_c, lanes);
            j = block; /* widened */
        } else {
            j = 0;
        }
        for (; j < block; ++j) {
            /* Past the last pixel the block repeats it; its sums are not stored. */
            const int32_t at = first + MCU_MIN(j, count - 1);
            const int32_t b = at / pixels_per_image, yx = at % pixels_per_image;
            const int8_t *pixel = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b,
                                                          (yx / p->output_w) * p->stride_h,
                                                          (yx % p->output_w) * p->stride_w, 0);
            if (count <= 2 && !kinds.any_constant) {
                /* A last one or two pixels: two by two channels straight
                 * from the input (a block of four would be half empty,
                 * but skips constant channels). */
                x[j] = pixel;
                continue;
            }
            widen_pixel(pixel, j, block, in_c, lanes, kinds.doubled);
        }
        if (count <= 2 && !kinds.any_constant) {
            const mcu_conv_pixel_pair pair = {{x[0], x[1]}, count == 2, output + (size_t)first * (size_t)out_c};
            mcu_conv_pixel_pair_s8(p, &pair, filter, in_c, bias);
            continue;
        }
        block_of = (block_lanes_of){lanes, block, in_c, count, kinds.doubled, first ? output : NULL};
        block_channels_s8(p, &block_of, filter, bias, &kinds, output + (size_t)first * (size_t)out_c);
    }
    return 1;
}

int mcu_conv_window_block_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c, out_c = p->output_c;
    const int32_t pixels_per_image = p->output_h * p->output_w;
    const int32_t pixels = p->batches * pixels_per_image;
    int8_t *column;
    int32_t *lanes;
    int32_t first, j;
    block_kinds kinds;
    block_lanes_of block_of;
    /* Layers of 1-4 input channels (first layers) take mcu_conv_window.c. */
    if (columns == NULL || p->input_c < MCU_CONV_BLOCK_MIN_CHANNELS ||
        MCU_CONV_WINDOW_BLOCK_BYTES(p->input_c, window) > p->column_bytes) {
        return 0;
    }
    /* Without whole words per tap, one pixel's window at a time as int8
     * (padding as the zero point) widened into its place among the lanes. */
    column = columns;
    lanes = block_lanes(p->input_c % 4 ? columns + window : columns);
    block_classify_worth_it(p, bias, window, pixels, &kinds);
    for (first = 0; first < pixels; first += BLOCK_PIXELS) {
        const int32_t count = MCU_MIN(pixels - first, BLOCK_PIXELS);
        const int32_t block = count > SHORT_BLOCK_PIXELS ? BLOCK_PIXELS : SHORT_BLOCK_PIXELS;
        for (j = 0; j < block; ++j) {
            /* Past the last pixel the block repeats it; its sums are not stored. */
            const int32_t at = first + MCU_MIN(j, count - 1);
            const int32_t b = at / pixels_per_image, yx = at % pixels_per_image;
            const mcu_window_axis wy = mcu_window_axis_at(yx / p->output_w, p->stride_h, p->pad_h, p->dilation_h,
                                                          p->filter_h, p->input_h);
            if (p->input_c % 4 == 0) {
                widen_window(p, input, b, &wy, yx % p->output_w, lanes + 2 * j, 2u * (size_t)block, kinds.doubled);
                continue;
            }
            if (j < count) {
                mcu_conv_window_to_column(p, input, b, &wy, yx % p->output_w, column);
            }
            widen_pixel(column, j, block, window, lanes, kinds.doubled);
        }
        block_of = (block_lanes_of){lanes, block, window, count, kinds.doubled, first ? output : NULL};
        block_channels_s8(p, &block_of, filter, bias, &kinds, output + (size_t)first * (size_t)out_c);
    }
    return 1;
}

#endif /* MCU_DSP && !MCU_MVE */
