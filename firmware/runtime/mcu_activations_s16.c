/* Follows TensorFlow Lite's ReluX and QuantizeLeakyRelu<int16_t>, and
 * reference_integer_ops::Logistic / Tanh for int16 (interpolation in a
 * 256-entry table of the sigmoid; tanh(x) = 2 * sigmoid(2x) - 1). */
#include "mcu_activations_s16.h"

#include "mcu_quant.h"

/* TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h,
 * Apache-2.0): sigmoid(i / 24) in unsigned 0.16 fixed point, i = 0..255.  The
 * values are TFLite's own (several differ by one from round(65536 *
 * sigmoid(i / 24))), so they are data here, not recomputed. */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535
};

void mcu_abs_s16(const mcu_abs_s16_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        int32_t magnitude = input[i] < 0 ? -(int32_t)input[i] : (int32_t)input[i];
        if (!p->saturate) {
            output[i] = magnitude > INT16_MAX ? INT16_MIN : (int16_t)magnitude;
            continue;
        }
        if (p->needs_rescale) {
            magnitude = mcu_mul_by_quantized_mul(magnitude, p->output_multiplier, (int)p->output_shift);
        }
        output[i] = (int16_t)mcu_clamp_s32(magnitude, INT16_MIN, INT16_MAX);
    }
}

void mcu_relu_s16(const mcu_relu_s8_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t rescaled =
            p->output_zero_point +
            mcu_mul_by_quantized_mul((int32_t)input[i] - p->input_zero_point, p->output_multiplier, (int)p->output_shift);
        output[i] = (int16_t)mcu_clamp_s32(rescaled, p->act_min, p->act_max);
    }
}

void mcu_leaky_relu_s16(const mcu_leaky_relu_s8_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t centered = (int32_t)input[i] - p->input_zero_point;
        const int32_t rescaled =
            centered >= 0 ? mcu_mul_by_quantized_mul(centered, p->identity_multiplier, (int)p->identity_shift)
                          : mcu_mul_by_quantized_mul(centered, p->alpha_multiplier, (int)p->alpha_shift);
        output[i] = (int16_t)mcu_clamp_s32(p->output_zero_point + rescaled, INT16_MIN, INT16_MAX);
    }
}

/* The input in the table's domain: for LOGISTIC 2^9 units per table step. */
static int32_t to_table_domain(const mcu_sigmoid_s16_params *p, int16_t x)
{
    const int32_t round = p->input_left_shift > 0 ? (int32_t)1 << (p->input_left_shift - 1) : 0;
    /* |x * multiplier| < 2^30: the multiplier is below 2^15. */
    return ((int32_t)x * p->input_multiplier + round) >> p->input_left_shift;
}

void mcu_logistic_s16(const mcu_sigmoid_s16_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t x = to_table_domain(p, input[i]);
        const uint32_t magnitude = (uint32_t)(x < 0 ? -x : x);
        const uint32_t step = magnitude >> 9;
        uint32_t result;
        if (step >= 255) {
            result = (uint32_t)0x7FFF << 10; /* saturated */
        } else {
            const uint32_t low = sigmoid_table[step], high = sigmoid_table[step + 1];
            result = (low << 9) + (magnitude & 0x1FF) * (high - low);
        }
        /* sigmoid(-x) = 1 - sigmoid(x); rounding to 15 bits. */
        result = x >= 0 ? result + (1u << 9) : ((uint32_t)1 << (16 + 9)) - result + (1u << 9) - 1;
        output[i] = (int16_t)(uint16_t)(result >> 10);
    }
}

void mcu_tanh_s16(const mcu_sigmoid_s16_params *p, const int16_t *input, int16_t *output)
{
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t x = to_table_domain(p, input[i]);
        const uint32_t magnitude = (uint32_t)(x < 0 ? -x : x);
        const uint32_t step = magnitude >> 8; /* 2x: half the units per step */
        int32_t result;
        if (step >= 255) {
            result = (int32_t)0xFFFF << 8; /* saturated */
        } else {
            const uint32_t low = sigmoid_table[step], high = sigmoid_table[step + 1];
            result = (int32_t)((low << 8) + (magnitude & 0xFF) * (high - low));
        }
        /* 2 * sigmoid - 1, mirrored for negative inputs, rounded. */
        result = x >= 0 ? result - ((int32_t)1 << (14 + 9)) + ((int32_t)1 << (9 - 2))
                        : -result + ((int32_t)1 << (14 + 9)) + ((int32_t)1 << (9 - 2)) - 1;
        output[i] = (int16_t)(uint16_t)(uint32_t)(result >> (9 - 1));
    }
}
