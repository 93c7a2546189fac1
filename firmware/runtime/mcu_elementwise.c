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

/* int8 and uint8 (is_signed 0) rows compute alike. */
static void add_row_8bit(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,
                         int32_t stride2, int32_t out_offset, int32_t n, int is_signed)
{
    const mcu_add_s8_params *p = (const mcu_add_s8_params *)ctx->params;
    const uint8_t *a = (const uint8_t *)ctx->input1 + offset1;
    const uint8_t *b = (const uint8_t *)ctx->input2 + offset2;
    uint8_t *out = (uint8_t *)ctx->output + out_offset;
#if defined(MCU_MVE)
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
