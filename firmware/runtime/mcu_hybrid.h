/* Input quantization of hybrid (dynamic-range) kernels: float32 values
 * quantized to int8 when the op runs, as TensorFlow Lite's
 * tensor_utils::SymmetricQuantizeFloats (scale max|x| / 127) and
 * AsymmetricQuantizeFloats (over [min(x, 0), max(x, 0)], the range a float
 * difference, the scale and zero point from double arithmetic) compute them.
 * A kernel gets the parameters once per batch and quantizes each value when
 * it reads it: the same value always gives the same byte. */
#ifndef MCU_HYBRID_H
#define MCU_HYBRID_H

#include "mcu_quant.h"
#include "mcu_runtime.h"

typedef struct {
    float scale;        /* input scaling factor */
    float inverse;      /* the multiplier that quantizes */
    int32_t zero_point; /* 0 for symmetric quantization */
    int32_t q_min;
} mcu_hybrid_quantization;

static inline float mcu_abs_f32(float x)
{
    return x < 0.0f ? -x : x;
}

/* SymmetricQuantizeFloats / AsymmetricQuantizeFloats: the parameters for
 * n values (a batch row of FULLY_CONNECTED, a batch image of a convolution). */
static inline mcu_hybrid_quantization mcu_hybrid_quantization_of(const float *values, int32_t n, int asymmetric)
{
    mcu_hybrid_quantization q;
    float lo = values[0], hi = values[0];
    int32_t i;
    for (i = 1; i < n; ++i) {
        lo = values[i] < lo ? values[i] : lo;
        hi = hi < values[i] ? values[i] : hi;
    }
    q.zero_point = 0;
    if (!asymmetric) {
        const float range = mcu_abs_f32(lo) < mcu_abs_f32(hi) ? mcu_abs_f32(hi) : mcu_abs_f32(lo);
        q.q_min = -127;
        if (range == 0.0f) {
            q.scale = 1.0f;
            q.inverse = 0.0f;
        } else {
            q.scale = range / 127.0f;
            q.inverse = 127.0f / range;
        }
        return q;
    }
    q.q_min = -128;
    {
        const float rmin = lo < 0.0f ? lo : 0.0f;
        const float rmax = 0.0f < hi ? hi : 0.0f;
        double scale, zero_point_from_min, zero_point_from_max, zero_point;
        if (rmin == rmax) {
            q.scale = 1.0f;
            q.inverse = 0.0f;
            return q;
        }
        /* The range is a float difference, the scale a double quotient. */
        scale = (double)(rmax - rmin) / 255.0;
        zero_point_from_min = -128.0 - (double)rmin / scale;
        zero_point_from_max = 127.0 - (double)rmax / scale;
        /* |qmin| + |rmin / scale| against |qmax| + |rmax / scale|. */
        zero_point = 128.0 + (-(double)rmin / scale) < 127.0 + ((double)rmax / scale) ? zero_point_from_min
                                                                                        : zero_point_from_max;
        if (zero_point <= -128.0) {
            q.zero_point = -128;
        } else if (zero_point >= 127.0) {
            q.zero_point = 127;
        } else {
            q.zero_point = mcu_round_to_int32(zero_point);
        }
        q.scale = (float)scale;
        q.inverse = (float)(1.0 / (double)q.scale);
    }
    return q;
}

static inline int8_t mcu_hybrid_quantize(const mcu_hybrid_quantization *q, float x)
{
    const float real = (float)q->zero_point + x * q->inverse;
    return (int8_t)mcu_clamp_s32(mcu_round_to_int32((double)real), q->q_min, 127);
}

#endif /* MCU_HYBRID_H */
