/* int8 first layers (1-4 input channels, windows of at most
 * MCU_CONV_FIRST_VECTORS_MAX vectors of 16 values) on Helium (Cortex-M55),
 * and the Helium copy of a window into a column that mcu_conv_helium.c uses
 * too.
 *
 * Four output pixels per pass: each window is copied into a column of whole
 * vectors (window rows read in place by predicated vector moves, border
 * windows with the input zero point in their padding), its lanes past the
 * window 0.  The output channels then go inside the pass: per channel its
 * filter's vectors are loaded once for the four columns, and the four sums
 * are requantized together, one lane per pixel, with that channel's
 * multiplier and shift as scalars.  A filter vector may reach into the next
 * filter: the columns' zero lanes cancel it; only the last channel's last
 * vector is loaded under the window's tail, so nothing past the filters is
 * read.  The window offset terms (mcu_planner/lowering/conv.py) carry the
 * input offset, so the columns hold the raw input values.
 *
 * The generator names the pass compiled for the layer's number of vectors
 * in p->first (MCU_CONV_FIRST_S8, conv.py helium_first_variant), so that a
 * firmware links only the passes its layers run.  Pixels go in raster order,
 * four at a time, each group's windows read before its outputs are written
 * (WALKS' RasterOrder(4)).  Nothing here is compiled without MCU_MVE. */
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

/* A pass over `count` (1 to 4) columns of `vectors` x 16 bytes each at
 * `columns`, against every filter (filter: the first). */
typedef void first_pass_fn(const mcu_conv_s8_params *p, const mcu_helium_requant *q, const int8_t *columns,
                           int32_t count, const int8_t *filter, int8_t *out);

struct mcu_conv_first_s8 {
    int32_t vectors;
    first_pass_fn *pass;
};

/* The four pixels' sums of one output channel, a lane each: columns at x,
 * x + step, x + 2 step, x + 3 step (`vectors` vectors each), the filter's
 * vectors at w; with `last` the last vector under `tail`. */
static inline MCU_ALWAYS_INLINE int32x4_t first_sums(const int8_t *x, size_t step, const int8_t *w, int vectors,
                                                     int last, mve_pred16_t tail)
{
    int32_t s0, s1, s2, s3;
    int8x16_t wv;
    int i;
    if (vectors > 1) {
        /* Opaque to the compiler, so that it reads the columns at immediate
         * offsets from one register instead of hoisting (and spilling) an
         * address per vector; one vector per column stays in registers. */
        __asm__ volatile("" : "+r"(x));
    }
    wv = last && vectors == 1 ? vldrbq_z_s8(w, tail) : vldrbq_s8(w);
    s0 = vmladavq_s8(vldrbq_s8(x), wv);
    s1 = vmladavq_s8(vldrbq_s8(x + step), wv);
    s2 = vmladavq_s8(vldrbq_s8(x + 2 * step), wv);
    s3 = vmladavq_s8(vldrbq_s8(x + 3 * step), wv);
#pragma GCC unroll 4
    for (i = 1; i < vectors; ++i) {
        wv = last && i == vectors - 1 ? vldrbq_z_s8(w + 16 * i, tail) : vldrbq_s8(w + 16 * i);
        s0 = vmladavaq_s8(s0, vldrbq_s8(x + 16 * i), wv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(x + step + 16 * i), wv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(x + 2 * step + 16 * i), wv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(x + 3 * step + 16 * i), wv);
    }
    return mcu_helium_lanes(s0, s1, s2, s3);
}

/* What a pass reads per output channel, in locals: the int8 stores could
 * alias the parameters, which the compiler would then reload per channel. */
typedef struct {
    const int32_t *terms;
    const int32_t *bias;
    const int32_t *multiplier;
    const int32_t *shift;
    int32_t output_offset;
    int32x4_t act_min;
    int32x4_t act_max;
    uint32x4_t offsets;
    mve_pred16_t pixels;
} first_requant;

/* Channel oc's four sums (`acc`) with its offset term and bias, requantized
 * and stored at out + oc + offsets[k] for the pixels r.pixels selects. */
static inline MCU_ALWAYS_INLINE void first_store(const first_requant *r, int32x4_t acc, int32_t oc, int8_t *out)
{
    int32_t constant = r->terms[oc];
    if (r->bias) {
        constant += r->bias[oc];
    }
    acc = mcu_mul_by_quantized_mul_x4_n(vaddq_n_s32(acc, constant), r->multiplier[oc], r->shift[oc]);
    acc = vaddq_n_s32(acc, r->output_offset);
    vstrbq_scatter_offset_p_s32(out + oc, r->offsets, vminq_s32(vmaxq_s32(acc, r->act_min), r->act_max), r->pixels);
}

/* Columns past `count` hold older windows (or nothing yet): their sums are
 * never stored. */
static inline MCU_ALWAYS_INLINE void first_pass(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                                const int8_t *columns, int32_t count, const int8_t *filter,
                                                int8_t *out, int vectors)
{
    const int32_t out_c = p->output_c;
    const size_t window = (size_t)p->filter_h * (size_t)p->filter_w * (size_t)p->input_c;
    const size_t step = 16u * (size_t)vectors;
    const mve_pred16_t tail = vctp8q((uint32_t)(window - 16u * (size_t)(vectors - 1)));
    first_requant r;
    int32_t oc;
    r.terms = p->window_offset_terms;
    r.bias = q->bias;
    r.multiplier = q->multiplier;
    r.shift = q->shift;
    r.output_offset = q->output_offset;
    r.act_min = q->act_min;
    r.act_max = q->act_max;
    r.offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c);
    r.pixels = vctp32q((uint32_t)count);
    /* Every channel but the last reads whole vectors: past its window they
     * meet the columns' zero lanes. */
    for (oc = 0; oc < out_c - 1; ++oc, filter += window) {
        first_store(&r, first_sums(columns, step, filter, vectors, 0, tail), oc, out);
    }
    first_store(&r, first_sums(columns, step, filter, vectors, 1, tail), oc, out);
}

#define FIRST_PASS(vectors)                                                                                     \
    MCU_NOINLINE static void first_pass_##vectors(const mcu_conv_s8_params *p, const mcu_helium_requant *q,     \
                                                  const int8_t *columns, int32_t count, const int8_t *filter,   \
                                                  int8_t *out)                                                  \
    {                                                                                                           \
        first_pass(p, q, columns, count, filter, out, vectors);                                                 \
    }                                                                                                           \
    const mcu_conv_first_s8 mcu_conv_first_s8_##vectors = {vectors, first_pass_##vectors};

FIRST_PASS(1)
FIRST_PASS(2)

/* The window of an output pixel whose window rows lie inside the input
 * (`rows`: the first row's first value), each of `row` <= 16 values,
 * `row_step` bytes apart, copied into `column`. */
static inline MCU_ALWAYS_INLINE void first_rows_to_column(const int8_t *rows, size_t row_step, int32_t filter_h,
                                                          int32_t row, mve_pred16_t lanes, int8_t *column)
{
    int32_t fy;
    for (fy = 0; fy < filter_h; ++fy, rows += row_step, column += row) {
        vstrbq_p_s8(column, vldrbq_z_s8(rows, lanes), lanes);
    }
}

int mcu_conv_2d_s8_first_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns)
{
    const mcu_conv_first_s8 *first = p->first;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const int32_t in_c = p->input_c, row = p->filter_w * in_c;
    const size_t column_size = 16u * (size_t)(first != NULL ? first->vectors : 0);
    const size_t out_c = (size_t)p->output_c, row_step = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)in_c;
    const size_t pixel_step = (size_t)p->stride_w * (size_t)in_c;
    const mve_pred16_t row_lanes = vctp8q((uint32_t)row);
    const int8x16_t zero = vdupq_n_s8(0);
    const int32_t filter_h = p->filter_h, output_w = p->output_w; /* the column stores could alias p */
    const int in_place = p->dilation_w == 1 && row <= 16;
    int32_t x_first, x_end, b, out_y, out_x, count = 0;
    if (first == NULL || (size_t)p->column_bytes < MCU_CONV_COLUMNS * column_size ||
        (size_t)p->filter_h * (size_t)row > column_size) {
        return 0;
    }
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first, &x_end);
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const int rows_inside = in_place && wy.first == 0 && wy.end == filter_h;
            /* The window rows of pixel x_first, then each next one's. */
            const int8_t *at = input + (rows_inside && x_end > x_first
                                            ? mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, wy.origin,
                                                              x_first * p->stride_w - p->pad_w, 0)
                                            : 0u);
            for (out_x = 0; out_x < output_w; ++out_x) {
                int8_t *column = columns + (size_t)count * column_size;
                /* Lanes past the window stay 0 (the rows below never reach them). */
                vstrbq_s8(column + column_size - 16u, zero);
                if (rows_inside && out_x >= x_first && out_x < x_end) {
                    first_rows_to_column(at, row_step, filter_h, row, row_lanes, column);
                    at += pixel_step;
                } else {
                    mcu_conv_window_to_column_helium(p, input, b, &wy, out_x, column);
                }
                if (++count == MCU_CONV_COLUMNS) {
                    first->pass(p, &q, columns, count, filter, output);
                    output += (size_t)count * out_c;
                    count = 0;
                }
            }
        }
    }
    if (count > 0) {
        first->pass(p, &q, columns, count, filter, output);
    }
    return 1;
}

#else
typedef int mcu_conv_helium_small_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
