/* UNIDIRECTIONAL_SEQUENCE_LSTM on int8 with an int16 cell state
 * (TensorFlow Lite's integer 8x8->16 LSTM); see mcu_lstm.h. */
#ifndef MCU_LSTM_S8_H
#define MCU_LSTM_S8_H

#include "mcu_lstm.h"

typedef struct {
    int32_t n_batch;
    int32_t n_time;
    int32_t n_input;
    int32_t n_cell;
    int32_t n_output;
    int32_t time_major; /* input [time][batch][n_input], else [batch][time][n_input] */
    /* Per gate: the rescale of input x weights and state x weights to the
     * gate's Q3.12 (or layer-norm input) scale, and of the peephole product. */
    const int32_t *input_multiplier;
    const int32_t *input_shift;
    const int32_t *recurrent_multiplier;
    const int32_t *recurrent_shift;
    const int32_t *cell_multiplier;
    const int32_t *cell_shift;
    /* Per gate, n_cell each: bias (unless layer norm) plus zero point x row
     * sums of the weights, precomputed as TFLite's Prepare does. */
    const int32_t *input_effective_bias;
    const int32_t *recurrent_effective_bias;
    /* Layer norm, per gate. */
    const int32_t *layer_norm_multiplier;
    const int32_t *layer_norm_shift;
    const int32_t *layer_norm_variance_guard;
    int32_t hidden_multiplier; /* output gate x tanh(cell) -> hidden (or output state) */
    int32_t hidden_shift;
    int32_t hidden_zero_point;
    int32_t projection_multiplier;
    int32_t projection_shift;
    const int32_t *projection_effective_bias; /* n_output; NULL without projection */
    int32_t output_state_zero_point;
    int32_t cell_product_shift; /* 30 + log2(cell state scale): input gate x cell gate */
    int32_t quantized_cell_clip; /* 0: no clipping */
    int32_t quantized_proj_clip;
    /* Three mcu_fp16_table (mcu_quant.h) of gemmlowp's int16 1 / (1 + exp(-m))
     * with k integer bits: sigmoid, the gates' (k = 3); gate_tanh, the cell
     * gate's tanh (k = 4, below gate_tanh_first read from the sigmoid's);
     * cell_tanh, tanh of the cell state (k = 16 + log2(its scale)), NULL
     * knots where that is gate_tanh's. */
    const int16_t *sigmoid_knots;
    const uint8_t *sigmoid_residuals;
    int32_t sigmoid_last;
    const int16_t *gate_tanh_knots;
    const uint8_t *gate_tanh_residuals;
    int32_t gate_tanh_last;
    int32_t gate_tanh_first;
    const int16_t *cell_tanh_knots;
    const uint8_t *cell_tanh_residuals;
    int32_t cell_tanh_last;
} mcu_lstm_s8_params;

/* The tensor arguments.  gate_scratch: 4 x rows x n_cell int16 (rows:
 * n_batch time-major, else 1); hidden_scratch: rows x n_cell int8, only with
 * a projection (else NULL). */
typedef struct {
    /* TFLite's input order (lstm_shared.h); NULL where an optional one is absent. */
    const int8_t *input;
    const int8_t *input_to_input_weights;
    const int8_t *input_to_forget_weights;
    const int8_t *input_to_cell_weights;
    const int8_t *input_to_output_weights;
    const int8_t *recurrent_to_input_weights;
    const int8_t *recurrent_to_forget_weights;
    const int8_t *recurrent_to_cell_weights;
    const int8_t *recurrent_to_output_weights;
    const int16_t *cell_to_input_weights;
    const int16_t *cell_to_forget_weights;
    const int16_t *cell_to_output_weights;
    const int32_t *input_gate_bias;
    const int32_t *forget_gate_bias;
    const int32_t *cell_gate_bias;
    const int32_t *output_gate_bias;
    const int8_t *projection_weights;
    const int32_t *projection_bias;
    int8_t *output_state; /* variable: read and rewritten */
    int16_t *cell_state;   /* variable: read and rewritten */
    const int16_t *input_layer_norm_coefficients;
    const int16_t *forget_layer_norm_coefficients;
    const int16_t *cell_layer_norm_coefficients;
    const int16_t *output_layer_norm_coefficients;
    int8_t *output;
    int16_t *gate_scratch;
    int8_t *hidden_scratch;
} mcu_lstm_s8_tensors;

void mcu_lstm_s8(const mcu_lstm_s8_params *p, const mcu_lstm_s8_tensors *t);

#endif /* MCU_LSTM_S8_H */
