/* FULLY_CONNECTED on uint8 tensors (legacy TF1 / Coral quantization): input,
 * filter and output each with their own zero point, one multiplier. */
#ifndef MCU_FULLY_CONNECTED_U8_H
#define MCU_FULLY_CONNECTED_U8_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batches;
    int32_t output_depth;
    int32_t accum_depth;
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point */
    int32_t output_offset; /* output zero point */
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_fully_connected_u8_params;

/* bias may be NULL. */
void mcu_fully_connected_u8(const mcu_fully_connected_u8_params *p, const uint8_t *input, const uint8_t *filter,
                            const int32_t *bias, uint8_t *output);

#endif /* MCU_FULLY_CONNECTED_U8_H */
