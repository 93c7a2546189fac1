/* What the M4 blocks of eight pixels (mcu_conv_dsp_block.c) share with the
 * first layers' blocks (mcu_conv_few_channels_dsp.c): the block sizes, the
 * C rescale of a channel's sums and the call of the assembly for a run of
 * channels (mcu_conv_dsp_block_asm.h). */
#ifndef MCU_CONV_DSP_BLOCK_INTERNAL_H
#define MCU_CONV_DSP_BLOCK_INTERNAL_H

#include "mcu_conv_dsp_block_asm.h"
#include "mcu_conv_internal.h"

#if defined(MCU_DSP) && !defined(MCU_MVE)

/* Pixels per block: eight, or four for the last 1-4 pixels (pointwise: 3-4). */
#define BLOCK_PIXELS 8
#define SHORT_BLOCK_PIXELS 4

/* The doubled sums' bounds: |bias + offset term| <= 2^28 and n <= 2^13,
 * so that with products of at most 255 * 128 every sum is within 2^29. */
#define BLOCK_DOUBLED_TAPS_MAX 8192
#define BLOCK_DOUBLED_START_MAX (1 << 28)

/* Right shifts e - 1 up to this take the output offset into the rounding
 * term: |high word| <= 2^30 + 2^(e-2) + 128 * 2^(e-1) < 2^31 for e <= 23. */
#define BLOCK_FOLDED_SHIFT_MAX 22

/* The sums of `count` pixels of one channel, rescaled by `m` into
 * o[0], o[step], ...: the steps of requantize_right_shift_s8 with the
 * channel's constants in registers (the right-shift form: every multiplier
 * QuantizeMultiplier makes below 1/4 with a positive scale), others through
 * requantize_prepared_s8.  `full`: the activation range is all of int8. */
static inline MCU_ALWAYS_INLINE void store_channel_s8(const conv_output_range *range, const int32_t *sums,
                                                      int32_t count, const mcu_prepared_mul *m, int8_t *o, size_t step,
                                                      int full)
{
    int32_t j;
    if (m->high_shift >= 0 && m->high_shift <= BLOCK_FOLDED_SHIFT_MAX) {
        /* (h + offset * 2^s) >> s = (h >> s) + offset exactly (a floor), so
         * the offset joins the high word's rounding term. */
        const int32_t multiplier = m->multiplier, shift = m->high_shift;
        const int32_t round = (int32_t)((uint32_t)m->high_round + ((uint32_t)range->output_offset << shift));
        const int32_t low = range->act_min, high = range->act_max;
        for (j = 0; j < count; ++j, o += step) {
            /* The rounding term c = +-2^30 (by the sign of x) and round
             * x 2^32 as one 64-bit addend: high word round + (x >> 31),
             * low word c's; then the high word of the sum is
             * mcu_apply_prepared_right_shift's high word plus round. */
            const int32_t x = sums[j];
            const uint32_t high_word = (uint32_t)round + (uint32_t)(x >> 31);
            const uint32_t low_word = 0x40000000u ^ ((uint32_t)x & 0x80000000u);
            const int64_t addend = (int64_t)(((uint64_t)high_word << 32) | low_word);
            const int32_t v = (int32_t)(((int64_t)x * (int64_t)multiplier + addend) >> 32) >> shift;
            *o = (int8_t)(full ? mcu_ssat8(v) : mcu_clamp_s32(v, low, high));
        }
    } else if (m->high_shift >= 0) {
        for (j = 0; j < count; ++j, o += step) {
            *o = requantize_right_shift_s8(range, sums[j], m);
        }
    } else {
        for (j = 0; j < count; ++j, o += step) {
            *o = requantize_prepared_s8(range, sums[j], m);
        }
    }
}

/* Channels oc .. end - 1 (at least one) of a full block of eight pixels
 * whose `words` groups of lanes are doubled, through
 * mcu_conv_block8_channels_s8: filters `stride` apart from `filter`, sums
 * from bias (+ terms, unless NULL); outputs from out (pixel 0, channel 0). */
typedef struct {
    const int32_t *lanes;
    int32_t words;
    const int8_t *filter;
    int32_t stride;
    const int32_t *bias;
    const int32_t *terms;
} block_asm_job;

static inline void block8_channels_in_asm(const mcu_conv_s8_params *p, const block_asm_job *a, int32_t oc, int32_t end,
                                   int8_t *out)
{
    const int32_t job[12] = {(int32_t)(uintptr_t)a->lanes,
                             (int32_t)(uintptr_t)(a->lanes + 2 * BLOCK_PIXELS * a->words),
                             (int32_t)(uintptr_t)(a->filter + (size_t)oc * (size_t)a->stride),
                             a->stride,
                             (int32_t)(uintptr_t)(a->bias + oc),
                             (int32_t)(uintptr_t)(a->terms ? a->terms + oc : NULL),
                             (int32_t)(uintptr_t)(p->output_multiplier + oc),
                             (int32_t)(uintptr_t)(p->output_shift + oc),
                             (int32_t)(uintptr_t)(out + oc),
                             p->output_c,
                             (int32_t)(uintptr_t)(out + end),
                             p->output_offset};
    int32_t j, c;
    mcu_conv_block8_channels_s8(job);
    if (p->act_min <= -128 && p->act_max >= 127) {
        return;
    }
    /* A fused activation (RELU6 as a narrower range): the assembly saturates
     * to int8 only, and clamping its result to [act_min, act_max], inside
     * [-128, 127], gives what clamping the rescaled sum gives. */
    for (j = 0; j < BLOCK_PIXELS; ++j) {
        int8_t *o = out + (size_t)j * (size_t)p->output_c;
        for (c = oc; c < end; ++c) {
            o[c] = (int8_t)MCU_MIN(MCU_MAX((int32_t)o[c], p->act_min), p->act_max);
        }
    }
}

/* The lanes' first word in `columns`: word aligned (LDRD). */
static inline int32_t *block_lanes(int8_t *columns)
{
    const uintptr_t at = ((uintptr_t)columns + 3u) & ~(uintptr_t)3u;
    return (int32_t *)(void *)at;
}

#endif /* MCU_DSP && !MCU_MVE */

#endif /* MCU_CONV_DSP_BLOCK_INTERNAL_H */
