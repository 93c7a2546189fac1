/* Exact tables of gemmlowp's int16 logistic and tanh (built by
 * mcu_planner/gemmlowp16.py), read scalar and on eight Helium lanes: the same
 * values as mcu_fp16_logistic / mcu_fp16_tanh of mcu_fixedpoint.h.
 */
#ifndef MCU_FP16_TABLE_H
#define MCU_FP16_TABLE_H

#include <stdint.h>

/* An exact table of R_k(m) = 1 / (1 + exp(-m)) (Q1.14) as gemmlowp's int16
 * logistic and tanh below compute it for a magnitude m = 0 .. 32768 with k
 * integer bits (mcu_planner/gemmlowp16.py builds it), for m from `first`:
 * knots R_k(min(first + 32 i, last)) less 8, and per magnitude up to `last`
 * a 4-bit correction (two per byte, the even one low, counted from `first`)
 * added to their interpolation, rounded down; beyond `last` R_k stays
 * R_k(last).  Below `first` (0 for a table of its own), R_k(m) is
 * R_(k-1)(2m), read from the `halved` table (one with `first` 0). */
#define MCU_FP16_TABLE_BLOCK_SHIFT 5

typedef struct mcu_fp16_table {
    const int16_t *knots;
    const uint8_t *residuals;
    int32_t last;
    int32_t first;
    const struct mcu_fp16_table *halved;
} mcu_fp16_table;

/* The value at `index` (counted from the table's first magnitude): the
 * knots' interpolation plus the correction. */
static inline int32_t mcu_fp16_table_read(const mcu_fp16_table *t, int32_t index)
{
    const int32_t block = index >> MCU_FP16_TABLE_BLOCK_SHIFT;
    const int32_t offset = index & ((1 << MCU_FP16_TABLE_BLOCK_SHIFT) - 1);
    const int32_t low = t->knots[block], high = t->knots[block + 1];
    const int32_t residual = (int32_t)((uint32_t)t->residuals[index >> 1] >> ((uint32_t)(index & 1) << 2)) & 15;
    return low + (((high - low) * offset + (1 << (MCU_FP16_TABLE_BLOCK_SHIFT - 1))) >> MCU_FP16_TABLE_BLOCK_SHIFT) +
           residual;
}

/* R_k(m) from its table. */
static inline int32_t mcu_fp16_table_reciprocal_of_exp(const mcu_fp16_table *t, int32_t magnitude)
{
    if (magnitude < t->first) {
        const mcu_fp16_table *const halved = t->halved;
        const int32_t doubled = 2 * magnitude;
        return mcu_fp16_table_read(halved, doubled < halved->last ? doubled : halved->last);
    }
    return mcu_fp16_table_read(t, (magnitude < t->last ? magnitude : t->last) - t->first);
}

/* mcu_fp16_logistic(a, k) from the table of R_k (one of its own: `first`
 * 0, which keeps the halved table's test out of the gates' loop): 2 R_k(|a|),
 * saturated, mirrored for a < 0 (the table holds 1/2 at 0: logistic(0) =
 * 1/2, tanh(0) = 0). */
static inline int16_t mcu_fp16_table_logistic(const mcu_fp16_table *t, int16_t a)
{
    const int32_t magnitude = a < 0 ? -(int32_t)a : (int32_t)a;
    int32_t value = 2 * mcu_fp16_table_read(t, magnitude < t->last ? magnitude : t->last);
    value = value > INT16_MAX ? INT16_MAX : value;
    return (int16_t)(a < 0 ? INT16_MAX - value : value);
}

/* mcu_fp16_tanh(a, k) from the table of R_(k+1): 4 (R_(k+1)(|a|) - 1/2),
 * saturated, negated for a < 0. */
static inline int16_t mcu_fp16_table_tanh(const mcu_fp16_table *t, int16_t a)
{
    const int32_t magnitude = a < 0 ? -(int32_t)a : (int32_t)a;
    int32_t value = 4 * (mcu_fp16_table_reciprocal_of_exp(t, magnitude) - (1 << 13));
    value = value > INT16_MAX ? INT16_MAX : value;
    return (int16_t)(a < 0 ? -value : value);
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && defined(__GNUC__)
#include <arm_mve.h>

/* ---- the int16 logistic and tanh tables read on eight lanes (Helium) ---- */

/* mcu_fp16_table_read on eight lanes: the knots and the correction bytes
 * gathered by lane, the interpolation on int16 lanes
 * (gemmlowp16.reciprocal_table keeps its product and half below 2^15). */
static inline int16x8_t mcu_fp16_table_read_x8(const mcu_fp16_table *t, uint16x8_t index)
{
    const uint16x8_t block = vshrq_n_u16(index, MCU_FP16_TABLE_BLOCK_SHIFT);
    const int16x8_t offset =
        vreinterpretq_s16_u16(vandq_u16(index, vdupq_n_u16((1u << MCU_FP16_TABLE_BLOCK_SHIFT) - 1u)));
    const int16x8_t low = vldrhq_gather_shifted_offset_s16(t->knots, block);
    const int16x8_t high = vldrhq_gather_shifted_offset_s16(t->knots, vaddq_n_u16(block, 1));
    const uint16x8_t packed = vldrbq_gather_offset_u16(t->residuals, vshrq_n_u16(index, 1));
    const int16x8_t nibble_shift = vreinterpretq_s16_u16(vshlq_n_u16(vandq_u16(index, vdupq_n_u16(1)), 2));
    const uint16x8_t residual = vandq_u16(vshlq_u16(packed, vnegq_s16(nibble_shift)), vdupq_n_u16(15));
    const int16x8_t step = vmulq_s16(vsubq_s16(high, low), offset);
    const int16x8_t interpolated = vaddq_s16(
        low, vshrq_n_s16(vaddq_n_s16(step, 1 << (MCU_FP16_TABLE_BLOCK_SHIFT - 1)), MCU_FP16_TABLE_BLOCK_SHIFT));
    return vaddq_s16(interpolated, vreinterpretq_s16_u16(residual));
}

/* mcu_fp16_table_reciprocal_of_exp on eight lanes: with a `halved` table,
 * both reads, each lane taking its own. */
static inline int16x8_t mcu_fp16_table_reciprocal_of_exp_x8(const mcu_fp16_table *t, int16x8_t a)
{
    /* |a| read unsigned: INT16_MIN (its own negation) is magnitude 32768. */
    const uint16x8_t magnitude = vreinterpretq_u16_s16(vabsq_s16(a));
    /* Lanes below `first` read index 0 here (saturating subtract). */
    const int16x8_t own = mcu_fp16_table_read_x8(
        t, vqsubq_n_u16(vminq_u16(magnitude, vdupq_n_u16((uint16_t)t->last)), (uint16_t)t->first));
    const mcu_fp16_table *const halved = t->halved;
    if (t->first == 0) {
        return own;
    }
    /* 2m saturates at 65535 before the halved table's `last` clamps it. */
    return vpselq_s16(
        mcu_fp16_table_read_x8(halved, vminq_u16(vqshlq_n_u16(magnitude, 1), vdupq_n_u16((uint16_t)halved->last))),
        own, vcmphiq_u16(vdupq_n_u16((uint16_t)t->first), magnitude));
}

/* mcu_fp16_table_logistic on eight lanes. */
static inline int16x8_t mcu_fp16_table_logistic_x8(const mcu_fp16_table *t, int16x8_t a)
{
    const uint16x8_t magnitude = vreinterpretq_u16_s16(vabsq_s16(a));
    const int16x8_t value =
        vqshlq_n_s16(mcu_fp16_table_read_x8(t, vminq_u16(magnitude, vdupq_n_u16((uint16_t)t->last))), 1);
    return vpselq_s16(vsubq_s16(vdupq_n_s16(INT16_MAX), value), value, vcmpltq_n_s16(a, 0));
}

/* mcu_fp16_table_tanh on eight lanes (R >= 8190: only the top saturates). */
static inline int16x8_t mcu_fp16_table_tanh_x8(const mcu_fp16_table *t, int16x8_t a)
{
    const int16x8_t value = vqshlq_n_s16(vsubq_n_s16(mcu_fp16_table_reciprocal_of_exp_x8(t, a), 1 << 13), 2);
    return vpselq_s16(vnegq_s16(value), value, vcmpltq_n_s16(a, 0));
}
#endif

#endif /* MCU_FP16_TABLE_H */
