/* SVDF: a fully connected layer factored into feature and time weights, with
 * a history of the last memory_size feature activations per filter kept in
 * a state tensor across invocations (TFLite's svdf.cc / reference svdf.h).
 *
 * state is [batches][num_filters][memory_size], oldest first; each call
 * shifts it left by one and writes the new activation last.  The scratch
 * buffers are planned in the arena for this call only. */
#ifndef MCU_SVDF_H
#define MCU_SVDF_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batches;
    int32_t input_size;
    int32_t num_filters; /* num_units * rank */
    int32_t num_units;
    int32_t rank;
    int32_t memory_size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t feature_multiplier; /* input * weights_feature / state */
    int32_t feature_shift;
    int32_t output_multiplier; /* state * weights_time / output */
    int32_t output_shift;
    /* Per filter: -input_zero_point x the sum of its feature weights
     * (wrapping int32), added once to the raw products.  NULL: the zero
     * point is subtracted per term. */
    const int32_t *feature_offsets;
} mcu_svdf_s8_params;

typedef struct {
    int32_t batches;
    int32_t input_size;
    int32_t num_filters;
    int32_t num_units;
    int32_t rank;
    int32_t memory_size;
    int32_t activation; /* 0 none, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6 */
} mcu_svdf_f32_params;

/* The tensor arguments, in the call's order. */
typedef struct {
    const int8_t *input;
    const int8_t *weights_feature;
    const int16_t *weights_time;
    const int32_t *bias; /* may be NULL */
    int16_t *state;      /* variable: read and rewritten */
    int8_t *output;
    int32_t *filter_sums; /* scratch: batches * num_filters, each filter's history . time weights */
} mcu_svdf_s8_tensors;

typedef struct {
    const float *input;
    const float *weights_feature;
    const float *weights_time;
    const float *bias; /* may be NULL */
    float *state;      /* variable: read and rewritten */
    float *output;
    float *filter_sums; /* scratch: batches * num_filters, each filter's history . time weights */
} mcu_svdf_f32_tensors;

void mcu_svdf_s8(const mcu_svdf_s8_params *p, const mcu_svdf_s8_tensors *t);
void mcu_svdf_f32(const mcu_svdf_f32_params *p, const mcu_svdf_f32_tensors *t);

#endif /* MCU_SVDF_H */
