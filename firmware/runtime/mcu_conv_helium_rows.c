/* Rows of int8 values against every filter on Helium (Cortex-M55): the
 * pixels of a pointwise convolution, or windows copied into columns
 * (mcu_conv_helium.c), four rows per pass so that each filter vector is
 * loaded once for all of them.
 *
 * Four whole rows of up to MCU_CONV_ROWS_UNROLLED_MAX vectors go four
 * channels at a time: each channel's sums by code compiled for the rows'
 * number of vectors (every vector at an immediate offset from the rows and
 * the filter, so that no pointer steps, is reset or is counted per
 * channel; the variant the layer's params name, mcu_conv.h), then the
 * sixteen sums requantized a pixel per vector (lanes = channels), the
 * channels' bias, offset terms, multipliers and shifts loaded once for the
 * four pixels.  The channels left, and fewer rows or rows no named variant
 * takes, go one channel at a time (lanes = rows).  Nothing here is compiled without MCU_MVE. */
#include "mcu_conv_helium_rows.h"

#include "mcu_conv_helium.h"
#include "mcu_conv_internal.h"

#if defined(MCU_MVE)

/* MCU_CONV_ROWS_UNROLLED_MAX (mcu_conv.h): the sixteen-byte vectors a row
 * may have for the unrolled loops, as VLDRB's immediate offsets reach 127
 * bytes. */

/* Four sums as the lanes of a vector, two lanes per VMOV. */
static inline MCU_ALWAYS_INLINE int32x4_t lanes_of(int32_t s0, int32_t s1, int32_t s2, int32_t s3)
{
    int32x4_t v;
    /* VMOV Qd[i], Qd[i - 2], Rt, Rt2 writes Rt to lane i - 2 and Rt2 to lane i
     * (QEMU: Rt to the low half of the vector, Rt2 to the high half). */
    __asm__("vmov %q0[2], %q0[0], %1, %3\n\tvmov %q0[3], %q0[1], %2, %4"
            : "=&w"(v)
            : "r"(s0), "r"(s1), "r"(s2), "r"(s3));
    return v;
}

/* One vector of four rows at byte `off` (a literal) against the filter's
 * (`wp`): sixteen products summed into each of s0 .. s3 (`first`: VMLADAV,
 * the sums start there), every address an immediate offset.  In assembly
 * because the compiler hoists the rows' addresses out of the channel loop
 * instead and spills them. */
#define ROWS_VECTOR(mac, sums, off)                                                                            \
    __asm__("vldrb.8 %q[w], [%[wp], #" #off "]\n\t"                                                            \
            "vldrb.8 %q[x], [%[x0], #" #off "]\n\t" mac " %[s0], %q[x], %q[w]\n\t"                            \
            "vldrb.8 %q[x], [%[x1], #" #off "]\n\t" mac " %[s1], %q[x], %q[w]\n\t"                            \
            "vldrb.8 %q[x], [%[x2], #" #off "]\n\t" mac " %[s2], %q[x], %q[w]\n\t"                            \
            "vldrb.8 %q[x], [%[x3], #" #off "]\n\t" mac " %[s3], %q[x], %q[w]"                                \
            : [s0] sums(s0), [s1] sums(s1), [s2] sums(s2), [s3] sums(s3), [w] "=&w"(wv), [x] "=&w"(xv)       \
            : [wp] "r"(w), [x0] "r"(x0), [x1] "r"(x1), [x2] "r"(x2), [x3] "r"(x3)                              \
            : "memory")

/* The same for the rows' last vector, its lanes under `tail` (the loads
 * zero the others, so the accumulating products are those of the values). */
#define ROWS_TAIL(off)                                                                                         \
    __asm__("vmsr p0, %[t]\n\t"                                                                                \
            "vpstttt\n\t"                                                                                      \
            "vldrbt.8 %q[w], [%[wp], #" #off "]\n\t"                                                           \
            "vldrbt.8 %q[x], [%[x0], #" #off "]\n\t"                                                           \
            "vmladavat.s8 %[s0], %q[x], %q[w]\n\t"                                                             \
            "vldrbt.8 %q[x], [%[x1], #" #off "]\n\t"                                                           \
            "vpstttt\n\t"                                                                                      \
            "vmladavat.s8 %[s1], %q[x], %q[w]\n\t"                                                             \
            "vldrbt.8 %q[x], [%[x2], #" #off "]\n\t"                                                           \
            "vmladavat.s8 %[s2], %q[x], %q[w]\n\t"                                                             \
            "vldrbt.8 %q[x], [%[x3], #" #off "]\n\t"                                                           \
            "vpst\n\t"                                                                                         \
            "vmladavat.s8 %[s3], %q[x], %q[w]"                                                                 \
            : [s0] "+Te"(s0), [s1] "+Te"(s1), [s2] "+Te"(s2), [s3] "+Te"(s3), [w] "=&w"(wv), [x] "=&w"(xv)   \
            : [wp] "r"(w), [x0] "r"(x0), [x1] "r"(x1), [x2] "r"(x2), [x3] "r"(x3), [t] "r"((uint32_t)tail)    \
            : "memory", "p0")

/* One channel's sums over four rows of `vectors` vectors (the last under
 * `tail` when `rest`; `vectors` and `rest` constants where it is inlined)
 * into sums[0 .. 3]. */
static inline MCU_ALWAYS_INLINE void unrolled_sums(const int8_t *x0, const int8_t *x1, const int8_t *x2,
                                                   const int8_t *x3, const int8_t *w, int vectors, int rest,
                                                   mve_pred16_t tail, int32_t sums[4])
{
    const int full = rest ? vectors - 1 : vectors;
    int32_t s0, s1, s2, s3;
    int8x16_t wv, xv;
    /* Rows of more than 16 values: at least one whole vector. */
    ROWS_VECTOR("vmladav.s8", "=&Te", 0);
    if (full > 1) {
        ROWS_VECTOR("vmladava.s8", "+Te", 16);
    }
    if (full > 2) {
        ROWS_VECTOR("vmladava.s8", "+Te", 32);
    }
    if (full > 3) {
        ROWS_VECTOR("vmladava.s8", "+Te", 48);
    }
    if (full > 4) {
        ROWS_VECTOR("vmladava.s8", "+Te", 64);
    }
    if (full > 5) {
        ROWS_VECTOR("vmladava.s8", "+Te", 80);
    }
    if (full > 6) {
        ROWS_VECTOR("vmladava.s8", "+Te", 96);
    }
    if (full > 7) {
        ROWS_VECTOR("vmladava.s8", "+Te", 112);
    }
    if (rest) {
        switch (full) {
        case 1:
            ROWS_TAIL(16);
            break;
        case 2:
            ROWS_TAIL(32);
            break;
        case 3:
            ROWS_TAIL(48);
            break;
        case 4:
            ROWS_TAIL(64);
            break;
        case 5:
            ROWS_TAIL(80);
            break;
        case 6:
            ROWS_TAIL(96);
            break;
        default:
            ROWS_TAIL(112);
            break;
        }
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
}

/* Four whole rows of `n` values (`vectors` of them, the last `rest`) against
 * every filter. */
static inline MCU_ALWAYS_INLINE void unrolled_rows(const mcu_conv_s8_params *p, const mcu_helium_rows *r,
                                                   const int8_t *filter, const int32_t *bias, int vectors, int rest,
                                                   int8_t *out)
{
    const int32_t groups = p->output_c >> 2, n = r->n;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
    const int8_t *x0 = r->row[0], *x1 = r->row[1], *x2 = r->row[2], *x3 = r->row[3];
    const size_t step = (size_t)n;
    int32_t g;
    for (g = 0; g < groups; ++g, filter += 4 * step) {
        int32_t sums[16], s[4];
        int j;
#pragma GCC unroll 4
        for (j = 0; j < 4; ++j) {
            unrolled_sums(x0, x1, x2, x3, filter + (size_t)j * step, vectors, rest, tail, s);
            sums[j] = s[0];
            sums[4 + j] = s[1];
            sums[8 + j] = s[2];
            sums[12 + j] = s[3];
        }
        mcu_helium_store_four_channels(p, &q, sums, 4 * g, 4, out + 4 * g);
    }
}

/* Rows of at most 16 values, four channels at a time: the rows in
 * registers, per channel one filter load and four VMLADAVs. */
MCU_NOINLINE static void short_rows(const mcu_conv_s8_params *p, const mcu_helium_rows *r, const int8_t *filter,
                                    const int32_t *bias, int8_t *out)
{
    const int32_t groups = p->output_c >> 2, n = r->n;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const mve_pred16_t lanes = vctp8q((uint32_t)n);
    const int8x16_t a0 = vldrbq_z_s8(r->row[0], lanes), a1 = vldrbq_z_s8(r->row[1], lanes);
    const int8x16_t a2 = vldrbq_z_s8(r->row[2], lanes), a3 = vldrbq_z_s8(r->row[3], lanes);
    int32_t g;
    for (g = 0; g < groups; ++g) {
        int32_t sums[16];
        int j;
#pragma GCC unroll 4
        for (j = 0; j < 4; ++j, filter += n) {
            const int8x16_t w = vldrbq_z_s8(filter, lanes);
            sums[j] = vmladavq_s8(a0, w);
            sums[4 + j] = vmladavq_s8(a1, w);
            sums[8 + j] = vmladavq_s8(a2, w);
            sums[12 + j] = vmladavq_s8(a3, w);
        }
        mcu_helium_store_four_channels(p, &q, sums, 4 * g, 4, out + 4 * g);
    }
}

/* unrolled_rows compiled for each number of vectors, with and without a
 * tail: functions of their own, so that their stack frames do not add up,
 * each named by a variant (mcu_conv.h) the generated params point at, so
 * that a firmware links only those its layers name. */
#define UNROLLED_ROWS(vectors, rest)                                                                           \
    MCU_NOINLINE static void unrolled_rows_##vectors##_##rest(const mcu_conv_s8_params *p,                     \
                                                              const mcu_helium_rows *r, const int8_t *filter,  \
                                                              const int32_t *bias, int8_t *out)                \
    {                                                                                                          \
        unrolled_rows(p, r, filter, bias, vectors, rest, out);                                                 \
    }                                                                                                          \
    const mcu_conv_rows_s8 mcu_conv_rows_s8_##vectors##_##rest = {vectors, rest, unrolled_rows_##vectors##_##rest, NULL};
UNROLLED_ROWS(2, 0)
UNROLLED_ROWS(2, 1)
UNROLLED_ROWS(3, 0)
UNROLLED_ROWS(3, 1)
UNROLLED_ROWS(4, 0)
UNROLLED_ROWS(4, 1)
UNROLLED_ROWS(5, 0)
UNROLLED_ROWS(5, 1)
UNROLLED_ROWS(6, 0)
UNROLLED_ROWS(6, 1)
UNROLLED_ROWS(7, 0)
UNROLLED_ROWS(7, 1)
UNROLLED_ROWS(8, 0)
UNROLLED_ROWS(8, 1)

/* One row of `n` int8 values (a lone pixel of a pointwise convolution, or
 * one window copied into a column) against every filter: four filters per
 * step, their sums one vector requantized per channel on four lanes and
 * stored together, where a pass of four rows would compute four rows to
 * store one.  int32 sums wrap the same in any order. */
MCU_NOINLINE static void conv_row_s8(const mcu_conv_s8_params *p, const int8_t *x, const int8_t *filter,
                                                int32_t n, const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
    const int32_t blocks = n >> 4;
    const size_t step = (size_t)n;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 4) {
        const int32_t filters = MCU_MIN(out_c - oc, 4);
        const mve_pred16_t lanes = vctp32q((uint32_t)filters);
        /* Filters past out_c repeat the first; their lanes are not stored. */
        const int8_t *w0 = filter + (size_t)oc * step;
        const int8_t *w1 = filters > 1 ? w0 + step : w0;
        const int8_t *w2 = filters > 2 ? w0 + 2 * step : w0;
        const int8_t *w3 = filters > 3 ? w0 + 3 * step : w0;
        const int8_t *xk = x;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, k;
        int32x4_t acc;
        for (k = blocks; k > 0; --k) {
            const int8x16_t v = vldrbq_s8(xk);
            s0 = vmladavaq_s8(s0, v, vldrbq_s8(w0));
            s1 = vmladavaq_s8(s1, v, vldrbq_s8(w1));
            s2 = vmladavaq_s8(s2, v, vldrbq_s8(w2));
            s3 = vmladavaq_s8(s3, v, vldrbq_s8(w3));
            xk += 16;
            w0 += 16;
            w1 += 16;
            w2 += 16;
            w3 += 16;
        }
        if (n & 15) {
            const int8x16_t v = vldrbq_z_s8(xk, tail);
            s0 = vmladavaq_s8(s0, v, vldrbq_z_s8(w0, tail));
            s1 = vmladavaq_s8(s1, v, vldrbq_z_s8(w1, tail));
            s2 = vmladavaq_s8(s2, v, vldrbq_z_s8(w2, tail));
            s3 = vmladavaq_s8(s3, v, vldrbq_z_s8(w3, tail));
        }
        acc = vaddq_s32(mcu_helium_lanes(s0, s1, s2, s3), vldrwq_z_s32(p->window_offset_terms + oc, lanes));
        if (q.bias) {
            acc = vaddq_s32(acc, vldrwq_z_s32(q.bias + oc, lanes));
        }
        mcu_helium_store_pixel(&q, acc, vldrwq_z_s32(q.multiplier + oc, lanes),
                               mcu_split_shift_x4(vldrwq_z_s32(q.shift + oc, lanes)), lanes, out + oc);
    }
}

/* Four whole rows against the filters of whole groups of four channels:
 * rows of one vector in registers, longer ones by the loop the params name
 * when it was compiled for their length (a loop for other rows would read
 * past them or leave values out); the channels done (none otherwise). */
static int32_t rows_in_groups(const mcu_conv_s8_params *p, const mcu_helium_rows *r, const int8_t *filter,
                              const int32_t *bias, int8_t *out)
{
    const mcu_conv_rows_s8 *unrolled = p->rows;
    const int32_t vectors = (r->n + 15) >> 4;
    if (r->count != 4 || p->output_c < 4) {
        return 0;
    }
    if (vectors == 1) {
        short_rows(p, r, filter, bias, out);
    } else if (unrolled != NULL && unrolled->vectors == vectors && unrolled->tail == ((r->n & 15) != 0)) {
        unrolled->run(p, r, filter, bias, out);
    } else {
        return 0;
    }
    return p->output_c & ~(int32_t)3;
}

void mcu_helium_conv_rows_s8(const mcu_conv_s8_params *p, const mcu_helium_rows *r, const int8_t *filter,
                             const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c, count = r->count, n = r->n;
    const int32_t *terms = p->window_offset_terms;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c);
    const mve_pred16_t pixels = vctp32q((uint32_t)count);
    const mve_pred16_t tail = vctp8q((uint32_t)(n & 15));
    mcu_helium_rows all = *r;
    int32_t oc, k;
    if (count == 1) {
        conv_row_s8(p, r->row[0], filter, n, bias, out);
        return;
    }
    oc = rows_in_groups(p, r, filter, bias, out);
    filter += (size_t)oc * (size_t)n;
    /* The channels left: one at a time.  Rows past `count` repeat row 0;
     * their lanes are not stored. */
    for (k = count; k < 4; ++k) {
        all.row[k] = r->row[0];
    }
    if (n <= 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)n);
        const int8x16_t a0 = vldrbq_z_s8(all.row[0], lanes), a1 = vldrbq_z_s8(all.row[1], lanes);
        const int8x16_t a2 = vldrbq_z_s8(all.row[2], lanes), a3 = vldrbq_z_s8(all.row[3], lanes);
        for (; oc < out_c; ++oc, filter += n) {
            const int8x16_t w = vldrbq_z_s8(filter, lanes);
            const int32x4_t sums =
                lanes_of(vmladavq_s8(a0, w), vmladavq_s8(a1, w), vmladavq_s8(a2, w), vmladavq_s8(a3, w));
            mcu_helium_store_channel(&q, vaddq_n_s32(sums, terms[oc]), oc, offsets, pixels, out);
        }
        return;
    }
    if (count == 4 && (n & 15) == 0) {
        /* Longer rows of whole vectors (pointwise on 16k channels): no
         * tail, every lane stored. */
        for (; oc < out_c; ++oc, filter += n) {
            int32_t s[4] = {terms[oc], terms[oc], terms[oc], terms[oc]};
            mcu_helium_rows4_sums(all.row, filter, n >> 4, 0, tail, s);
            mcu_helium_store_channel_all(&q, lanes_of(s[0], s[1], s[2], s[3]), oc, offsets, out);
        }
        return;
    }
    for (; oc < out_c; ++oc, filter += n) {
        int32_t s[4] = {terms[oc], terms[oc], terms[oc], terms[oc]};
        mcu_helium_rows4_sums(all.row, filter, n >> 4, n & 15, tail, s);
        mcu_helium_store_channel(&q, lanes_of(s[0], s[1], s[2], s[3]), oc, offsets, pixels, out);
    }
}

/* Pointwise on Helium: four pixels per pass, each filter vector loaded once
 * for all of them. */
void mcu_conv_1x1_helium_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output)
{
    const int32_t in_c = p->input_c, out_c = p->output_c;
    const int32_t pixels_per_image = p->output_h * p->output_w;
    const int32_t pixels = p->batches * pixels_per_image;
    mcu_helium_rows x;
    int32_t pixel;
    x.n = in_c;
    for (pixel = 0; pixel < pixels; pixel += 4) {
        int32_t k;
        x.count = MCU_MIN(pixels - pixel, 4);
        for (k = 0; k < x.count; ++k) {
            const int32_t b = (pixel + k) / pixels_per_image, yx = (pixel + k) % pixels_per_image;
            x.row[k] = input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, (yx / p->output_w) * p->stride_h,
                                               (yx % p->output_w) * p->stride_w, 0);
        }
        mcu_helium_conv_rows_s8(p, &x, filter, bias, output + (size_t)pixel * (size_t)out_c);
    }
}

#else
typedef int mcu_conv_helium_rows_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
