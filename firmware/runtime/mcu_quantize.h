/* QUANTIZE (float32 -> int8/uint8/int16, and requantization between int8,
 * uint8, int16 and int32) and DEQUANTIZE (int8/uint8/int16 -> float32).
 *
 * The float conversions follow TFLite's reference AffineQuantize and
 * Dequantize bit for bit with float arithmetic only (mcu_quantize.c says why
 * that is exact), so a single-precision FPU does them in hardware.  QUANTIZE writes
 * element i after reading element i and never wider than it reads, so its
 * output may share bytes with its input.
 */
#ifndef MCU_QUANTIZE_H
#define MCU_QUANTIZE_H

#include "mcu_runtime.h"

typedef struct {
    int32_t size;
    float scale; /* the output's scale: the reference divides by it in float */
    int32_t zero_point;
    int32_t q_min; /* the output type's range */
    int32_t q_max;
} mcu_quantize_f32_params;

/* Requantize from one (scale, zero point) to another. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;
    int32_t shift;
} mcu_requantize_params;

typedef struct {
    int32_t size;
    float scale;
    int32_t zero_point;
} mcu_dequantize_params;

void mcu_quantize_f32_s8(const mcu_quantize_f32_params *p, const float *input, int8_t *output);
void mcu_quantize_f32_u8(const mcu_quantize_f32_params *p, const float *input, uint8_t *output);
void mcu_quantize_f32_s16(const mcu_quantize_f32_params *p, const float *input, int16_t *output);

/* mcu_requantize_<from>_<to>; the pairs TFLite's QUANTIZE accepts. */
void mcu_requantize_s8_s8(const mcu_requantize_params *p, const int8_t *input, int8_t *output);
void mcu_requantize_s8_u8(const mcu_requantize_params *p, const int8_t *input, uint8_t *output);
void mcu_requantize_u8_s8(const mcu_requantize_params *p, const uint8_t *input, int8_t *output);
void mcu_requantize_u8_u8(const mcu_requantize_params *p, const uint8_t *input, uint8_t *output);
void mcu_requantize_s8_s16(const mcu_requantize_params *p, const int8_t *input, int16_t *output);
void mcu_requantize_u8_s16(const mcu_requantize_params *p, const uint8_t *input, int16_t *output);
void mcu_requantize_s16_s8(const mcu_requantize_params *p, const int16_t *input, int8_t *output);
void mcu_requantize_s16_s16(const mcu_requantize_params *p, const int16_t *input, int16_t *output);
void mcu_requantize_s16_s32(const mcu_requantize_params *p, const int16_t *input, int32_t *output);
void mcu_requantize_s32_s8(const mcu_requantize_params *p, const int32_t *input, int8_t *output);
void mcu_requantize_s32_s16(const mcu_requantize_params *p, const int32_t *input, int16_t *output);

void mcu_dequantize_s8_f32(const mcu_dequantize_params *p, const int8_t *input, float *output);
void mcu_dequantize_u8_f32(const mcu_dequantize_params *p, const uint8_t *input, float *output);
void mcu_dequantize_s16_f32(const mcu_dequantize_params *p, const int16_t *input, float *output);

#endif /* MCU_QUANTIZE_H */
