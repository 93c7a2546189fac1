/* FULLY_CONNECTED int8 x packed int4.  Rows of an even depth are multiplied
 * straight from the packed bytes on cores with Helium or the DSP extension
 * (dot4_packed); other rows, and every row elsewhere, are unpacked to int8 a
 * chunk at a time (four rows of MCU_S4_CHUNK values on the stack) and go
 * through mcu_dot4_s8, the int8 kernel's dot product.  The int32 sums are
 * exact in any order, so either way the results are those of
 * mcu_fully_connected_s8 on the unpacked filter, the int8 kernel LiteRT's
 * int4 path matches (it unpacks first). */
#include "mcu_fully_connected_s4.h"

#include "mcu_dsp.h"
#include "mcu_quant.h"

/* A nibble 0..15 as the int4 value it holds: 8..15 are -8..-1. */
static int8_t s4_value(uint32_t nibble)
{
    return (int8_t)((int32_t)(nibble ^ 8u) - 8);
}

#if defined(MCU_MVE) || (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#include <string.h>
#define MCU_S4_WORDS 1
/* Eight weights from four packed bytes, two words at a time: the low and
 * the high nibbles apart (bytes n0 n2 n4 n6 and n1 n3 n5 n7), each byte
 * sign-extended by or-ing 0xF0 where its bit 3 is set (8 * 0x1E = 0xF0, no
 * carry into the next byte), then interleaved back into order. */
static void unpack8_s4(const int8_t *packed, int8_t *out)
{
    uint32_t word, lo, hi, first, second;
    memcpy(&word, packed, sizeof word);
    lo = word & 0x0F0F0F0Fu;
    hi = (word >> 4) & 0x0F0F0F0Fu;
    lo |= (lo & 0x08080808u) * 0x1Eu;
    hi |= (hi & 0x08080808u) * 0x1Eu;
    first = (lo & 0xFFu) | ((hi & 0xFFu) << 8) | ((lo & 0xFF00u) << 8) | ((hi & 0xFF00u) << 16);
    second = ((lo >> 16) & 0xFFu) | ((hi >> 8) & 0xFF00u) | ((lo >> 8) & 0xFF0000u) | (hi & 0xFF000000u);
    memcpy(out, &first, sizeof first);
    memcpy(out + 4, &second, sizeof second);
}
#endif

#if defined(MCU_MVE)
/* Sixteen weights from eight packed bytes, in a vector: the bytes widened to
 * halfwords, the low nibbles narrowed into the even byte lanes and the high
 * ones into the odd lanes, then sign-extended as (n ^ 8) - 8. */
static inline int8x16_t s4x16(uint16x8_t bytes)
{
    uint8x16_t nibbles = vdupq_n_u8(0);
    nibbles = vmovnbq_u16(nibbles, vandq_u16(bytes, vdupq_n_u16(15)));
    nibbles = vmovntq_u16(nibbles, vshrq_n_u16(bytes, 4));
    return vsubq_n_s8(vreinterpretq_s8_u8(veorq_u8(nibbles, vdupq_n_u8(8))), 8);
}

#endif

/* Weights [first, first + count) of the packed filter, as int8. */
static void unpack_s4(const int8_t *packed, size_t first, int32_t count, int8_t *out)
{
    int32_t i = 0;
    size_t k = first;
    if ((k & 1u) != 0u && count > 0) { /* a row starting in a high nibble */
        out[i++] = s4_value((uint32_t)(uint8_t)packed[k >> 1] >> 4);
        ++k;
    }
#if defined(MCU_MVE)
    for (; i + 16 <= count; i += 16, k += 16) {
        vst1q_s8(out + i, s4x16(vldrbq_u16((const uint8_t *)packed + (k >> 1))));
    }
#endif
#if defined(MCU_S4_WORDS)
    for (; i + 8 <= count; i += 8, k += 8) {
        unpack8_s4(packed + (k >> 1), out + i);
    }
#endif
    for (; i + 2 <= count; i += 2, k += 2) {
        const uint32_t byte = (uint8_t)packed[k >> 1];
        out[i] = s4_value(byte & 15u);
        out[i + 1] = s4_value(byte >> 4);
    }
    if (i < count) {
        out[i] = s4_value((uint32_t)(uint8_t)packed[k >> 1] & 15u);
    }
}

static int8_t requantize(const mcu_fully_connected_s8_params *p, int32_t acc, const int32_t *bias, int32_t o)
{
    const int32_t q = p->per_channel ? o : 0;
    if (bias) {
        acc += bias[o];
    }
    acc = mcu_mul_by_quantized_mul_single_round(acc, p->output_multiplier[q], (int)p->output_shift[q]);
    acc += p->output_offset;
    return (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
}

/* Rows o .. o + rows - 1 (rows is 4 or 1) against input row x: the raw
 * sums of products. */
static void dot_rows(const int8_t *x, const int8_t *filter, int32_t depth, int32_t o, int32_t rows, int32_t sums[4])
{
    int8_t chunk[4 * MCU_S4_CHUNK];
    int32_t d, k, i;
    for (k = 0; k < 4; ++k) {
        sums[k] = 0;
    }
    for (d = 0; d < depth; d += MCU_S4_CHUNK) {
        const int32_t n = depth - d < MCU_S4_CHUNK ? depth - d : MCU_S4_CHUNK;
        for (k = 0; k < rows; ++k) {
            unpack_s4(filter, (size_t)(o + k) * (size_t)depth + (size_t)d, n, chunk + k * n);
        }
        if (rows == 4) {
            int32_t part[4];
            mcu_dot4_s8(x + d, chunk, n, part);
            for (k = 0; k < 4; ++k) {
                sums[k] += part[k];
            }
        } else {
            for (i = 0; i < n; ++i) {
                sums[0] += (int32_t)chunk[i] * (int32_t)x[d + i];
            }
        }
    }
}

#if defined(MCU_MVE)
/* mcu_dot4_s8 straight from four packed rows of an even depth (each starts
 * on a byte): the weights never leave the registers. */
MCU_NOINLINE static void dot4_packed(const int8_t *x, const int8_t *w0, int32_t depth, int32_t sums[4])
{
    const size_t row = (size_t)depth / 2u;
    const uint8_t *p0 = (const uint8_t *)w0, *p1 = p0 + row, *p2 = p1 + row, *p3 = p2 + row;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const int32_t left = depth & 15;
    int32_t blocks;
    for (blocks = depth >> 4; blocks > 0; --blocks) {
        const int8x16_t a = vld1q_s8(x);
        x += 16;
        s0 = vmladavaq_s8(s0, a, s4x16(vldrbq_u16(p0)));
        p0 += 8;
        s1 = vmladavaq_s8(s1, a, s4x16(vldrbq_u16(p1)));
        p1 += 8;
        s2 = vmladavaq_s8(s2, a, s4x16(vldrbq_u16(p2)));
        p2 += 8;
        s3 = vmladavaq_s8(s3, a, s4x16(vldrbq_u16(p3)));
        p3 += 8;
    }
    if (left > 0) {
        /* Lanes past the row: input 0, so whatever weight they hold adds nothing. */
        const mve_pred16_t bytes = vctp16q((uint32_t)left / 2u);
        const int8x16_t a = vldrbq_z_s8(x, vctp8q((uint32_t)left));
        s0 = vmladavaq_s8(s0, a, s4x16(vldrbq_z_u16(p0, bytes)));
        s1 = vmladavaq_s8(s1, a, s4x16(vldrbq_z_u16(p1, bytes)));
        s2 = vmladavaq_s8(s2, a, s4x16(vldrbq_z_u16(p2, bytes)));
        s3 = vmladavaq_s8(s3, a, s4x16(vldrbq_z_u16(p3, bytes)));
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
}
#endif

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Rows this long or shorter take dot4_packed: its sums are 16 times the
 * true ones, and 16 * 65536 * 128 * 8 = 2^30 stays inside int32. */
#define MCU_S4_DSP_MAX_DEPTH 65536

/* mcu_dot4_s8 straight from four packed rows of an even depth, eight
 * weights a word.  Masking a packed word with 0xF0F0F0F0 leaves each high
 * nibble as the top of a byte, 16 times its signed value; shifting the word
 * left by 4 first does the same for the low nibbles.  SXTB16 spreads those
 * bytes into int16 pairs (weights 0, 4 and 2, 6 from the low nibbles; 1, 5
 * and 3, 7 from the high ones), the input bytes are paired to match, and
 * SMLAD adds the products.  The sums are 16 times the int8 kernel's,
 * divided back exactly. */
MCU_NOINLINE MCU_SOURCE_ORDER static void dot4_packed(const int8_t *x, const int8_t *w0, int32_t depth,
                                                      int32_t sums[4])
{
    const int32_t row = depth / 2;
    const int8_t *const end8 = x + (depth & ~(int32_t)7);
    const int8_t *const end = x + depth;
    int32_t s[4] = {0, 0, 0, 0};
    int32_t k;
    while (x != end8) {
        const uint32_t a = mcu_load_s8x4(x), b = mcu_load_s8x4(x + 4);
        const uint32_t ae = (uint32_t)mcu_s8x4_even(a), ao = (uint32_t)mcu_s8x4_odd(a);
        const uint32_t be = (uint32_t)mcu_s8x4_even(b), bo = (uint32_t)mcu_s8x4_odd(b);
        const int32_t x04 = (int32_t)((ae & 0xFFFFu) | (be << 16));
        const int32_t x26 = (int32_t)((ae >> 16) | (be & 0xFFFF0000u));
        const int32_t x15 = (int32_t)((ao & 0xFFFFu) | (bo << 16));
        const int32_t x37 = (int32_t)((ao >> 16) | (bo & 0xFFFF0000u));
        x += 8;
        for (k = 0; k < 4; ++k) {
            const uint32_t w = mcu_load_s8x4(w0 + k * row);
            const uint32_t low = (w << 4) & 0xF0F0F0F0u, high = w & 0xF0F0F0F0u;
            s[k] = __smlad(mcu_s8x4_even(low), x04, s[k]);
            s[k] = __smlad(mcu_s8x4_odd(low), x26, s[k]);
            s[k] = __smlad(mcu_s8x4_even(high), x15, s[k]);
            s[k] = __smlad(mcu_s8x4_odd(high), x37, s[k]);
        }
        w0 += 4;
    }
    for (k = 0; k < 4; ++k) {
        s[k] /= 16;
    }
    for (; x != end; x += 2, ++w0) { /* the last 2, 4 or 6 weights */
        for (k = 0; k < 4; ++k) {
            const uint32_t byte = (uint8_t)w0[k * row];
            s[k] += s4_value(byte & 15u) * (int32_t)x[0] + s4_value(byte >> 4) * (int32_t)x[1];
        }
    }
    for (k = 0; k < 4; ++k) {
        sums[k] = s[k];
    }
}
#endif

/* Memory-plan contract as mcu_fully_connected_s8 (mcu_planner/lowering/
 * fully_connected.py, WALKS): output row b is written only after input row b
 * is read, and no other input row is read for it.  row_offset_terms is never
 * NULL here (the lowering refuses a filter whose terms overflow int32). */
void mcu_fully_connected_s8_s4(const mcu_fully_connected_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    const int32_t depth = p->accum_depth, outputs = p->output_depth;
    const int32_t *terms = p->row_offset_terms;
    int32_t b, o, k;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *x = input + (size_t)b * (size_t)depth;
        int8_t *out = output + (size_t)b * (size_t)outputs;
        /* sum((w + fo) * (x + io)) = sum(w * x) + fo * sum(x) + io * (sum(w) + n * fo) */
        const int32_t input_term = mcu_fully_connected_input_term(p->filter_offset, x, depth);
        for (o = 0; o < outputs;) {
            int32_t sums[4];
            const int32_t rows = outputs - o >= 4 ? 4 : 1;
#if defined(MCU_MVE) || defined(MCU_S4_DSP_MAX_DEPTH)
#if defined(MCU_S4_DSP_MAX_DEPTH)
            if (rows == 4 && (depth & 1) == 0 && depth <= MCU_S4_DSP_MAX_DEPTH) {
#else
            if (rows == 4 && (depth & 1) == 0) {
#endif
                dot4_packed(x, filter + (size_t)o * (size_t)depth / 2u, depth, sums);
            } else {
                dot_rows(x, filter, depth, o, rows, sums);
            }
#else
            dot_rows(x, filter, depth, o, rows, sums);
#endif
            for (k = 0; k < rows; ++k, ++o) {
                out[o] = requantize(p, sums[k] + input_term + terms[o], bias, o);
            }
        }
    }
}
