/* ADD, SUB and MUL, int8, uint8, int32 and float32, with numpy-style broadcasting.
 *
 * Broadcasting is resolved at generation time: the output is walked as a
 * `rank`-dimensional array of `dims` (rank <= MCU_MAX_RANK, adjacent
 * dimensions already merged where possible) and each input is addressed with
 * its own element strides, 0 along dimensions it is broadcast over.  Same
 * shaped inputs collapse to rank 1 with unit strides.
 *
 * Every kernel reads element i of an input before it writes element i of the
 * output, so the output may share bytes with a same-shaped input.
 */
#ifndef MCU_ELEMENTWISE_H
#define MCU_ELEMENTWISE_H

#include "mcu_runtime.h"

/* int8 ADD and SUB (SUB is ADD with input2_multiplier negated, as TFLite's
 * sub.cc prepares it): both inputs are brought to a common scale with
 * left_shift bits of headroom, summed, then rescaled to the output. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t input1_offset; /* -input1 zero point */
    int32_t input2_offset; /* -input2 zero point */
    int32_t output_offset; /* output zero point */
    int32_t left_shift;
    int32_t input1_multiplier;
    int32_t input1_shift; /* <= 0 */
    int32_t input2_multiplier;
    int32_t input2_shift; /* <= 0 */
    int32_t output_multiplier;
    int32_t output_shift; /* <= 0 */
    int32_t act_min;
    int32_t act_max;
} mcu_add_s8_params;

typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t input1_offset;
    int32_t input2_offset;
    int32_t output_offset;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_mul_s8_params;

/* float32 ADD, SUB and MUL share one parameter block. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    float act_min;
    float act_max;
} mcu_binary_f32_params;

/* int32 ADD, SUB and MUL (plain integers, no quantization): the fused
 * activation's int32 bounds. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t act_min;
    int32_t act_max;
} mcu_binary_s32_params;

void mcu_add_s8(const mcu_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void mcu_mul_s8(const mcu_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
/* uint8 ADD / SUB and MUL: the int8 parameter blocks, the same arithmetic. */
void mcu_add_u8(const mcu_add_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void mcu_mul_u8(const mcu_mul_s8_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void mcu_add_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output);
void mcu_sub_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output);
void mcu_mul_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output);
void mcu_add_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void mcu_sub_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void mcu_mul_s32(const mcu_binary_s32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);

/* ADD_N of up to MCU_ADD_N_MAX_INPUTS same-shaped tensors (unused input
 * pointers NULL): input0 + input1 + ... element by element, in that order
 * (as LiteRT's AddN, which starts from input0: -0.0 stays -0.0); int32 sums
 * wrap. */
#define MCU_ADD_N_MAX_INPUTS 8

typedef struct {
    int32_t num_inputs;
    int32_t size;
} mcu_add_n_params;

/* The tensor arguments: MCU_ADD_N_MAX_INPUTS inputs (unused ones NULL), the output. */
typedef struct {
    const float *input0;
    const float *input1;
    const float *input2;
    const float *input3;
    const float *input4;
    const float *input5;
    const float *input6;
    const float *input7;
    float *output;
} mcu_add_n_f32_tensors;

void mcu_add_n_f32(const mcu_add_n_params *p, const mcu_add_n_f32_tensors *t);
/* The tensor arguments: MCU_ADD_N_MAX_INPUTS inputs (unused ones NULL), the output. */
typedef struct {
    const int32_t *input0;
    const int32_t *input1;
    const int32_t *input2;
    const int32_t *input3;
    const int32_t *input4;
    const int32_t *input5;
    const int32_t *input6;
    const int32_t *input7;
    int32_t *output;
} mcu_add_n_s32_tensors;

void mcu_add_n_s32(const mcu_add_n_params *p, const mcu_add_n_s32_tensors *t);

#endif /* MCU_ELEMENTWISE_H */
