/* The DSP blocks' inner loops in assembly (mcu_conv_dsp_block_asm.c), for
 * mcu_conv_dsp_block.c: cores with the DSP extension and no Helium. */
#ifndef MCU_CONV_DSP_BLOCK_ASM_H
#define MCU_CONV_DSP_BLOCK_ASM_H

#include "mcu_dsp.h"

#include <stdint.h>

#if defined(MCU_DSP) && !defined(MCU_MVE)
/* Sums of pixels' widened taps against one filter, written in assembly
 * because the eight sums, three pointers and four operands take every
 * register the core has and the compiler spills them (three times the
 * instructions).  mcu_conv_block8_s8(lanes, w, words, sums): sums[j] for
 * pixel j = 0..7, each started at sums[0]'s value on entry (the channel's
 * bias and offset term), over `words` groups of four taps, lanes holding the pairs
 * (t, t+2), (t+1, t+3) of the eight pixels side by side per group (64
 * bytes, word aligned), w the filter's int8 taps.  Each filter word is split
 * once by SXTB16 and each pair of lanes read by one LDRD, so four taps of
 * eight pixels cost 27 instructions for 32 products.  mcu_conv_block4_s8:
 * the same for four pixels (32 bytes per group).  SMLAD wraps as int32
 * additions do, so the sums are those of any other order. */
void mcu_conv_block8_s8(const int32_t *lanes, const int8_t *w, int32_t words, int32_t sums[8]);
void mcu_conv_block4_s8(const int32_t *lanes, const int8_t *w, int32_t words, int32_t sums[4]);
/* Output channels of eight pixels whose taps are widened in the lanes,
 * rescaled as store_channel_s8's folded form with the SSAT clamp, in
 * assembly: the C loop around mcu_conv_block8_s8 spends about as many
 * instructions per channel as the sums of a short filter.  `job` (read
 * once): lanes, their end, the first filter, bias, window offset terms (or
 * NULL: none), multipliers, shifts, out (the first channel of pixel 0),
 * output_c (the pixels' step), output offset, out past the last channel
 * (at least one), the filters' stride.  Each filter is read as whole words
 * (the lanes' spare taps 0).  Every channel must take the folded form
 * (multiplier >= 0, right shift 2 to BLOCK_FOLDED_SHIFT_MAX + 1) and the
 * activation range be all of int8. */
void mcu_conv_block8_channels_s8(const int32_t job[12]);
#endif

#endif /* MCU_CONV_DSP_BLOCK_ASM_H */
