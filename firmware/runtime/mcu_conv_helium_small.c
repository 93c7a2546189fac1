/* int8 convolutions of short windows on Helium (Cortex-M55), and the
 * Helium copy of a window into a column that mcu_conv_helium.c uses too.
 *
 * First layers on 1-3 input channels have windows of a few rows of at most
 * 16 values (3x3x3: three rows of 9): those wholly inside the input are read
 * in place a row per vector, so nothing is copied, and each output channel
 * costs only its filter's loads and one VMLADAV a row; the sums of 32
 * channels are then requantized four per vector.  Border windows are copied
 * (predicated vector moves, the padding as the input zero point).  Pixels
 * go one at a time in raster order, each window read before its output is
 * written (WALKS' raster walk).  Nothing here is compiled without MCU_MVE. */
#include "mcu_conv_helium_small.h"

#include "mcu_conv_helium.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_window.h"

#if defined(MCU_MVE)

/* The window of output pixel (b, wy's row, out_x) into `column`, window row
 * after window row, taps in the padding as the input zero point: the values
 * mcu_conv_window_rows_to_column writes. */
void mcu_conv_window_to_column_helium(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                      const mcu_window_axis *wy, int32_t out_x, int8_t *column)
{
    const int32_t in_c = p->input_c, row_bytes = p->filter_w * in_c;
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const int zero_point = -p->input_offset; /* an int8 value */
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
            column_fill(column, zero_point, (size_t)row_bytes);
            continue;
        }
        if (inside < row_bytes) {
            column_fill(column, zero_point, (size_t)row_bytes);
        }
        column_copy(column + before, first + (size_t)mcu_window_input(wy, fy) * input_row, (size_t)inside);
    }
}

/* Output channels requantized after each pass over the filters: the raw
 * sums of this many wait on the stack. */
#define SMALL_CHANNELS 32

/* Requantizes the raw sums of output channels oc .. oc + n - 1 of one pixel
 * (sums[0 .. n - 1]), four per vector. */
MCU_NOINLINE static void small_requant(const mcu_conv_s8_params *p, const mcu_helium_requant *q, const int32_t *sums,
                                       int32_t oc, int32_t n, int8_t *out)
{
    int32_t k;
    for (k = 0; k < n; k += 4, sums += 4) {
        const int32_t c = oc + k;
        const mve_pred16_t lanes = vctp32q((uint32_t)(n - k));
        int32x4_t acc = vaddq_s32(vldrwq_z_s32(sums, lanes), vldrwq_z_s32(p->window_offset_terms + c, lanes));
        if (q->bias) {
            acc = vaddq_s32(acc, vldrwq_z_s32(q->bias + c, lanes));
        }
        mcu_helium_store_pixel(q, acc, vldrwq_z_s32(q->multiplier + c, lanes),
                               mcu_split_shift_x4(vldrwq_z_s32(q->shift + c, lanes)), lanes, out + c);
    }
}

/* Where a pass finds its pixels' windows: `pixels` of them, the first at
 * `base`, each `pixel_step` bytes after the last, `count` vectors each,
 * vector i at i * `vector_step` against the filter bytes at i *
 * `filter_step` -- window rows read in place (`rows`: every vector under
 * `tail`), or a column (16 bytes a vector, the last under `tail`). */
typedef struct {
    const int8_t *base;
    size_t vector_step;
    size_t pixel_step;
    int32_t pixels;
    int32_t count;
    size_t filter_step;
    mve_pred16_t tail;
} small_windows;

/* The lanes vector i of `win` loads. */
static inline MCU_ALWAYS_INLINE mve_pred16_t small_lanes(const small_windows *win, int rows, int32_t i)
{
    return rows || i == win->count - 1 ? win->tail : (mve_pred16_t)0xFFFFu;
}

/* Windows of three rows read in place (3x3 first layers): the three vectors
 * in registers against the filters of SMALL_CHANNELS output channels at a
 * time, per channel only its filter's loads and the VMLADAVs. */
MCU_NOINLINE static void small_three_rows(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                          const small_windows *win, const int8_t *filter, int8_t *out)
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
            const int8x16_t x0 = vldrbq_z_s8(x, tail), x1 = vldrbq_z_s8(x + vs, tail);
            const int8x16_t x2 = vldrbq_z_s8(x + 2 * vs, tail);
            for (k = 0; k < n; ++k, w += window) {
                const int32_t s = vmladavq_s8(x0, vldrbq_z_s8(w, tail));
                sums[k] = vmladavaq_s8(vmladavaq_s8(s, x1, vldrbq_z_s8(w + fs, tail)), x2,
                                       vldrbq_z_s8(w + 2 * fs, tail));
            }
            small_requant(p, q, sums, oc, n, out);
        }
    }
}

/* Any windows of `win` (up to 4 vectors), the vectors loaded for every
 * channel: the border pixels and the layers small_three_rows does not fit. */
MCU_NOINLINE static void small_any(const mcu_conv_s8_params *p, const mcu_helium_requant *q, const small_windows *win,
                                   int rows, const int8_t *filter, int8_t *out)
{
    const int32_t out_c = p->output_c, count = win->count;
    const size_t window = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)p->input_c;
    const int8_t *x = win->base;
    int32_t sums[SMALL_CHANNELS];
    int32_t px, oc, k, i;
    for (px = 0; px < win->pixels; ++px, x += win->pixel_step, out += out_c) {
        const int8_t *w = filter;
        for (oc = 0; oc < out_c; oc += SMALL_CHANNELS) {
            const int32_t n = MCU_MIN(out_c - oc, SMALL_CHANNELS);
            for (k = 0; k < n; ++k, w += window) {
                int32_t s = 0;
                for (i = 0; i < count; ++i) {
                    const mve_pred16_t lanes = small_lanes(win, rows, i);
                    s = vmladavaq_s8(s, vldrbq_z_s8(x + (size_t)i * win->vector_step, lanes),
                                     vldrbq_z_s8(w + (size_t)i * win->filter_step, lanes));
                }
                sums[k] = s;
            }
            small_requant(p, q, sums, oc, n, out);
        }
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

int mcu_conv_2d_s8_small_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *column)
{
    const int32_t in_c = p->input_c, window = p->filter_h * p->filter_w * in_c, blocks = (window + 15) / 16;
    const size_t out_c = (size_t)p->output_c, row = (size_t)p->filter_w * (size_t)in_c;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    small_windows in_place, copied;
    int32_t x_first, x_end, b, out_y, out_x;
    if (window > MCU_CONV_SMALL_WINDOW_MAX || !small_reads_rows(p, blocks)) {
        return 0;
    }
    copied.base = column;
    copied.vector_step = 16u;
    copied.pixel_step = 0u;
    copied.pixels = 1;
    copied.count = blocks;
    copied.filter_step = 16u;
    copied.tail = vctp8q((uint32_t)(window - 16 * (blocks - 1)));
    in_place.vector_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    in_place.pixel_step = (size_t)p->stride_w * (size_t)in_c;
    in_place.count = p->filter_h;
    in_place.filter_step = row;
    in_place.tail = vctp8q((uint32_t)row);
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first, &x_end);
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const int inside = wy.first == 0 && wy.end == p->filter_h && x_end > x_first;
            for (out_x = 0; out_x < p->output_w; ++out_x, output += out_c) {
                if (inside && out_x == x_first) {
                    /* The row's inside pixels in one pass, read in place. */
                    in_place.base = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, wy.origin,
                                                            x_first * p->stride_w - p->pad_w, 0);
                    in_place.pixels = x_end - x_first;
                    if (p->filter_h == 3) {
                        small_three_rows(p, &q, &in_place, filter, output);
                    } else {
                        small_any(p, &q, &in_place, 1, filter, output);
                    }
                    output += (size_t)(x_end - x_first - 1) * out_c;
                    out_x = x_end - 1;
                    continue;
                }
                mcu_conv_window_to_column_helium(p, input, b, &wy, out_x, column);
                small_any(p, &q, &copied, 0, filter, output);
            }
        }
    }
    return 1;
}

#else
typedef int mcu_conv_helium_small_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
