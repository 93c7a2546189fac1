/* Follows reference_integer_ops::AveragePool / MaxPool (int8), reference_ops'
 * uint8 versions (the same sums and maxima over uint8 values) and the float
 * versions of TensorFlow Lite: windows are clipped to the input, and the
 * average divides by the number of elements actually inside. */
#include "mcu_pool.h"

#include <math.h>

#include <float.h>
#include <string.h>

#include "mcu_dsp.h"
#include "mcu_quant.h"
#include "mcu_window.h"

/* Memory-plan contract (mcu_planner/lowering/pool.py, pool_facts): every pooling kernel here
 * writes one output pixel at a time in raster order (batch, row, column),
 * reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
/* Pooling windows are convolution windows without dilation. */
#define POOL_DILATION 1

static int32_t taps_inside(const mcu_window_axis *wy, const mcu_window_axis *wx)
{
    return MCU_MAX(0, wy->end - wy->first) * MCU_MAX(0, wx->end - wx->first);
}

/* Channels a pass of the 8-bit kernels below sums or compares together. */
#define POOL_CHANNEL_BLOCK 16

/* Sums of the window's taps for channels [c, c + n), n <= POOL_CHANNEL_BLOCK:
 * each channel's sum adds the same terms as the reference (integer sums are
 * exact in any order), the taps read as runs of contiguous channels. */
static void window_sums_8bit(const mcu_pool_s8_params *p, const uint8_t *input, int32_t b, const mcu_window_axis *wy,
                             const mcu_window_axis *wx, int32_t c, int32_t n, int is_signed, int32_t *acc)
{
    int32_t fy, fx, k;
    for (k = 0; k < n; ++k) {
        acc[k] = 0;
    }
    for (fy = wy->first; fy < wy->end; ++fy) {
        for (fx = wx->first; fx < wx->end; ++fx) {
            const uint8_t *run = input + mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                         mcu_window_input(wy, fy), mcu_window_input(wx, fx), c);
#if defined(MCU_MVE)
            int32_t left = n;
            int32_t *sum = acc;
            for (; left > 0; left -= 4, run += 4, sum += 4) {
                const mve_pred16_t lanes = vctp32q((uint32_t)left);
                const int32x4_t v = is_signed ? vldrbq_z_s32((const int8_t *)run, lanes)
                                              : vreinterpretq_s32_u32(vldrbq_z_u32(run, lanes));
                vstrwq_p_s32(sum, vaddq_s32(vldrwq_z_s32(sum, lanes), v), lanes);
            }
#else
            for (k = 0; k < n; ++k) {
                acc[k] += mcu_widen_8bit(run[k], is_signed);
            }
#endif
        }
    }
}

/* int8 and uint8 (is_signed 0): the same sums and rounding (a uint8 sum is
 * never negative). */
static void average_pool_2d_8bit(const mcu_pool_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    int32_t b, out_y, out_x, c, k;
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
                uint8_t *out = output + mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, 0);
                for (c = 0; c < p->channels; c += POOL_CHANNEL_BLOCK) {
                    int32_t acc[POOL_CHANNEL_BLOCK];
                    const int32_t n = MCU_MIN(POOL_CHANNEL_BLOCK, p->channels - c);
                    window_sums_8bit(p, input, b, &wy, &wx, c, n, is_signed, acc);
                    for (k = 0; k < n; ++k) {
                        /* Round half away from zero. */
                        const int32_t mean =
                            acc[k] > 0 ? (acc[k] + count / 2) / count : (acc[k] - count / 2) / count;
                        out[c + k] = (uint8_t)mcu_clamp_s32(mean, p->act_min, p->act_max);
                    }
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

/* reference_ops::L2Pool: sqrt of the mean of the squares inside the window
 * (the sum in float, in the window's row-major order, divided by the count). */
void mcu_l2_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                const int32_t count = taps_inside(&wy, &wx);
                for (c = 0; c < p->channels; ++c) {
                    float sum_squares = 0.0f;
                    for (fy = wy.first; fy < wy.end; ++fy) {
                        for (fx = wx.first; fx < wx.end; ++fx) {
                            const float v = input[mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                                  mcu_window_input(&wy, fy),
                                                                  mcu_window_input(&wx, fx), c)];
                            sum_squares += v * v;
                        }
                    }
                    output[mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        mcu_clamp_f32(sqrtf(sum_squares / (float)count), p->act_min, p->act_max);
                }
            }
        }
    }
}

#if !defined(MCU_MVE)
/* out[k] = max(out[k], in[k]) for k < n, int8 or uint8 values. */
static void max_run_8bit(uint8_t *out, const uint8_t *in, int32_t n, int is_signed)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        out[k] = (uint8_t)MCU_MAX(mcu_widen_8bit(out[k], is_signed), mcu_widen_8bit(in[k], is_signed));
    }
}
#endif

#if defined(MCU_MVE)
/* A window's taps for Helium: the first one inside the input, how many rows
 * and columns of taps lie inside, and the steps between them in bytes. */
typedef struct {
    const uint8_t *corner;
    int32_t rows;
    int32_t cols;
    size_t row_step;
    size_t channels;
} pool_window_mve;

/* The window's maximum of sixteen channels per pass (the last pass
 * predicated), from the type's lowest value (the reference's start, and its
 * result for a window with no tap inside), then the activation's clamp:
 * the reference's values, the taps compared in another order (a maximum is
 * the same in any order): down each column of taps (a 4 x 1 window is one
 * loop of four).  Each pass reads its channels of every tap before
 * writing them, and no pass reads another's channels. */
static inline MCU_ALWAYS_INLINE void window_max_mve(const pool_window_mve *w, int32_t act_min, int32_t act_max,
                                                    uint8_t *out, int is_signed)
{
    size_t c;
    int32_t fy, fx;
    for (c = 0; c < w->channels; c += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)(w->channels - c));
        const uint8_t *column = w->corner + c;
        if (is_signed) {
            int8x16_t max = vdupq_n_s8(INT8_MIN);
            for (fx = 0; fx < w->cols; ++fx, column += w->channels) {
                const int8_t *tap = (const int8_t *)column;
                for (fy = 0; fy < w->rows; ++fy, tap += w->row_step) {
                    max = vmaxq_s8(max, vldrbq_z_s8(tap, lanes));
                }
            }
            max = vminq_s8(vmaxq_s8(max, vdupq_n_s8((int8_t)act_min)), vdupq_n_s8((int8_t)act_max));
            vstrbq_p_s8((int8_t *)out + c, max, lanes);
        } else {
            uint8x16_t max = vdupq_n_u8(0);
            for (fx = 0; fx < w->cols; ++fx, column += w->channels) {
                const uint8_t *tap = column;
                for (fy = 0; fy < w->rows; ++fy, tap += w->row_step) {
                    max = vmaxq_u8(max, vldrbq_z_u8(tap, lanes));
                }
            }
            max = vminq_u8(vmaxq_u8(max, vdupq_n_u8((uint8_t)act_min)), vdupq_n_u8((uint8_t)act_max));
            vstrbq_p_u8(out + c, max, lanes);
        }
    }
}

static void max_pool_2d_8bit_mve(const mcu_pool_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
    pool_window_mve w;
    int32_t b, out_y, out_x;
    uint8_t *out = output; /* pixels in raster order, one after another */
    w.channels = (size_t)p->channels;
    w.row_step = (size_t)p->input_w * w.channels;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            /* The window's first row inside the input, at column 0. */
            const uint8_t *const row = wy.end > wy.first ? input + mcu_nhwc_offset(p->input_h, p->input_w, p->channels,
                                                                                   b, mcu_window_input(&wy, wy.first),
                                                                                   0, 0)
                                                         : input;
            w.rows = MCU_MAX(0, wy.end - wy.first);
            for (out_x = 0; out_x < p->output_w; ++out_x, out += w.channels) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                w.cols = MCU_MAX(0, wx.end - wx.first);
                w.corner = w.cols > 0 ? row + (size_t)mcu_window_input(&wx, wx.first) * w.channels : row;
                if (is_signed) {
                    window_max_mve(&w, p->act_min, p->act_max, out, 1);
                } else {
                    window_max_mve(&w, p->act_min, p->act_max, out, 0);
                }
            }
        }
    }
}
#endif

/* Each channel's maximum over the window: the first tap's run of channels
 * copied, the others compared into it (the same maximum as the reference's
 * tap-by-tap loop; the output never overlaps the input), then the fused
 * activation's clamp. */
static void max_pool_2d_8bit(const mcu_pool_s8_params *p, const uint8_t *input, int is_signed, uint8_t *output)
{
#if defined(MCU_MVE)
    max_pool_2d_8bit_mve(p, input, is_signed, output);
}
#else
    const int32_t lowest = is_signed ? INT8_MIN : 0, highest = is_signed ? INT8_MAX : UINT8_MAX;
    const size_t channels = (size_t)p->channels;
    int32_t b, out_y, out_x, fy, fx;
    size_t c;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            const mcu_window_axis wy =
                mcu_window_axis_at(out_y, p->stride_h, p->pad_h, POOL_DILATION, p->filter_h, p->input_h);
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                const mcu_window_axis wx =
                    mcu_window_axis_at(out_x, p->stride_w, p->pad_w, POOL_DILATION, p->filter_w, p->input_w);
                uint8_t *out = output + mcu_nhwc_offset(p->output_h, p->output_w, p->channels, b, out_y, out_x, 0);
                int first = 1;
                for (fy = wy.first; fy < wy.end; ++fy) {
                    for (fx = wx.first; fx < wx.end; ++fx) {
                        const uint8_t *run = input + mcu_nhwc_offset(p->input_h, p->input_w, p->channels, b,
                                                                     mcu_window_input(&wy, fy),
                                                                     mcu_window_input(&wx, fx), 0);
                        if (first) {
                            memcpy(out, run, channels);
                            first = 0;
                        } else {
                            max_run_8bit(out, run, p->channels, is_signed);
                        }
                    }
                }
                if (first) { /* no tap inside: the reference's starting value */
                    memset(out, (int)(uint8_t)lowest, channels);
                }
                if (p->act_min > lowest || p->act_max < highest) {
                    for (c = 0; c < channels; ++c) {
                        out[c] = (uint8_t)mcu_clamp_s32(mcu_widen_8bit(out[c], is_signed), p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
#endif

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
