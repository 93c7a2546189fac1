/* UNIDIRECTIONAL_SEQUENCE_LSTM as TensorFlow Lite's interpreter computes it
 * (kernels/lstm_eval.cc: LstmStepFloat, with the
 * portable tensor_utils the x86 build dispatches to).  Each step function
 * below names the TFLite function it follows; the order of operations,
 * where the 16-bit gates saturate and which buffer holds what are kept,
 * because they decide output bits. */
#include "mcu_lstm_f32.h"

#include <math.h>
#include <string.h>

#include "mcu_float_round.h"

/* TFLite's float LSTM applies tanh and the logistic function through Eigen
 * (tensor_utils.h: .array().tanh() / .logistic()), not libm.  These follow
 * Eigen's float implementations as an SSE build without FMA runs them: every
 * multiply-add rounds twice. */

/* ptanh_float: a [9/8] rational function on the input clamped to +-c. */
static float eigen_tanh_f32(float a)
{
    static const float alpha[4] = {1.394553628e-8f, 2.102733560e-5f, 3.520756727e-3f, 1.340216100e-1f};
    static const float beta[5] = {8.015776984e-7f, 3.326951409e-4f, 2.597254514e-2f, 4.673548340e-1f, 1.0f};
    const float clamp = 7.90738964080810547f;
    const float x = a < -clamp ? -clamp : (clamp < a ? clamp : a);
    const float x2 = x * x;
    const float x3 = x2 * x;
    float p = alpha[0], q = beta[0];
    int i;
    for (i = 1; i < 4; ++i) {
        p = p * x2 + alpha[i];
    }
    for (i = 1; i < 5; ++i) {
        q = q * x2 + beta[i];
    }
    p = x3 * p + x;
    return p / q;
}

/* floorf for |t| < 2^23 (the logistic's t lies in [-75, 13]): truncation,
 * one less where it rounded up. */
static inline float floor_f32(float t)
{
    const float truncated = (float)(int32_t)t;
    return truncated > t ? truncated - 1.0f : truncated;
}

/* 2^m for -126 <= m <= 127, from its exponent bits.  p * 2^m is then one
 * correctly rounded product, as ldexpf(p, m) is; here m >= -75 and p is
 * near 1, so neither is subnormal. */
static inline float power_of_two_f32(int32_t m)
{
    const uint32_t bits = (uint32_t)(m + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* scalar_logistic_op<float>::packetOp: exp(x) / (1 + exp(x)) with exp(x)
 * computed as exp(x / 2)^2 by Cephes-style range reduction and a degree-5
 * polynomial. */
static float eigen_logistic_packet_f32(float in)
{
    float x, m, r, r2, p_even, p_odd, p, e;
    if (in < -104.0f) {
        return 0.0f;
    }
    x = (16.6355324f < in ? 16.6355324f : in) * 0.5f;
    m = floor_f32(x * 1.44269504088896341f + 0.5f);
    r = m * -0.693359375f + x;
    r = m * 2.12194440e-4f + r;
    r2 = r * r;
    p_even = r2 * 4.1898667812347412109375e-2f + 0.49999141693115234375f;
    p_odd = r2 * 8.33471305668354034423828125e-3f + 0.16666877269744873046875f;
    p = r * p_odd + p_even;
    p = r2 * p + (r + 1.0f);
    e = p * power_of_two_f32((int32_t)m);
    e = e * e;
    return e / (1.0f + e);
}

/* scalar_logistic_op<float>::operator(), for the elements Eigen's loop does
 * not reach with whole packets. */
static float eigen_logistic_scalar_f32(float x)
{
    const float e = expf(16.6355324f < x ? 16.6355324f : x);
    return e / (1.0f + e);
}

/* ApplyActivationToVector: NONE leaves `out` as it was, as TFLite's does.
 * Eigen's assignment loop takes the elements before the first 16-byte
 * boundary of `out` and after the last whole packet of 4 one by one:
 * `phase` is out[0]'s position in TFLite's (16-byte aligned) scratch buffer,
 * in floats. */
static void activate_f32(int activation, const float *in, size_t n, float *out, size_t phase)
{
    size_t head = (4u - phase % 4u) % 4u;
    size_t end, i;
    if (head > n) {
        head = n;
    }
    end = head + (n - head) / 4u * 4u;
    for (i = 0; i < n; ++i) {
        switch (activation) {
        case MCU_LSTM_ACT_RELU:
            out[i] = in[i] < 0.0f ? 0.0f : in[i];
            break;
        case MCU_LSTM_ACT_RELU_N1_TO_1:
            out[i] = in[i] < -1.0f ? -1.0f : (1.0f < in[i] ? 1.0f : in[i]);
            break;
        case MCU_LSTM_ACT_RELU6:
            out[i] = in[i] < 0.0f ? 0.0f : (6.0f < in[i] ? 6.0f : in[i]);
            break;
        case MCU_LSTM_ACT_TANH:
            out[i] = eigen_tanh_f32(in[i]);
            break;
        case MCU_LSTM_ACT_SIGMOID:
            out[i] = i >= head && i < end ? eigen_logistic_packet_f32(in[i]) : eigen_logistic_scalar_f32(in[i]);
            break;
        default:
            return;
        }
    }
}

/* Cortex-M4 and M7 (FPv4 / FPv5): VMLA.F32 is a chained multiply-add (the
 * product rounded before the add; VFMA is the fused one), so it gives the
 * bits of a separate multiply and add. */
#if defined(__GNUC__) && defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 4) && \
    defined(__ARM_PCS_VFP)
#define MCU_VFP_CHAINED_MLA 1
#endif

/* Row . vector as Eigen's matrix x vector product sums it in TFLite's x86
 * build (SSE packets of 4): four running sums over the columns in groups of
 * four, added as (0 + 2) + (1 + 3), then the leftover columns one by one.
 * Every multiply and add rounds on its own (no fused multiply-add). */
MCU_NOINLINE static float dot_in_packets_f32(const float *row, const float *vector, int32_t n_col)
{
    /* The four lanes in registers, not an array: the same sums. */
    float lane0 = 0.0f, lane1 = 0.0f, lane2 = 0.0f, lane3 = 0.0f;
    float sum;
    int32_t c = 0;
#if defined(MCU_VFP_CHAINED_MLA)
    const float *r = row, *v = vector;
    for (; c + 4 <= n_col; c += 4) {
        /* Four values of each in one load apiece; VMLA rounds the product,
         * then the sum, as the C below does. */
        __asm__("vldmia %[r]!, {s8-s11}\n\t"
                "vldmia %[v]!, {s12-s15}\n\t"
                "vmla.f32 %[l0], s8, s12\n\t"
                "vmla.f32 %[l1], s9, s13\n\t"
                "vmla.f32 %[l2], s10, s14\n\t"
                "vmla.f32 %[l3], s11, s15"
                : [l0] "+t"(lane0), [l1] "+t"(lane1), [l2] "+t"(lane2), [l3] "+t"(lane3), [r] "+r"(r), [v] "+r"(v)
                :
                : "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "memory");
    }
#endif
    for (; c + 4 <= n_col; c += 4) {
        lane0 += row[c] * vector[c];
        lane1 += row[c + 1] * vector[c + 1];
        lane2 += row[c + 2] * vector[c + 2];
        lane3 += row[c + 3] * vector[c + 3];
    }
    sum = (lane0 + lane2) + (lane1 + lane3);
    for (; c < n_col; ++c) {
        sum += row[c] * vector[c];
    }
    return sum;
}

/* Row . vector as Eigen's coefficient-wise (lazy) product sums it for small
 * matrix products: products in packets of 4, two packet sums over pairs of
 * packets, a last whole packet, the packet's lanes as (0 + 2) + (1 + 3),
 * then the leftover products one by one. */
MCU_NOINLINE static float dot_reduced_f32(const float *row, const float *vector, int32_t n_col)
{
    float sum0[4], sum1[4], sum;
    const int32_t whole = n_col / 4 * 4, pairs = n_col / 8 * 8;
    int32_t c, l;
    if (whole == 0) {
        sum = row[0] * vector[0];
        for (c = 1; c < n_col; ++c) {
            sum += row[c] * vector[c];
        }
        return sum;
    }
    for (l = 0; l < 4; ++l) {
        sum0[l] = row[l] * vector[l];
    }
    if (whole > 4) {
        for (l = 0; l < 4; ++l) {
            sum1[l] = row[4 + l] * vector[4 + l];
        }
        for (c = 8; c < pairs; c += 8) {
            for (l = 0; l < 4; ++l) {
                sum0[l] += row[c + l] * vector[c + l];
                sum1[l] += row[c + 4 + l] * vector[c + 4 + l];
            }
        }
        for (l = 0; l < 4; ++l) {
            sum0[l] += sum1[l];
        }
        if (whole > pairs) {
            for (l = 0; l < 4; ++l) {
                sum0[l] += row[pairs + l] * vector[pairs + l];
            }
        }
    }
    sum = (sum0[0] + sum0[2]) + (sum0[1] + sum0[3]);
    for (c = whole; c < n_col; ++c) {
        sum += row[c] * vector[c];
    }
    return sum;
}

/* Row . vector as Eigen's matrix product kernel (gebp, SSE: packets of 4,
 * blocks of 4 columns) sums it, which depends on where the element falls:
 * rows in pairs of packets, and any row outside the blocks of 4 columns,
 * sum the depth in order; a last packet of rows accumulates even and odd
 * depth in two sums over groups of 8 (added, then the rest in order); the
 * leftover rows keep four sums by depth modulo 4, added as (0 + 1) + (2 + 3),
 * then the rest in order.  (Eigen splits depths beyond a cache-dependent
 * block, 504 on the machine the tests ran on; LSTM inputs are shorter.) */
MCU_NOINLINE static float dot_in_gebp_order_f32(const float *row, const float *vector, int32_t n_col, int32_t r, int32_t n_row,
                                   int32_t b, int32_t n_batch)
{
    const int32_t rows_in_pairs = n_row / 8 * 8;
    const int32_t rows_in_packets = rows_in_pairs + (n_row - rows_in_pairs) / 4 * 4;
    float sum = 0.0f;
    int32_t c = 0;
    if (b >= n_batch / 4 * 4 || r < rows_in_pairs) {
        /* in order */
    } else if (r < rows_in_packets) {
        float odd = 0.0f;
        for (; c < n_col / 8 * 8; c += 2) {
            sum += row[c] * vector[c];
            odd += row[c + 1] * vector[c + 1];
        }
        sum += odd;
    } else {
        float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int32_t l;
        for (; c < n_col / 4 * 4; c += 4) {
            for (l = 0; l < 4; ++l) {
                lane[l] += row[c + l] * vector[c + l];
            }
        }
        sum = (lane[0] + lane[1]) + (lane[2] + lane[3]);
    }
    for (; c < n_col; ++c) {
        sum += row[c] * vector[c];
    }
    return sum;
}

/* Eigen's threshold (EIGEN_GEMM_TO_COEFFBASED_THRESHOLD) below which depth +
 * rows + columns of a matrix product go through the lazy product. */
#define EIGEN_LAZY_PRODUCT_LIMIT 20

/* The fully connected product TFLite's float LSTM runs (optimized_ops::
 * FullyConnected through Eigen): out = matrix x vector + add.  One vector is
 * a matrix x vector product (summed in packets); several are a matrix
 * product: the lazy product when small, else the gebp kernel. */
static void mat_vec_add_f32(const float *matrix, const float *vectors, const float *add, int32_t n_batch,
                            int32_t n_col, int32_t n_row, float *out)
{
    const int lazy = n_col + n_row + n_batch < EIGEN_LAZY_PRODUCT_LIMIT;
    int32_t b, r;
    for (b = 0; b < n_batch; ++b) {
        const float *vector = vectors + (size_t)b * (size_t)n_col;
        for (r = 0; r < n_row; ++r) {
            const float *row = matrix + (size_t)r * (size_t)n_col;
            const size_t at = (size_t)b * (size_t)n_row + (size_t)r;
            float dot;
            if (n_batch == 1) {
                dot = dot_in_packets_f32(row, vector, n_col);
            } else if (lazy) {
                dot = dot_reduced_f32(row, vector, n_col);
            } else {
                dot = dot_in_gebp_order_f32(row, vector, n_col, r, n_row, b, n_batch);
            }
            out[at] = dot + add[at];
        }
    }
}

static int all_zero_f32(const float *v, size_t n)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        if (v[i] != 0.0f) {
            return 0;
        }
    }
    return 1;
}

/* The float op's tensors by gate, gathered once per call (see lstm_s8_gates). */
typedef struct {
    const float *input_weights[MCU_LSTM_GATES];
    const float *recurrent_weights[MCU_LSTM_GATES];
    const float *cell_weights[MCU_LSTM_GATES];
    const float *gate_bias[MCU_LSTM_GATES];
    const float *layer_norm[MCU_LSTM_GATES];
    const float *projection_weights;
    const float *projection_bias;
    float *gate_scratch;
    float *accumulator; /* TFLite's accumulation scratch */
} lstm_f32_gates;

/* PortableMeanStddevNormalization, then the layer norm weights and the bias. */
MCU_NOINLINE static void layer_norm_f32(float *gate, const float *weights, const float *bias, int32_t rows,
                                        size_t n_cell)
{
    int32_t b;
    size_t i;
    for (b = 0; b < rows; ++b) {
        float *row = gate + (size_t)b * n_cell;
        float total = 0.0f, squares = 0.0f, mean, stddev_inv;
        for (i = 0; i < n_cell; ++i) {
            total += row[i];
        }
        mean = total / (float)n_cell;
        for (i = 0; i < n_cell; ++i) {
            const float diff = row[i] - mean;
            squares += diff * diff;
        }
        stddev_inv = 1.0f / sqrtf(squares / (float)n_cell + 1e-8f);
        for (i = 0; i < n_cell; ++i) {
            row[i] = (row[i] - mean) * stddev_inv;
            row[i] = weights[i] * row[i];
            row[i] += bias[i];
        }
    }
}

/* CalculateLstmGateFloat, the gate's activation applied at `phase` (see
 * activate_f32). */
static void gate_f32(const mcu_lstm_f32_params *p, const lstm_f32_gates *w, int gate_index, int32_t rows,
                     const float *input, int input_all_zero, const float *output_state, const float *cell_state,
                     float *gate, size_t phase)
{
    const size_t n_cell = (size_t)p->n_cell;
    const size_t n = (size_t)rows * n_cell;
    const float *const cell_weights = w->cell_weights[gate_index];
    const float *const layer_norm = w->layer_norm[gate_index];
    float *sum = gate, *other = w->accumulator;
    int32_t b;
    size_t i;
    for (b = 0; b < rows; ++b) {
        if (layer_norm != NULL) {
            memset(gate + (size_t)b * n_cell, 0, n_cell * sizeof *gate);
        } else {
            memcpy(gate + (size_t)b * n_cell, w->gate_bias[gate_index], n_cell * sizeof *gate);
        }
    }
    if (!input_all_zero) {
        mat_vec_add_f32(w->input_weights[gate_index], input, sum, rows, p->n_input, p->n_cell, other);
        sum = other;
        other = gate;
    }
    mat_vec_add_f32(w->recurrent_weights[gate_index], output_state, sum, rows, p->n_output, p->n_cell, other);
    if (cell_weights != NULL) {
        for (i = 0; i < n; ++i) {
            other[i] += cell_weights[i % n_cell] * cell_state[i];
        }
    }
    if (layer_norm != NULL) {
        layer_norm_f32(other, layer_norm, w->gate_bias[gate_index], rows, n_cell);
    }
    activate_f32(gate_index == MCU_LSTM_GATE_CELL ? (int)p->activation : MCU_LSTM_ACT_SIGMOID, other, n, gate, phase);
}

/* Where TFLite's EvalFloat puts a gate in its scratch buffer (in units of
 * n_batch x n_cell floats): input, cell, forget, output; without the input
 * gate (CIFG) cell, forget, output. */
static size_t tflite_gate_slot(int gate, int use_cifg)
{
    static const size_t slot[MCU_LSTM_GATES] = {0, 2, 1, 3};
    return slot[gate] - (use_cifg ? 1u : 0u);
}

/* LstmStepFloat for `rows` batch rows; `batch_offset` is the first row's
 * offset (in floats) into TFLite's per-gate buffers. */
static void step_f32(const mcu_lstm_f32_params *p, const lstm_f32_gates *w, int32_t rows, size_t batch_offset,
                     const float *input, float *output_state, float *cell_state, float *output)
{
    const size_t n = (size_t)rows * (size_t)p->n_cell;
    const size_t outputs = (size_t)rows * (size_t)p->n_output;
    const size_t gate_floats = (size_t)p->n_batch * (size_t)p->n_cell;
    const int use_cifg = w->input_weights[MCU_LSTM_GATE_INPUT] == NULL;
    const int input_all_zero = all_zero_f32(input, (size_t)rows * (size_t)p->n_input);
    float *const input_gate = w->gate_scratch;
    float *const forget_gate = input_gate + n;
    float *const cell_gate = forget_gate + n;
    float *const output_gate = cell_gate + n;
    int g;
    size_t i;
    for (g = use_cifg ? MCU_LSTM_GATE_FORGET : MCU_LSTM_GATE_INPUT; g <= MCU_LSTM_GATE_CELL; ++g) {
        gate_f32(p, w, g, rows, input, input_all_zero, output_state, cell_state, w->gate_scratch + (size_t)g * n,
                 tflite_gate_slot(g, use_cifg) * gate_floats + batch_offset);
    }
    /* UpdateLstmCellFloat. */
    for (i = 0; i < n; ++i) {
        cell_state[i] = forget_gate[i] * cell_state[i];
    }
    for (i = 0; i < n; ++i) {
        cell_state[i] += cell_gate[i] * (use_cifg ? 1.0f - forget_gate[i] : input_gate[i]);
    }
    if (p->cell_clip > 0.0f) {
        for (i = 0; i < n; ++i) {
            cell_state[i] = mcu_clamp_f32(cell_state[i], -p->cell_clip, p->cell_clip);
        }
    }
    gate_f32(p, w, MCU_LSTM_GATE_OUTPUT, rows, input, input_all_zero, output_state, cell_state, output_gate,
             tflite_gate_slot(MCU_LSTM_GATE_OUTPUT, use_cifg) * gate_floats + batch_offset);
    /* CalculateLstmOutputFloat: the cell gate's buffer is the scratch. */
    activate_f32((int)p->activation, cell_state, n, cell_gate,
                 tflite_gate_slot(MCU_LSTM_GATE_CELL, use_cifg) * gate_floats + batch_offset);
    for (i = 0; i < n; ++i) {
        cell_gate[i] = output_gate[i] * cell_gate[i];
    }
    if (w->projection_weights != NULL) {
        int32_t b;
        for (b = 0; b < rows; ++b) {
            float *row = w->accumulator + (size_t)b * (size_t)p->n_output;
            if (w->projection_bias != NULL) {
                memcpy(row, w->projection_bias, (size_t)p->n_output * sizeof *row);
            } else {
                memset(row, 0, (size_t)p->n_output * sizeof *row);
            }
        }
        mat_vec_add_f32(w->projection_weights, cell_gate, w->accumulator, rows, p->n_cell, p->n_output, output_state);
        if (p->proj_clip > 0.0f) {
            for (i = 0; i < outputs; ++i) {
                output_state[i] = mcu_clamp_f32(output_state[i], -p->proj_clip, p->proj_clip);
            }
        }
    } else {
        memcpy(output_state, cell_gate, outputs * sizeof *output_state);
    }
    memcpy(output, output_state, outputs * sizeof *output);
}

void mcu_lstm_f32(const mcu_lstm_f32_params *p, const mcu_lstm_f32_tensors *t)
{
    const lstm_f32_gates w = {
        {t->input_to_input_weights, t->input_to_forget_weights, t->input_to_cell_weights, t->input_to_output_weights},
        {t->recurrent_to_input_weights, t->recurrent_to_forget_weights, t->recurrent_to_cell_weights,
         t->recurrent_to_output_weights},
        {t->cell_to_input_weights, t->cell_to_forget_weights, NULL, t->cell_to_output_weights},
        {t->input_gate_bias, t->forget_gate_bias, t->cell_gate_bias, t->output_gate_bias},
        {t->input_layer_norm_coefficients, t->forget_layer_norm_coefficients, t->cell_layer_norm_coefficients,
         t->output_layer_norm_coefficients},
        t->projection_weights,
        t->projection_bias,
        t->gate_scratch,
        t->accumulator_scratch,
    };
    const float *const input = t->input;
    float *const output_state = t->output_state, *const cell_state = t->cell_state, *const output = t->output;
    const size_t in_row = (size_t)p->n_input, out_row = (size_t)p->n_output;
    int32_t step, b;
    if (p->time_major) {
        for (step = 0; step < p->n_time; ++step) {
            const size_t row = (size_t)step * (size_t)p->n_batch;
            step_f32(p, &w, p->n_batch, 0, input + row * in_row, output_state, cell_state, output + row * out_row);
        }
        return;
    }
    for (b = 0; b < p->n_batch; ++b) {
        for (step = 0; step < p->n_time; ++step) {
            const size_t row = (size_t)b * (size_t)p->n_time + (size_t)step;
            step_f32(p, &w, 1, (size_t)b * (size_t)p->n_cell, input + row * in_row, output_state + (size_t)b * out_row,
                     cell_state + (size_t)b * (size_t)p->n_cell, output + row * out_row);
        }
    }
}
