/* Follows reference_integer_ops::AveragePool and MaxPool for int16 in
 * TensorFlow Lite: windows clipped to the input, the average divided by the
 * number of taps inside, rounded half away from zero. */
#include "mcu_pool_s16.h"

#include "mcu_quant.h"
#include "mcu_window.h"

/* Pooling windows are convolution windows without dilation. */
#define POOL_DILATION 1

/* Average (or, with `take_max`, maximum) of each window. */
/* Memory-plan contract (mcu_planner/lowering/pool.py, pool_facts): both kernels write one
 * output pixel at a time in raster order, reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
static void pool_s16(const mcu_pool_s8_params *p, const int16_t *input, int16_t *output, int take_max)
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
                const int32_t count = MCU_MAX(1, MCU_MAX(0, wy.end - wy.first) * MCU_MAX(0, wx.end - wx.first));
                for (c = 0; c < p->channels; ++c) {
                    /* Sums of int16 values: below 2^31 for windows up to 2^16 taps. */
                    int32_t acc = take_max ? INT16_MIN : 0;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const int32_t v = input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                                    mcu_window_input(&wy, fy),
                                                                    mcu_window_input(&wx, fx), c)];
                            acc = take_max ? MCU_MAX(acc, v) : acc + v;
                        }
                    }
                    if (!take_max) {
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        (int16_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_average_pool_2d_s16(const mcu_pool_s8_params *p, const int16_t *input, int16_t *output)
{
    pool_s16(p, input, output, 0);
}

void mcu_max_pool_2d_s16(const mcu_pool_s8_params *p, const int16_t *input, int16_t *output)
{
    pool_s16(p, input, output, 1);
}
