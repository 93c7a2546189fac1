/* int8 3 x 3 depthwise convolutions (depth multiplier 1 or a multiple of 4,
 * no dilation) on cores with the DSP extension but without Helium, four
 * channels at a time (with a multiple of 4 they share each input value:
 * SMLABB / SMLABT against the filter pairs, as person_detect's first layer),
 * each group's filter and rescales prepared once for the whole output: the
 * pixels whose windows lie inside the input in runs along the rows, nine
 * taps in straight-line code without the input offset (the window offset
 * terms hold it), the border pixels over their inside taps with the offset
 * added per tap (SXTAB16).
 *
 * Per tap one word of input (four channels), split by SXTB16 into the even
 * and odd channel pairs, and SMLABB / SMLATT against the filter's pairs,
 * sign-extended once into a table on the stack.  The filter is doubled there
 * (SADD16), so that the sums come out doubled, 2 * acc: the rescale's first
 * rounding, TFLite's SaturatingRoundingDoublingHighMul(acc, m) =
 * floor((acc * m + 2^30) / 2^31), is then floor((2 * acc * m + 2^31) / 2^32),
 * one SMMLAR.  Its second, RoundingDivideByPOT(t, e) (ties away from zero),
 * is floor((t - [t < 0] + 2^(e-1)) / 2^e) (mcu_rounding_divide_by_pot_bounded),
 * and adding output_offset * 2^e before the shift adds the output zero point
 * after it; SMMLAR adds those terms with the product.  The equalities need
 * 2 * acc, and t - 1 + 2^(e-1) + output_offset * 2^e, inside int32: a
 * convolution takes this path only when every channel's |bias| and
 * |bias + offset terms| are at most 2^29 (a window's products add less than
 * 9 * 255 * 128 < 2^19), its multipliers are >= 0 and its right shifts e are
 * 1 to 22 (|output_offset| * 2^e <= 2^29), and its channels come in groups
 * of four; otherwise it keeps the general loops (mcu_depthwise.c). */
#include "mcu_depthwise_3x3_dsp.h"

#include <stddef.h>

#if defined(MCU_DSP) && !defined(MCU_MVE)

#define DEPTHWISE_3X3_BIAS_MAX (1 << 29)
#define DEPTHWISE_3X3_SHIFT_MAX 22

/* A channel's rescale: its multiplier, the rounding and zero-point term and
 * the shift, side by side for one LDRD and one LDR. */
typedef struct {
    int32_t multiplier;
    int32_t round;
    int32_t shift;
} depthwise_3x3_rescale;

/* One group of four channels, prepared: the doubled filter pairs tap by tap
 * (even channels, odd channels), per channel the doubled start of the sums
 * of windows inside the input (bias and offset terms) and of those at the
 * border (bias alone: they add the offset per tap), and its rescale. */
typedef struct {
    int32_t filter[18];
    int32_t start[4];
    int32_t border_start[4];
    depthwise_3x3_rescale rescale[4];
} depthwise_3x3_group;

static int depthwise_3x3_bounded(int64_t start)
{
    return start <= DEPTHWISE_3X3_BIAS_MAX && start >= -DEPTHWISE_3X3_BIAS_MAX;
}

static int depthwise_3x3_channel_fits(const mcu_conv_s8_params *p, const int32_t *bias, int32_t c)
{
    const int32_t e = -p->output_shift[c];
    const int64_t b = bias ? bias[c] : 0;
    return p->output_multiplier[c] >= 0 && e >= 1 && e <= DEPTHWISE_3X3_SHIFT_MAX && depthwise_3x3_bounded(b) &&
           depthwise_3x3_bounded(b + (int64_t)p->window_offset_terms[c]);
}

static void depthwise_3x3_prepare(const mcu_conv_s8_params *p, const int8_t *filter, const int32_t *bias, int32_t oc,
                                  depthwise_3x3_group *g)
{
    const size_t out_c = (size_t)p->output_c;
    int32_t t, c;
    for (t = 0; t < 9; ++t) {
        const uint32_t word = mcu_load_s8x4(filter + (size_t)t * out_c + (size_t)oc);
        const int32_t even = mcu_s8x4_even(word), odd = mcu_s8x4_odd(word);
        g->filter[2 * t] = (int32_t)__sadd16(even, even);
        g->filter[2 * t + 1] = (int32_t)__sadd16(odd, odd);
    }
    for (c = 0; c < 4; ++c) {
        const int32_t e = -p->output_shift[oc + c], b = bias ? bias[oc + c] : 0;
        g->start[c] = 2 * (b + p->window_offset_terms[oc + c]);
        g->border_start[c] = 2 * b;
        g->rescale[c].multiplier = p->output_multiplier[oc + c];
        g->rescale[c].round = (int32_t)((uint32_t)1 << (e - 1)) + p->output_offset * ((int32_t)1 << e);
        g->rescale[c].shift = e;
    }
}

/* The two words at `base` + `offset` bytes (a constant) in one LDRD: gcc
 * leaves two LDRs for them otherwise.  No memory operand: every table it
 * reads (depthwise_3x3_group) is written before the functions that read it
 * are called, and a memory operand would make gcc keep each address in a
 * register. */
#define DEPTHWISE_3X3_LOAD_PAIR(base, offset, first, second)                                                          \
    __asm__("ldrd %0, %1, [%2, #%c3]" : "=r"(first), "=r"(second) : "r"(base), "n"(offset))

/* The same at a pointer. */
static inline MCU_ALWAYS_INLINE void load_pair(const int32_t *from, int32_t *first, int32_t *second)
{
    int32_t a, b;
    DEPTHWISE_3X3_LOAD_PAIR(from, 0, a, b);
    *first = a;
    *second = b;
}

/* The doubled sum rescaled, the zero point added, clamped (`full`: the
 * range is all of int8, one SSAT).  TFLite's t = SRDHM(acc, m) is negative
 * only when acc is, and for a negative acc with t = 0 subtracting 1 before
 * the shift leaves 0 (e >= 1): so acc's sign gives the tie correction. */
static inline MCU_ALWAYS_INLINE int8_t depthwise_3x3_requantize(int32_t acc2, int32_t multiplier, int32_t round,
                                                               int32_t shift, int full, int32_t act_min,
                                                               int32_t act_max)
{
    int32_t v = mcu_smmlar(acc2, multiplier, round + (acc2 >> 31)) >> shift;
    if (full) {
        return (int8_t)mcu_ssat8(v);
    }
    v = v < act_min ? act_min : v;
    return (int8_t)(v > act_max ? act_max : v);
}

/* Channel c's (a constant) rescale of group g applied to acc2. */
#define DEPTHWISE_3X3_REQUANTIZE(g, c, acc2, full, act_min, act_max, out)                                            \
    do {                                                                                                             \
        int32_t multiplier_, round_;                                                                                 \
        DEPTHWISE_3X3_LOAD_PAIR(g, offsetof(depthwise_3x3_group, rescale) + (c) * sizeof(depthwise_3x3_rescale),     \
                                multiplier_, round_);                                                                \
        (out) = depthwise_3x3_requantize(acc2, multiplier_, round_, (g)->rescale[c].shift, full, act_min, act_max);  \
    } while (0)

static inline MCU_ALWAYS_INLINE void depthwise_3x3_store(const depthwise_3x3_group *g, int32_t a0, int32_t a1,
                                                         int32_t a2, int32_t a3, int8_t *out, int full,
                                                         int32_t act_min, int32_t act_max)
{
    int8_t o0, o1, o2, o3;
    DEPTHWISE_3X3_REQUANTIZE(g, 0, a0, full, act_min, act_max, o0);
    DEPTHWISE_3X3_REQUANTIZE(g, 1, a1, full, act_min, act_max, o1);
    DEPTHWISE_3X3_REQUANTIZE(g, 2, a2, full, act_min, act_max, o2);
    DEPTHWISE_3X3_REQUANTIZE(g, 3, a3, full, act_min, act_max, o3);
    out[0] = o0;
    out[1] = o1;
    out[2] = o2;
    out[3] = o3;
}

/* Tap `t` (a constant) of the window at x. */
#define DEPTHWISE_3X3_TAP(x, g, t, a0, a1, a2, a3)                                                                   \
    do {                                                                                                             \
        const uint32_t xv_ = mcu_load_s8x4(x);                                                                       \
        const int32_t x_even_ = mcu_s8x4_even(xv_), x_odd_ = mcu_s8x4_odd(xv_);                                      \
        int32_t w_even_, w_odd_;                                                                                     \
        DEPTHWISE_3X3_LOAD_PAIR((g)->filter, 8 * (t), w_even_, w_odd_);                                              \
        (a0) = __smlabb(x_even_, w_even_, (a0));                                                                     \
        (a2) = __smlatt(x_even_, w_even_, (a2));                                                                     \
        (a1) = __smlabb(x_odd_, w_odd_, (a1));                                                                       \
        (a3) = __smlatt(x_odd_, w_odd_, (a3));                                                                       \
    } while (0)

/* Tap `t` for four channels that share one input value (a depth multiplier
 * divisible by 4): the value times the low and high halves of the filter
 * pairs. */
#define DEPTHWISE_3X3_SHARED_TAP(x, g, t, a0, a1, a2, a3)                                                            \
    do {                                                                                                             \
        const int32_t v_ = *(x);                                                                                     \
        int32_t w_even_, w_odd_;                                                                                     \
        DEPTHWISE_3X3_LOAD_PAIR((g)->filter, 8 * (t), w_even_, w_odd_);                                              \
        (a0) = __smlabb(v_, w_even_, (a0));                                                                          \
        (a2) = __smlabt(v_, w_even_, (a2));                                                                          \
        (a1) = __smlabb(v_, w_odd_, (a1));                                                                           \
        (a3) = __smlabt(v_, w_odd_, (a3));                                                                           \
    } while (0)

/* One tap of either kind (`shared`: a constant). */
#define DEPTHWISE_3X3_ANY_TAP(shared, x, g, t, a0, a1, a2, a3)                                                       \
    do {                                                                                                             \
        if (shared) {                                                                                                \
            DEPTHWISE_3X3_SHARED_TAP(x, g, t, a0, a1, a2, a3);                                                       \
        } else {                                                                                                     \
            DEPTHWISE_3X3_TAP(x, g, t, a0, a1, a2, a3);                                                              \
        }                                                                                                            \
    } while (0)

/* A rectangle of output pixels whose windows lie inside the input, for one
 * channel group: `rows` rows of `pixels`; x is the first pixel's window
 * origin (at the group's input channel), `step` bytes on to the next
 * pixel's, `x_rows` to the next row's first; `row` and `tap` bytes between
 * window rows and columns; out_c bytes between output pixels, `out_rows`
 * between output rows. */
typedef struct {
    const int8_t *x;
    int8_t *out;
    size_t step;
    size_t x_rows;
    size_t row;
    size_t tap;
    size_t out_c;
    size_t out_rows;
    int32_t pixels;
    int32_t rows;
} depthwise_3x3_rect;

static inline MCU_ALWAYS_INLINE void depthwise_3x3_rect_body(const depthwise_3x3_group *g,
                                                             const depthwise_3x3_rect *rect, int full,
                                                             int32_t act_min, int32_t act_max, int shared)
{
    const int8_t *x_row = rect->x;
    int8_t *out_row = rect->out;
    int32_t rows;
    for (rows = rect->rows; rows > 0; --rows, x_row += rect->x_rows, out_row += rect->out_rows) {
        const size_t step = rect->step, row = rect->row, tap = rect->tap, out_c = rect->out_c;
        const int8_t *x = x_row;
        int8_t *out = out_row;
        int32_t pixels;
        for (pixels = rect->pixels; pixels > 0; --pixels, x += step, out += out_c) {
            int32_t a0 = g->start[0], a1 = g->start[1], a2 = g->start[2], a3 = g->start[3];
            const int8_t *r = x;
            DEPTHWISE_3X3_ANY_TAP(shared, r, g, 0, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + tap, g, 1, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + 2 * tap, g, 2, a0, a1, a2, a3);
            r += row;
            DEPTHWISE_3X3_ANY_TAP(shared, r, g, 3, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + tap, g, 4, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + 2 * tap, g, 5, a0, a1, a2, a3);
            r += row;
            DEPTHWISE_3X3_ANY_TAP(shared, r, g, 6, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + tap, g, 7, a0, a1, a2, a3);
            DEPTHWISE_3X3_ANY_TAP(shared, r + 2 * tap, g, 8, a0, a1, a2, a3);
            depthwise_3x3_store(g, a0, a1, a2, a3, out, full, act_min, act_max);
        }
    }
}

MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_rect_full(const depthwise_3x3_group *g,
                                                                  const depthwise_3x3_rect *rect)
{
    depthwise_3x3_rect_body(g, rect, 1, -128, 127, 0);
}

MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_rect_clamped(const depthwise_3x3_group *g,
                                                                     const depthwise_3x3_rect *rect,
                                                                     int32_t act_min, int32_t act_max)
{
    depthwise_3x3_rect_body(g, rect, 0, act_min, act_max, 0);
}

/* Both for four channels sharing each input value (`full` a variable). */
MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_rect_shared(const depthwise_3x3_group *g,
                                                                    const depthwise_3x3_rect *rect,
                                                                    int32_t act_min, int32_t act_max)
{
    depthwise_3x3_rect_body(g, rect, act_min == -128 && act_max == 127, act_min, act_max, 1);
}

/* Output rows y .. y + rows - 1 of batch b (at[0], at[1]; out_row: row y's
 * first pixel, channel oc) over the columns inside (inside[0] ..
 * inside[1] - 1), rows whose windows lie inside the input vertically. */
static void depthwise_3x3_inside(const mcu_conv_s8_params *p, const depthwise_3x3_group *g, const int8_t *input,
                                 int32_t oc, const int32_t at[2], int32_t rows, const int32_t inside[4],
                                 int8_t *out_row)
{
    const size_t tap = (size_t)p->input_c;
    depthwise_3x3_rect rect;
    rect.x = input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, at[0], at[1] * p->stride_h - p->pad_h,
                                     inside[0] * p->stride_w - p->pad_w, oc / p->filter_in_c_or_multiplier);
    rect.out = out_row + (size_t)inside[0] * (size_t)p->output_c;
    rect.step = (size_t)p->stride_w * tap;
    rect.row = (size_t)p->input_w * tap;
    rect.x_rows = (size_t)p->stride_h * rect.row;
    rect.tap = tap;
    rect.out_c = (size_t)p->output_c;
    rect.out_rows = (size_t)p->output_w * rect.out_c;
    rect.pixels = inside[1] - inside[0];
    rect.rows = rows;
    if (p->filter_in_c_or_multiplier != 1) {
        depthwise_3x3_rect_shared(g, &rect, p->act_min, p->act_max);
    } else if (p->act_min == -128 && p->act_max == 127) {
        depthwise_3x3_rect_full(g, &rect);
    } else {
        depthwise_3x3_rect_clamped(g, &rect, p->act_min, p->act_max);
    }
}

/* The taps inside the input along one axis of a window whose origin is
 * `origin` in an input of `size`: [*first, *end) of 0 .. 2 (empty when
 * *end <= *first). */
static inline MCU_ALWAYS_INLINE void depthwise_3x3_taps_inside(int32_t origin, int32_t size, int32_t *first,
                                                               int32_t *end)
{
    *first = origin < 0 ? -origin : 0;
    *end = size - origin < 3 ? size - origin : 3;
}

/* Pixels whose windows reach into the padding, with the same taps inside
 * the input: `rows` rows of `cols` taps from filter tap `first_tap`
 * (3 * row + column); x is the first pixel's first such tap (channel oc),
 * `step` bytes on to the next pixel's, `out_step` between their outputs. */
typedef struct {
    const int8_t *x;
    size_t step;
    int32_t pixels;
    int32_t rows;
    int32_t first_tap;
    int8_t *out;
    size_t out_step;
} depthwise_3x3_border_run;

static inline MCU_ALWAYS_INLINE void depthwise_3x3_offset_tap(const int8_t *x, const int32_t *w, int32_t offset2,
                                                              int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3)
{
    const uint32_t xv = mcu_load_s8x4(x);
    const int32_t x_even = mcu_s8x4_even_plus(xv, offset2), x_odd = mcu_s8x4_odd_plus(xv, offset2);
    int32_t w_even, w_odd;
    load_pair(w, &w_even, &w_odd);
    *a0 = __smlabb(x_even, w_even, *a0);
    *a2 = __smlatt(x_even, w_even, *a2);
    *a1 = __smlabb(x_odd, w_odd, *a1);
    *a3 = __smlatt(x_odd, w_odd, *a3);
}

/* A border run of `cols` (a constant: 1 to 3) taps a row: the sums start
 * from the doubled bias and add the input offset per tap (SXTAB16). */
static inline MCU_ALWAYS_INLINE void depthwise_3x3_border_body(const mcu_conv_s8_params *p,
                                                               const depthwise_3x3_group *g,
                                                               const depthwise_3x3_border_run *run, int32_t cols)
{
    const int32_t offset2 = mcu_s16x2_splat(p->input_offset), act_min = p->act_min, act_max = p->act_max;
    const size_t tap = (size_t)p->input_c, row = (size_t)p->input_w * tap;
    const int full = act_min == -128 && act_max == 127;
    const int8_t *x = run->x;
    int8_t *out = run->out;
    int32_t pixels;
    for (pixels = run->pixels; pixels > 0; --pixels, x += run->step, out += run->out_step) {
        int32_t a0 = g->border_start[0], a1 = g->border_start[1], a2 = g->border_start[2], a3 = g->border_start[3];
        const int8_t *xr = x;
        const int32_t *w = &g->filter[2 * run->first_tap];
        int32_t r;
        for (r = run->rows; r > 0; --r, xr += row, w += 6) {
            depthwise_3x3_offset_tap(xr, w, offset2, &a0, &a1, &a2, &a3);
            if (cols > 1) {
                depthwise_3x3_offset_tap(xr + tap, w + 2, offset2, &a0, &a1, &a2, &a3);
            }
            if (cols > 2) {
                depthwise_3x3_offset_tap(xr + 2 * tap, w + 4, offset2, &a0, &a1, &a2, &a3);
            }
        }
        if (full) {
            depthwise_3x3_store(g, a0, a1, a2, a3, out, 1, -128, 127);
        } else {
            depthwise_3x3_store(g, a0, a1, a2, a3, out, 0, act_min, act_max);
        }
    }
}

MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_border_1(const mcu_conv_s8_params *p,
                                                                 const depthwise_3x3_group *g,
                                                                 const depthwise_3x3_border_run *run)
{
    depthwise_3x3_border_body(p, g, run, 1);
}

MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_border_2(const mcu_conv_s8_params *p,
                                                                 const depthwise_3x3_group *g,
                                                                 const depthwise_3x3_border_run *run)
{
    depthwise_3x3_border_body(p, g, run, 2);
}

MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_border_3(const mcu_conv_s8_params *p,
                                                                 const depthwise_3x3_group *g,
                                                                 const depthwise_3x3_border_run *run)
{
    depthwise_3x3_border_body(p, g, run, 3);
}

/* A border run of four channels sharing each input value (a depth
 * multiplier divisible by 4), `cols` taps a row. */
MCU_NOINLINE MCU_SOURCE_ORDER static void depthwise_3x3_border_shared(const mcu_conv_s8_params *p,
                                                                      const depthwise_3x3_group *g,
                                                                      const depthwise_3x3_border_run *run,
                                                                      int32_t cols)
{
    const int32_t offset = p->input_offset, act_min = p->act_min, act_max = p->act_max;
    const size_t tap = (size_t)p->input_c, row = (size_t)p->input_w * tap;
    const int8_t *x = run->x;
    int8_t *out = run->out;
    int32_t pixels;
    for (pixels = run->pixels; pixels > 0; --pixels, x += run->step, out += run->out_step) {
        int32_t a0 = g->border_start[0], a1 = g->border_start[1], a2 = g->border_start[2], a3 = g->border_start[3];
        const int8_t *xr = x;
        const int32_t *w_row = &g->filter[2 * run->first_tap];
        int32_t r, k;
        for (r = run->rows; r > 0; --r, xr += row, w_row += 6) {
            const int8_t *xk = xr;
            const int32_t *w = w_row;
            for (k = cols; k > 0; --k, xk += tap, w += 2) {
                const int32_t v = *xk + offset;
                int32_t w_even, w_odd;
                load_pair(w, &w_even, &w_odd);
                a0 = __smlabb(v, w_even, a0);
                a2 = __smlabt(v, w_even, a2);
                a1 = __smlabb(v, w_odd, a1);
                a3 = __smlabt(v, w_odd, a3);
            }
        }
        depthwise_3x3_store(g, a0, a1, a2, a3, out, 0, act_min, act_max);
    }
}

/* A border run through the body for its `cols` taps a row (none: any). */
static void depthwise_3x3_border(const mcu_conv_s8_params *p, const depthwise_3x3_group *g,
                                 const depthwise_3x3_border_run *run, int32_t cols)
{
    if (p->filter_in_c_or_multiplier != 1) {
        depthwise_3x3_border_shared(p, g, run, run->rows > 0 ? cols : 0);
        return;
    }
    switch (run->rows > 0 ? cols : 1) {
    case 1:
        depthwise_3x3_border_1(p, g, run);
        break;
    case 2:
        depthwise_3x3_border_2(p, g, run);
        break;
    default:
        depthwise_3x3_border_3(p, g, run);
        break;
    }
}

/* Output pixels x_first .. x_end - 1 of row (b, y) = (at[0], at[1]), whose
 * windows have the same taps inside the input (rows r_first .. r_end - 1 of
 * the window given in at[3], at[4]), as one border run; channels
 * oc .. oc + 3 of group g. */
static void depthwise_3x3_border_pixels(const mcu_conv_s8_params *p, const depthwise_3x3_group *g,
                                        const int8_t *input, int32_t oc, const int32_t at[5], int32_t x_first,
                                        int32_t x_end, int8_t *out_row)
{
    const int32_t oy = at[1] * p->stride_h - p->pad_h, ox = x_first * p->stride_w - p->pad_w;
    int32_t k_first, k_end;
    depthwise_3x3_border_run run;
    depthwise_3x3_taps_inside(ox, p->input_w, &k_first, &k_end);
    run.step = (size_t)p->stride_w * (size_t)p->input_c;
    run.pixels = x_end - x_first;
    run.out = out_row + (size_t)x_first * (size_t)p->output_c;
    run.out_step = (size_t)p->output_c;
    run.rows = at[4] > at[3] && k_end > k_first ? at[4] - at[3] : 0;
    run.first_tap = 3 * at[3] + k_first;
    run.x = run.rows > 0 ? input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, at[0], oy + at[3],
                                                   ox + k_first, oc / p->filter_in_c_or_multiplier)
                         : input;
    depthwise_3x3_border(p, g, &run, k_end - k_first);
}

/* Border column x = at[2] down the output rows whose windows lie inside the
 * input vertically (inside[2] .. inside[3] - 1), as one border run. */
static void depthwise_3x3_border_column(const mcu_conv_s8_params *p, const depthwise_3x3_group *g,
                                        const int8_t *input, int32_t oc, const int32_t at[3],
                                        const int32_t inside[4], int8_t *output)
{
    const int32_t oy = inside[2] * p->stride_h - p->pad_h, ox = at[2] * p->stride_w - p->pad_w;
    int32_t k_first, k_end;
    depthwise_3x3_border_run run;
    depthwise_3x3_taps_inside(ox, p->input_w, &k_first, &k_end);
    run.step = (size_t)p->stride_h * (size_t)p->input_w * (size_t)p->input_c;
    run.pixels = inside[3] - inside[2];
    run.out = output + mcu_nhwc_offset(p->output_h, p->output_w, p->output_c, at[0], inside[2], at[2], oc);
    run.out_step = (size_t)p->output_w * (size_t)p->output_c;
    run.rows = k_end > k_first ? 3 : 0;
    run.first_tap = k_first;
    run.x = run.rows > 0 ? input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, at[0], oy, ox + k_first,
                                                   oc / p->filter_in_c_or_multiplier)
                         : input;
    depthwise_3x3_border(p, g, &run, k_end - k_first);
}

/* Output row (b, y) = (at[0], at[1]) of channels oc .. oc + 3 in raster
 * order: the pixels left of the columns inside, one by one (their taps
 * differ), those columns in one run (inside the input, or one border run
 * in a border row), the pixels right of them one by one -- in a row inside
 * the input vertically only with `sides` (else depthwise_3x3_border_column
 * takes them). */
static void depthwise_3x3_output_row(const mcu_conv_s8_params *p, const depthwise_3x3_group *g, const int8_t *input,
                                     int32_t oc, const int32_t at[2], const int32_t inside[4], int sides,
                                     int8_t *out)
{
    const int32_t oy = at[1] * p->stride_h - p->pad_h, x_first = inside[0], x_end = inside[1];
    const int inside_row = at[1] >= inside[2] && at[1] < inside[3];
    int32_t row[5], x;
    row[0] = at[0];
    row[1] = at[1];
    depthwise_3x3_taps_inside(oy, p->input_h, &row[3], &row[4]);
    for (x = 0; x < x_first && (sides || !inside_row); ++x) {
        depthwise_3x3_border_pixels(p, g, input, oc, row, x, x + 1, out);
    }
    if (x_end > x_first && inside_row) {
        depthwise_3x3_inside(p, g, input, oc, at, 1, inside, out);
    } else if (x_end > x_first) {
        depthwise_3x3_border_pixels(p, g, input, oc, row, x_first, x_end, out);
    }
    for (x = MCU_MAX(x_end, x_first); x < p->output_w && (sides || !inside_row); ++x) {
        depthwise_3x3_border_pixels(p, g, input, oc, row, x, x + 1, out);
    }
}

/* Whether the output may be written channel group by channel group, each
 * group's pixels in raster order, under raster_walk: when it does not
 * overlap the input, or starts a whole number of pixels from it.  Then an
 * output byte lands on the same channel of an input pixel, which the walk
 * the plan was checked against (aligned groups of four pixels, or each
 * channel's pixels in raster order) never reads after the writing pixel
 * (mcu_planner/memory/overlap.py); a shift that splits pixels puts bytes over
 * other channels, which later groups would still read. */
static int depthwise_3x3_channel_groups_safe(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *output)
{
    const uintptr_t in = (uintptr_t)input, out = (uintptr_t)output, pixel = (uintptr_t)p->input_c;
    const uintptr_t in_bytes = (uintptr_t)p->batches * (uintptr_t)p->input_h * (uintptr_t)p->input_w * pixel;
    const uintptr_t out_bytes =
        (uintptr_t)p->batches * (uintptr_t)p->output_h * (uintptr_t)p->output_w * (uintptr_t)p->output_c;
    if (out + out_bytes <= in || in + in_bytes <= out) {
        return 1;
    }
    return p->input_c == p->output_c && (in > out ? in - out : out - in) % pixel == 0u;
}

int mcu_depthwise_3x3_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output)
{
    const int32_t out_c = p->output_c;
    const int32_t multiplier = p->filter_in_c_or_multiplier;
    int32_t inside[4], oc, c, at[3];
    depthwise_3x3_group g;
    if ((multiplier != 1 && multiplier % 4 != 0) || p->filter_h != 3 || p->filter_w != 3 || p->dilation_h != 1 ||
        p->dilation_w != 1 || !p->window_offset_terms || out_c % 4 != 0 ||
        (p->raster_walk && !depthwise_3x3_channel_groups_safe(p, input, output))) {
        return 0;
    }
    for (c = 0; c < out_c; ++c) {
        if (!depthwise_3x3_channel_fits(p, bias, c)) {
            return 0;
        }
    }
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, 1, 3, p->input_w, &inside[0], &inside[1]);
    conv_inside_range(p->output_h, p->stride_h, p->pad_h, 1, 3, p->input_h, &inside[2], &inside[3]);
    for (oc = 0; oc < out_c; oc += 4) {
        depthwise_3x3_prepare(p, filter, bias, oc, &g);
        for (at[0] = 0; at[0] < p->batches; ++at[0]) {
            /* Under raster_walk each row whole, in raster order; otherwise
             * the border columns down the rows inside, one run each. */
            for (at[1] = 0; at[1] < p->output_h; ++at[1]) {
                if (!p->raster_walk && at[1] == inside[2] && inside[3] > inside[2]) {
                    /* The rows inside the input vertically: their columns
                     * inside in one rectangle (the border columns below). */
                    if (inside[1] > inside[0]) {
                        depthwise_3x3_inside(
                            p, &g, input, oc, at, inside[3] - inside[2], inside,
                            output + mcu_nhwc_offset(p->output_h, p->output_w, out_c, at[0], at[1], 0, oc));
                    }
                    at[1] = inside[3] - 1;
                    continue;
                }
                depthwise_3x3_output_row(
                    p, &g, input, oc, at, inside, p->raster_walk,
                    output + mcu_nhwc_offset(p->output_h, p->output_w, out_c, at[0], at[1], 0, oc));
            }
            for (at[2] = 0; !p->raster_walk && inside[3] > inside[2] && at[2] < p->output_w; ++at[2]) {
                if (at[2] == inside[0] && inside[1] > inside[0]) {
                    at[2] = inside[1] - 1; /* the columns inside */
                    continue;
                }
                depthwise_3x3_border_column(p, &g, input, oc, at, inside, output);
            }
        }
    }
    return 1;
}

#else
typedef int mcu_depthwise_3x3_dsp_unused; /* ISO C: a translation unit declares something */
#endif
