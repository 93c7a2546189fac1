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

#define MCU_ARG_MIN_MAX_DECLARE(input_name, input_type, index_name, index_type)                                    \
    void mcu_arg_max_##input_name##_##index_name(const mcu_arg_min_max_params *p, const input_type *input,        \
                                                 index_type *output);                                             \
    void mcu_arg_min_##input_name##_##index_name(const mcu_arg_min_max_params *p, const input_type *input,        \
                                                 index_type *output);

MCU_ARG_MIN_MAX_DECLARE(f32, float, s32, int32_t)
MCU_ARG_MIN_MAX_DECLARE(f32, float, s64, int64_t)
MCU_ARG_MIN_MAX_DECLARE(s8, int8_t, s32, int32_t)
MCU_ARG_MIN_MAX_DECLARE(s8, int8_t, s64, int64_t)
MCU_ARG_MIN_MAX_DECLARE(u8, uint8_t, s32, int32_t)
MCU_ARG_MIN_MAX_DECLARE(u8, uint8_t, s64, int64_t)
MCU_ARG_MIN_MAX_DECLARE(s32, int32_t, s32, int32_t)
MCU_ARG_MIN_MAX_DECLARE(s32, int32_t, s64, int64_t)

#endif /* MCU_ARG_MIN_MAX_H */
