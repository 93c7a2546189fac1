/* float32 math operators with TFLite's reference semantics, and the int8
 * ones that only compare or move raw values.
 *
 * Binary ops broadcast as ADD does (mcu_elementwise.h: the output walked as
 * `rank` dims, each input with its own element strides, 0 where broadcast).
 * Unary ops map element i to element i: the output may share the input's
 * bytes.  Where TFLite calls std::exp, std::log, std::tanh ... these call the
 * C library's expf, logf, tanhf: bit-exact with the reference where both use
 * the same libm (the host), within check's float tolerance elsewhere
 * (newlib on a Cortex-M). */
#ifndef MCU_MATH_H
#define MCU_MATH_H

#include "mcu_elementwise.h"
#include "mcu_runtime.h"

/* The broadcast walk alone: ops without a fused activation. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
} mcu_broadcast_params;

/* DIV takes a fused activation: mcu_binary_f32_params as ADD. */
void mcu_div_f32(const mcu_binary_f32_params *p, const float *input1, const float *input2, float *output);
void mcu_pow_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
void mcu_squared_difference_f32(const mcu_broadcast_params *p, const float *input1, const float *input2,
                                float *output);
void mcu_maximum_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
void mcu_minimum_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
/* FLOOR_DIV (float32 and int32) and int32 FLOOR_MOD fail the invoke on a
 * zero divisor as LiteRT's do (MCU_STATUS_DIVISION_BY_ZERO, nothing
 * written); float32 FLOOR_MOD gives fmod's NaN. */
mcu_status mcu_floor_div_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
void mcu_floor_mod_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
mcu_status mcu_floor_div_s32(const mcu_broadcast_params *p, const int32_t *input1, const int32_t *input2,
                             int32_t *output);
mcu_status mcu_floor_mod_s32(const mcu_broadcast_params *p, const int32_t *input1, const int32_t *input2,
                             int32_t *output);
/* PRELU: input1 the data, input2 alpha. */
void mcu_prelu_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output);
/* int8 PRELU: x - zero point >= 0 rescaled by input / output scale, else
 * (x - zp) * (alpha - alpha zp) rescaled by input * alpha / output scale. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t input_offset; /* -input zero point */
    int32_t alpha_offset; /* -alpha zero point */
    int32_t output_offset;
    int32_t identity_multiplier;
    int32_t identity_shift;
    int32_t alpha_multiplier;
    int32_t alpha_shift;
} mcu_prelu_s8_params;

void mcu_prelu_s8(const mcu_prelu_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
/* int8 DIV (reference DivElementwise): the divisor's reciprocal in fixed
 * point, the dividend scaled up by its headroom, the quotient rescaled by
 * input1 scale / (input2 scale * output scale). */
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
} mcu_div_s8_params;

/* A divisor element equal to input2's zero point makes TFLite fail the
 * invoke: here too (MCU_STATUS_DIVISION_BY_ZERO, before any output is written). */
mcu_status mcu_div_s8(const mcu_div_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);

/* int8 SQUARED_DIFFERENCE: both inputs brought to a common scale with
 * left_shift bits of headroom, subtracted, squared, rescaled (as
 * squared_difference.cc). */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t input1_offset;
    int32_t input2_offset;
    int32_t output_offset;
    int32_t left_shift;
    int32_t input1_multiplier;
    int32_t input1_shift; /* <= 0 */
    int32_t input2_multiplier;
    int32_t input2_shift; /* <= 0 */
    int32_t output_multiplier;
    int32_t output_shift; /* <= 0 */
} mcu_squared_difference_s8_params;

void mcu_squared_difference_s8(const mcu_squared_difference_s8_params *p, const int8_t *input1,
                               const int8_t *input2, int8_t *output);
/* int8 and int16 MAXIMUM / MINIMUM compare the stored values (TFLite
 * requires the inputs and output to share one quantization). */
void mcu_maximum_s8(const mcu_broadcast_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void mcu_minimum_s8(const mcu_broadcast_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void mcu_maximum_s16(const mcu_broadcast_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void mcu_minimum_s16(const mcu_broadcast_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);

typedef struct {
    int32_t size;
} mcu_unary_f32_params;

void mcu_exp_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_log_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_sqrt_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_rsqrt_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_square_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_abs_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_neg_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_logistic_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_tanh_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_ceil_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_floor_f32(const mcu_unary_f32_params *p, const float *input, float *output);
/* ROUND: halves to even, as the reference's RoundToNearest. */
void mcu_round_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_cos_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_sin_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_elu_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_gelu_f32(const mcu_unary_f32_params *p, const float *input, float *output);
void mcu_gelu_approximate_f32(const mcu_unary_f32_params *p, const float *input, float *output);

/* L2_NORMALIZATION over the last dimension. */
typedef struct {
    int32_t outer_size;
    int32_t depth;
} mcu_l2_normalization_f32_params;

void mcu_l2_normalization_f32(const mcu_l2_normalization_f32_params *p, const float *input, float *output);

/* int8: output scale 1/128, zero point 0 (TFLite requires both). */
typedef struct {
    int32_t outer_size;
    int32_t depth;
    int32_t input_zero_point;
} mcu_l2_normalization_s8_params;

void mcu_l2_normalization_s8(const mcu_l2_normalization_s8_params *p, const int8_t *input, int8_t *output);

/* BATCH_MATMUL: output[b][i][j] = sum over k of lhs(i, k) * rhs(k, j), the
 * sum in k order from 0 as the reference; each operand addressed through its
 * own strides (adj_x / adj_y swap them).  The output's batch dimensions,
 * padded to three (leading 1s), are walked in row-major order; each operand
 * moves by its own stride per batch dimension, 0 where it is broadcast (a
 * description of constant size, however many batches). */
typedef struct {
    int32_t batches;
    int32_t rows;
    int32_t cols;
    int32_t depth;
    int32_t batch_0; /* the output's batch dimensions, outermost first */
    int32_t batch_1;
    int32_t batch_2;
    int32_t lhs_batch_stride_0; /* in elements */
    int32_t lhs_batch_stride_1;
    int32_t lhs_batch_stride_2;
    int32_t rhs_batch_stride_0;
    int32_t rhs_batch_stride_1;
    int32_t rhs_batch_stride_2;
    int32_t lhs_row_stride;
    int32_t lhs_depth_stride;
    int32_t rhs_depth_stride;
    int32_t rhs_col_stride;
} mcu_batch_matmul_f32_params;

void mcu_batch_matmul_f32(const mcu_batch_matmul_f32_params *p, const float *lhs, const float *rhs, float *output);

/* int8 BATCH_MATMUL: the same walk; the int32 sum of
 * (lhs + lhs_offset) * (rhs + rhs_offset) rescaled to the output. */
typedef struct {
    int32_t batches;
    int32_t rows;
    int32_t cols;
    int32_t depth;
    int32_t batch_0;
    int32_t batch_1;
    int32_t batch_2;
    int32_t lhs_batch_stride_0;
    int32_t lhs_batch_stride_1;
    int32_t lhs_batch_stride_2;
    int32_t rhs_batch_stride_0;
    int32_t rhs_batch_stride_1;
    int32_t rhs_batch_stride_2;
    int32_t lhs_row_stride;
    int32_t lhs_depth_stride;
    int32_t rhs_depth_stride;
    int32_t rhs_col_stride;
    int32_t lhs_zero_offset; /* -lhs zero point */
    int32_t rhs_zero_offset; /* -rhs zero point */
    int32_t output_offset;
    int32_t output_multiplier;
    int32_t output_shift;
} mcu_batch_matmul_s8_params;

void mcu_batch_matmul_s8(const mcu_batch_matmul_s8_params *p, const int8_t *lhs, const int8_t *rhs,
                         int8_t *output);

/* BROADCAST_ARGS: the shape two int32 (or int64) shapes broadcast to,
 * aligned at their last dimension, a missing dimension counting as 1.  As
 * reference_ops::BroadcastArgs, each dimension is compared as an int (int64
 * values narrowed to their low 32 bits).  Dimensions neither equal nor 1
 * abort LiteRT's interpreter: here the invoke fails
 * (MCU_STATUS_INCOMPATIBLE_SHAPES, the output undefined). */
typedef struct {
    int32_t input1_size;
    int32_t input2_size;
    int32_t output_size; /* the larger input size */
    int32_t element_bytes; /* 4 or 8, all three tensors alike */
} mcu_broadcast_args_params;

mcu_status mcu_broadcast_args(const mcu_broadcast_args_params *p, const void *shape1, const void *shape2, void *output);

#endif /* MCU_MATH_H */
