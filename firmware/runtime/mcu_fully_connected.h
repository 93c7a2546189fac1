/* FULLY_CONNECTED: output[b][o] = act(sum_d input[b][d] * filter[o][d] + bias[o]). */
#ifndef MCU_FULLY_CONNECTED_H
#define MCU_FULLY_CONNECTED_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batches;
    int32_t output_depth;
    int32_t accum_depth;
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point (0 for symmetric int8 weights) */
    int32_t output_offset; /* output zero point */
    int32_t per_channel;   /* 0: one multiplier/shift for all outputs */
    const int32_t *output_multiplier;
    const int32_t *output_shift;
    int32_t act_min;
    int32_t act_max;
    /* Per output: input_offset * (sum of its filter row + accum_depth *
     * filter_offset).  NULL: both offsets are added per term. */
    const int32_t *row_offset_terms;
} mcu_fully_connected_s8_params;

typedef struct {
    int32_t batches;
    int32_t output_depth;
    int32_t accum_depth;
    float act_min;
    float act_max;
} mcu_fully_connected_f32_params;

/* filter_offset * sum(x) over one input row of `depth` values: the share of
 * sum((w + fo) * (x + io)) that depends on the input row, computed once per
 * row (0 for a symmetric filter, without reading the row). */
static inline int32_t mcu_fully_connected_input_term(int32_t filter_offset, const int8_t *x, int32_t depth)
{
    int32_t sum = 0, d;
    if (filter_offset == 0) {
        return 0;
    }
    for (d = 0; d < depth; ++d) {
        sum += x[d];
    }
    return sum * filter_offset;
}

/* One int8 row x against four consecutive int8 rows of `depth` values from
 * w0: the four raw sums of products (no offsets). */
void mcu_dot4_s8(const int8_t *x, const int8_t *w0, int32_t depth, int32_t sums[4]);

/* bias may be NULL. */
void mcu_fully_connected_s8(const mcu_fully_connected_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output);
void mcu_fully_connected_f32(const mcu_fully_connected_f32_params *p, const float *input, const float *filter,
                             const float *bias, float *output);

#endif /* MCU_FULLY_CONNECTED_H */
