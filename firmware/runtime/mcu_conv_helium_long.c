/* Helium (Cortex-M55) int8 convolution windows longer than the unrolled rows
 * of mcu_conv_helium_rows.c take: four output pixels' windows copied, in
 * chunks of whole window rows, into one interleaved column (16 values of
 * pixel 0, of pixel 1, 2, 3, then the next 16 of each), against two output
 * channels at a time (mcu_helium_dot4x2_s8).  Each pass over 16 values loads
 * six vectors for eight VMLADAVs, where one channel at a time loads five for
 * four; the interleaved column needs one pointer for the four pixels, which
 * leaves the eight even registers VMLADAV accumulates in free.  Nothing here
 * is compiled without MCU_MVE. */
#include "mcu_conv_helium_long.h"

#include "mcu_conv_helium.h"
#include "mcu_conv_internal.h"
#include "mcu_window.h"

#if defined(MCU_MVE)

/* mcu_helium_dot4x2_s8, in assembly: the compiler moves the accumulators
 * between registers around every VMLADAV. */
__asm__(".pushsection .text.mcu_helium_dot4x2_s8,\"ax\",%progbits\n"
        ".syntax unified\n"
        ".thumb\n"
        /* 16 values: the filters at r3 and r5, the four pixels at r1;
         * pixel k's sums in r(2k) and r(2k + 8) (r14 for k = 3). */
        ".macro mcu_dot4x2_vector\n"
        "  vldrb.8 q0, [r3], #16\n"
        "  vldrb.8 q1, [r5], #16\n"
        "  vldrb.8 q2, [r1, #48]\n"
        "  vmladava.s8 r6, q2, q0\n"
        "  vmladava.s8 lr, q2, q1\n"
        "  vldrb.8 q3, [r1, #32]\n"
        "  vmladava.s8 r4, q3, q0\n"
        "  vmladava.s8 r12, q3, q1\n"
        "  vldrb.8 q2, [r1, #16]\n"
        "  vmladava.s8 r2, q2, q0\n"
        "  vmladava.s8 r10, q2, q1\n"
        "  vldrb.8 q3, [r1], #64\n"
        "  vmladava.s8 r0, q3, q0\n"
        "  vmladava.s8 r8, q3, q1\n"
        ".endm\n"
        ".p2align 2\n"
        ".global mcu_helium_dot4x2_s8\n"
        ".hidden mcu_helium_dot4x2_s8\n"
        ".type mcu_helium_dot4x2_s8, %function\n"
        ".thumb_func\n"
        "mcu_helium_dot4x2_s8:\n"
        "  push {r4-r11, lr}\n"
        /* The job's first five fields on the stack (column, filter,
         * filter_size, n, pairs), the sums in r9. */
        "  sub sp, sp, #20\n"
        "  ldm r0, {r1, r2, r3, r4, r5, r6}\n"
        "  stm sp, {r1, r2, r3, r4, r5}\n"
        "  mov r9, r6\n"
        "5:\n"
        "  ldm sp, {r1, r3, r5, r11}\n"
        "  add r7, r3, r5, lsl #1\n"
        "  str r7, [sp, #4]\n"
        "  add r5, r3, r5\n"
        "  lsr r7, r11, #4\n"
        "  and r11, r11, #15\n"
        "  ldm r9, {r0, r2, r4, r6, r8, r10, r12, lr}\n"
        /* One vector if their number is odd, two if it is 2 or 3 modulo
         * 4, then four per loop. */
        "  tst r7, #1\n"
        "  beq 1f\n"
        "  mcu_dot4x2_vector\n"
        "1:\n"
        "  tst r7, #2\n"
        "  beq 2f\n"
        "  mcu_dot4x2_vector\n"
        "  mcu_dot4x2_vector\n"
        "2:\n"
        "  lsrs r7, r7, #2\n"
        "  beq 3f\n"
        "6:\n"
        "  mcu_dot4x2_vector\n"
        "  mcu_dot4x2_vector\n"
        "  mcu_dot4x2_vector\n"
        "  mcu_dot4x2_vector\n"
        "  subs r7, r7, #1\n"
        "  bne 6b\n"
        "3:\n"
        "  cmp r11, #0\n"
        "  beq 4f\n"
        "  vctp.8 r11\n"
        "  vpstt\n"
        "  vldrbt.8 q0, [r3]\n"
        "  vldrbt.8 q1, [r5]\n"
        "  vldrb.8 q2, [r1, #48]\n"
        "  vmladava.s8 r6, q2, q0\n"
        "  vmladava.s8 lr, q2, q1\n"
        "  vldrb.8 q3, [r1, #32]\n"
        "  vmladava.s8 r4, q3, q0\n"
        "  vmladava.s8 r12, q3, q1\n"
        "  vldrb.8 q2, [r1, #16]\n"
        "  vmladava.s8 r2, q2, q0\n"
        "  vmladava.s8 r10, q2, q1\n"
        "  vldrb.8 q3, [r1]\n"
        "  vmladava.s8 r0, q3, q0\n"
        "  vmladava.s8 r8, q3, q1\n"
        "4:\n"
        "  stm r9!, {r0, r2, r4, r6, r8, r10, r12, lr}\n"
        "  ldr r7, [sp, #16]\n"
        "  subs r7, r7, #1\n"
        "  str r7, [sp, #16]\n"
        "  bne 5b\n"
        "  add sp, sp, #20\n"
        "  pop {r4-r11, pc}\n"
        ".size mcu_helium_dot4x2_s8, . - mcu_helium_dot4x2_s8\n"
        ".popsection\n");

/* The offsets the assembly reads the job's fields at. */
typedef char mcu_helium_dot_pairs_is_six_words[sizeof(mcu_helium_dot_pairs) == 24u ? 1 : -1];

/* Bytes of an interleaved column of four pixels' `n` values. */
static size_t interleaved_bytes(size_t n)
{
    return 4u * ((n + 15u) & ~(size_t)15u);
}

/* Slot of value `at` of pixel k in an interleaved column. */
static int8_t *interleaved_at(int8_t *column, int32_t k, size_t at)
{
    return column + (at >> 4) * 64u + (size_t)k * 16u + (at & 15u);
}

/* Values at .. at + n - 1 of pixel k: `n` input bytes from `from`, or the
 * input zero point `fill` where `from` is NULL (taps in the padding). */
static void interleaved_put(int8_t *column, int32_t k, size_t at, const int8_t *from, int8_t fill, size_t n)
{
    const int8x16_t zero_point = vdupq_n_s8(fill);
    int8_t *to = interleaved_at(column, k, at);
    const size_t head = at & 15u;
    if (n == 0u) {
        return; /* no padding before or after the inside taps */
    }
    if (head != 0u) {
        const size_t take = MCU_MIN(16u - head, n);
        const mve_pred16_t lanes = vctp8q((uint32_t)take);
        vstrbq_p_s8(to, from != NULL ? vldrbq_z_s8(from, lanes) : zero_point, lanes);
        n -= take;
        to += 64u - head;
        if (from != NULL) {
            from += take;
        }
    }
    if (from != NULL) {
        for (; n >= 16u; n -= 16u, to += 64, from += 16) {
            vstrbq_s8(to, vldrbq_s8(from));
        }
    } else {
        for (; n >= 16u; n -= 16u, to += 64) {
            vstrbq_s8(to, zero_point);
        }
    }
    if (n > 0u) {
        const mve_pred16_t lanes = vctp8q((uint32_t)n);
        vstrbq_p_s8(to, from != NULL ? vldrbq_z_s8(from, lanes) : zero_point, lanes);
    }
}

/* Window rows first_row .. end_row - 1 of output pixel `index` (raster
 * order) as pixel k of an interleaved column, the padding as the input zero
 * point (which window_offset_terms takes into account). */
static void interleave_window_rows(const mcu_conv_s8_params *p, const int8_t *input, int32_t index, int32_t k,
                                   int32_t first_row, int32_t end_row, int8_t *column)
{
    const int32_t in_c = p->input_c, per_image = p->output_h * p->output_w;
    const int32_t b = index / per_image, out_y = (index % per_image) / p->output_w, out_x = index % p->output_w;
    const int8_t zero_point = (int8_t)-p->input_offset;
    const mcu_window_axis wy =
        mcu_window_axis_at(out_y, p->stride_h, p->pad_h, p->dilation_h, p->filter_h, p->input_h);
    const mcu_window_axis wx =
        mcu_window_axis_at(out_x, p->stride_w, p->pad_w, p->dilation_w, p->filter_w, p->input_w);
    const size_t row_bytes = (size_t)p->filter_w * (size_t)in_c;
    size_t at = 0;
    int32_t fy, fx;
    for (fy = first_row; fy < end_row; ++fy, at += row_bytes) {
        if (fy < wy.first || fy >= wy.end) {
            interleaved_put(column, k, at, NULL, zero_point, row_bytes);
        } else if (p->dilation_w == 1 && wx.end > wx.first) {
            /* The inside taps are one run of the input row. */
            const size_t before = (size_t)wx.first * (size_t)in_c;
            const size_t inside = (size_t)(wx.end - wx.first) * (size_t)in_c;
            interleaved_put(column, k, at, NULL, zero_point, before);
            interleaved_put(column, k, at + before,
                            input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b, mcu_window_input(&wy, fy),
                                                    mcu_window_input(&wx, wx.first), 0),
                            zero_point, inside);
            interleaved_put(column, k, at + before + inside, NULL, zero_point, row_bytes - before - inside);
        } else {
            for (fx = 0; fx < p->filter_w; ++fx) {
                const int inside = fx >= wx.first && fx < wx.end;
                interleaved_put(column, k, at + (size_t)fx * (size_t)in_c,
                                inside ? input + mcu_nhwc_offset(p->input_h, p->input_w, in_c, b,
                                                                 mcu_window_input(&wy, fy),
                                                                 mcu_window_input(&wx, fx), 0)
                                       : NULL,
                                zero_point, (size_t)in_c);
            }
        }
    }
}

/* One chunk of a group of `count` (1 to 4) output pixels: its window rows
 * in `column`, `n` values, starting at `filter` in the first filter. */
typedef struct {
    const int8_t *column;
    const int8_t *filter;
    size_t filter_size;
    int32_t n;
    int32_t count;
    int first; /* the sums start at window_offset_terms */
    int last;  /* the sums are requantized and stored */
} mcu_helium_chunk;

/* Channel pairs per call of mcu_helium_dot4x2_s8 whose sums are not
 * carried between chunks (on the stack, 32 bytes a pair). */
#define MCU_HELIUM_PAIRS_ON_STACK 4

/* Every output channel against chunk `c`, two at a time (a lone last one
 * twice, the second sums dropped): the sums of channel oc's four pixels
 * carried in partial[4 oc .. 4 oc + 3] from chunk to chunk when there are
 * several (int32 sums wrap the same in any order, so the values are those
 * of one run over the whole window), requantized after the last one into
 * the pixels at `out`. */
MCU_NOINLINE static void helium_chunk_channels(const mcu_conv_s8_params *p, const mcu_helium_chunk *c,
                                               int32_t *partial, const int32_t *bias, int8_t *out)
{
    const int32_t out_c = p->output_c;
    const int32_t *terms = p->window_offset_terms;
    const mcu_helium_requant q = mcu_helium_requant_of(p, bias);
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c);
    const mve_pred16_t pixels = vctp32q((uint32_t)c->count);
    const int carried = !(c->first && c->last);
    int32_t local[8 * MCU_HELIUM_PAIRS_ON_STACK];
    mcu_helium_dot_pairs job;
    int32_t oc, channels, j;
    job.column = c->column;
    job.n = c->n;
    for (oc = 0; oc < out_c; oc += channels) {
        const int32_t left = out_c - oc;
        int32_t *sums;
        if (left == 1) {
            /* A lone last channel: its filter twice, into sums of its own. */
            channels = 1;
            sums = local;
            if (!c->first) {
                vst1q_s32(local, vld1q_s32(partial + 4 * oc));
            }
        } else {
            channels = carried ? left & ~1 : MCU_MIN(left & ~1, 2 * MCU_HELIUM_PAIRS_ON_STACK);
            sums = carried ? partial + 4 * oc : local;
        }
        if (c->first) {
            for (j = 0; j < MCU_MAX(channels, 2); ++j) {
                vst1q_s32(sums + 4 * j, vdupq_n_s32(terms[oc + MCU_MIN(j, channels - 1)]));
            }
        }
        job.filter = c->filter + (size_t)oc * c->filter_size;
        job.filter_size = channels == 1 ? 0 : (int32_t)c->filter_size;
        job.pairs = MCU_MAX(channels >> 1, 1);
        job.sums = sums;
        mcu_helium_dot4x2_s8(&job);
        if (channels == 1 && carried) {
            vst1q_s32(partial + 4 * oc, vld1q_s32(local));
        }
        if (c->last) {
            for (j = 0; j < channels; ++j) {
                mcu_helium_store_channel(&q, vld1q_s32(sums + 4 * j), oc + j, offsets, pixels, out);
            }
        }
    }
}

/* Window rows per chunk that fit `bytes` of interleaved column. */
static int32_t chunk_rows_in(const mcu_conv_s8_params *p, size_t row_len, size_t bytes)
{
    int32_t rows = (int32_t)MCU_MIN(bytes / (4u * row_len), (size_t)p->filter_h);
    while (rows > 0 && interleaved_bytes((size_t)rows * row_len) > bytes) {
        --rows;
    }
    return rows;
}

int mcu_conv_2d_s8_chunks_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *scratch)
{
    const size_t scratch_bytes = (size_t)p->column_bytes;
    const size_t row_len = (size_t)p->filter_w * (size_t)p->input_c;
    const size_t filter_size = (size_t)p->filter_h * row_len;
    const int32_t pixels = p->batches * p->output_h * p->output_w;
    /* The int32 sums from the first 4-byte boundary of the scratch on. */
    const size_t align = scratch != NULL ? (size_t)(-(uintptr_t)scratch & 3u) : 0u;
    size_t sums_bytes = align + 16u * (size_t)p->output_c;
    int32_t chunk_rows, first, r0, k;
    if (scratch == NULL) {
        return 0;
    }
    if (interleaved_bytes(filter_size) <= scratch_bytes) {
        /* The whole window in one chunk: no sums to carry. */
        chunk_rows = p->filter_h;
        sums_bytes = 0;
    } else {
        chunk_rows = scratch_bytes > sums_bytes ? chunk_rows_in(p, row_len, scratch_bytes - sums_bytes) : 0;
        if (chunk_rows == 0) {
            return 0;
        }
    }
    /* Groups of four consecutive pixels, each reading only its own windows:
     * the raster walk of KERNEL_ORDERS. */
    for (first = 0; first < pixels; first += 4) {
        mcu_helium_chunk c;
        c.count = MCU_MIN(pixels - first, 4);
        c.column = scratch + sums_bytes;
        c.filter_size = filter_size;
        for (r0 = 0; r0 < p->filter_h; r0 += chunk_rows) {
            const int32_t r1 = MCU_MIN(r0 + chunk_rows, p->filter_h);
            /* Pixels past count repeat the last one, and are not stored. */
            for (k = 0; k < 4; ++k) {
                interleave_window_rows(p, input, first + MCU_MIN(k, c.count - 1), k, r0, r1, scratch + sums_bytes);
            }
            c.filter = filter + (size_t)r0 * row_len;
            c.n = (int32_t)((size_t)(r1 - r0) * row_len);
            c.first = r0 == 0;
            c.last = r1 == p->filter_h;
            helium_chunk_channels(p, &c, (int32_t *)(void *)(scratch + align), bias,
                                  output + (size_t)first * (size_t)p->output_c);
        }
    }
    return 1;
}

#else
typedef int mcu_conv_helium_long_unused; /* ISO C: a translation unit declares something */
#endif /* MCU_MVE */
