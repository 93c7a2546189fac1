/* Float helpers of the quantizing kernels: the float clamp and the
 * float-to-int32 roundings as TFLite's reference kernels execute them on
 * x86-64 (see each function for the cases where C leaves the cast undefined).
 */
#ifndef MCU_FLOAT_ROUND_H
#define MCU_FLOAT_ROUND_H

#include <stdint.h>

static inline float mcu_clamp_f32(float x, float lo, float hi)
{
    /* Order matters for NaN: std::min(std::max(x, lo), hi) as TFLite's
     * ActivationFunctionWithMinMax. */
    const float above = x < lo ? lo : x;
    return hi < above ? hi : above;
}

/* static_cast<int32_t>(TfLiteRound(q)) for a float q, as TFLite's reference
 * kernels execute it on x86-64: std::round on the float (half away from
 * zero), then the conversion, which gives INT32_MIN for NaN and for values
 * outside the int32 range (cvttss2si's "integer indefinite"; Arm's VCVT would
 * saturate instead, so this does not rely on the cast there).  Every step is
 * exact in float (the integer part of a float and its fraction are floats),
 * so no double arithmetic is needed on a single-precision FPU. */
static inline int32_t mcu_round_f32_to_int32(float q)
{
    int32_t truncated;
    float fraction;
    if (!(q >= -2147483648.0f && q < 2147483648.0f)) {
        return INT32_MIN; /* NaN too */
    }
    truncated = (int32_t)q;
    fraction = q - (float)truncated;
    if (fraction >= 0.5f) {
        /* std::round(2^31 - 0.5) would be 2^31, also out of range: that float
         * does not exist (floats near 2^31 are integers). */
        return truncated + 1;
    }
    if (fraction <= -0.5f) {
        return truncated - 1;
    }
    return truncated;
}

/* static_cast<int32_t>(std::round(q)) without libm: round half away from
 * zero.  Where the C++ cast is undefined (NaN, |q| >= 2^31) this saturates. */
static inline int32_t mcu_round_to_int32(double q)
{
    int32_t truncated;
    double fraction;
    if (q != q) {
        return 0;
    }
    if (q >= 2147483647.0) {
        return INT32_MAX;
    }
    if (q <= -2147483648.0) {
        return INT32_MIN;
    }
    truncated = (int32_t)q;
    fraction = q - (double)truncated; /* exact: both share q's exponent range */
    if (fraction >= 0.5) {
        return truncated + 1;
    }
    if (fraction <= -0.5) {
        return truncated - 1;
    }
    return truncated;
}

/* static_cast<int32_t>(std::round(q)) as the reference interpreter computes
 * it on x86-64: rounding half away from zero, and where the C++ cast is
 * undefined (NaN, out of range) the value x86's conversion gives, INT32_MIN. */
static inline int32_t mcu_round_to_int32_x86(double q)
{
    if (q != q || q >= 2147483647.5 || q <= -2147483648.5) {
        return INT32_MIN;
    }
    return mcu_round_to_int32(q);
}

#endif /* MCU_FLOAT_ROUND_H */
