/* Follows TensorFlow Lite's activations.cc for the reference op resolver:
 * EvalUsingLookupTable (int8 and uint8 LOGISTIC, TANH), ReluX (int8 and
 * uint8 RELU family), reference_ops::QuantizeLeakyRelu and HardSwish (int8,
 * uint8),
 * reference_ops::QuantizeLeakyRelu, reference_ops::HardSwish (int8 and
 * float) and the float RELU / LEAKY_RELU loops. */
#include "mcu_activations.h"

#include "mcu_quant.h"

void mcu_lut_s8(const mcu_lut_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        output[i] = p->table[(uint8_t)input[i]];
    }
}

static void relu_8bit(const mcu_relu_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t centered = mcu_widen_8bit(input[i], is_signed) - p->input_zero_point;
        const int32_t rescaled =
            p->output_zero_point + mcu_mul_by_quantized_mul(centered, p->output_multiplier, (int)p->output_shift);
        output[i] = (uint8_t)mcu_clamp_s32(rescaled, p->act_min, p->act_max);
    }
}

void mcu_relu_s8(const mcu_relu_s8_params *p, const int8_t *input, int8_t *output)
{
    relu_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_relu_u8(const mcu_relu_s8_params *p, const uint8_t *input, uint8_t *output)
{
    relu_8bit(p, input, 0, output);
}

void mcu_lut_u8(const mcu_lut_u8_params *p, const uint8_t *input, uint8_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        output[i] = p->table[input[i]];
    }
}

void mcu_relu_f32(const mcu_relu_f32_params *p, const float *input, float *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        output[i] = mcu_clamp_f32(input[i], p->act_min, p->act_max);
    }
}

static void leaky_relu_8bit(const mcu_leaky_relu_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    const int32_t lowest = is_signed ? INT8_MIN : 0, highest = is_signed ? INT8_MAX : UINT8_MAX;
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t centered = mcu_widen_8bit(input[i], is_signed) - p->input_zero_point;
        const int32_t rescaled =
            centered >= 0 ? mcu_mul_by_quantized_mul(centered, p->identity_multiplier, (int)p->identity_shift)
                          : mcu_mul_by_quantized_mul(centered, p->alpha_multiplier, (int)p->alpha_shift);
        output[i] = (uint8_t)mcu_clamp_s32(p->output_zero_point + rescaled, lowest, highest);
    }
}

void mcu_leaky_relu_s8(const mcu_leaky_relu_s8_params *p, const int8_t *input, int8_t *output)
{
    leaky_relu_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_leaky_relu_u8(const mcu_leaky_relu_s8_params *p, const uint8_t *input, uint8_t *output)
{
    leaky_relu_8bit(p, input, 0, output);
}

void mcu_leaky_relu_f32(const mcu_leaky_relu_f32_params *p, const float *input, float *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const float x = input[i];
        output[i] = x > 0.0f ? x : x * p->alpha;
    }
}

static void hard_swish_8bit(const mcu_hard_swish_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    const int16_t output_multiplier = (int16_t)p->output_multiplier;
    const int16_t reluish_multiplier = (int16_t)p->reluish_multiplier;
    const int reluish_exponent = (int)p->reluish_exponent;
    const int32_t lowest = is_signed ? INT8_MIN : 0, highest = is_signed ? INT8_MAX : UINT8_MAX;
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int16_t centered = (int16_t)(mcu_widen_8bit(input[i], is_signed) - p->input_zero_point);
        /* |centered| <= 255, so 7 bits of left shift stay inside int16. */
        const int16_t hires = (int16_t)(centered * (1 << 7));
        const int16_t preshift_output = mcu_sat_round_doubling_high_mul_s16(hires, output_multiplier);
        int16_t reluish = hires;
        int16_t preshift_result;
        int32_t result;
        /* Rescale to "3.0 == 32768", saturating; the last left-shift bit is
         * applied after the multiply so only it can saturate the result. */
        if (reluish_exponent > 0) {
            reluish = mcu_sat_left_shift_s16(reluish, reluish_exponent - 1);
        }
        reluish = mcu_sat_round_doubling_high_mul_s16(reluish, reluish_multiplier);
        if (reluish_exponent > 0) {
            reluish = mcu_sat_left_shift_s16(reluish, 1);
        }
        if (reluish_exponent < 0) {
            reluish = (int16_t)mcu_rounding_divide_by_pot(reluish, -reluish_exponent);
        }
        /* [-1, 1] -> [0, 1] */
        reluish = (int16_t)(((int32_t)reluish + (1 << 15)) >> 1);
        preshift_result = mcu_sat_doubling_high_mul_s16(reluish, preshift_output);
        /* TFLite adds the zero point in int16, wrapping like it. */
        result = (int16_t)((int16_t)mcu_rounding_divide_by_pot(preshift_result, -(int)p->output_exponent) +
                           p->output_zero_point);
        output[i] = (uint8_t)mcu_clamp_s32(result, lowest, highest);
    }
}

void mcu_hard_swish_s8(const mcu_hard_swish_s8_params *p, const int8_t *input, int8_t *output)
{
    hard_swish_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_hard_swish_u8(const mcu_hard_swish_s8_params *p, const uint8_t *input, uint8_t *output)
{
    hard_swish_8bit(p, input, 0, output);
}

void mcu_hard_swish_f32(const mcu_hard_swish_f32_params *p, const float *input, float *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const float x = input[i];
        const float shifted = x + 3.0f;
        /* std::min(6, std::max(0, x + 3)) with std's argument order. */
        const float relu = 0.0f < shifted ? shifted : 0.0f;
        const float relu6 = relu < 6.0f ? relu : 6.0f;
        output[i] = x * relu6 / 6.0f;
    }
}
