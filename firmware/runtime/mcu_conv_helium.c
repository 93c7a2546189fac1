/* The int8 convolutions on Helium (Cortex-M55): windows of up to
 * MCU_CONV_COLUMN_MAX values copied into four columns, four output pixels
 * per pass (mcu_helium_conv_rows_s8, mcu_conv_helium_rows.c), longer ones in
 * chunks of columns or read in place (mcu_helium_conv_pass_s8).  Nothing here is compiled without MCU_MVE. */
#include "mcu_conv_helium.h"

#include "mcu_conv.h"
#include "mcu_conv_helium_rows.h"
#include "mcu_conv_helium_small.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_window.h"

#if defined(MCU_MVE)

/* A pass of mcu_helium_conv_pass_s8: up to four output pixels of a
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
        mcu_helium_store_channel(&q, mcu_helium_lanes(s[0], s[1], s[2], s[3]), oc, offsets, pixels, out);
    }
}


/* Helium: four output pixels per pass, in output order across rows and
 * images, each window copied into a column. */
void mcu_conv_2d_s8_columns_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, int8_t *column_space)
{
    mcu_helium_rows columns;
    int8_t *first_out = output;
    int32_t b, out_y, out_x;
    if (p->rows != NULL && p->rows->columns != NULL) {
        p->rows->columns(p, input, filter, bias, output, column_space);
        return;
    }
    columns.count = 0;
    columns.n = p->filter_h * p->filter_w * p->input_c;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                int8_t *column = column_space + (size_t)columns.count * (size_t)columns.n;
                mcu_conv_window_to_column_helium(p, input, b, &wy, out_x, column);
                columns.row[columns.count] = column;
                if (++columns.count == MCU_CONV_COLUMNS) {
                    mcu_helium_conv_rows_s8(p, &columns, filter, bias, first_out);
                    first_out += (size_t)p->output_c * (size_t)columns.count;
                    columns.count = 0;
                }
            }
        }
    }
    if (columns.count > 0) {
        mcu_helium_conv_rows_s8(p, &columns, filter, bias, first_out);
    }
}

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
 * inside columns.  Window rows in the padding read `zero_row`
 * (p->column_bytes long); returns 0 without doing anything when the
 * windows reach into the padding rows and that is too short. */
int mcu_conv_2d_s8_long_windows_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                       const int32_t *bias, int8_t *output, int8_t *zero_row)
{
    const size_t zero_bytes = (size_t)p->column_bytes;
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

#else
typedef int mcu_conv_helium_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
