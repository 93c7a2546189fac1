/* CONCATENATION of up to MCU_CONCAT_MAX_INPUTS tensors along one axis.
 *
 * Viewed around the axis, every input is outer_size blocks of copy_bytes[i]
 * bytes and the output is outer_size blocks of their concatenation, so one
 * byte-copying kernel serves every element type.  Unused input pointers are
 * NULL.  An input that already sits in its place inside the output (the
 * planner aliased it there) is left alone.
 */
#ifndef MCU_CONCAT_H
#define MCU_CONCAT_H

#include "mcu_runtime.h"

#define MCU_CONCAT_MAX_INPUTS 8

typedef struct {
    int32_t num_inputs;
    int32_t outer_size;
    const int32_t *copy_bytes; /* per input: axis length * inner size * element bytes */
} mcu_concatenation_params;

/* int8 inputs whose quantization differs from the output's are requantized
 * while copied, as a QUANTIZE to the output's parameters would; inputs with
 * the output's parameters (rescale[i] == 0) are copied. */
typedef struct {
    int32_t num_inputs;
    int32_t outer_size;
    const int32_t *copy_bytes;
    const int32_t *rescale; /* per input: 0 copy, 1 requantize */
    const int32_t *input_zero_point;
    const int32_t *multiplier;
    const int32_t *shift;
    int32_t output_zero_point;
} mcu_concatenation_s8_params;

/* uint8 inputs whose quantization differs from the output's are rescaled as
 * TFLite's ConcatenationWithScaling does, in float: q * scale + bias, with
 * scale = input_scale * (1 / output_scale) and bias = -input_zero_point *
 * scale computed in float32 at generation time. */
typedef struct {
    int32_t num_inputs;
    int32_t outer_size;
    const int32_t *copy_bytes;
    const int32_t *rescale; /* per input: 0 copy, 1 rescale */
    const float *scale;
    const float *bias;
    int32_t output_zero_point;
} mcu_concatenation_u8_params;

/* The tensor arguments: MCU_CONCAT_MAX_INPUTS inputs (unused ones NULL), the output. */
typedef struct {
    const void *input0;
    const void *input1;
    const void *input2;
    const void *input3;
    const void *input4;
    const void *input5;
    const void *input6;
    const void *input7;
    void *output;
} mcu_concatenation_tensors;

void mcu_concatenation(const mcu_concatenation_params *p, const mcu_concatenation_tensors *t);

/* The tensor arguments: MCU_CONCAT_MAX_INPUTS inputs (unused ones NULL), the output. */
typedef struct {
    const int8_t *input0;
    const int8_t *input1;
    const int8_t *input2;
    const int8_t *input3;
    const int8_t *input4;
    const int8_t *input5;
    const int8_t *input6;
    const int8_t *input7;
    int8_t *output;
} mcu_concatenation_s8_tensors;

void mcu_concatenation_s8(const mcu_concatenation_s8_params *p, const mcu_concatenation_s8_tensors *t);

/* The tensor arguments: MCU_CONCAT_MAX_INPUTS inputs (unused ones NULL), the output. */
typedef struct {
    const uint8_t *input0;
    const uint8_t *input1;
    const uint8_t *input2;
    const uint8_t *input3;
    const uint8_t *input4;
    const uint8_t *input5;
    const uint8_t *input6;
    const uint8_t *input7;
    uint8_t *output;
} mcu_concatenation_u8_tensors;

void mcu_concatenation_u8(const mcu_concatenation_u8_params *p, const mcu_concatenation_u8_tensors *t);

#endif /* MCU_CONCAT_H */
