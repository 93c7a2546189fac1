/* Helium (M-profile vector extension, Cortex-M55) blocks of the int8
 * convolutions (mcu_conv_helium.c, mcu_depthwise.c): several output pixels per pass, so that each
 * filter vector is loaded once for all of them, and requantization on four
 * lanes at a time.
 *
 * Both blocks take windows wholly inside the input (or copied with the input
 * zero point in their padding), whose input offset window_offset_terms adds
 * once per output: int32 sums wrap the same in any order, so the values are
 * those of the reference loops.  Nothing here is compiled without MCU_MVE. */
#ifndef MCU_CONV_HELIUM_H
#define MCU_CONV_HELIUM_H

#include "mcu_conv.h"
#include "mcu_dsp.h"
#include "mcu_quant.h"

#if defined(MCU_MVE)

/* What requantization reads from the parameters, loaded once per call: the
 * stores through int8 pointers could alias any of it, so the compiler would
 * otherwise reload it for every output channel. */
typedef struct {
    const int32_t *multiplier;
    const int32_t *shift;
    const int32_t *bias;
    int32_t output_offset;
    int32x4_t act_min;
    int32x4_t act_max;
} mcu_helium_requant;

static inline MCU_ALWAYS_INLINE mcu_helium_requant mcu_helium_requant_of(const mcu_conv_s8_params *p,
                                                                         const int32_t *bias)
{
    mcu_helium_requant q;
    q.multiplier = p->output_multiplier;
    q.shift = p->output_shift;
    q.bias = bias;
    q.output_offset = p->output_offset;
    q.act_min = vdupq_n_s32(p->act_min);
    q.act_max = vdupq_n_s32(p->act_max);
    return q;
}

/* Lane r of `acc`, output channel oc of pixel r (its bytes at out + oc +
 * offsets[r]), requantized and stored for the lanes `pixels` selects. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_channel(const mcu_helium_requant *q, int32x4_t acc, int32_t oc,
                                                              uint32x4_t offsets, mve_pred16_t pixels, int8_t *out)
{
    if (q->bias) {
        acc = vaddq_n_s32(acc, q->bias[oc]);
    }
    acc = mcu_mul_by_quantized_mul_x4_n(acc, q->multiplier[oc], q->shift[oc]);
    acc = vaddq_n_s32(acc, q->output_offset);
    acc = vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max);
    vstrbq_scatter_offset_p_s32(out + oc, offsets, acc, pixels);
}

/* mcu_helium_store_channel for all four lanes. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_channel_all(const mcu_helium_requant *q, int32x4_t acc,
                                                                  int32_t oc, uint32x4_t offsets, int8_t *out)
{
    if (q->bias) {
        acc = vaddq_n_s32(acc, q->bias[oc]);
    }
    acc = mcu_mul_by_quantized_mul_x4_n(acc, q->multiplier[oc], q->shift[oc]);
    acc = vaddq_n_s32(acc, q->output_offset);
    acc = vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max);
    vstrbq_scatter_offset_s32(out + oc, offsets, acc);
}

static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_lanes(int32_t s0, int32_t s1, int32_t s2, int32_t s3)
{
    int32x4_t v = vdupq_n_s32(s0);
    v = vsetq_lane_s32(s1, v, 1);
    v = vsetq_lane_s32(s2, v, 2);
    return vsetq_lane_s32(s3, v, 3);
}

/* Channels oc .. oc + 3 (the lanes `lanes` selects) of one pixel, the bias
 * already in `acc`. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_pixel(const mcu_helium_requant *q, int32x4_t acc,
                                                            int32x4_t multiplier, mcu_shift_x4 shift,
                                                            mve_pred16_t lanes, int8_t *out)
{
    acc = vaddq_n_s32(mcu_mul_by_quantized_mul_x4_split(acc, multiplier, shift), q->output_offset);
    vstrbq_p_s32(out, vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max), lanes);
}

/* Channels oc .. oc + 3 of `pixels` (1 to 4) pixels (sums[4 k + j]: the raw
 * sums of channel oc + j of pixel k) requantized four channels per vector,
 * pixel k's four bytes stored at out + k x output_c: the channels' bias,
 * offset terms, multipliers and shifts loaded once for the pixels. */
static inline MCU_ALWAYS_INLINE void mcu_helium_store_four_channels(const mcu_conv_s8_params *p,
                                                                    const mcu_helium_requant *q, const int32_t sums[16],
                                                                    int32_t oc, int32_t pixels, int8_t *out)
{
    const int32x4_t multiplier = vldrwq_s32(q->multiplier + oc);
    const mcu_shift_x4 shift = mcu_split_shift_x4(vldrwq_s32(q->shift + oc));
    const size_t step = (size_t)p->output_c;
    int32x4_t start = vldrwq_s32(p->window_offset_terms + oc);
    int32_t k;
    if (q->bias) {
        start = vaddq_s32(start, vldrwq_s32(q->bias + oc));
    }
#pragma GCC unroll 4
    for (k = 0; k < pixels; ++k, out += step) {
        int32x4_t acc = mcu_mul_by_quantized_mul_x4_split(vaddq_s32(vldrwq_s32(sums + 4 * k), start), multiplier, shift);
        acc = vaddq_n_s32(acc, q->output_offset);
        vstrbq_s32(out, vminq_s32(vmaxq_s32(acc, q->act_min), q->act_max));
    }
}

/* Adds to s[0 .. 3] the products of four rows x[0 .. 3] and a filter w over
 * `blocks` whole vectors and, with `rest`, a last one under `tail` (the
 * loads zero the other lanes). */
static inline MCU_ALWAYS_INLINE void mcu_helium_rows4_sums(const int8_t *const x[4], const int8_t *w, int32_t blocks,
                                                           int rest, mve_pred16_t tail, int32_t s[4])
{
    const int8_t *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], k;
    for (k = blocks; k > 0; --k) {
        const int8x16_t wv = vldrbq_s8(w);
        s0 = vmladavaq_s8(s0, vldrbq_s8(x0), wv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(x1), wv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(x2), wv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(x3), wv);
        w += 16;
        x0 += 16;
        x1 += 16;
        x2 += 16;
        x3 += 16;
    }
    if (rest) {
        const int8x16_t wv = vldrbq_z_s8(w, tail);
        s0 = vmladavaq_s8(s0, vldrbq_z_s8(x0, tail), wv);
        s1 = vmladavaq_s8(s1, vldrbq_z_s8(x1, tail), wv);
        s2 = vmladavaq_s8(s2, vldrbq_z_s8(x2, tail), wv);
        s3 = vmladavaq_s8(s3, vldrbq_z_s8(x3, tail), wv);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* The taps of the depthwise windows of a pass (mcu_helium_depthwise_any_s8, mcu_depthwise.c),
 * the same for its pixels: `rows` x `cols` taps inside the input, `tap`
 * bytes apart, and rows row[i] bytes apart for pixel i (a window read in
 * place and one copied into a column can share a pass); windows wholly
 * `inside` take the input offset from window_offset_terms, the others add
 * `offset` to every tap.  Output pixels are `out_step` bytes apart. */
typedef struct {
    size_t row[4];
    size_t tap;
    int32_t rows;
    int32_t cols;
    int32_t offset;
    int inside;
    size_t out_step;
} mcu_helium_taps;

/* Loads four int8 values widened to int32 lanes: all of them, or (a tail of
 * channels) those `lanes` selects, the others 0. */
static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_load_s8x4(const int8_t *at, int full, mve_pred16_t lanes)
{
    return full ? vldrbq_s32(at) : vldrbq_z_s32(at, lanes);
}

/* Four int32 values: all of them, or those `lanes` selects, the others 0. */
static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_load_s32x4(const int32_t *at, int full, mve_pred16_t lanes)
{
    return full ? vldrwq_s32(at) : vldrwq_z_s32(at, lanes);
}

/* The same plus the input offset when `with_offset` (windows reaching into
 * the padding). */
static inline MCU_ALWAYS_INLINE int32x4_t mcu_helium_load_input_s8x4(const int8_t *at, int full, mve_pred16_t lanes,
                                                                     int with_offset, int32_t offset)
{
    const int32x4_t v = mcu_helium_load_s8x4(at, full, lanes);
    return with_offset ? vaddq_n_s32(v, offset) : v;
}


/* The int8 convolutions' Helium drivers (mcu_conv_helium.c; the pointwise
 * one with the rows kernel in mcu_conv_helium_rows.c). */
/* Pointwise: four pixels per mcu_helium_conv_rows_s8 pass. */
void mcu_conv_1x1_helium_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output);
/* Windows of up to MCU_CONV_COLUMN_MAX values copied into four columns
 * (4 x window bytes at `column_space`). */
void mcu_conv_2d_s8_columns_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, int8_t *column_space);
/* Windows of any length in chunks of whole window rows copied into four
 * columns, the sums carried from chunk to chunk as int32 in front of them
 * (`scratch`, p->column_bytes: 16 x output_c bytes of sums, then the
 * columns); 0 (nothing done) when not even one row fits. */
int mcu_conv_2d_s8_chunks_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *scratch);
/* Windows of any length read in place; 0 (nothing done) when they reach into
 * padding rows and `zero_row` (p->column_bytes) is shorter than a window
 * row's span. */
int mcu_conv_2d_s8_long_windows_helium(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                       const int32_t *bias, int8_t *output, int8_t *zero_row);

#endif /* MCU_MVE */

#endif /* MCU_CONV_HELIUM_H */
