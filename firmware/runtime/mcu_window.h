/* Sliding windows of the 2-D kernels (convolutions and pooling), one axis at
 * a time.
 *
 * TFLite's reference kernels visit every tap of a window and skip the ones in
 * the padding.  Here the taps inside the input are found up front instead:
 * they are one contiguous run, and visiting that run in order adds the same
 * terms in the same order, so int8 and float results do not change. */
#ifndef MCU_WINDOW_H
#define MCU_WINDOW_H

#include "mcu_runtime.h"

typedef struct {
    int32_t origin;   /* input coordinate of tap 0 (negative inside the padding) */
    int32_t dilation; /* input step from one tap to the next */
    int32_t first;    /* taps [first, end) lie inside the input */
    int32_t end;
} mcu_window_axis;

/* The window of output coordinate `out_pos` along one axis. */
static inline mcu_window_axis mcu_window_axis_at(int32_t out_pos, int32_t stride, int32_t pad, int32_t dilation,
                                                 int32_t taps, int32_t input_size)
{
    mcu_window_axis axis;
    int32_t inside;
    axis.origin = out_pos * stride - pad;
    axis.dilation = dilation;
    /* Rounded-up divisions: the first tap at or past coordinate 0, and the
     * first at or past input_size. */
    axis.first = axis.origin >= 0 ? 0 : (-axis.origin + dilation - 1) / dilation;
    inside = input_size - axis.origin;
    axis.end = inside <= 0 ? 0 : MCU_MIN(taps, (inside + dilation - 1) / dilation);
    return axis;
}

static inline int32_t mcu_window_input(const mcu_window_axis *axis, int32_t tap)
{
    return axis->origin + axis->dilation * tap;
}

/* Row-major offset of element (b, y, x, c) of an NHWC tensor. */
static inline size_t mcu_nhwc_offset(int32_t h_size, int32_t w_size, int32_t c_size, int32_t b, int32_t y, int32_t x,
                                     int32_t c)
{
    return (((size_t)b * (size_t)h_size + (size_t)y) * (size_t)w_size + (size_t)x) * (size_t)c_size + (size_t)c;
}

#endif /* MCU_WINDOW_H */
