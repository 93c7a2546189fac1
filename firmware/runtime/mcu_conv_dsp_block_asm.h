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
/* Output channels of eight pixels whose taps are widened and doubled in the
 * lanes, in assembly: the C loop around mcu_conv_block8_s8 spends about as
 * many instructions per channel as the sums of a short filter.  `job` (read
 * once): lanes, their end, the first filter, the filters' stride, bias,
 * window offset terms (or NULL: none), multipliers, shifts, out (the first
 * channel of pixel 0), output_c (the pixels' step), out past the last
 * channel (at least one), output offset.  Each filter is read as whole
 * words (the lanes' spare taps 0).  Every sum starts at 2 (bias + term) and
 * so is the doubled sum 2 acc, whose rescale is one SMMLAR:
 * SaturatingRoundingDoublingHighMul(acc, m) = floor((2 acc m + 2^31) / 2^32)
 * and RoundingDivideByPOT(t, e) = floor((t + 2^(e-1) - [acc < 0]) / 2^e)
 * (mcu_requant.h, the sign of acc standing for that of t), the output offset
 * folded in as offset 2^e for e <= 22 and added after the shift above.  The
 * caller checks (mcu_conv_dsp_block.c, block_rescale_in_asm) that every
 * channel has multiplier >= 0 and a right shift of 1 to 31, |acc| <= 2^29,
 * and that the activation range is all of int8 (one SSAT). */
void mcu_conv_block8_channels_s8(const int32_t job[12]);
#endif

#endif /* MCU_CONV_DSP_BLOCK_ASM_H */
