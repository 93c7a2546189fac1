/* 16x8 CONV_2D and DEPTHWISE_CONV_2D: int16 activations (zero point 0),
 * int8 per-channel weights (zero point 0), NHWC, filters laid out as in
 * mcu_conv.h (CONV_2D [out_c][fh][fw][in_c per group], DEPTHWISE_CONV_2D
 * [1][fh][fw][in_c * depth_multiplier]).
 *
 * Sums accumulate in int64 and are requantized with the int64
 * MultiplyByQuantizedMultiplier.  The bias is int64 as the converter writes
 * it for 16x8; CONV_2D also takes an int32 one (TFLM does). */
#ifndef MCU_CONV_S16_H
#define MCU_CONV_S16_H

#include "mcu_conv_geometry.h"

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    const int32_t *output_multiplier; /* one per output channel */
    const int32_t *output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_conv_s16_params;

/* bias may be NULL in each. */
void mcu_conv_2d_s16(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter, const int64_t *bias,
                     int16_t *output);
void mcu_conv_2d_s16_bias32(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                            const int32_t *bias, int16_t *output);
void mcu_depthwise_conv_2d_s16(const mcu_conv_s16_params *p, const int16_t *input, const int8_t *filter,
                               const int64_t *bias, int16_t *output);

#endif /* MCU_CONV_S16_H */
