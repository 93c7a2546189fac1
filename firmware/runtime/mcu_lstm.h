/* UNIDIRECTIONAL_SEQUENCE_LSTM: float32, and int8 with an int16 cell state
 * (TensorFlow Lite's integer 8x8->16 LSTM).
 *
 * The tensor arguments come in TFLite's input order (lstm_shared.h); optional
 * ones are NULL when absent (CIFG: no input gate; no peephole, projection or
 * layer norm).  output_state and cell_state are variable tensors: read and
 * rewritten by every invocation.  The scratch buffers hold one time step's
 * gates and are free again when the call returns (their sizes: see
 * mcu_planner/lowering/lstm.py).
 *
 * Gate-indexed arrays below are in the order input, forget, cell, output.
 */
#ifndef MCU_LSTM_H
#define MCU_LSTM_H

#include "mcu_runtime.h"

/* The kernels: mcu_lstm_s8.h (int8, int16 cell state) and mcu_lstm_f32.h. */

#define MCU_LSTM_GATES 4

enum { MCU_LSTM_GATE_INPUT = 0, MCU_LSTM_GATE_FORGET = 1, MCU_LSTM_GATE_CELL = 2, MCU_LSTM_GATE_OUTPUT = 3 };

/* Activation of the cell gate and of the cell state before the output gate
 * (the op's fused activation). */
typedef enum {
    MCU_LSTM_ACT_NONE = 0,
    MCU_LSTM_ACT_RELU,
    MCU_LSTM_ACT_RELU_N1_TO_1,
    MCU_LSTM_ACT_RELU6,
    MCU_LSTM_ACT_TANH,
    MCU_LSTM_ACT_SIGMOID
} mcu_lstm_activation;

#endif /* MCU_LSTM_H */
