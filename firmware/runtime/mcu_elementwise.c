/* Follows reference_integer_ops::Add / BroadcastAdd (int8 ADD, and SUB via
 * the negated input2 multiplier), reference_integer_ops::Mul / BroadcastMul
 * (int8 MUL), reference_ops' uint8 Add / Sub / Mul (the same arithmetic on
 * uint8 values) and reference_ops Add/Sub/Mul for float32 in TensorFlow Lite. */
#include "mcu_elementwise.h"

#include "mcu_broadcast.h"
#include "mcu_dsp.h"
#include "mcu_quant.h"

#if defined(MCU_MVE)
/* Helium: four elements of a row per pass, one per 32-bit lane, with the
 * scalar loop's arithmetic lane by lane (the _x4 helpers of mcu_quant.h are
 * mcu_mul_by_quantized_mul on each lane); tail predication covers the last
 * 1 to 3.  Contiguous rows load four bytes at once; other strides (0: a
 * broadcast input) gather them at 0, s, 2s, 3s.  `contiguous` and
 * `is_signed` are constants where these are inlined, so each combination
 * compiles to a loop without branches. */
static inline MCU_ALWAYS_INLINE int32x4_t mve_load_8bit(const uint8_t *x, uint32x4_t offsets, int contiguous,
                                                        mve_pred16_t lanes, int is_signed)
{
    if (contiguous) {
        return is_signed ? vldrbq_z_s32((const int8_t *)x, lanes) : vreinterpretq_s32_u32(vldrbq_z_u32(x, lanes));
    }
    return is_signed ? vldrbq_gather_offset_z_s32((const int8_t *)x, offsets, lanes)
                     : vreinterpretq_s32_u32(vldrbq_gather_offset_z_u32(x, offsets, lanes));
}

static inline uint32x4_t mve_lane_offsets(int32_t stride)
{
    return vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)stride);
}

static inline MCU_ALWAYS_INLINE void add_row_8bit_mve(const mcu_add_s8_params *p, const uint8_t *a, int32_t stride1,
                                                      const uint8_t *b, int32_t stride2, uint8_t *out, int32_t n,
                                                      int contiguous, int is_signed)
{
    /* Every ADD shift is <= 0 (rescale factors below one): no left shift. */
    const int32x4_t right1 = vdupq_n_s32(p->input1_shift), right2 = vdupq_n_s32(p->input2_shift);
    const int32x4_t out_right = vdupq_n_s32(p->output_shift);
    const uint32x4_t offsets1 = mve_lane_offsets(stride1), offsets2 = mve_lane_offsets(stride2);
    int32_t left;
    for (left = n; left > 0; left -= 4, a += 4 * stride1, b += 4 * stride2, out += 4) {
        const mve_pred16_t lanes = vctp32q((uint32_t)left);
        const int32x4_t shifted1 = vshlq_r_s32(
            vaddq_n_s32(mve_load_8bit(a, offsets1, contiguous, lanes, is_signed), p->input1_offset), p->left_shift);
        const int32x4_t shifted2 = vshlq_r_s32(
            vaddq_n_s32(mve_load_8bit(b, offsets2, contiguous, lanes, is_signed), p->input2_offset), p->left_shift);
        const int32x4_t sum = vaddq_s32(mcu_mul_by_quantized_mul_n_x4(shifted1, p->input1_multiplier, 0, right1),
                                        mcu_mul_by_quantized_mul_n_x4(shifted2, p->input2_multiplier, 0, right2));
        int32x4_t raw = vaddq_n_s32(mcu_mul_by_quantized_mul_n_x4(sum, p->output_multiplier, 0, out_right),
                                    p->output_offset);
        raw = vmaxq_s32(vminq_s32(raw, vdupq_n_s32(p->act_max)), vdupq_n_s32(p->act_min));
        vstrbq_p_u32(out, vreinterpretq_u32_s32(raw), lanes);
    }
}

static inline MCU_ALWAYS_INLINE void mul_row_8bit_mve(const mcu_mul_s8_params *p, const uint8_t *a, int32_t stride1,
                                                      const uint8_t *b, int32_t stride2, uint8_t *out, int32_t n,
                                                      int contiguous, int is_signed)
{
    const int32x4_t out_multiplier = vdupq_n_s32(p->output_multiplier), out_shift = vdupq_n_s32(p->output_shift);
    const uint32x4_t offsets1 = mve_lane_offsets(stride1), offsets2 = mve_lane_offsets(stride2);
    int32_t left;
    for (left = n; left > 0; left -= 4, a += 4 * stride1, b += 4 * stride2, out += 4) {
        const mve_pred16_t lanes = vctp32q((uint32_t)left);
        const int32x4_t product =
            vmulq_s32(vaddq_n_s32(mve_load_8bit(a, offsets1, contiguous, lanes, is_signed), p->input1_offset),
                      vaddq_n_s32(mve_load_8bit(b, offsets2, contiguous, lanes, is_signed), p->input2_offset));
        int32x4_t raw =
            vaddq_n_s32(mcu_mul_by_quantized_mul_x4(product, out_multiplier, out_shift), p->output_offset);
        raw = vmaxq_s32(vminq_s32(raw, vdupq_n_s32(p->act_max)), vdupq_n_s32(p->act_min));
        vstrbq_p_u32(out, vreinterpretq_u32_s32(raw), lanes);
    }
}

/* ADD and SUB of two contiguous rows, eight elements per pass in 16-bit
 * lanes where the values allow it, with each rounding of the scalar loop
 * kept (the lane steps are derived below):
 * - (x + offset) << left_shift: one 16-bit multiply-add of x by
 *   2^(left_shift - 16) plus offset * 2^(left_shift - 16) (|x + offset| <=
 *   255, so up to left_shift 23 it fits int16; up to 21, as
 *   here, the sums below stay under 2^30), then VSHLLB / VSHLLT by 16
 *   widen the even and odd lanes to the 32-bit shifted values;
 * - an input rescale with shift 0 is the doubling high mul alone (VQRDMULH);
 *   TFLite's input multipliers are input_scale / (2 * max input scale), so
 *   the larger-scale input always has 0.5, i.e. shift 0 (the other one goes
 *   second here, SUB negating its own factor instead); a second input of
 *   scale 0.5 as well (equal scales) takes the right-shift form below;
 * - a rescale by a right shift e >= 1 rounds ties away from zero: the high
 *   mul t minus 1 where t < 0, then VRSHL's round-half-up shift.  With a
 *   multiplier >= 0 (a negative one is moved into the 16-bit factor) t < 0
 *   only for negative x, and for negative x with t = 0 the -1 still rounds
 *   to 0 (e >= 1), so the sign of x is the correction: VQRDMLAH adds the
 *   high mul to it in one step (it cannot saturate: |x| < 2^29);
 * - the output rescale the same way on the sum (|sum| < 2^30);
 * - VQMOVNB / VQMOVNT narrow the even and odd lanes back in order; a value
 *   outside int16 saturates, and after the saturating add of the output
 *   zero point it clamps to the same end of the activation range as the
 *   exact value would, so the narrowing store of the clamped lanes writes
 *   the scalar loop's bytes. */
typedef struct {
    int16_t factor; /* +-2^(left_shift - 16) */
    int16_t offset; /* input offset * factor */
    int32_t multiplier;
    int32_t shift; /* -e */
} add_lane_input;

typedef struct {
    add_lane_input first; /* shift 0 */
    add_lane_input second;
    int32_t output_multiplier;
    int32_t output_shift;
    int16_t output_offset;
    int16_t act_min;
    int16_t act_max;
} add_lane_plan;

static int add_lane_input_for(int32_t offset, int32_t multiplier, int32_t shift, int32_t left_shift,
                              int is_second, add_lane_input *in)
{
    int32_t factor = (int32_t)1 << (left_shift - 16);
    if (shift < -31 || shift > 0 || multiplier == INT32_MIN) {
        return 0;
    }
    if (is_second && shift == 0 && (multiplier == (int32_t)1 << 30 || multiplier == -((int32_t)1 << 30))) {
        /* x * 0.5 as x * (1 - 2^-31) (the high mul returns x: |x| < 2^30)
         * halved with rounding (x is even: exact), in the right-shift form. */
        multiplier = multiplier > 0 ? INT32_MAX : -INT32_MAX;
        shift = -1;
    }
    if (shift < 0 && multiplier < 0) {
        factor = -factor;
        multiplier = -multiplier;
    }
    in->factor = (int16_t)factor;
    in->offset = (int16_t)(offset * factor);
    in->multiplier = multiplier;
    in->shift = shift;
    return 1;
}

/* 0 where the 16-bit lanes do not reproduce the scalar loop. */
static int add_lane_plan_for(const mcu_add_s8_params *p, add_lane_plan *plan)
{
    const int swap = p->input1_shift != 0;
    if (p->left_shift < 16 || p->left_shift > 21 || p->output_shift > -1 || p->output_shift < -31 ||
        p->output_multiplier < 0 || (p->input1_shift != 0 && p->input2_shift != 0) ||
        !add_lane_input_for(swap ? p->input2_offset : p->input1_offset,
                            swap ? p->input2_multiplier : p->input1_multiplier,
                            swap ? p->input2_shift : p->input1_shift, p->left_shift, 0, &plan->first) ||
        !add_lane_input_for(swap ? p->input1_offset : p->input2_offset,
                            swap ? p->input1_multiplier : p->input2_multiplier,
                            swap ? p->input1_shift : p->input2_shift, p->left_shift, 1, &plan->second) ||
        plan->second.shift == 0) {
        return 0;
    }
    plan->output_multiplier = p->output_multiplier;
    plan->output_shift = p->output_shift;
    plan->output_offset = (int16_t)p->output_offset;
    plan->act_min = (int16_t)p->act_min;
    plan->act_max = (int16_t)p->act_max;
    return 1 + swap;
}

static inline MCU_ALWAYS_INLINE int32x4_t add_lane_rescale(int32x4_t x, int32_t multiplier, int32_t shift, int shifted)
{
    if (!shifted) {
        return vqrdmulhq_n_s32(x, multiplier);
    }
    return vrshlq_n_s32(vqrdmlahq_n_s32(vshrq_n_s32(x, 31), x, multiplier), shift);
}

static inline MCU_ALWAYS_INLINE int32x4_t add_lanes(const add_lane_plan *plan, int32x4_t x1, int32x4_t x2)
{
    const int32x4_t sum = vaddq_s32(add_lane_rescale(x1, plan->first.multiplier, 0, 0),
                                    add_lane_rescale(x2, plan->second.multiplier, plan->second.shift, 1));
    return add_lane_rescale(sum, plan->output_multiplier, plan->output_shift, 1);
}

/* Eight lanes from x: all of them (full), or those of `lanes` (the tail). */
static inline MCU_ALWAYS_INLINE int16x8_t add_load_16(const uint8_t *x, mve_pred16_t lanes, int full, int is_signed)
{
    if (full) {
        return is_signed ? vldrbq_s16((const int8_t *)x) : vreinterpretq_s16_u16(vldrbq_u16(x));
    }
    return is_signed ? vldrbq_z_s16((const int8_t *)x, lanes) : vreinterpretq_s16_u16(vldrbq_z_u16(x, lanes));
}

static inline MCU_ALWAYS_INLINE void add_8_lanes(const add_lane_plan *plan, const uint8_t *first,
                                                 const uint8_t *second, uint8_t *out, mve_pred16_t lanes, int full,
                                                 int is_signed)
{
    const int16x8_t v1 =
        vmlasq_n_s16(add_load_16(first, lanes, full, is_signed), vdupq_n_s16(plan->first.factor), plan->first.offset);
    const int16x8_t v2 = vmlasq_n_s16(add_load_16(second, lanes, full, is_signed), vdupq_n_s16(plan->second.factor),
                                      plan->second.offset);
    const int32x4_t odd = add_lanes(plan, vshlltq_n_s16(v1, 16), vshlltq_n_s16(v2, 16));
    const int32x4_t even = add_lanes(plan, vshllbq_n_s16(v1, 16), vshllbq_n_s16(v2, 16));
    /* v1's odd lanes are overwritten: any register will do. */
    int16x8_t result = vqmovntq_s32(vqmovnbq_s32(v1, even), odd);
    result = vminq_s16(vmaxq_s16(vqaddq_n_s16(result, plan->output_offset), vdupq_n_s16(plan->act_min)),
                       vdupq_n_s16(plan->act_max));
    if (full) {
        vstrbq_s16((int8_t *)out, result);
    } else {
        vstrbq_p_s16((int8_t *)out, result, lanes);
    }
}

/* Whole passes of eight without predication, then the 1-7 left. */
static inline MCU_ALWAYS_INLINE void add_rows_16bit(const add_lane_plan *plan, const uint8_t *first,
                                                   const uint8_t *second, uint8_t *out, int32_t n, int is_signed)
{
    int32_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        add_8_lanes(plan, first + i, second + i, out + i, 0, 1, is_signed);
    }
    if (i < n) {
        add_8_lanes(plan, first + i, second + i, out + i, vctp16q((uint32_t)(n - i)), 0, is_signed);
    }
}

/* 1: done in 16-bit lanes. */
static inline MCU_ALWAYS_INLINE int add_row_16bit_lanes(const mcu_add_s8_params *p, const uint8_t *a,
                                                        const uint8_t *b, uint8_t *out, int32_t n, int is_signed)
{
    add_lane_plan plan;
    const int order = add_lane_plan_for(p, &plan);
    if (order == 0) {
        return 0;
    }
    add_rows_16bit(&plan, order == 2 ? b : a, order == 2 ? a : b, out, n, is_signed);
    return 1;
}

/* The row with the loads the strides allow (any stride: gathers). */
#define MCU_MVE_ROW(row_mve, p, a, stride1, b, stride2, out, n, is_signed)                                    \
    do {                                                                                                        \
        if ((stride1) == 1 && (stride2) == 1) {                                                                 \
            row_mve(p, a, 1, b, 1, out, n, 1, is_signed);                                                       \
        } else {                                                                                                \
            row_mve(p, a, stride1, b, stride2, out, n, 0, is_signed);                                           \
        }                                                                                                       \
    } while (0)
#endif

/* int8 and uint8 (is_signed 0) rows compute alike; inlined into each, so
 * a model links the loops of its own type only. */
static inline MCU_ALWAYS_INLINE void add_row_8bit(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                         int32_t stride2, int32_t out_offset, int32_t n, int is_signed)
{
    const mcu_add_s8_params *p = (const mcu_add_s8_params *)ctx->params;
    const uint8_t *a = (const uint8_t *)ctx->input1 + offset1;
    const uint8_t *b = (const uint8_t *)ctx->input2 + offset2;
    uint8_t *out = (uint8_t *)ctx->output + out_offset;
#if defined(MCU_MVE)
    if (stride1 == 1 && stride2 == 1 && add_row_16bit_lanes(p, a, b, out, n, is_signed)) {
        return;
    }
    MCU_MVE_ROW(add_row_8bit_mve, p, a, stride1, b, stride2, out, n, is_signed);
#else
    int32_t i;
    for (i = 0; i < n; ++i) {
        /* |value + offset| <= 255, so shifting left by 20 cannot overflow. */
        const int32_t value1 = mcu_widen_8bit(a[i * stride1], is_signed) + p->input1_offset;
        const int32_t value2 = mcu_widen_8bit(b[i * stride2], is_signed) + p->input2_offset;
        const int32_t shifted1 = value1 * ((int32_t)1 << p->left_shift);
        const int32_t shifted2 = value2 * ((int32_t)1 << p->left_shift);
        const int32_t scaled1 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted1, p->input1_multiplier, (int)p->input1_shift);
        const int32_t scaled2 =
            mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted2, p->input2_multiplier, (int)p->input2_shift);
        const int32_t raw = mcu_mul_by_quantized_mul_smaller_than_one_exp(scaled1 + scaled2, p->output_multiplier,
                                                                          (int)p->output_shift) +
                            p->output_offset;
        out[i] = (uint8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
#endif
}

static void mul_row_8bit(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                         int32_t stride2, int32_t out_offset, int32_t n, int is_signed)
{
    const mcu_mul_s8_params *p = (const mcu_mul_s8_params *)ctx->params;
    const uint8_t *a = (const uint8_t *)ctx->input1 + offset1;
    const uint8_t *b = (const uint8_t *)ctx->input2 + offset2;
    uint8_t *out = (uint8_t *)ctx->output + out_offset;
#if defined(MCU_MVE)
    MCU_MVE_ROW(mul_row_8bit_mve, p, a, stride1, b, stride2, out, n, is_signed);
#else
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t product = (mcu_widen_8bit(a[i * stride1], is_signed) + p->input1_offset) *
                                (mcu_widen_8bit(b[i * stride2], is_signed) + p->input2_offset);
        const int32_t raw =
            mcu_mul_by_quantized_mul(product, p->output_multiplier, (int)p->output_shift) + p->output_offset;
        out[i] = (uint8_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
#endif
}

#define MCU_ROW_8BIT(name, row_8bit, is_signed)                                                                 \
    static void name(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,      \
                     int32_t stride2, int32_t out_offset, int32_t n)                                            \
    {                                                                                                           \
        row_8bit(ctx, offset1, stride1, offset2, stride2, out_offset, n, is_signed);                             \
    }

MCU_ROW_8BIT(add_row_s8, add_row_8bit, 1)
MCU_ROW_8BIT(add_row_u8, add_row_8bit, 0)
MCU_ROW_8BIT(mul_row_s8, mul_row_8bit, 1)
MCU_ROW_8BIT(mul_row_u8, mul_row_8bit, 0)

MCU_BROADCAST_ROW(add_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x + y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(sub_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x - y, p->act_min, p->act_max))
MCU_BROADCAST_ROW(mul_row_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x * y, p->act_min, p->act_max))

void mcu_add_s8(const mcu_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_s8, p, input1, input2,
                               output);
}

void mcu_mul_s8(const mcu_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_s8, p, input1, input2,
                               output);
}

void mcu_add_u8(const mcu_add_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_u8, p, input1, input2,
                               output);
}

void mcu_mul_u8(const mcu_mul_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_u8, p, input1, input2,
                               output);
}

void mcu_add_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_f32, p, input1, input2,
                               output);
}

void mcu_sub_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, sub_row_f32, p, input1, input2,
                               output);
}

void mcu_mul_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_f32, p, input1, input2,
                               output);
}

/* int32 ADD, SUB, MUL: reference_ops' Add / Sub / Mul on int32_t, clamped to
 * the fused activation's int32 range.  An overflowing sum or product is
 * undefined in the C++ reference; here it wraps modulo 2^32, as the
 * reference compiles on every target TFLite runs on. */
static int32_t wrapping_add_s32(int32_t x, int32_t y)
{
    return (int32_t)((uint32_t)x + (uint32_t)y);
}

static int32_t wrapping_sub_s32(int32_t x, int32_t y)
{
    return (int32_t)((uint32_t)x - (uint32_t)y);
}

static int32_t wrapping_mul_s32(int32_t x, int32_t y)
{
    return (int32_t)((uint32_t)x * (uint32_t)y);
}

MCU_BROADCAST_ROW(add_row_s32, mcu_binary_s32_params, int32_t, int32_t,
                  mcu_clamp_s32(wrapping_add_s32(x, y), p->act_min, p->act_max))
MCU_BROADCAST_ROW(sub_row_s32, mcu_binary_s32_params, int32_t, int32_t,
                  mcu_clamp_s32(wrapping_sub_s32(x, y), p->act_min, p->act_max))
MCU_BROADCAST_ROW(mul_row_s32, mcu_binary_s32_params, int32_t, int32_t,
                  mcu_clamp_s32(wrapping_mul_s32(x, y), p->act_min, p->act_max))

void mcu_add_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, add_row_s32, p, input1, input2,
                               output);
}

void mcu_sub_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, sub_row_s32, p, input1, input2,
                               output);
}

void mcu_mul_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output)
{
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, mul_row_s32, p, input1, input2,
                               output);
}

/* ADD_N: one pass per element over the inputs in order; each output element
 * is written after every input's element i is read (in place is safe). */
#define MCU_ADD_N(name, T, ADD)                                                                              \
    void name(const mcu_add_n_params *p, const name##_tensors *t)                                            \
    {                                                                                                        \
        const T *const inputs[MCU_ADD_N_MAX_INPUTS] = {t->input0, t->input1, t->input2, t->input3,          \
                                                        t->input4, t->input5, t->input6, t->input7};         \
        int32_t i, j;                                                                                        \
        for (i = 0; i < p->size; ++i) {                                                                      \
            T sum = inputs[0][i];                                                                            \
            for (j = 1; j < p->num_inputs; ++j) {                                                            \
                sum = ADD(sum, inputs[j][i]);                                                                \
            }                                                                                                \
            t->output[i] = sum;                                                                              \
        }                                                                                                    \
    }

#define MCU_ADD_N_F32(a, b) ((a) + (b))
MCU_ADD_N(mcu_add_n_f32, float, MCU_ADD_N_F32)
MCU_ADD_N(mcu_add_n_s32, int32_t, wrapping_add_s32)
