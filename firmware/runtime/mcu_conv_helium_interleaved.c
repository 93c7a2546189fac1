/* int8 CONV_2D windows of whole sixteen-byte vectors (input_c a multiple
 * of 16, dilation_w 1: 3x3x16 = 144, 3x3x32 = 288 ...) on Helium
 * (Cortex-M55), four output pixels per pass, their windows copied into
 * four columns interleaved a vector at a time: vector v of pixel k at
 * 64 v + 16 k.  One pointer then walks the four columns, so a loop over the
 * vectors holds two filters and the eight sums of four pixels x two
 * channels in registers: per vector two filter loads, four column loads
 * and eight VMLADAVAs (nine products per instruction, against seven for a
 * filter against four separate columns).  The sums of four channels are
 * requantized four channels per vector (mcu_helium_store_four_channels).
 * The generator names this path per layer (MCU_CONV_INTERLEAVED_S8,
 * mcu_planner/lowering/conv.py helium_rows_variant), so that only the
 * firmware of such layers links it.  Nothing here is compiled without
 * MCU_MVE. */
#include "mcu_conv_helium_interleaved.h"

#include "mcu_conv_helium.h"
#include "mcu_conv_helium_rows.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_window.h"

#if defined(MCU_MVE)

/* Four pixels' vectors of one window vector, one after another. */
#define PASS_STEP 64

/* The window of output pixel (b, wy's row, out_x) into the interleaved
 * columns at `column` (pixel k's: the columns + 16 k), taps in the padding
 * as the input zero point, which with the offset terms adds nothing. */
static void window_to_interleaved(const mcu_conv_s8_params *p, const int8_t *input, int32_t b,
                                  const mcu_window_axis *wy, int32_t out_x, int8_t *column)
{
    const int32_t in_c = p->input_c, row_vectors = (p->filter_w * in_c) >> 4;
    const mcu_window_axis wx = mcu_window_axis_at(out_x, p->stride_w, p->pad_w, 1, p->filter_w, p->input_w);
    const int8x16_t zero = vdupq_n_s8((int8_t)(-p->input_offset));
    const size_t input_row = (size_t)p->input_w * (size_t)in_c;
    /* The row's vectors [before, after) lie inside the input. */
    const int32_t before = wx.end > wx.first ? (wx.first * in_c) >> 4 : row_vectors;
    const int32_t after = wx.end > wx.first ? (wx.end * in_c) >> 4 : row_vectors;
    const int8_t *first =
        input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, 0, wx.end > wx.first ? wx.origin + wx.first : 0, 0);
    int32_t fy, v;
    for (fy = 0; fy < p->filter_h; ++fy) {
        if (fy < wy->first || fy >= wy->end) {
            for (v = 0; v < row_vectors; ++v, column += PASS_STEP) {
                vst1q_s8(column, zero);
            }
            continue;
        }
        {
            const int8_t *from = first + (size_t)mcu_window_input(wy, fy) * input_row;
            for (v = 0; v < before; ++v, column += PASS_STEP) {
                vst1q_s8(column, zero);
            }
            for (; v < after; ++v, column += PASS_STEP, from += 16) {
                vst1q_s8(column, vld1q_s8(from));
            }
            for (; v < row_vectors; ++v, column += PASS_STEP) {
                vst1q_s8(column, zero);
            }
        }
    }
}

/* The windows of four output pixels along a row, wholly inside the input
 * (pixel 0's at `from`, the next `pixel_step` bytes on), into the
 * interleaved columns: a window row at a time, the four pixels' vectors
 * side by side. */
static void four_inside_to_interleaved(const mcu_conv_s8_params *p, const int8_t *from, size_t pixel_step,
                                       int8_t *column)
{
    const int32_t row_vectors = (p->filter_w * p->input_c) >> 4;
    const size_t window_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)p->input_c;
    int32_t fy, v;
    for (fy = 0; fy < p->filter_h; ++fy, from += window_row) {
        const int8_t *f = from;
        for (v = 0; v < row_vectors; ++v, f += 16, column += PASS_STEP) {
            vst1q_s8(column, vld1q_s8(f));
            vst1q_s8(column + 16, vld1q_s8(f + pixel_step));
            vst1q_s8(column + 32, vld1q_s8(f + 2 * pixel_step));
            vst1q_s8(column + 48, vld1q_s8(f + 3 * pixel_step));
        }
    }
}

/* The same for one pixel's window (at `from`) into its column. */
static inline MCU_ALWAYS_INLINE void one_inside_to_interleaved(const mcu_conv_s8_params *p, const int8_t *from,
                                                               int8_t *column)
{
    const int32_t row_vectors = (p->filter_w * p->input_c) >> 4;
    const size_t window_row = (size_t)p->dilation_h * (size_t)p->input_w * (size_t)p->input_c;
    int32_t fy, v;
    for (fy = 0; fy < p->filter_h; ++fy, from += window_row) {
        const int8_t *f = from;
        for (v = 0; v < row_vectors; ++v, f += 16, column += PASS_STEP) {
            vst1q_s8(column, vld1q_s8(f));
        }
    }
}

/* One vector of the four pixels (at x, x + 16, x + 32, x + 48; x steps
 * past them) against two filters' (w0, w1: each steps 16): `mac` VMLADAV
 * (the sums start) or VMLADAVA. */
#define PAIR_STEP(mac)                                                                                         \
    "vldrb.8 %q[wa], [%[w0]], #16\n\t"                                                                         \
    "vldrb.8 %q[wb], [%[w1]], #16\n\t"                                                                         \
    "vldrb.8 %q[xv], [%[xp], #16]\n\t" mac " %[a1], %q[xv], %q[wa]\n\t" mac " %[b1], %q[xv], %q[wb]\n\t"      \
    "vldrb.8 %q[yv], [%[xp], #32]\n\t" mac " %[a2], %q[yv], %q[wa]\n\t" mac " %[b2], %q[yv], %q[wb]\n\t"      \
    "vldrb.8 %q[xv], [%[xp], #48]\n\t" mac " %[a3], %q[xv], %q[wa]\n\t" mac " %[b3], %q[xv], %q[wb]\n\t"      \
    "vldrb.8 %q[yv], [%[xp]], #64\n\t" mac " %[a0], %q[yv], %q[wa]\n\t" mac " %[b0], %q[yv], %q[wb]\n\t"

/* Two channels' sums (filters w0, w1) over the four pixels' interleaved
 * columns of `vectors` (at least 1) vectors: sums[4 k] for w0 and
 * sums[4 k + 1] for w1, pixel k.  A function of its own: one copy of the
 * loop (the call costs about 1% of a 3x3x16 layer). */
MCU_NOINLINE static void pair_sums(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t vectors,
                                   int32_t *sums)
{
    int32_t a0, a1, a2, a3, b0, b1, b2, b3;
    int8x16_t wa, wb, xv, yv;
    /* The first vector starts the sums; then one more when the others are
     * odd in number, and the rest two per loop step (LSRS: C the odd one
     * out, Z no pairs; the vector instructions leave the flags). */
    __asm__(PAIR_STEP("vmladav.s8")                                                          /* vector 0 */
            "subs %[k], %[k], #1\n\t"
            "beq 3f\n\t"
            "lsrs %[k], %[k], #1\n\t"
            "bcc 2f\n\t" PAIR_STEP("vmladava.s8")                                               /* the odd one */
            "2:\n\t"
            "beq 3f\n"
            "1:\n\t" PAIR_STEP("vmladava.s8") PAIR_STEP("vmladava.s8")                          /* two a step */
            "subs %[k], %[k], #1\n\t"
            "bne 1b\n"
            "3:"
            : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [b0] "=&Te"(b0),
              [b1] "=&Te"(b1), [b2] "=&Te"(b2), [b3] "=&Te"(b3), [wa] "=&w"(wa), [wb] "=&w"(wb), [xv] "=&w"(xv),
              [yv] "=&w"(yv), [xp] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [k] "+r"(vectors)
            :
            : "memory", "cc");
    sums[0] = a0;
    sums[1] = b0;
    sums[4] = a1;
    sums[5] = b1;
    sums[8] = a2;
    sums[9] = b2;
    sums[12] = a3;
    sums[13] = b3;
}

/* The `count` (1 to 4) pixels of interleaved columns against every filter,
 * four channels at a time (in the last group a second filter past out_c
 * repeats the group's first, a pair wholly past it is skipped, and their
 * sums are not stored); pixels past `count` hold stale values, computed
 * and not stored.  The last pass and the last channels store a channel at
 * a time: one copy of the four-channel store, for flash. */
MCU_NOINLINE static void interleaved_pass(const mcu_conv_s8_params *p, const int8_t *columns, int32_t count,
                                          const int8_t *filter, const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c, vectors = (p->filter_h * p->filter_w * p->input_c) >> 4;
    const size_t n = (size_t)vectors * 16u;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 4) {
        const int32_t left = out_c - oc;
        const int8_t *w = filter + (size_t)oc * n;
        int32_t sums[16];
        pair_sums(columns, w, left > 1 ? w + n : w, vectors, sums);
        if (left > 2) {
            pair_sums(columns, w + 2 * n, left > 3 ? w + 3 * n : w, vectors, sums + 2);
        }
        if (left >= 4 && count == 4) {
            mcu_helium_store_four_channels(p, &q, sums, oc, 4, out + oc);
        } else {
            /* The last pass and the last channels: a channel at a time. */
            const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c);
            const mve_pred16_t pixels = vctp32q((uint32_t)count);
            int32_t j;
            for (j = 0; j < MCU_MIN(left, 4); ++j) {
                const int32x4_t acc = mcu_helium_lanes(sums[j], sums[4 + j], sums[8 + j], sums[12 + j]);
                mcu_helium_store_channel(&q, vaddq_n_s32(acc, p->window_offset_terms[oc + j]), oc + j, offsets,
                                         pixels, out);
            }
        }
    }
}

/* Every output pixel, four per pass in output order across rows and
 * images, each pass's windows copied before its outputs are written. */
static void interleaved_columns(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *column_space)
{
    const size_t pixel_step = (size_t)p->stride_w * (size_t)p->input_c;
    /* Output columns [inside_first, inside_end) have windows inside the
     * input's columns. */
    int32_t inside_first, inside_end;
    int32_t b, out_y, out_x, count = 0;
    conv_inside_range(p->output_w, p->stride_w, p->pad_w, 1, p->filter_w, p->input_w, &inside_first, &inside_end);
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
            const int rows_inside = wy.first == 0 && wy.end == p->filter_h;
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const int inside = rows_inside && out_x >= inside_first && out_x < inside_end;
                const int8_t *from = inside ? input + mcu_nhwc_offset(p->input_h, p->input_w, p->input_c, b,
                                                                      wy.origin, out_x * p->stride_w - p->pad_w, 0)
                                            : input;
                if (inside && count == 0 && out_x + 4 <= inside_end) {
                    four_inside_to_interleaved(p, from, pixel_step, column_space);
                    interleaved_pass(p, column_space, 4, filter, bias, output);
                    output += (size_t)p->output_c * 4u;
                    out_x += 3;
                    continue;
                }
                if (inside) {
                    one_inside_to_interleaved(p, from, column_space + 16 * count);
                } else {
                    window_to_interleaved(p, input, b, &wy, out_x, column_space + 16 * count);
                }
                if (++count == MCU_CONV_COLUMNS) {
                    interleaved_pass(p, column_space, count, filter, bias, output);
                    output += (size_t)p->output_c * (size_t)count;
                    count = 0;
                }
            }
        }
    }
    if (count > 0) {
        interleaved_pass(p, column_space, count, filter, bias, output);
    }
}

const mcu_conv_rows_s8 mcu_conv_interleaved_s8_4_2 = {0, 0, NULL, interleaved_columns};

#else
typedef int mcu_conv_helium_interleaved_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
