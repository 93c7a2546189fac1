/* int8 convolutions of short windows on Helium (Cortex-M55): first layers
 * on 1-3 input channels and other windows of 17 to MCU_CONV_SMALL_WINDOW_MAX
 * values.  Such a window is a few vectors, so the copy into a
 * column and the loop over output channels are what cost: each window row
 * of a window at the border is copied by predicated vector moves (its padding
 * as the input zero point) and a window inside the input read in place a
 * row per vector where that is cheaper; the window, held in registers, is
 * then taken against every filter, the sums requantized four channels per
 * vector.  Pixels go one at a time in raster order, each window read before
 * its output is written (WALKS' raster walk).  Nothing here is compiled
 * without MCU_MVE. */
#include "mcu_conv_helium_small.h"

#include "mcu_conv_helium.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_window.h"

#if defined(MCU_MVE)

/* Up to MCU_CONV_SMALL_WINDOW_MAX bytes from `from` to `to`, sixteen per
 * predicated move. */
static inline MCU_ALWAYS_INLINE void small_copy(int8_t *to, const int8_t *from, int32_t n)
{
    int32_t k;
    for (k = 0; k < n; k += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)(n - k));
        vstrbq_p_s8(to + k, vldrbq_z_s8(from + k, lanes), lanes);
    }
}

/* `n` bytes of `value` at `to`, sixteen per predicated store. */
static inline MCU_ALWAYS_INLINE void small_fill(int8_t *to, int8x16_t value, int32_t n)
{
    int32_t k;
    for (k = 0; k < n; k += 16) {
        vstrbq_p_s8(to + k, value, vctp8q((uint32_t)(n - k)));
    }
}

/* The window of output pixel (b, wy's row, out_x) into `column`, window row
 * after window row, taps in the padding as the input zero point: the values
 * mcu_conv_window_rows_to_column writes. */
static void small_window_to_column(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                   const mcu_window_axis *wy, int32_t out_x, int8_t *column)
{
    const int32_t in_c = p->input_c, row_bytes = p->filter_w * in_c;
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const int8x16_t zero_point = vdupq_n_s8((int8_t)-p->input_offset);
    const size_t input_row = (size_t)p->input_w * (size_t)in_c;
    int32_t before, inside, fy;
    const int8_t *first;
    if (p->dilation_w != 1 || wx.end <= wx.first) {
        mcu_conv_window_rows_to_column(p, input, b, wy, out_x, 0, p->filter_h, column);
        return;
    }
    before = wx.first * in_c;
    inside = (wx.end - wx.first) * in_c;
    first = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, 0, mcu_window_input(&wx, wx.first), 0);
    for (fy = 0; fy < p->filter_h; ++fy, column += row_bytes) {
        if (fy < wy->first || fy >= wy->end) {
            small_fill(column, zero_point, row_bytes);
            continue;
        }
        if (inside < row_bytes) {
            small_fill(column, zero_point, row_bytes);
        }
        small_copy(column + before, first + (size_t)mcu_window_input(wy, fy) * input_row, inside);
    }
}

/* Output channels requantized after each pass over the filters: the raw
 * sums of this many wait on the stack. */
#define SMALL_CHANNELS 32

/* Requantizes the raw sums of output channels oc .. oc + n - 1 of one pixel
 * (sums[0 .. n - 1]), four per vector, the last `lanes` only. */
static inline MCU_ALWAYS_INLINE void small_store4(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                                  const int32_t *sums, int32_t oc, int full, mve_pred16_t lanes,
                                                  int8_t *out)
{
    int32x4_t acc = vaddq_s32(mcu_helium_load_s32x4(sums, full, lanes),
                              mcu_helium_load_s32x4(p->window_offset_terms + oc, full, lanes));
    if (q->bias) {
        acc = vaddq_s32(acc, mcu_helium_load_s32x4(q->bias + oc, full, lanes));
    }
    mcu_helium_store_pixel(q, acc, mcu_helium_load_s32x4(q->multiplier + oc, full, lanes),
                           mcu_split_shift_x4(mcu_helium_load_s32x4(q->shift + oc, full, lanes)), lanes, out + oc);
}

/* Where small_channels finds its pixels' windows: `pixels` of them, the
 * first at `base`, each `pixel_step` bytes after the last, vector i of a
 * window at i * `vector_step` -- window rows read in place (`rows`: filter
 * bytes i * `filter_step` on, all under `tail`), or a column (16 bytes a
 * vector, the last under `tail`). */
typedef struct {
    const int8_t *base;
    size_t vector_step;
    size_t pixel_step;
    int32_t pixels;
    size_t filter_step;
    mve_pred16_t tail;
} small_windows;

/* Vector i of `count` at `at`: whole, or under `tail` where the rows or the
 * column's last vector need it (`count`, `rows` and i constants). */
static inline MCU_ALWAYS_INLINE int8x16_t small_load(const int8_t *at, int32_t i, int32_t count, int rows,
                                                     mve_pred16_t tail)
{
    return rows || i == count - 1 ? vldrbq_z_s8(at, tail) : vldrbq_s8(at);
}

/* The pixels of `win` against the filters of SMALL_CHANNELS output channels
 * at a time, the `count` (a constant at each call, 1 to 4) vectors of a
 * window in registers: per channel only its filter's loads and the
 * VMLADAVs; then the sums requantized four per vector. */
static inline MCU_ALWAYS_INLINE void small_channels(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                                    const small_windows *win, int32_t count, int rows,
                                                    const int8_t *filter, int8_t *out)
{
    const int32_t out_c = p->output_c;
    const size_t window = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)p->input_c;
    const size_t vs = win->vector_step, fs = win->filter_step;
    const mve_pred16_t tail = win->tail;
    const int8_t *x = win->base;
    int32_t sums[SMALL_CHANNELS];
    int32_t px, oc, k;
    for (px = 0; px < win->pixels; ++px, x += win->pixel_step, out += out_c) {
        const int8_t *w = filter;
        for (oc = 0; oc < out_c; oc += SMALL_CHANNELS) {
            const int32_t n = MCU_MIN(out_c - oc, SMALL_CHANNELS);
            {
                const int8x16_t x0 = small_load(x, 0, count, rows, tail);
                const int8x16_t x1 = count > 1 ? small_load(x + vs, 1, count, rows, tail) : x0;
                const int8x16_t x2 = count > 2 ? small_load(x + 2 * vs, 2, count, rows, tail) : x0;
                const int8x16_t x3 = count > 3 ? small_load(x + 3 * vs, 3, count, rows, tail) : x0;
                for (k = 0; k < n; ++k, w += window) {
                    int32_t s = vmladavq_s8(x0, small_load(w, 0, count, rows, tail));
                    if (count > 1) {
                        s = vmladavaq_s8(s, x1, small_load(w + fs, 1, count, rows, tail));
                    }
                    if (count > 2) {
                        s = vmladavaq_s8(s, x2, small_load(w + 2 * fs, 2, count, rows, tail));
                    }
                    if (count > 3) {
                        s = vmladavaq_s8(s, x3, small_load(w + 3 * fs, 3, count, rows, tail));
                    }
                    sums[k] = s;
                }
            }
            for (k = 0; k + 4 <= n; k += 4) {
                small_store4(p, q, sums + k, oc + k, 1, vctp32q(4u), out);
            }
            if (k < n) {
                small_store4(p, q, sums + k, oc + k, 0, vctp32q((uint32_t)(n - k)), out);
            }
        }
    }
}

/* small_channels with `count` (1 to 4) and `rows` constants. */
MCU_NOINLINE static void small_pixels(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                      const small_windows *win, int32_t count, int rows, const int8_t *filter,
                                      int8_t *out)
{
    switch (count * 2 + (rows ? 1 : 0)) {
    case 2:
        small_channels(p, q, win, 1, 0, filter, out);
        break;
    case 3:
        small_channels(p, q, win, 1, 1, filter, out);
        break;
    case 4:
        small_channels(p, q, win, 2, 0, filter, out);
        break;
    case 5:
        small_channels(p, q, win, 2, 1, filter, out);
        break;
    case 6:
        small_channels(p, q, win, 3, 0, filter, out);
        break;
    case 7:
        small_channels(p, q, win, 3, 1, filter, out);
        break;
    case 8:
        small_channels(p, q, win, 4, 0, filter, out);
        break;
    default:
        small_channels(p, q, win, 4, 1, filter, out);
        break;
    }
}

/* Whether windows wholly inside the input are read in place, a window row
 * per vector, rather than copied into a column: rows of at most 16 values,
 * at most 4 rows, and the extra VMLADAVs over all channels (one filter load
 * and one product per row past the column's vectors) cheaper than the copy
 * they spare (about 15 instructions a window row and 20 a pixel). */
static int small_reads_rows(const mcu_conv_s8_params *p, int32_t blocks)
{
    const int32_t row = p->filter_w * p->input_c;
    return p->dilation_w == 1 && row <= 16 && p->filter_h <= 4 &&
           3 * (p->filter_h - blocks) * p->output_c < 20 + 15 * p->filter_h;
}

void mcu_conv_2d_s8_small_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *column)
{
    const int32_t in_c = p->input_c, window = p->filter_h * p->filter_w * in_c, blocks = (window + 15) / 16;
    const size_t out_c = (size_t)p->output_c, row = (size_t)p->filter_w * (size_t)in_c;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    small_windows in_place, copied;
    int32_t x_first = 0, x_end = 0, b, out_y, out_x;
    copied.base = column;
    copied.vector_step = 16u;
    copied.pixel_step = 0u;
    copied.pixels = 1;
    copied.filter_step = 16u;
    copied.tail = vctp8q((uint32_t)(window - 16 * (blocks - 1)));
    in_place.vector_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    in_place.pixel_step = (size_t)p->stride_w * (size_t)in_c;
    in_place.filter_step = row;
    in_place.tail = vctp8q((uint32_t)MCU_MIN(row, 16u));
    if (small_reads_rows(p, blocks)) {
        conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first,
                          &x_end);
    }
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const int inside = wy.first == 0 && wy.end == p->filter_h && x_end > x_first;
            for (out_x = 0; out_x < p->output_w; ++out_x, output += out_c) {
                if (inside && out_x == x_first) {
                    /* The row's inside pixels in one run, read in place. */
                    in_place.base = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, wy.origin,
                                                            x_first * p->stride_w - p->pad_w, 0);
                    in_place.pixels = x_end - x_first;
                    small_pixels(p, &q, &in_place, p->filter_h, 1, filter, output);
                    output += (size_t)(x_end - x_first - 1) * out_c;
                    out_x = x_end - 1;
                    continue;
                }
                small_window_to_column(p, input, b, &wy, out_x, column);
                small_pixels(p, &q, &copied, blocks, 0, filter, output);
            }
        }
    }
}

#else
typedef int mcu_conv_helium_small_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
