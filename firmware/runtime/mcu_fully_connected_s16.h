/* 16x8 FULLY_CONNECTED: int16 input and output (zero point 0), int8 weights
 * (zero point 0, one scale or one per output), optional int64 bias. */
#ifndef MCU_FULLY_CONNECTED_S16_H
#define MCU_FULLY_CONNECTED_S16_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batches;
    int32_t output_depth;
    int32_t accum_depth;
    int32_t per_channel; /* 0: one scale for all outputs */
    /* input_scale * filter_scale / output_scale in double, per output when
     * per_channel (LiteRT rescales 16x8 sums in double, see the .c). */
    const double *output_scale;
    int32_t act_min;
    int32_t act_max;
} mcu_fully_connected_s16_params;

void mcu_fully_connected_s16(const mcu_fully_connected_s16_params *p, const int16_t *input, const int8_t *filter,
                             const int64_t *bias, int16_t *output);

#endif /* MCU_FULLY_CONNECTED_S16_H */
