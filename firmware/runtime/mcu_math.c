/* Follows TensorFlow Lite's reference kernels: div.cc, pow.cc,
 * squared_difference.cc, maximum_minimum.cc, activations.cc (PRELU, float
 * LOGISTIC and TANH, GELU), elementwise.cc / exp.cc / neg.cc (the unary ops)
 * l2norm.cc and batch_matmul.cc, each expression in the reference's float operations and
 * order. */
#include "mcu_math.h"

#include <math.h>

#include "mcu_broadcast.h"
#include "mcu_quant.h"

#define MCU_BROADCAST_KERNEL(name, params_t, in_t, out_t, expr)                                               \
    MCU_BROADCAST_ROW(name##_row, params_t, in_t, out_t, expr)                                                \
    void name(const params_t *p, const in_t *input1, const in_t *input2, out_t *output)                       \
    {                                                                                                         \
        mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, name##_row, p, input1, input2, \
                         output);                                                                             \
    }

static float squared_difference(float x, float y)
{
    const float difference = x - y;
    return difference * difference;
}

MCU_BROADCAST_KERNEL(mcu_div_f32, mcu_binary_f32_params, float, float, mcu_clamp_f32(x / y, p->act_min, p->act_max))
MCU_BROADCAST_KERNEL(mcu_pow_f32, mcu_broadcast_params, float, float, powf(x, y))
MCU_BROADCAST_KERNEL(mcu_squared_difference_f32, mcu_broadcast_params, float, float, squared_difference(x, y))
/* MaximumOp / MinimumOp: el1 > el2 ? el1 : el2 (NaN in el1 loses). */
MCU_BROADCAST_KERNEL(mcu_maximum_f32, mcu_broadcast_params, float, float, x > y ? x : y)
MCU_BROADCAST_KERNEL(mcu_minimum_f32, mcu_broadcast_params, float, float, x < y ? x : y)
MCU_BROADCAST_KERNEL(mcu_maximum_s8, mcu_broadcast_params, int8_t, int8_t, x > y ? x : y)
MCU_BROADCAST_KERNEL(mcu_minimum_s8, mcu_broadcast_params, int8_t, int8_t, x < y ? x : y)
MCU_BROADCAST_KERNEL(mcu_maximum_s16, mcu_broadcast_params, int16_t, int16_t, x > y ? x : y)
MCU_BROADCAST_KERNEL(mcu_minimum_s16, mcu_broadcast_params, int16_t, int16_t, x < y ? x : y)
MCU_BROADCAST_KERNEL(mcu_prelu_f32, mcu_broadcast_params, float, float, x >= 0.0f ? x : x * y)

static int8_t div_s8(const mcu_div_s8_params *p, int8_t x, int8_t y)
{
    int32_t dividend = p->input1_offset + x;
    int32_t divisor = p->input2_offset + y; /* != 0: mcu_div_s8 has checked */
    int32_t reciprocal, quotient, result;
    int reciprocal_shift, headroom;
    if (divisor < 0) {
        /* The reciprocal must be positive to serve as a multiplier. */
        dividend = -dividend;
        divisor = -divisor;
    }
    reciprocal = mcu_fp_reciprocal(divisor, 31, &reciprocal_shift);
    headroom = mcu_count_leading_sign_bits(dividend);
    quotient = mcu_mul_by_quantized_mul_greater_than_one(dividend, reciprocal, headroom);
    /* MultiplyByQuantizedMultiplierSmallerThanOneExp, whose right shift passes
     * 31 for small dividends (headroom up to 31): see the _wide helper.  The
     * lowering keeps output_shift <= 23 <= headroom, so it never goes left. */
    result = p->output_offset +
             mcu_rounding_divide_by_pot_wide(mcu_sat_round_doubling_high_mul(quotient, p->output_multiplier),
                                             reciprocal_shift + headroom - (int)p->output_shift);
    return (int8_t)mcu_clamp_s32(result, p->act_min, p->act_max);
}

MCU_BROADCAST_ROW(div_s8_row, mcu_div_s8_params, int8_t, int8_t, div_s8(p, x, y))

mcu_status mcu_div_s8(const mcu_div_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    /* input2 is dense: its last element lies at the sum of its strides times
     * (extent - 1), 0 along the dimensions it is broadcast over. */
    int32_t last = 0, d, i;
    for (d = 0; d < p->rank; ++d) {
        last += p->input2_strides[d] * (p->dims[d] - 1);
    }
    for (i = 0; i <= last; ++i) {
        if (p->input2_offset + input2[i] == 0) {
            return MCU_STATUS_DIVISION_BY_ZERO;
        }
    }
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, div_s8_row, p, input1, input2,
                               output);
    return MCU_STATUS_OK;
}

static int8_t squared_difference_s8(const mcu_squared_difference_s8_params *p, int8_t x, int8_t y)
{
    const int32_t shifted1 = (p->input1_offset + x) * ((int32_t)1 << p->left_shift);
    const int32_t shifted2 = (p->input2_offset + y) * ((int32_t)1 << p->left_shift);
    const int32_t scaled1 =
        mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted1, p->input1_multiplier, (int)p->input1_shift);
    const int32_t scaled2 =
        mcu_mul_by_quantized_mul_smaller_than_one_exp(shifted2, p->input2_multiplier, (int)p->input2_shift);
    const int32_t raw_diff = scaled1 - scaled2;
    /* |raw_diff| <= 255 * 2^7: the square fits in 32 bits. */
    const int32_t raw = mcu_mul_by_quantized_mul_smaller_than_one_exp(raw_diff * raw_diff, p->output_multiplier,
                                                                      (int)p->output_shift) +
                        p->output_offset;
    return (int8_t)mcu_clamp_s32(raw, INT8_MIN, INT8_MAX);
}

MCU_BROADCAST_KERNEL(mcu_squared_difference_s8, mcu_squared_difference_s8_params, int8_t, int8_t,
                     squared_difference_s8(p, x, y))

/* reference_ops::Prelu / BroadcastPrelu4DSlow for int8. */
static int8_t prelu_s8(const mcu_prelu_s8_params *p, int8_t x, int8_t alpha)
{
    const int32_t input_value = p->input_offset + x;
    int32_t output_value;
    if (input_value >= 0) {
        output_value = mcu_mul_by_quantized_mul(input_value, p->identity_multiplier, (int)p->identity_shift);
    } else {
        output_value = mcu_mul_by_quantized_mul(input_value * (p->alpha_offset + alpha), p->alpha_multiplier,
                                                (int)p->alpha_shift);
    }
    return (int8_t)mcu_clamp_s32(output_value + p->output_offset, INT8_MIN, INT8_MAX);
}

MCU_BROADCAST_KERNEL(mcu_prelu_s8, mcu_prelu_s8_params, int8_t, int8_t, prelu_s8(p, x, y))

#define MCU_UNARY_F32(name, expr)                                                         \
    void name(const mcu_unary_f32_params *p, const float *input, float *output)           \
    {                                                                                     \
        int32_t i;                                                                        \
        for (i = 0; i < p->size; ++i) {                                                   \
            const float x = input[i];                                                     \
            output[i] = (expr);                                                           \
        }                                                                                 \
    }

/* reference_ops::Logistic: exact limits instead of exp() at the tails. */
static float logistic(float x)
{
    const float cutoff_upper = 16.619047164916992188f;
    const float cutoff_lower = -9.f;
    if (x > cutoff_upper) {
        return 1.0f;
    }
    if (x < cutoff_lower) {
        return expf(x);
    }
    return 1.f / (1.f + expf(-x));
}

/* sqrt(2 / pi) rounded to float, as gelu.h's constexpr float. */
#define MCU_SQRT_2_OVER_PI_F 0.797884583f
/* 1 / sqrt(2) rounded to float (static_cast<float>(M_SQRT1_2)). */
#define MCU_SQRT1_2_F 0.707106769f

/* reference_ops::Round (RoundToNearest): halves to even. */
static float round_half_to_even(float x)
{
    const float floor_value = floorf(x);
    const float diff = x - floor_value;
    /* fmodf(floor, 2) is 0 exactly when static_cast<int>(floor) is even, for
     * every value the reference can meet with diff == 0.5 (|x| < 2^23). */
    if (diff < 0.5f || (diff == 0.5f && fmodf(floor_value, 2.0f) == 0.0f)) {
        return floor_value;
    }
    return floor_value + 1.0f;
}

MCU_UNARY_F32(mcu_exp_f32, expf(x))
MCU_UNARY_F32(mcu_ceil_f32, ceilf(x))
MCU_UNARY_F32(mcu_floor_f32, floorf(x))
MCU_UNARY_F32(mcu_round_f32, round_half_to_even(x))
MCU_UNARY_F32(mcu_cos_f32, cosf(x))
MCU_UNARY_F32(mcu_sin_f32, sinf(x))
/* activations.cc Elu: expm1 below zero. */
MCU_UNARY_F32(mcu_elu_f32, x < 0.0f ? expm1f(x) : x)
MCU_UNARY_F32(mcu_log_f32, logf(x))
MCU_UNARY_F32(mcu_sqrt_f32, sqrtf(x))
MCU_UNARY_F32(mcu_rsqrt_f32, 1.f / sqrtf(x))
MCU_UNARY_F32(mcu_square_f32, x * x)
MCU_UNARY_F32(mcu_abs_f32, fabsf(x))
MCU_UNARY_F32(mcu_neg_f32, -x)
MCU_UNARY_F32(mcu_logistic_f32, logistic(x))
MCU_UNARY_F32(mcu_tanh_f32, tanhf(x))
/* 0.5 * x * erfc(-x / sqrt(2)): the reference evaluates it with Eigen's own
 * erfc, so results agree within tolerance, not bit for bit. */
MCU_UNARY_F32(mcu_gelu_f32, 0.5f * x * erfcf(x * -MCU_SQRT1_2_F))
MCU_UNARY_F32(mcu_gelu_approximate_f32,
              0.5f * x * (1.f + tanhf(MCU_SQRT_2_OVER_PI_F * (x + 0.044715f * x * x * x))))

void mcu_l2_normalization_f32(const mcu_l2_normalization_f32_params *p, const float *input, float *output)
{
    const float epsilon = 1e-6f;
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const float *in_row = input + (size_t)i * (size_t)p->depth;
        float *out_row = output + (size_t)i * (size_t)p->depth;
        float squared_l2_norm = 0.0f;
        float l2_norm;
        for (c = 0; c < p->depth; ++c) {
            squared_l2_norm += in_row[c] * in_row[c];
        }
        l2_norm = sqrtf(squared_l2_norm);
        l2_norm = l2_norm < epsilon ? epsilon : l2_norm; /* std::max(l2_norm, epsilon) */
        for (c = 0; c < p->depth; ++c) {
            out_row[c] = in_row[c] / l2_norm;
        }
    }
}

/* reference_integer_ops::L2Normalization: the sum of squares, its inverse
 * square root as a multiplier, each value rescaled by it into 1/128 units. */
void mcu_l2_normalization_s8(const mcu_l2_normalization_s8_params *p, const int8_t *input, int8_t *output)
{
    const int output_scale_bits = 7;
    int32_t i, c;
    for (i = 0; i < p->outer_size; ++i) {
        const int8_t *in_row = input + (size_t)i * (size_t)p->depth;
        int8_t *out_row = output + (size_t)i * (size_t)p->depth;
        int32_t acc = 0;
        int32_t multiplier;
        int shift;
        for (c = 0; c < p->depth; ++c) {
            const int32_t centered = in_row[c] - p->input_zero_point;
            acc += centered * centered;
        }
        mcu_inv_sqrt_quantized_multiplier_exp(acc, -1, &multiplier, &shift);
        for (c = 0; c < p->depth; ++c) {
            const int32_t scaled =
                mcu_mul_by_quantized_mul(in_row[c] - p->input_zero_point, multiplier, shift + output_scale_bits);
            out_row[c] = (int8_t)mcu_clamp_s32(scaled, INT8_MIN, INT8_MAX);
        }
    }
}

/* One batch of the float product: rows x cols outputs from l and r. */
static float *batch_matmul_f32_one(const mcu_batch_matmul_f32_params *p, const float *l, const float *r, float *output)
{
    int32_t i, j, k;
    for (i = 0; i < p->rows; ++i) {
        for (j = 0; j < p->cols; ++j) {
            float total = 0.0f;
            for (k = 0; k < p->depth; ++k) {
                total += l[i * p->lhs_row_stride + k * p->lhs_depth_stride] *
                         r[k * p->rhs_depth_stride + j * p->rhs_col_stride];
            }
            *output++ = total;
        }
    }
    return output;
}

void mcu_batch_matmul_f32(const mcu_batch_matmul_f32_params *p, const float *lhs, const float *rhs, float *output)
{
    int32_t b0, b1, b2;
    for (b0 = 0; b0 < p->batch_0; ++b0) {
        for (b1 = 0; b1 < p->batch_1; ++b1) {
            for (b2 = 0; b2 < p->batch_2; ++b2) {
                const float *l =
                    lhs + b0 * p->lhs_batch_stride_0 + b1 * p->lhs_batch_stride_1 + b2 * p->lhs_batch_stride_2;
                const float *r =
                    rhs + b0 * p->rhs_batch_stride_0 + b1 * p->rhs_batch_stride_1 + b2 * p->rhs_batch_stride_2;
                output = batch_matmul_f32_one(p, l, r, output);
            }
        }
    }
}

/* One batch of the int8 product: rows x cols outputs from l and r. */
static int8_t *batch_matmul_s8_one(const mcu_batch_matmul_s8_params *p, const int8_t *l, const int8_t *r,
                                   int8_t *output)
{
    int32_t i, j, k;
    for (i = 0; i < p->rows; ++i) {
        for (j = 0; j < p->cols; ++j) {
            int32_t total = 0;
            int32_t scaled;
            for (k = 0; k < p->depth; ++k) {
                total += ((int32_t)l[i * p->lhs_row_stride + k * p->lhs_depth_stride] + p->lhs_zero_offset) *
                         ((int32_t)r[k * p->rhs_depth_stride + j * p->rhs_col_stride] + p->rhs_zero_offset);
            }
            scaled = mcu_mul_by_quantized_mul(total, p->output_multiplier, (int)p->output_shift) + p->output_offset;
            *output++ = (int8_t)mcu_clamp_s32(scaled, INT8_MIN, INT8_MAX);
        }
    }
    return output;
}

void mcu_batch_matmul_s8(const mcu_batch_matmul_s8_params *p, const int8_t *lhs, const int8_t *rhs, int8_t *output)
{
    int32_t b0, b1, b2;
    for (b0 = 0; b0 < p->batch_0; ++b0) {
        for (b1 = 0; b1 < p->batch_1; ++b1) {
            for (b2 = 0; b2 < p->batch_2; ++b2) {
                const int8_t *l =
                    lhs + b0 * p->lhs_batch_stride_0 + b1 * p->lhs_batch_stride_1 + b2 * p->lhs_batch_stride_2;
                const int8_t *r =
                    rhs + b0 * p->rhs_batch_stride_0 + b1 * p->rhs_batch_stride_1 + b2 * p->rhs_batch_stride_2;
                output = batch_matmul_s8_one(p, l, r, output);
            }
        }
    }
}

/* reference_ops::FloorDiv: the quotient in double, floored, converted back
 * (for int32 exact: |quotient| < 2^31 is a double without rounding trouble
 * the floor could expose). */
static int32_t floor_div_s32(int32_t x, int32_t y)
{
    return (int32_t)floor((double)x / (double)y);
}

static float floor_div_f32(float x, float y)
{
    return (float)floor((double)x / (double)y);
}

/* reference_ops::FloorMod: the truncated remainder (std::modulus for
 * integers, std::fmod for float) moved to the divisor's sign. */
static int32_t floor_mod_s32(int32_t x, int32_t y)
{
    /* y == -1 gives 0 for every x (also INT32_MIN, whose C remainder traps). */
    const int32_t trunc_mod = y == -1 ? 0 : x % y;
    return (trunc_mod != 0 && ((y < 0) != (trunc_mod < 0))) ? trunc_mod + y : trunc_mod;
}

static float floor_mod_f32(float x, float y)
{
    const float trunc_mod = fmodf(x, y);
    return (trunc_mod != 0.0f && ((y < 0.0f) != (trunc_mod < 0.0f))) ? trunc_mod + y : trunc_mod;
}

MCU_BROADCAST_ROW(floor_div_s32_row, mcu_broadcast_params, int32_t, int32_t, floor_div_s32(x, y))
MCU_BROADCAST_ROW(floor_mod_s32_row, mcu_broadcast_params, int32_t, int32_t, floor_mod_s32(x, y))
MCU_BROADCAST_ROW(floor_div_f32_row, mcu_broadcast_params, float, float, floor_div_f32(x, y))
MCU_BROADCAST_KERNEL(mcu_floor_mod_f32, mcu_broadcast_params, float, float, floor_mod_f32(x, y))

/* Elements of the dense input2 of a broadcast walk: its last element lies
 * at the sum of its strides times (extent - 1). */
static int32_t input2_elements(const mcu_broadcast_params *p)
{
    int32_t last = 0, d;
    for (d = 0; d < p->rank; ++d) {
        last += p->input2_strides[d] * (p->dims[d] - 1);
    }
    return last + 1;
}

static int has_zero_divisor_s32(const mcu_broadcast_params *p, const int32_t *input2)
{
    const int32_t n = input2_elements(p);
    int32_t i;
    for (i = 0; i < n; ++i) {
        if (input2[i] == 0) {
            return 1;
        }
    }
    return 0;
}

mcu_status mcu_floor_div_f32(const mcu_broadcast_params *p, const float *input1, const float *input2, float *output)
{
    const int32_t n = input2_elements(p);
    int32_t i;
    for (i = 0; i < n; ++i) {
        if (input2[i] == 0.0f) {
            return MCU_STATUS_DIVISION_BY_ZERO;
        }
    }
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, floor_div_f32_row, p, input1,
                               input2, output);
    return MCU_STATUS_OK;
}

mcu_status mcu_floor_div_s32(const mcu_broadcast_params *p, const int32_t *input1, const int32_t *input2,
                             int32_t *output)
{
    if (has_zero_divisor_s32(p, input2)) {
        return MCU_STATUS_DIVISION_BY_ZERO;
    }
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, floor_div_s32_row, p, input1,
                               input2, output);
    return MCU_STATUS_OK;
}

mcu_status mcu_floor_mod_s32(const mcu_broadcast_params *p, const int32_t *input1, const int32_t *input2,
                             int32_t *output)
{
    if (has_zero_divisor_s32(p, input2)) {
        return MCU_STATUS_DIVISION_BY_ZERO;
    }
    mcu_for_each_broadcast_row(p->rank, p->dims, p->input1_strides, p->input2_strides, floor_mod_s32_row, p, input1,
                               input2, output);
    return MCU_STATUS_OK;
}

/* Dimension `backward` places from the end of a shape tensor of `size`
 * elements, narrowed to int as reference_ops::BroadcastArgs narrows it; 1
 * past its start. */
static int32_t shape_dim(const void *shape, int32_t size, int32_t element_bytes, int32_t backward)
{
    const int32_t i = size - 1 - backward;
    if (i < 0) {
        return 1;
    }
    if (element_bytes == 8) {
        return (int32_t)(uint32_t)(uint64_t)((const int64_t *)shape)[i];
    }
    return ((const int32_t *)shape)[i];
}

mcu_status mcu_broadcast_args(const mcu_broadcast_args_params *p, const void *shape1, const void *shape2, void *output)
{
    int32_t backward;
    for (backward = 0; backward < p->output_size; ++backward) {
        const int32_t d1 = shape_dim(shape1, p->input1_size, p->element_bytes, backward);
        const int32_t d2 = shape_dim(shape2, p->input2_size, p->element_bytes, backward);
        const int32_t i = p->output_size - 1 - backward;
        int32_t d;
        if (d1 == 1) {
            d = d2;
        } else if (d2 == 1 || d1 == d2) {
            d = d1;
        } else {
            return MCU_STATUS_INCOMPATIBLE_SHAPES;
        }
        if (p->element_bytes == 8) {
            ((int64_t *)output)[i] = d;
        } else {
            ((int32_t *)output)[i] = d;
        }
    }
    return MCU_STATUS_OK;
}
