/* int8 first layers (1-4 input channels, windows of at most
 * MCU_CONV_FIRST_VECTORS_MAX vectors of 16 values) on Helium (Cortex-M55),
 * and the Helium copy of a window into a column that mcu_conv_helium.c uses
 * too.
 *
 * Four output pixels per pass: each window is copied into a column of whole
 * vectors (windows inside the input gathered a vector at a time, or row by
 * row by predicated vector moves; border windows with the input zero point
 * in their padding), its lanes past the window 0.  The output channels then go inside the pass: per channel its
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
 * mcu_conv_window_to_column writes. */
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
        mcu_conv_window_to_column(p, input, b, wy, out_x, column);
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
 * and stored at out + oc + offsets[k] for the pixels r.pixels selects (all
 * four when `full`: no predicate). */
static inline MCU_ALWAYS_INLINE void first_store(const first_requant *r, int32x4_t acc, int32_t oc, int full,
                                                 int8_t *out)
{
    int32_t constant = r->terms[oc];
    if (r->bias) {
        constant += r->bias[oc];
    }
    acc = mcu_mul_by_quantized_mul_x4_n(vaddq_n_s32(acc, constant), r->multiplier[oc], r->shift[oc]);
    acc = vaddq_n_s32(acc, r->output_offset);
    acc = vminq_s32(vmaxq_s32(acc, r->act_min), r->act_max);
    if (full) {
        vstrbq_scatter_offset_s32(out + oc, r->offsets, acc);
    } else {
        vstrbq_scatter_offset_p_s32(out + oc, r->offsets, acc, r->pixels);
    }
}

/* Columns past `count` hold older windows (or nothing yet): their sums are
 * never stored. */
static inline MCU_ALWAYS_INLINE void first_pass(const mcu_conv_s8_params *p, const mcu_helium_requant *q,
                                                const int8_t *columns, int32_t count, const int8_t *filter,
                                                int8_t *out, int vectors, int full)
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
    if (vectors == 1) {
        /* The four columns stay in registers. */
        const int8x16_t x0 = vldrbq_s8(columns), x1 = vldrbq_s8(columns + 16);
        const int8x16_t x2 = vldrbq_s8(columns + 32), x3 = vldrbq_s8(columns + 48);
        for (oc = 0; oc < out_c - 1; ++oc, filter += window) {
            const int8x16_t wv = vldrbq_s8(filter);
            first_store(&r,
                        mcu_helium_lanes(vmladavq_s8(x0, wv), vmladavq_s8(x1, wv), vmladavq_s8(x2, wv),
                                         vmladavq_s8(x3, wv)),
                        oc, full, out);
        }
    } else {
        for (oc = 0; oc < out_c - 1; ++oc, filter += window) {
            first_store(&r, first_sums(columns, step, filter, vectors, 0, tail), oc, full, out);
        }
    }
    first_store(&r, first_sums(columns, step, filter, vectors, 1, tail), oc, full, out);
}

#define FIRST_PASS(vectors)                                                                                     \
    MCU_NOINLINE static void first_pass_##vectors(const mcu_conv_s8_params *p, const mcu_helium_requant *q,     \
                                                  const int8_t *columns, int32_t count, const int8_t *filter,   \
                                                  int8_t *out)                                                  \
    {                                                                                                           \
        if ((vectors) == 1 && count == MCU_CONV_COLUMNS) { /* measured: two vectors lose by it */              \
            first_pass(p, q, columns, count, filter, out, vectors, 1);                                          \
        } else {                                                                                                \
            first_pass(p, q, columns, count, filter, out, vectors, 0);                                          \
        }                                                                                                       \
    }                                                                                                           \
    const mcu_conv_first_s8 mcu_conv_first_s8_##vectors = {vectors, first_pass_##vectors};

FIRST_PASS(1)
FIRST_PASS(2)

/* How a pass's driver copies windows of rows of at most 16 values
 * (dilation_w 1) into columns of `vectors` vectors. */
typedef struct {
    int32_t filter_h;
    int32_t row;          /* values per window row */
    size_t row_step;      /* input bytes from one window row to the next */
    mve_pred16_t lanes;   /* the `row` lanes of a window row */
    int8x16_t zero_point; /* the padding's value */
    int8x16_t last;       /* the last vector of a window in the padding: the zero point, 0 past the window */
    size_t last_at;       /* its offset in a column */
    /* Windows inside the input gathered a vector at a time where every
     * vector's taps lie within 255 bytes of its first: vector v's lane i at
     * byte `gather_from[v]` + `gather_at[v][i]` from the window's first. */
    int gather;
    uint8x16_t gather_at[MCU_CONV_FIRST_VECTORS_MAX];
    size_t gather_from[MCU_CONV_FIRST_VECTORS_MAX];
    mve_pred16_t tail; /* the last vector's lanes inside the window */
} first_copy;

/* Sets c->gather and the gathers' offsets for windows of `vectors` vectors
 * (rows of filter_w x in_c values; dilations dy, dx, input rows `input_row`
 * bytes apart). */
static void first_gather_offsets(first_copy *c, const mcu_conv_s8_params *p, int32_t vectors, size_t input_row)
{
    const int32_t in_c = p->input_c, window = p->filter_h * p->filter_w * in_c;
    const size_t row_step = (size_t)p->dilation_h * input_row, tap_step = (size_t)p->dilation_w * (size_t)in_c;
    /* Tap j's offset from the window's first value, walked tap by tap:
     * channel ch of window column fx, window row fy. */
    size_t offset = 0, row_start = 0, tap_start = 0;
    int32_t v, i, j = 0, ch = 0, fx = 0;
    c->gather = 1;
    for (v = 0; v < vectors; ++v) {
        uint8_t at[16];
        const size_t first = offset;
        for (i = 0; i < 16; ++i) {
            if (offset - first > 255u) {
                c->gather = 0;
                return;
            }
            at[i] = (uint8_t)(offset - first);
            if (j + 1 >= window) {
                continue; /* lanes past the window repeat the last tap (never loaded) */
            }
            ++j;
            if (++ch < in_c) {
                ++offset;
            } else if (ch = 0, ++fx < p->filter_w) {
                tap_start += tap_step;
                offset = tap_start;
            } else {
                fx = 0;
                row_start += row_step;
                tap_start = row_start;
                offset = row_start;
            }
        }
        c->gather_at[v] = vldrbq_u8(at);
        c->gather_from[v] = first;
    }
}

/* A window wholly inside the input (`rows`: the first row's first value),
 * into `column`, gathered (`gather`: c->gather) or row by row; lanes past
 * the window 0. */
static inline MCU_ALWAYS_INLINE void first_inside_to_column(const first_copy *c, int gather, const int8_t *rows,
                                                            int8_t *column)
{
    int32_t fy;
    if (gather) {
        size_t v;
        for (v = 0; v < c->last_at / 16u; ++v) {
            vstrbq_s8(column + 16u * v, vldrbq_gather_offset_s8(rows + c->gather_from[v], c->gather_at[v]));
        }
        vstrbq_s8(column + c->last_at, vldrbq_gather_offset_z_s8(rows + c->gather_from[v], c->gather_at[v], c->tail));
        return;
    }
    vstrbq_s8(column + c->last_at, vdupq_n_s8(0));
    for (fy = 0; fy < c->filter_h; ++fy, rows += c->row_step, column += c->row) {
        vstrbq_p_s8(column, vldrbq_z_s8(rows, c->lanes), c->lanes);
    }
}

/* A window reaching into the padding, into `column`: the zero point, then
 * the inside part of each inside window row (`origin`: the offset in
 * `input` of input row wy.origin, column wx.origin of its image, which may
 * lie outside it). */
MCU_NOINLINE static void first_border_to_column(const first_copy *c, const int8_t *input, ptrdiff_t origin,
                                                const mcu_window_axis *wy, const mcu_window_axis *wx, int32_t in_c,
                                                int8_t *column)
{
    const mve_pred16_t inside = vctp8q((uint32_t)((wx->end - wx->first) * in_c));
    const size_t before = (size_t)(wx->first * in_c);
    size_t at;
    int32_t fy;
    for (at = 0; at < c->last_at; at += 16u) {
        vstrbq_s8(column + at, c->zero_point);
    }
    vstrbq_s8(column + c->last_at, c->last);
    if (wx->end <= wx->first) {
        return;
    }
    for (fy = wy->first; fy < wy->end; ++fy) {
        const int8_t *from = input + (origin + (ptrdiff_t)((size_t)fy * c->row_step + before));
        vstrbq_p_s8(column + (size_t)fy * (size_t)c->row + before, vldrbq_z_s8(from, inside), inside);
    }
}

int mcu_conv_2d_s8_first_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns)
{
    const mcu_conv_first_s8 *first = p->first;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const int32_t in_c = p->input_c, row = p->filter_w * in_c, window = p->filter_h * row;
    const size_t column_size = 16u * (size_t)(first != NULL ? first->vectors : 0);
    const size_t out_c = (size_t)p->output_c, input_row = (size_t)p->input_w * (size_t)in_c;
    /* In locals: the column stores could alias p. */
    const int32_t output_w = p->output_w, stride_w = p->stride_w, pad_w = p->pad_w;
    const size_t pixel_step = (size_t)stride_w * (size_t)in_c;
    const int in_place = p->dilation_w == 1 && row <= 16;
    const int32_t vectors = first != NULL ? first->vectors : 0;
    first_copy copy;
    int32_t x_first, x_end, b, out_y, out_x, count = 0;
    if (first == NULL || (size_t)p->column_bytes < MCU_CONV_COLUMNS * column_size || (size_t)window > column_size) {
        return 0;
    }
    copy.filter_h = p->filter_h;
    copy.row = row;
    copy.row_step = (size_t)p->dilation_h * input_row;
    copy.lanes = vctp8q((uint32_t)row);
    copy.zero_point = vdupq_n_s8((int8_t)-p->input_offset);
    copy.last_at = column_size - 16u;
    copy.tail = vctp8q((uint32_t)window - copy.last_at);
    copy.last = vdupq_m_n_s8(vdupq_n_s8(0), (int8_t)-p->input_offset, copy.tail);
    first_gather_offsets(&copy, p, vectors, input_row);
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w, &x_first, &x_end);
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const int rows_inside = wy.first == 0 && wy.end == copy.filter_h;
            /* The offset of input row wy.origin, column 0 of image b
             * (negative above the input: only rows from wy.first on are
             * read). */
            const ptrdiff_t origin =
                (ptrdiff_t)((size_t)b * (size_t)p->input_h * input_row) + (ptrdiff_t)wy.origin * (ptrdiff_t)input_row;
            out_x = 0;
            while (out_x < output_w) {
                const ptrdiff_t at = origin + (ptrdiff_t)(out_x * stride_w - pad_w) * (ptrdiff_t)in_c;
                if ((in_place || copy.gather) && rows_inside && out_x == x_first && x_end > x_first) {
                    /* The row's windows wholly inside the input, one after
                     * the other. */
                    const int8_t *from = input + at;
                    if (copy.gather) {
                        for (; out_x < x_end; ++out_x, from += pixel_step) {
                            first_inside_to_column(&copy, 1, from, columns + (size_t)count * column_size);
                            if (++count == MCU_CONV_COLUMNS) {
                                first->pass(p, &q, columns, count, filter, output);
                                output += (size_t)count * out_c;
                                count = 0;
                            }
                        }
                        continue;
                    }
                    for (; out_x < x_end; ++out_x, from += pixel_step) {
                        first_inside_to_column(&copy, 0, from, columns + (size_t)count * column_size);
                        if (++count == MCU_CONV_COLUMNS) {
                            first->pass(p, &q, columns, count, filter, output);
                            output += (size_t)count * out_c;
                            count = 0;
                        }
                    }
                    continue;
                }
                if (in_place) {
                    const mcu_window_axis wx =
                        mcu_window_axis_at(out_x, stride_w, pad_w, p->dilation_w, p->filter_w, p->input_w);
                    first_border_to_column(&copy, input, at, &wy, &wx, in_c, columns + (size_t)count * column_size);
                } else {
                    vstrbq_s8(columns + (size_t)count * column_size + copy.last_at, vdupq_n_s8(0));
                    mcu_conv_window_to_column_helium(p, input, b, &wy, out_x, columns + (size_t)count * column_size);
                }
                if (++count == MCU_CONV_COLUMNS) {
                    first->pass(p, &q, columns, count, filter, output);
                    output += (size_t)count * out_c;
                    count = 0;
                }
                ++out_x;
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
