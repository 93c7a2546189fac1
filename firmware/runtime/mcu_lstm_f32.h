/* UNIDIRECTIONAL_SEQUENCE_LSTM on float32; see mcu_lstm.h. */
#ifndef MCU_LSTM_F32_H
#define MCU_LSTM_F32_H

#include "mcu_lstm.h"

typedef struct {
    int32_t n_batch;
    int32_t n_time;
    int32_t n_input;
    int32_t n_cell;
    int32_t n_output;
    int32_t time_major;
    int32_t activation; /* mcu_lstm_activation */
    float cell_clip;    /* 0: no clipping */
    float proj_clip;
} mcu_lstm_f32_params;

/* The tensor arguments.  gate_scratch: 4 x rows x n_cell floats;
 * accumulator_scratch: rows x max(n_cell, n_output) floats. */
typedef struct {
    /* TFLite's input order (lstm_shared.h); NULL where an optional one is absent. */
    const float *input;
    const float *input_to_input_weights;
    const float *input_to_forget_weights;
    const float *input_to_cell_weights;
    const float *input_to_output_weights;
    const float *recurrent_to_input_weights;
    const float *recurrent_to_forget_weights;
    const float *recurrent_to_cell_weights;
    const float *recurrent_to_output_weights;
    const float *cell_to_input_weights;
    const float *cell_to_forget_weights;
    const float *cell_to_output_weights;
    const float *input_gate_bias;
    const float *forget_gate_bias;
    const float *cell_gate_bias;
    const float *output_gate_bias;
    const float *projection_weights;
    const float *projection_bias;
    float *output_state; /* variable: read and rewritten */
    float *cell_state;   /* variable: read and rewritten */
    const float *input_layer_norm_coefficients;
    const float *forget_layer_norm_coefficients;
    const float *cell_layer_norm_coefficients;
    const float *output_layer_norm_coefficients;
    float *output;
    float *gate_scratch;
    float *accumulator_scratch;
} mcu_lstm_f32_tensors;

void mcu_lstm_f32(const mcu_lstm_f32_params *p, const mcu_lstm_f32_tensors *t);

#endif /* MCU_LSTM_F32_H */
