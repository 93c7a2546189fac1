/* Follows reference_integer_ops::AveragePool / MaxPool (int8), reference_ops'
 * uint8 versions (the same sums and maxima over uint8 values) and the float
 * versions of TensorFlow Lite: windows are clipped to the input, and the
 * average divides by the number of elements actually inside. */
#include "mcu_pool.h"

#include <float.h>

#include "mcu_quant.h"
#include "mcu_window.h"

/* Memory-plan contract (mcu_planner/lowering/traits.py, KERNEL_ORDERS): every pooling kernel here
 * writes one output pixel at a time in raster order (batch, row, column),
 * reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
/* Pooling windows are convolution windows without dilation. */
#define POOL_DILATION 1

static int32_t taps_inside(const mcu_window_axis *wy, const mcu_window_axis *wx)
{
    return MCU_MAX(0, wy->end - wy->first) * MCU_MAX(0, wx->end - wx->first);
}

/* int8 and uint8 (is_signed 0): the same sums and rounding (a uint8 sum is
 * never negative). */
static void average_pool_2d_8bit(const mcu_pool_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                /* TFLite reports an error for an empty window; SAME and VALID
                 * padding never make one, and dividing by 1 keeps it defined. */
                const int32_t count = MCU_MAX(1, taps_inside(&wy, &wx));
                for (c = 0; c < p->channels; ++c) {
                    int32_t acc = 0;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            acc += mcu_widen_8bit(input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                                        mcu_window_input(&wy, fy),
                                                                        mcu_window_input(&wx, fx), c)],
                                                  is_signed);
                        }
                    }
                    /* Round half away from zero. */
                    acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        (uint8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_average_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output)
{
    average_pool_2d_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_average_pool_2d_u8(const mcu_pool_s8_params *p, const uint8_t *input, uint8_t *output)
{
    average_pool_2d_8bit(p, input, 0, output);
}

void mcu_average_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                const float count = (float)taps_inside(&wy, &wx);
                for (c = 0; c < p->channels; ++c) {
                    float total = 0.0f;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            total += input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                           mcu_window_input(&wy, fy), mcu_window_input(&wx, fx), c)];
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        mcu_clamp_f32(total / count, p->act_min, p->act_max);
                }
            }
        }
    }
}

static void max_pool_2d_8bit(const mcu_pool_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                for (c = 0; c < p->channels; ++c) {
                    int32_t max = is_signed ? INT8_MIN : 0;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const int32_t v = mcu_widen_8bit(
                                input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                      mcu_window_input(&wy, fy), mcu_window_input(&wx, fx), c)],
                                is_signed);
                            max = MCU_MAX(max, v);
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        (uint8_t)mcu_clamp_s32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_max_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output)
{
    max_pool_2d_8bit(p, (const uint8_t *)input, 1, (uint8_t *)output);
}

void mcu_max_pool_2d_u8(const mcu_pool_s8_params *p, const uint8_t *input, uint8_t *output)
{
    max_pool_2d_8bit(p, input, 0, output);
}

void mcu_max_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                for (c = 0; c < p->channels; ++c) {
                    float max = -FLT_MAX; /* std::numeric_limits<float>::lowest() */
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const float v = input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                                  mcu_window_input(&wy, fy),
                                                                  mcu_window_input(&wx, fx), c)];
                            /* std::max(max, v): keeps max unless max < v. */
                            max = max < v ? v : max;
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        mcu_clamp_f32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}
