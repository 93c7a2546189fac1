/* ARG_MAX and ARG_MIN along one axis.
 *
 * The input is viewed as [outer_size][axis_size][inner_size] around the axis;
 * the output, [outer_size][inner_size], holds the index along the axis of the
 * largest (smallest) value, the first one where several are equal, as
 * TensorFlow Lite's ArgMinMax with std::greater / std::less.  One function
 * per input type (f32, s8, u8, s32) and index type (s32, s64):
 * mcu_arg_max_<input>_<index>, mcu_arg_min_<input>_<index>. */
#ifndef MCU_ARG_MIN_MAX_H
#define MCU_ARG_MIN_MAX_H

#include "mcu_runtime.h"

typedef struct {
    int32_t outer_size;
    int32_t axis_size;
    int32_t inner_size;
} mcu_arg_min_max_params;

void mcu_arg_max_f32_s32(const mcu_arg_min_max_params *p, const float *input, int32_t *output);
void mcu_arg_max_f32_s64(const mcu_arg_min_max_params *p, const float *input, int64_t *output);
void mcu_arg_max_s8_s32(const mcu_arg_min_max_params *p, const int8_t *input, int32_t *output);
void mcu_arg_max_s8_s64(const mcu_arg_min_max_params *p, const int8_t *input, int64_t *output);
void mcu_arg_max_u8_s32(const mcu_arg_min_max_params *p, const uint8_t *input, int32_t *output);
void mcu_arg_max_u8_s64(const mcu_arg_min_max_params *p, const uint8_t *input, int64_t *output);
void mcu_arg_max_s32_s32(const mcu_arg_min_max_params *p, const int32_t *input, int32_t *output);
void mcu_arg_max_s32_s64(const mcu_arg_min_max_params *p, const int32_t *input, int64_t *output);
void mcu_arg_min_f32_s32(const mcu_arg_min_max_params *p, const float *input, int32_t *output);
void mcu_arg_min_f32_s64(const mcu_arg_min_max_params *p, const float *input, int64_t *output);
void mcu_arg_min_s8_s32(const mcu_arg_min_max_params *p, const int8_t *input, int32_t *output);
void mcu_arg_min_s8_s64(const mcu_arg_min_max_params *p, const int8_t *input, int64_t *output);
void mcu_arg_min_u8_s32(const mcu_arg_min_max_params *p, const uint8_t *input, int32_t *output);
void mcu_arg_min_u8_s64(const mcu_arg_min_max_params *p, const uint8_t *input, int64_t *output);
void mcu_arg_min_s32_s32(const mcu_arg_min_max_params *p, const int32_t *input, int32_t *output);
void mcu_arg_min_s32_s64(const mcu_arg_min_max_params *p, const int32_t *input, int64_t *output);

#endif /* MCU_ARG_MIN_MAX_H */
