/* AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on NHWC tensors. */
#ifndef MCU_POOL_H
#define MCU_POOL_H

#include "mcu_runtime.h"

#define MCU_POOL_GEOMETRY_FIELDS \
    int32_t batches;             \
    int32_t input_h;             \
    int32_t input_w;             \
    int32_t channels;            \
    int32_t output_h;            \
    int32_t output_w;            \
    int32_t filter_h;            \
    int32_t filter_w;            \
    int32_t stride_h;            \
    int32_t stride_w;            \
    int32_t pad_h;               \
    int32_t pad_w;

/* int8 and uint8 pooling take the same parameters. */
typedef struct {
    MCU_POOL_GEOMETRY_FIELDS
    int32_t act_min;
    int32_t act_max;
} mcu_pool_s8_params;

typedef struct {
    MCU_POOL_GEOMETRY_FIELDS
    float act_min;
    float act_max;
} mcu_pool_f32_params;

void mcu_average_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output);
void mcu_average_pool_2d_u8(const mcu_pool_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_average_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output);
void mcu_max_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output);
void mcu_max_pool_2d_u8(const mcu_pool_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_max_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output);
/* L2_POOL_2D (float32 only, as in TFLite and TFLM). */
void mcu_l2_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output);

#endif /* MCU_POOL_H */
