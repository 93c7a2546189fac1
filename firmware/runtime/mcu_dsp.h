/* Dual 16-bit multiply-accumulate for the int8 inner products on cores with
 * the DSP extension (Cortex-M4, M7, M33 with DSP, M55).
 *
 * Four int8 values are read as one word and split into two int16 pairs, the
 * even bytes (0, 2) and the odd ones (1, 3); SMLAD then adds both products of
 * a pair to a 32-bit sum.  The products are those of the plain C loop, only
 * added in another order, and int32 addition wraps the same in any order, so
 * the sums are identical.  Without MCU_DSP the kernels keep their C loops.
 */
#ifndef MCU_DSP_H
#define MCU_DSP_H

#include "mcu_runtime.h"

/* For the functions around these loops: gcc's scheduling before register
 * allocation moves a pass's word loads up front, which holds more values
 * than the core has registers, and the loop then spills and reloads sums and
 * pointers on every pass.  Left in source order, the loop fits. */
#if defined(__GNUC__) && !defined(__clang__)
#define MCU_SOURCE_ORDER __attribute__((optimize("no-schedule-insns")))
#else
#define MCU_SOURCE_ORDER
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32) && defined(__GNUC__)
#define MCU_DSP 1

#include <arm_acle.h>
#include <string.h>

/* memcpy keeps the read C99-correct at any alignment; gcc makes it one LDR,
 * which these cores allow unaligned on normal memory. */
static inline uint32_t mcu_load_s8x4(const int8_t *p)
{
    uint32_t word;
    memcpy(&word, p, sizeof word);
    return word;
}

/* Bytes 0 and 2, sign-extended to an int16 pair. */
static inline int32_t mcu_s8x4_even(uint32_t word)
{
    return __sxtb16((int32_t)word);
}

/* Bytes 1 and 3.  SXTB16 with its built-in rotation: gcc 12's ACLE has no
 * rotating form and would spend a separate ROR. */
static inline int32_t mcu_s8x4_odd(uint32_t word)
{
    int32_t pair;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(pair) : "r"(word));
    return pair;
}

/* `offset` in both halves of a word, for SXTAB16. */
static inline int32_t mcu_s16x2_splat(int32_t offset)
{
    const uint32_t half = (uint32_t)offset & 0xFFFFu;
    return (int32_t)(half | (half << 16));
}

/* Both int16 halves doubled (SADD16): int8 values widened stay far inside
 * int16. */
static inline int32_t mcu_s16x2_double(int32_t pair)
{
    return (int32_t)__sadd16(pair, pair);
}

/* Bytes 0 and 2 (1 and 3) plus `offset2` (a splat): SXTAB16 adds the offset
 * in the same instruction.  Input offsets and int8 values sum to at most 255
 * in magnitude, well inside int16. */
static inline int32_t mcu_s8x4_even_plus(uint32_t word, int32_t offset2)
{
    return __sxtab16(offset2, (int32_t)word);
}

static inline int32_t mcu_s8x4_odd_plus(uint32_t word, int32_t offset2)
{
    int32_t pair;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(pair) : "r"(offset2), "r"(word));
    return pair;
}

/* SMMLAR: (acc * 2^32 + a * b + 2^31) >> 32. */
static inline MCU_ALWAYS_INLINE int32_t mcu_smmlar(int32_t a, int32_t b, int32_t acc)
{
    int32_t high;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(high) : "r"(a), "r"(b), "r"(acc));
    return high;
}

/* SSAT #8: clamped to int8 (arm_acle's __ssat is unsigned in some gcc). */
static inline MCU_ALWAYS_INLINE int32_t mcu_ssat8(int32_t v)
{
    int32_t clamped;
    __asm__("ssat %0, #8, %1" : "=r"(clamped) : "r"(v));
    return clamped;
}

#endif /* DSP extension */

/* Cores with the M-profile vector extension (Helium; Cortex-M55) take the
 * inner products without offsets sixteen int8 values at a time: VMLADAVA
 * adds all sixteen products to a 32-bit sum, and tail predication (VCTP)
 * covers the last values without reading past the run.  Same products,
 * another order of the same int32 additions: the same sums. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && defined(__GNUC__)
#define MCU_MVE 1

#include <arm_mve.h>

#endif /* MVE */

#endif /* MCU_DSP_H */
