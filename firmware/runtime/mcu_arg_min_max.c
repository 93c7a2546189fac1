/* Follows reference_ops::ArgMinMax of TensorFlow Lite: the first value of
 * each run along the axis is the candidate, and a later value replaces it
 * only when strictly greater (ARG_MAX) or smaller (ARG_MIN), so ties keep
 * the first index and a NaN never replaces a candidate. */
#include "mcu_arg_min_max.h"

#define MCU_ARG_MIN_MAX_DEFINE(function, input_type, index_type, better)                                 \
    void function(const mcu_arg_min_max_params *p, const input_type *input, index_type *output)         \
    {                                                                                                    \
        const size_t inner = (size_t)p->inner_size;                                                      \
        int32_t outer, i, k;                                                                             \
        for (outer = 0; outer < p->outer_size; ++outer) {                                                \
            const input_type *run = input + (size_t)outer * (size_t)p->axis_size * inner;                \
            for (k = 0; k < p->inner_size; ++k) {                                                        \
                input_type best = run[k];                                                                \
                int32_t best_index = 0;                                                                  \
                for (i = 1; i < p->axis_size; ++i) {                                                     \
                    const input_type value = run[(size_t)i * inner + (size_t)k];                         \
                    if (value better best) {                                                             \
                        best = value;                                                                    \
                        best_index = i;                                                                  \
                    }                                                                                    \
                }                                                                                        \
                output[(size_t)outer * inner + (size_t)k] = (index_type)best_index;                      \
            }                                                                                            \
        }                                                                                                \
    }

#define MCU_ARG_MIN_MAX_BOTH(input_name, input_type, index_name, index_type)                              \
    MCU_ARG_MIN_MAX_DEFINE(mcu_arg_max_##input_name##_##index_name, input_type, index_type, >)           \
    MCU_ARG_MIN_MAX_DEFINE(mcu_arg_min_##input_name##_##index_name, input_type, index_type, <)

MCU_ARG_MIN_MAX_BOTH(f32, float, s32, int32_t)
MCU_ARG_MIN_MAX_BOTH(f32, float, s64, int64_t)
MCU_ARG_MIN_MAX_BOTH(s8, int8_t, s32, int32_t)
MCU_ARG_MIN_MAX_BOTH(s8, int8_t, s64, int64_t)
MCU_ARG_MIN_MAX_BOTH(u8, uint8_t, s32, int32_t)
MCU_ARG_MIN_MAX_BOTH(u8, uint8_t, s64, int64_t)
MCU_ARG_MIN_MAX_BOTH(s32, int32_t, s32, int32_t)
MCU_ARG_MIN_MAX_BOTH(s32, int32_t, s64, int64_t)
