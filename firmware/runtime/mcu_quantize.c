/* Follows TensorFlow Lite's reference_ops::AffineQuantize, Requantize and
 * Dequantize (quantize.cc / dequantize.cc with the reference resolver). */
#include "mcu_quantize.h"

#include "mcu_dsp.h"
#include "mcu_quant.h"

/* AffineQuantize: static_cast<int32_t>(std::round(val / scale)) + zero point,
 * clamped to the output type, all as the reference does it: the division in
 * float (val / static_cast<float>(scale)), the sum in int32 (wrapping as it
 * does on x86-64 when the cast gave INT32_MIN and the zero point is
 * negative), then the clamp. */
#define MCU_QUANTIZE_F32(name, out_t)                                                          \
    void name(const mcu_quantize_f32_params *p, const float *input, out_t *output)             \
    {                                                                                          \
        int32_t i;                                                                             \
        for (i = 0; i < p->size; ++i) {                                                        \
            const int32_t rounded = mcu_round_f32_to_int32(input[i] / p->scale);               \
            const int32_t unclamped = (int32_t)((uint32_t)rounded + (uint32_t)p->zero_point);  \
            output[i] = (out_t)mcu_clamp_s32(unclamped, p->q_min, p->q_max);                   \
        }                                                                                      \
    }

#if defined(MCU_MVE) && (__ARM_FEATURE_MVE & 2)
/* Helium with floating point: the divisions stay scalar (the reference
 * divides, and no vector divide exists), four per pass into a buffer; the
 * rounding and the rest run on four lanes: VCVTA rounds to nearest with
 * ties away from zero (std::round, then the exact cast) wherever the value
 * is inside the int32 range; lanes outside it or NaN (both comparisons
 * false) take INT32_MIN as above; then the wrapping zero point add, the
 * clamp and the narrowing store.  The buffer's unused lanes (last pass) are
 * computed and not stored. */
static inline MCU_ALWAYS_INLINE int32x4_t quantize_lanes(const mcu_quantize_f32_params *p, const float *input,
                                                         int32_t count)
{
    float quotients[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float32x4_t q;
    mve_pred16_t inside;
    int32_t k;
    for (k = 0; k < count; ++k) {
        quotients[k] = input[k] / p->scale;
    }
    q = vld1q_f32(quotients);
    inside = vcmpltq_m_n_f32(q, 2147483648.0f, vcmpgeq_n_f32(q, -2147483648.0f));
    return vaddq_n_s32(vpselq_s32(vcvtaq_s32_f32(q), vdupq_n_s32(INT32_MIN), inside), p->zero_point);
}

#define MCU_QUANTIZE_F32_LANES(name, out_t, store)                                                      \
    void name(const mcu_quantize_f32_params *p, const float *input, out_t *output)                      \
    {                                                                                                   \
        int32_t i;                                                                                      \
        for (i = 0; i < p->size; i += 4) {                                                              \
            const int32_t count = MCU_MIN(4, p->size - i);                                              \
            const int32x4_t q = quantize_lanes(p, input + i, count);                                    \
            store(output + i, vmaxq_s32(vminq_s32(q, vdupq_n_s32(p->q_max)), vdupq_n_s32(p->q_min)),     \
                  vctp32q((uint32_t)count));                                                            \
        }                                                                                               \
    }

static inline void store_quantized_s8(int8_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrbq_p_s32(y, v, lanes);
}
static inline void store_quantized_u8(uint8_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrbq_p_u32(y, vreinterpretq_u32_s32(v), lanes);
}
static inline void store_quantized_s16(int16_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrhq_p_s32(y, v, lanes);
}

MCU_QUANTIZE_F32_LANES(mcu_quantize_f32_s8, int8_t, store_quantized_s8)
MCU_QUANTIZE_F32_LANES(mcu_quantize_f32_u8, uint8_t, store_quantized_u8)
MCU_QUANTIZE_F32_LANES(mcu_quantize_f32_s16, int16_t, store_quantized_s16)
#else
MCU_QUANTIZE_F32(mcu_quantize_f32_s8, int8_t)
MCU_QUANTIZE_F32(mcu_quantize_f32_u8, uint8_t)
MCU_QUANTIZE_F32(mcu_quantize_f32_s16, int16_t)
#endif

#define MCU_REQUANTIZE_LOOP(in_t, out_t, out_min, out_max)                                                 \
    for (; i < p->size; ++i) {                                                                               \
        const int32_t centered = (int32_t)input[i] - p->input_zero_point;                                    \
        const int64_t q =                                                                                    \
            (int64_t)mcu_mul_by_quantized_mul(centered, p->multiplier, (int)p->shift) + p->output_zero_point; \
        output[i] = (out_t)(q < (out_min) ? (out_min) : (q > (out_max) ? (out_max) : q));                    \
    }

#define MCU_REQUANTIZE(name, in_t, out_t, out_min, out_max)                     \
    void name(const mcu_requantize_params *p, const in_t *input, out_t *output) \
    {                                                                           \
        int32_t i = 0;                                                          \
        MCU_REQUANTIZE_LOOP(in_t, out_t, out_min, out_max)                      \
    }

#if defined(MCU_MVE)
/* Helium, for 8- and 16-bit types: four values per pass widened to int32
 * lanes, mcu_mul_by_quantized_mul_n_x4 (mcu_mul_by_quantized_mul per lane),
 * the output zero point added saturating (the int64 sum above clamps to
 * the output range all the same), the clamp, the narrowing store; the last
 * pass predicated. */
static inline int32x4_t load_lanes_s8(const int8_t *x, mve_pred16_t lanes)
{
    return vldrbq_z_s32(x, lanes);
}
static inline int32x4_t load_lanes_u8(const uint8_t *x, mve_pred16_t lanes)
{
    return vreinterpretq_s32_u32(vldrbq_z_u32(x, lanes));
}
static inline int32x4_t load_lanes_s16(const int16_t *x, mve_pred16_t lanes)
{
    return vldrhq_z_s32(x, lanes);
}
static inline void store_lanes_s8(int8_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrbq_p_s32(y, v, lanes);
}
static inline void store_lanes_u8(uint8_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrbq_p_u32(y, vreinterpretq_u32_s32(v), lanes);
}
static inline void store_lanes_s16(int16_t *y, int32x4_t v, mve_pred16_t lanes)
{
    vstrhq_p_s32(y, v, lanes);
}

#define MCU_REQUANTIZE_LANES(name, in_t, out_t, out_min, out_max, in_tag, out_tag)                            \
    void name(const mcu_requantize_params *p, const in_t *input, out_t *output)                               \
    {                                                                                                         \
        const int32_t left_shift = p->shift > 0 ? p->shift & 31 : 0;                                          \
        const int32x4_t right = vdupq_n_s32(p->shift < 0 ? p->shift : 0);                                     \
        int32_t i;                                                                                            \
        for (i = 0; i < p->size; i += 4) {                                                                    \
            const mve_pred16_t lanes = vctp32q((uint32_t)(p->size - i));                                      \
            int32x4_t q = vsubq_s32(load_lanes_##in_tag(input + i, lanes), vdupq_n_s32(p->input_zero_point)); \
            q = mcu_mul_by_quantized_mul_n_x4(q, p->multiplier, left_shift, right);                           \
            q = vqaddq_s32(q, vdupq_n_s32(p->output_zero_point));                                             \
            q = vmaxq_s32(vminq_s32(q, vdupq_n_s32(out_max)), vdupq_n_s32(out_min));                          \
            store_lanes_##out_tag(output + i, q, lanes);                                                      \
        }                                                                                                     \
    }
#else
#define MCU_REQUANTIZE_LANES(name, in_t, out_t, out_min, out_max, in_tag, out_tag) \
    MCU_REQUANTIZE(name, in_t, out_t, out_min, out_max)
#endif

MCU_REQUANTIZE_LANES(mcu_requantize_s8_s8, int8_t, int8_t, INT8_MIN, INT8_MAX, s8, s8)
MCU_REQUANTIZE_LANES(mcu_requantize_s8_u8, int8_t, uint8_t, 0, UINT8_MAX, s8, u8)
MCU_REQUANTIZE_LANES(mcu_requantize_u8_s8, uint8_t, int8_t, INT8_MIN, INT8_MAX, u8, s8)
MCU_REQUANTIZE_LANES(mcu_requantize_u8_u8, uint8_t, uint8_t, 0, UINT8_MAX, u8, u8)
MCU_REQUANTIZE_LANES(mcu_requantize_s8_s16, int8_t, int16_t, INT16_MIN, INT16_MAX, s8, s16)
MCU_REQUANTIZE_LANES(mcu_requantize_u8_s16, uint8_t, int16_t, INT16_MIN, INT16_MAX, u8, s16)
MCU_REQUANTIZE_LANES(mcu_requantize_s16_s8, int16_t, int8_t, INT8_MIN, INT8_MAX, s16, s8)
MCU_REQUANTIZE_LANES(mcu_requantize_s16_s16, int16_t, int16_t, INT16_MIN, INT16_MAX, s16, s16)
/* int32 on either side: the scalar loop (int32 - zero point may wrap there). */
MCU_REQUANTIZE(mcu_requantize_s16_s32, int16_t, int32_t, INT32_MIN, INT32_MAX)
MCU_REQUANTIZE(mcu_requantize_s32_s8, int32_t, int8_t, INT8_MIN, INT8_MAX)
MCU_REQUANTIZE(mcu_requantize_s32_s16, int32_t, int16_t, INT16_MIN, INT16_MAX)

/* The reference computes static_cast<float>(double(scale) * (val - zero_point)).
 * scale is a float32 value (24 significant bits) and |val - zero_point| <=
 * 2^24 (the lowering checks the zero point), so that double product has at
 * most 48 significant bits: it is exact, and narrowing it rounds once, to the
 * float nearest the true product.  A float multiply of the same exact
 * operands (the int -> float conversion is exact below 2^24) is correctly
 * rounded to that same float, overflow and subnormals included.  So one
 * float multiply gives the reference's bits, without software double math
 * on a single-precision FPU. */
#define MCU_DEQUANTIZE(name, in_t)                                                        \
    void name(const mcu_dequantize_params *p, const in_t *input, float *output)           \
    {                                                                                     \
        int32_t i;                                                                        \
        for (i = 0; i < p->size; ++i) {                                                   \
            output[i] = p->scale * (float)((int32_t)input[i] - p->zero_point);            \
        }                                                                                 \
    }

MCU_DEQUANTIZE(mcu_dequantize_s8_f32, int8_t)
MCU_DEQUANTIZE(mcu_dequantize_u8_f32, uint8_t)
MCU_DEQUANTIZE(mcu_dequantize_s16_f32, int16_t)
