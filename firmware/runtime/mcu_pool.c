/* Follows reference_integer_ops::AveragePool / MaxPool and reference_ops'
 * float versions of TensorFlow Lite: windows are clipped to the input, and
 * the average divides by the number of elements actually inside. */
#include "mcu_pool.h"

#include <float.h>

#include "mcu_quant.h"

/* The window of output (out_y, out_x), clipped to the input. */
typedef struct {
    int32_t y_start, y_end, x_start, x_end, in_y_origin, in_x_origin;
} mcu_pool_window;

#define MCU_POOL_WINDOW(p, out_y, out_x, w)                                           \
    do {                                                                              \
        (w).in_y_origin = (out_y) * (p)->stride_h - (p)->pad_h;                       \
        (w).in_x_origin = (out_x) * (p)->stride_w - (p)->pad_w;                       \
        (w).y_start = MCU_MAX(0, -(w).in_y_origin);                                   \
        (w).y_end = MCU_MIN((p)->filter_h, (p)->input_h - (w).in_y_origin);           \
        (w).x_start = MCU_MAX(0, -(w).in_x_origin);                                   \
        (w).x_end = MCU_MIN((p)->filter_w, (p)->input_w - (w).in_x_origin);           \
    } while (0)

static size_t pool_index(int32_t h_size, int32_t w_size, int32_t c_size, int32_t b, int32_t y, int32_t x, int32_t c)
{
    return (((size_t)b * (size_t)h_size + (size_t)y) * (size_t)w_size + (size_t)x) * (size_t)c_size + (size_t)c;
}

void mcu_average_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    mcu_pool_window w;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                MCU_POOL_WINDOW(p, out_y, out_x, w);
                for (c = 0; c < p->channels; ++c) {
                    int32_t acc = 0;
                    int32_t count = 0;
                    for (fy = w.y_start; fy < w.y_end; ++fy) {
                        for (fx = w.x_start; fx < w.x_end; ++fx) {
                            acc += input[pool_index(p->input_h, p->input_w, p->channels, b, w.in_y_origin + fy,
                                                    w.in_x_origin + fx, c)];
                            ++count;
                        }
                    }
                    if (count == 0) {
                        /* TFLite reports an error here; an empty window cannot
                         * arise from SAME/VALID padding. */
                        acc = 0;
                        count = 1;
                    }
                    /* Round half away from zero. */
                    acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    output[pool_index(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_average_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    mcu_pool_window w;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                MCU_POOL_WINDOW(p, out_y, out_x, w);
                for (c = 0; c < p->channels; ++c) {
                    float total = 0.0f;
                    float count = 0.0f;
                    for (fy = w.y_start; fy < w.y_end; ++fy) {
                        for (fx = w.x_start; fx < w.x_end; ++fx) {
                            total += input[pool_index(p->input_h, p->input_w, p->channels, b, w.in_y_origin + fy,
                                                      w.in_x_origin + fx, c)];
                            count += 1.0f;
                        }
                    }
                    output[pool_index(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        mcu_clamp_f32(total / count, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_max_pool_2d_s8(const mcu_pool_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    mcu_pool_window w;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                MCU_POOL_WINDOW(p, out_y, out_x, w);
                for (c = 0; c < p->channels; ++c) {
                    int32_t max = INT8_MIN;
                    for (fy = w.y_start; fy < w.y_end; ++fy) {
                        for (fx = w.x_start; fx < w.x_end; ++fx) {
                            const int32_t v = input[pool_index(p->input_h, p->input_w, p->channels, b,
                                                               w.in_y_origin + fy, w.in_x_origin + fx, c)];
                            max = MCU_MAX(max, v);
                        }
                    }
                    output[pool_index(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        (int8_t)mcu_clamp_s32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}

void mcu_max_pool_2d_f32(const mcu_pool_f32_params *p, const float *input, float *output)
{
    int32_t b, out_y, out_x, c, fy, fx;
    mcu_pool_window w;
    for (b = 0; b < p->batches; ++b) {
        for (out_y = 0; out_y < p->output_h; ++out_y) {
            for (out_x = 0; out_x < p->output_w; ++out_x) {
                MCU_POOL_WINDOW(p, out_y, out_x, w);
                for (c = 0; c < p->channels; ++c) {
                    float max = -FLT_MAX; /* std::numeric_limits<float>::lowest() */
                    for (fy = w.y_start; fy < w.y_end; ++fy) {
                        for (fx = w.x_start; fx < w.x_end; ++fx) {
                            const float v = input[pool_index(p->input_h, p->input_w, p->channels, b,
                                                             w.in_y_origin + fy, w.in_x_origin + fx, c)];
                            /* std::max(max, v): keeps max unless max < v. */
                            max = max < v ? v : max;
                        }
                    }
                    output[pool_index(p->output_h, p->output_w, p->channels, b, out_y, out_x, c)] =
                        mcu_clamp_f32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}
