/* Follows TensorFlow Lite's reference_ops::AffineQuantize, Requantize and
 * Dequantize (quantize.cc / dequantize.cc with the reference resolver). */
#include "mcu_quantize.h"

#include "mcu_quant.h"

#define MCU_QUANTIZE_F32(name, out_t)                                                          \
    void name(const mcu_quantize_f32_params *p, const float *input, out_t *output)             \
    {                                                                                          \
        int32_t i;                                                                             \
        for (i = 0; i < p->size; ++i) {                                                        \
            const int64_t q = (int64_t)mcu_round_to_int32((double)input[i] / p->scale) + p->zero_point; \
            output[i] = (out_t)(q < p->q_min ? p->q_min : (q > p->q_max ? p->q_max : q));      \
        }                                                                                      \
    }

MCU_QUANTIZE_F32(mcu_quantize_f32_s8, int8_t)
MCU_QUANTIZE_F32(mcu_quantize_f32_u8, uint8_t)
MCU_QUANTIZE_F32(mcu_quantize_f32_s16, int16_t)

#define MCU_REQUANTIZE(name, in_t, out_t, out_min, out_max)                                                  \
    void name(const mcu_requantize_params *p, const in_t *input, out_t *output)                              \
    {                                                                                                        \
        int32_t i;                                                                                           \
        for (i = 0; i < p->size; ++i) {                                                                      \
            const int32_t centered = (int32_t)input[i] - p->input_zero_point;                                \
            const int64_t q =                                                                                \
                (int64_t)mcu_mul_by_quantized_mul(centered, p->multiplier, (int)p->shift) + p->output_zero_point; \
            output[i] = (out_t)(q < (out_min) ? (out_min) : (q > (out_max) ? (out_max) : q));                \
        }                                                                                                    \
    }

MCU_REQUANTIZE(mcu_requantize_s8_s8, int8_t, int8_t, INT8_MIN, INT8_MAX)
MCU_REQUANTIZE(mcu_requantize_s8_u8, int8_t, uint8_t, 0, UINT8_MAX)
MCU_REQUANTIZE(mcu_requantize_u8_s8, uint8_t, int8_t, INT8_MIN, INT8_MAX)
MCU_REQUANTIZE(mcu_requantize_u8_u8, uint8_t, uint8_t, 0, UINT8_MAX)
MCU_REQUANTIZE(mcu_requantize_s8_s16, int8_t, int16_t, INT16_MIN, INT16_MAX)
MCU_REQUANTIZE(mcu_requantize_u8_s16, uint8_t, int16_t, INT16_MIN, INT16_MAX)
MCU_REQUANTIZE(mcu_requantize_s16_s8, int16_t, int8_t, INT8_MIN, INT8_MAX)
MCU_REQUANTIZE(mcu_requantize_s16_s16, int16_t, int16_t, INT16_MIN, INT16_MAX)
MCU_REQUANTIZE(mcu_requantize_s16_s32, int16_t, int32_t, INT32_MIN, INT32_MAX)
MCU_REQUANTIZE(mcu_requantize_s32_s8, int32_t, int8_t, INT8_MIN, INT8_MAX)
MCU_REQUANTIZE(mcu_requantize_s32_s16, int32_t, int16_t, INT16_MIN, INT16_MAX)

#define MCU_DEQUANTIZE(name, in_t)                                                        \
    void name(const mcu_dequantize_params *p, const in_t *input, float *output)           \
    {                                                                                     \
        int32_t i;                                                                        \
        for (i = 0; i < p->size; ++i) {                                                   \
            output[i] = (float)(p->scale * (double)((int32_t)input[i] - p->zero_point)); \
        }                                                                                 \
    }

MCU_DEQUANTIZE(mcu_dequantize_s8_f32, int8_t)
MCU_DEQUANTIZE(mcu_dequantize_u8_f32, uint8_t)
MCU_DEQUANTIZE(mcu_dequantize_s16_f32, int16_t)
