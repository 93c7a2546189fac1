/* UNIDIRECTIONAL_SEQUENCE_LSTM as TensorFlow Lite's interpreter computes it
 * (kernels/lstm_eval.cc: LstmStepInteger8x8_16 and LstmStepFloat, with the
 * portable tensor_utils the x86 build dispatches to).  Each step function
 * below names the TFLite function it follows; the order of operations,
 * where the 16-bit gates saturate and which buffer holds what are kept,
 * because they decide output bits. */
#include "mcu_lstm_s8.h"

#include <string.h>

#include "mcu_dsp.h"
#include "mcu_fixedpoint.h"
#include "mcu_fully_connected.h"
#include "mcu_fp16_table.h"
#include "mcu_requant.h"

/* ---------------------------------------------------------------- int8 x int8 -> int16 */

/* Rows [r, r + count) of matrix . vector plus their effective biases: the
 * accumulators of TFLite's PortableMatrixBatchVectorMultiplyAccumulate (the
 * zero points are folded into the biases at generation time).  Integer sums
 * are exact in any order; four rows go through mcu_dot4_s8 together. */
static int row_sums_s8(const int8_t *vector, const int32_t *bias, const int8_t *matrix, int32_t n_col,
                       int32_t n_row, int32_t r, int32_t sums[4])
{
    int k;
    if (r + 4 <= n_row) {
        mcu_dot4_s8(vector, matrix + (size_t)r * (size_t)n_col, n_col, sums);
        for (k = 0; k < 4; ++k) {
            sums[k] += bias[r + k];
        }
        return 4;
    }
    {
        const int8_t *row = matrix + (size_t)r * (size_t)n_col;
        int32_t c, sum = bias[r];
        for (c = 0; c < n_col; ++c) {
            sum += (int32_t)vector[c] * (int32_t)row[c];
        }
        sums[0] = sum;
    }
    return 1;
}

#if !defined(MCU_MVE)
/* PortableMatrixBatchVectorMultiplyAccumulate, int16 output: each row's
 * accumulator rescaled, added to what `output` holds and saturated (Helium
 * takes gate_products_s16_mve instead). */
static void mat_vec_accumulate_s16(const int8_t *vectors, const int32_t *bias, const int8_t *matrix,
                                   int32_t multiplier, int32_t shift, int32_t n_batch, int32_t n_col,
                                   int32_t n_row, int16_t *output)
{
    /* The multiplier's rounding terms worked out once. */
    const mcu_prepared_mul rescale = mcu_prepare_mul(multiplier, (int)shift);
    int32_t b, r;
    for (b = 0; b < n_batch; ++b) {
        const int8_t *vector = vectors + (size_t)b * (size_t)n_col;
        int16_t *out = output + (size_t)b * (size_t)n_row;
        for (r = 0; r < n_row;) {
            int32_t sums[4];
            const int count = row_sums_s8(vector, bias, matrix, n_col, n_row, r, sums);
            int k;
            for (k = 0; k < count; ++k, ++r) {
                const int32_t value = mcu_apply_prepared_mul(sums[k], &rescale) + out[r];
                out[r] = (int16_t)mcu_clamp_s32(value, INT16_MIN, INT16_MAX);
            }
        }
    }
}
#endif

/* The same with int8 output and an output zero point (the projection). */
static void mat_vec_accumulate_s8(const int8_t *vectors, const int32_t *bias, const int8_t *matrix,
                                  int32_t multiplier, int32_t shift, int32_t n_batch, int32_t n_col, int32_t n_row,
                                  int32_t output_zp, int8_t *output)
{
    const mcu_prepared_mul rescale = mcu_prepare_mul(multiplier, (int)shift);
    int32_t b, r;
    for (b = 0; b < n_batch; ++b) {
        const int8_t *vector = vectors + (size_t)b * (size_t)n_col;
        int8_t *out = output + (size_t)b * (size_t)n_row;
        for (r = 0; r < n_row;) {
            int32_t sums[4];
            const int count = row_sums_s8(vector, bias, matrix, n_col, n_row, r, sums);
            int k;
            for (k = 0; k < count; ++k, ++r) {
                const int32_t value = mcu_apply_prepared_mul(sums[k], &rescale) + output_zp + out[r];
                out[r] = (int8_t)mcu_clamp_s32(value, INT8_MIN, INT8_MAX);
            }
        }
    }
}

/* PortableApplyLayerNorm. */
MCU_NOINLINE static void layer_norm_s16(int16_t *gate, const int16_t *weights, const int32_t *bias, int32_t multiplier,
                           int32_t shift, int32_t variance_guard, int32_t n_batch, int32_t n_cell)
{
    const int64_t two_to_20 = (int64_t)1 << 20;
    int32_t b, j;
    for (b = 0; b < n_batch; ++b) {
        int16_t *row = gate + (size_t)b * (size_t)n_cell;
        int64_t sum = 0, sum_sq = 0, variance;
        int32_t mean, variance2, inv_sqrt;
        int inv_sqrt_shift;
        for (j = 0; j < n_cell; ++j) {
            sum += row[j];
            sum_sq += (int32_t)row[j] * (int32_t)row[j];
        }
        mean = (int32_t)(sum * 1024 / n_cell);
        /* Exact only for a power-of-two n_cell, as in TFLite. */
        variance = sum_sq * (int64_t)(two_to_20 / n_cell) - (int64_t)mean * (int64_t)mean;
        variance2 = (int32_t)(variance / two_to_20);
        if (variance2 < 1) {
            variance2 = variance_guard;
        }
        mcu_inv_sqrt_quantized_multiplier_exp(variance2, -1, &inv_sqrt, &inv_sqrt_shift);
        for (j = 0; j < n_cell; ++j) {
            const int32_t shifted = 1024 * (int32_t)row[j] - mean;
            const int32_t rescaled = mcu_mul_by_quantized_mul(shifted, inv_sqrt, inv_sqrt_shift);
            /* int32 arithmetic (wrapping) before the widening, as TFLite writes it. */
            const int64_t weighted =
                (int32_t)((uint32_t)rescaled * (uint32_t)(int32_t)weights[j] + (uint32_t)bias[j]);
            const int32_t rounded = (int32_t)((weighted > 0 ? weighted + 512 : weighted - 512) / 1024);
            const int32_t value = mcu_mul_by_quantized_mul(rounded, multiplier, (int)shift + 12);
            row[j] = (int16_t)mcu_clamp_s32(value, INT16_MIN, INT16_MAX);
        }
    }
}

/* The params' tables, built where they are read, in the activation loops,
 * which call nothing (off the deepest stack): the sigmoid's, and the cell
 * gate's tanh, which reads the sigmoid's below its first magnitude. */
static mcu_fp16_table sigmoid_table(const mcu_lstm_s8_params *p)
{
    const mcu_fp16_table t = {p->sigmoid_knots, p->sigmoid_residuals, p->sigmoid_last, 0, NULL};
    return t;
}

static mcu_fp16_table gate_tanh_table(const mcu_lstm_s8_params *p, const mcu_fp16_table *sigmoid)
{
    const mcu_fp16_table t = {p->gate_tanh_knots, p->gate_tanh_residuals, p->gate_tanh_last, p->gate_tanh_first,
                              sigmoid};
    return t;
}

/* The op's tensors other than the sequence and the states, by gate (NULL
 * where absent), gathered once per call; steps take them by pointer, which
 * keeps the stack of the call chain within a small firmware's reserve. */
typedef struct {
    const int8_t *input_weights[MCU_LSTM_GATES];
    const int8_t *recurrent_weights[MCU_LSTM_GATES];
    const int16_t *cell_weights[MCU_LSTM_GATES]; /* none for the cell gate */
    const int32_t *gate_bias[MCU_LSTM_GATES];
    const int16_t *layer_norm[MCU_LSTM_GATES];
    const int8_t *projection_weights;
    int16_t *gate_scratch;
    int8_t *hidden_scratch;
} lstm_s8_gates;

/* The gate's accumulated products (Q3.12) to Q0.15: sigmoid, tanh for the
 * cell gate. */
MCU_NOINLINE static void activate_gate_s16(const mcu_lstm_s8_params *p, int16_t *gate, size_t n, int gate_index)
{
    const mcu_fp16_table sigmoid = sigmoid_table(p);
    const mcu_fp16_table tanh = gate_index == MCU_LSTM_GATE_CELL ? gate_tanh_table(p, &sigmoid) : sigmoid;
    const mcu_fp16_table *const t = gate_index == MCU_LSTM_GATE_CELL ? &tanh : &sigmoid;
#if defined(MCU_MVE)
    /* Eight lanes per pass, the last pass predicated. */
    int32_t left;
    for (left = (int32_t)n; left > 0; left -= 8, gate += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        const int16x8_t x = vldrhq_z_s16(gate, lanes);
        vstrhq_p_s16(gate,
                     gate_index == MCU_LSTM_GATE_CELL ? mcu_fp16_table_tanh_x8(t, x) : mcu_fp16_table_logistic_x8(t, x),
                     lanes);
    }
#else
    size_t i;
    if (gate_index == MCU_LSTM_GATE_CELL) {
        for (i = 0; i < n; ++i) {
            gate[i] = mcu_fp16_table_tanh(t, gate[i]);
        }
    } else {
        for (i = 0; i < n; ++i) {
            gate[i] = mcu_fp16_table_logistic(t, gate[i]);
        }
    }
#endif
}

/* tanh of the cell state (15 + log2(its scale) integer bits) into `out`: its
 * own table, or the cell gate's where the params have none. */
MCU_NOINLINE static void tanh_cell_s16(const mcu_lstm_s8_params *p, const int16_t *cell, size_t n, int16_t *out)
{
    const mcu_fp16_table sigmoid = sigmoid_table(p);
    const mcu_fp16_table own = {p->cell_tanh_knots, p->cell_tanh_residuals, p->cell_tanh_last, 0, NULL};
    const mcu_fp16_table table = p->cell_tanh_knots != NULL ? own : gate_tanh_table(p, &sigmoid);
    const mcu_fp16_table *const t = &table;
#if defined(MCU_MVE)
    int32_t left;
    for (left = (int32_t)n; left > 0; left -= 8, cell += 8, out += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        vstrhq_p_s16(out, mcu_fp16_table_tanh_x8(t, vldrhq_z_s16(cell, lanes)), lanes);
    }
#else
    size_t i;
    for (i = 0; i < n; ++i) {
        out[i] = mcu_fp16_table_tanh(t, cell[i]);
    }
#endif
}

/* PortableVectorBatchVectorCwiseProductAccumulate for the peephole, called
 * by TFLite with n_output as the vector length (lowering refuses n_output >
 * n_cell). */
MCU_NOINLINE static void peephole_s16(const mcu_lstm_s8_params *p, int gate_index, int32_t rows,
                                      const int16_t *cell_weights, const int16_t *cell_state, int16_t *gate)
{
    int32_t b, v;
    for (b = 0; b < rows; ++b) {
        for (v = 0; v < p->n_output; ++v) {
            const size_t at = (size_t)b * (size_t)p->n_output + (size_t)v;
            int32_t product = (int32_t)cell_weights[v] * (int32_t)cell_state[at];
            product = mcu_mul_by_quantized_mul(product, p->cell_multiplier[gate_index], (int)p->cell_shift[gate_index]);
            gate[at] = (int16_t)mcu_clamp_s32(product + gate[at], INT16_MIN, INT16_MAX);
        }
    }
}

#if !defined(MCU_MVE)
/* The gate's two matrix products as PortableMatrixBatchVectorMultiply-
 * Accumulate adds them to the zeroed gate (the input's rescaled and
 * saturated to int16, the recurrent one's rescaled, added and saturated
 * again), four rows of both at a time, in one pass. */
MCU_NOINLINE static void gate_products_s16(const mcu_lstm_s8_params *p, const lstm_s8_gates *w, int gate_index,
                                           int32_t rows, const int8_t *input, const int8_t *output_state,
                                           const mcu_accumulated_mul *input_rescale,
                                           const mcu_accumulated_mul *recurrent_rescale, int16_t *gate)
{
    const int32_t n_cell = p->n_cell, n_input = p->n_input, n_output = p->n_output;
    const int32_t *const input_bias = p->input_effective_bias + (size_t)gate_index * (size_t)n_cell;
    const int32_t *const recurrent_bias = p->recurrent_effective_bias + (size_t)gate_index * (size_t)n_cell;
    const int8_t *const input_weights = w->input_weights[gate_index];
    const int8_t *const recurrent_weights = w->recurrent_weights[gate_index];
    int32_t b, r, c;
    for (b = 0; b < rows; ++b) {
        const int8_t *const x = input + (size_t)b * (size_t)n_input;
        const int8_t *const h = output_state + (size_t)b * (size_t)n_output;
        int16_t *const out = gate + (size_t)b * (size_t)n_cell;
        for (r = 0; r < n_cell; r += 4) {
            int32_t input_sums[4], recurrent_sums[4];
            int k, count = 4;
            if (r + 4 <= n_cell) {
                mcu_dot4_s8(x, input_weights + (size_t)r * (size_t)n_input, n_input, input_sums);
                mcu_dot4_s8(h, recurrent_weights + (size_t)r * (size_t)n_output, n_output, recurrent_sums);
            } else {
                count = (int)(n_cell - r);
                for (k = 0; k < count; ++k) {
                    const int8_t *const input_row = input_weights + (size_t)(r + k) * (size_t)n_input;
                    const int8_t *const recurrent_row = recurrent_weights + (size_t)(r + k) * (size_t)n_output;
                    input_sums[k] = 0;
                    recurrent_sums[k] = 0;
                    for (c = 0; c < n_input; ++c) {
                        input_sums[k] += (int32_t)x[c] * input_row[c];
                    }
                    for (c = 0; c < n_output; ++c) {
                        recurrent_sums[k] += (int32_t)h[c] * recurrent_row[c];
                    }
                }
            }
            for (k = 0; k < count; ++k) {
                const int32_t from_input = mcu_clamp_s32(
                    mcu_apply_accumulated_mul(input_sums[k] + input_bias[r + k], input_rescale), INT16_MIN, INT16_MAX);
                const int32_t value =
                    from_input + mcu_apply_accumulated_mul(recurrent_sums[k] + recurrent_bias[r + k], recurrent_rescale);
                out[r + k] = (int16_t)mcu_clamp_s32(value, INT16_MIN, INT16_MAX);
            }
        }
    }
}
#endif

#if defined(MCU_MVE)
/* One of a gate's two matrix products: its weights, effective biases,
 * columns and rescale (the shift split as mcu_mul_by_quantized_mul_n_x4
 * takes it). */
typedef struct {
    const int8_t *weights;
    const int32_t *bias;
    int32_t n_col;
    int32_t multiplier;
    int32_t left_shift;
    int32_t right_shift;
} lstm_product_mve;

static lstm_product_mve product_mve(const int8_t *weights, const int32_t *bias, int32_t n_col, int32_t multiplier,
                                    int32_t shift)
{
    lstm_product_mve m;
    m.weights = weights;
    m.bias = bias;
    m.n_col = n_col;
    m.multiplier = multiplier;
    m.left_shift = shift > 0 ? shift & 31 : 0;
    m.right_shift = shift < 0 ? shift : 0;
    return m;
}

/* Rows r .. r + 3 of matrix . x plus their biases, rescaled: whole vectors
 * of sixteen columns without predication, then the 1-15 left under a tail
 * predicate (VMLADAVA; integer sums are exact in any order), and
 * mcu_mul_by_quantized_mul_n_x4 (mcu_mul_by_quantized_mul on each lane). */
MCU_NOINLINE static int32x4_t rows4_product_mve(const lstm_product_mve *m, const int8_t *x, int32_t r)
{
    const int32_t n_col = m->n_col;
    const int8_t *const w0 = m->weights + (size_t)r * (size_t)n_col;
    const int8_t *const w1 = w0 + n_col, *const w2 = w1 + n_col, *const w3 = w2 + n_col;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, c;
    int32x4_t sums;
    for (c = 0; c + 16 <= n_col; c += 16) {
        const int8x16_t a = vldrbq_s8(x + c);
        s0 = vmladavaq_s8(s0, a, vldrbq_s8(w0 + c));
        s1 = vmladavaq_s8(s1, a, vldrbq_s8(w1 + c));
        s2 = vmladavaq_s8(s2, a, vldrbq_s8(w2 + c));
        s3 = vmladavaq_s8(s3, a, vldrbq_s8(w3 + c));
    }
    if (c < n_col) {
        const mve_pred16_t lanes = vctp8q((uint32_t)(n_col - c));
        const int8x16_t a = vldrbq_z_s8(x + c, lanes);
        s0 = vmladavaq_s8(s0, a, vldrbq_z_s8(w0 + c, lanes));
        s1 = vmladavaq_s8(s1, a, vldrbq_z_s8(w1 + c, lanes));
        s2 = vmladavaq_s8(s2, a, vldrbq_z_s8(w2 + c, lanes));
        s3 = vmladavaq_s8(s3, a, vldrbq_z_s8(w3 + c, lanes));
    }
    sums = vsetq_lane_s32(s3, vsetq_lane_s32(s2, vsetq_lane_s32(s1, vdupq_n_s32(s0), 1), 2), 3);
    return mcu_mul_by_quantized_mul_n_x4(vaddq_s32(sums, vld1q_s32(m->bias + r)), m->multiplier, m->left_shift,
                                         vdupq_n_s32(m->right_shift));
}

/* Row r of the same, one lane's worth. */
static int32_t row_product(const lstm_product_mve *m, const int8_t *x, int32_t r)
{
    const int8_t *const row = m->weights + (size_t)r * (size_t)m->n_col;
    int32_t c, sum = m->bias[r];
    for (c = 0; c < m->n_col; ++c) {
        sum += (int32_t)x[c] * row[c];
    }
    return mcu_mul_by_quantized_mul(sum, m->multiplier, (int)(m->left_shift + m->right_shift));
}

/* An int32 on each lane saturated to the int16 range (VQSHL by 16, then
 * back). */
static inline MCU_ALWAYS_INLINE int32x4_t saturate_s16_x4(int32x4_t x)
{
    return vshrq_n_s32(vqshlq_n_s32(x, 16), 16);
}

/* The gate's two matrix products as PortableMatrixBatchVectorMultiply-
 * Accumulate adds them to the zeroed gate: the input's rescaled and
 * saturated to int16, the recurrent one's rescaled, added and saturated
 * again; four rows of both per pass on Helium, the 1-3 rows left one by
 * one. */
MCU_NOINLINE static void gate_products_s16_mve(const mcu_lstm_s8_params *p, const lstm_s8_gates *w, int gate_index,
                                               int32_t rows, const int8_t *input, const int8_t *output_state,
                                               int16_t *gate)
{
    const int32_t n_cell = p->n_cell;
    const size_t bias_at = (size_t)gate_index * (size_t)n_cell;
    const lstm_product_mve from_input =
        product_mve(w->input_weights[gate_index], p->input_effective_bias + bias_at, p->n_input,
                    p->input_multiplier[gate_index], p->input_shift[gate_index]);
    const lstm_product_mve from_recurrent =
        product_mve(w->recurrent_weights[gate_index], p->recurrent_effective_bias + bias_at, p->n_output,
                    p->recurrent_multiplier[gate_index], p->recurrent_shift[gate_index]);
    int32_t b, r;
    for (b = 0; b < rows; ++b) {
        const int8_t *const x = input + (size_t)b * (size_t)p->n_input;
        const int8_t *const h = output_state + (size_t)b * (size_t)p->n_output;
        int16_t *const out = gate + (size_t)b * (size_t)n_cell;
        for (r = 0; r + 4 <= n_cell; r += 4) {
            const int32x4_t first = saturate_s16_x4(rows4_product_mve(&from_input, x, r));
            vstrhq_s32(out + r, saturate_s16_x4(vaddq_s32(first, rows4_product_mve(&from_recurrent, h, r))));
        }
        for (; r < n_cell; ++r) {
            const int32_t first = mcu_clamp_s32(row_product(&from_input, x, r), INT16_MIN, INT16_MAX);
            out[r] = (int16_t)mcu_clamp_s32(first + row_product(&from_recurrent, h, r), INT16_MIN, INT16_MAX);
        }
    }
}
#endif

/* CalculateLstmGateInteger8x8_16. */
static void gate_s8(const mcu_lstm_s8_params *p, const lstm_s8_gates *w, int gate_index, int32_t rows,
                    const int8_t *input, const int8_t *output_state, const int16_t *cell_state, int16_t *gate)
{
    const size_t n = (size_t)rows * (size_t)p->n_cell;
    const size_t bias_at = (size_t)gate_index * (size_t)p->n_cell;
#if defined(MCU_MVE)
    (void)bias_at;
    gate_products_s16_mve(p, w, gate_index, rows, input, output_state, gate);
#else
    mcu_accumulated_mul input_rescale, recurrent_rescale;
    if (mcu_prepare_accumulated_mul(p->input_multiplier[gate_index], (int)p->input_shift[gate_index], &input_rescale) &&
        mcu_prepare_accumulated_mul(p->recurrent_multiplier[gate_index], (int)p->recurrent_shift[gate_index],
                                    &recurrent_rescale)) {
        gate_products_s16(p, w, gate_index, rows, input, output_state, &input_rescale, &recurrent_rescale, gate);
    } else {
        memset(gate, 0, n * sizeof *gate);
        mat_vec_accumulate_s16(input, p->input_effective_bias + bias_at, w->input_weights[gate_index],
                               p->input_multiplier[gate_index], p->input_shift[gate_index], rows, p->n_input,
                               p->n_cell, gate);
        mat_vec_accumulate_s16(output_state, p->recurrent_effective_bias + bias_at, w->recurrent_weights[gate_index],
                               p->recurrent_multiplier[gate_index], p->recurrent_shift[gate_index], rows,
                               p->n_output, p->n_cell, gate);
    }
#endif
    if (w->cell_weights[gate_index] != NULL) {
        peephole_s16(p, gate_index, rows, w->cell_weights[gate_index], cell_state, gate);
    }
    if (w->layer_norm[gate_index] != NULL) {
        layer_norm_s16(gate, w->layer_norm[gate_index], w->gate_bias[gate_index], p->layer_norm_multiplier[gate_index],
                       p->layer_norm_shift[gate_index], p->layer_norm_variance_guard[gate_index], rows, p->n_cell);
    }
    activate_gate_s16(p, gate, n, gate_index);
}

#if defined(MCU_MVE)
/* The int16 products a * b of eight lanes, each rounded by 2^e and
 * cast (wrapping) to int16 (mcu_rounding_divide_by_pot_bounded's value,
 * ties away from zero): VMULLB / VMULLT take the even and odd lanes,
 * VMOVNB / VMOVNT put them back in order. */
static inline MCU_ALWAYS_INLINE int16x8_t rounded_products_x8(int16x8_t a, int16x8_t b, int32_t e)
{
    return vmovntq_s32(vmovnbq_s32(a, mcu_rounding_divide_by_pot_x4(vmullbq_int_s16(a, b), e)),
                       mcu_rounding_divide_by_pot_x4(vmulltq_int_s16(a, b), e));
}

/* UpdateLstmCellInteger on eight lanes per pass (the last predicated):
 * the sum of the two wrapped products saturates to int16 (VQADD), then the
 * clip. */
MCU_NOINLINE static void update_cell_mve(const mcu_lstm_s8_params *p, const int16_t *gates, int32_t n, int use_cifg,
                                         int16_t *cell_state)
{
    const int16_t *input_gate = gates, *forget_gate = gates + n, *cell_gate = gates + 2 * n;
    /* The clip, where there is one, within the int16 range. */
    const int32_t clip = p->quantized_cell_clip;
    const int16x8_t high = vdupq_n_s16((int16_t)(clip > 0 && clip < INT16_MAX ? clip : INT16_MAX));
    const int16x8_t low = vdupq_n_s16((int16_t)(clip > 0 && clip <= -(int32_t)INT16_MIN ? -clip : INT16_MIN));
    int32_t left;
    for (left = n; left > 0; left -= 8, input_gate += 8, forget_gate += 8, cell_gate += 8, cell_state += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        const int16x8_t forget = vldrhq_z_s16(forget_gate, lanes);
        const int16x8_t in_gate =
            use_cifg ? vsubq_s16(vdupq_n_s16(INT16_MAX), forget) : vldrhq_z_s16(input_gate, lanes);
        const int16x8_t kept = rounded_products_x8(forget, vldrhq_z_s16(cell_state, lanes), 15);
        const int16x8_t added =
            rounded_products_x8(in_gate, vldrhq_z_s16(cell_gate, lanes), (int32_t)p->cell_product_shift);
        const int16x8_t cell = vqaddq_s16(kept, added);
        vstrhq_p_s16(cell_state, vmaxq_s16(vminq_s16(cell, high), low), lanes);
    }
}

/* The hidden values of CalculateLstmOutputInteger8x8_16 on eight lanes per
 * pass: the int32 products rescaled (mcu_mul_by_quantized_mul_n_x4 is
 * mcu_mul_by_quantized_mul per lane), narrowed with saturation (a value
 * past int16 clamps to the same end of the int8 range after the zero point
 * is added with saturation), clamped and stored as bytes. */
MCU_NOINLINE static void hidden_mve(const mcu_lstm_s8_params *p, const int16_t *output_gate, const int16_t *tanh_cell,
                                    int32_t n, int32_t zero_point, int8_t *hidden)
{
    const int32_t shift = p->hidden_shift, left_shift = shift > 0 ? shift & 31 : 0;
    const int32x4_t right = vdupq_n_s32(shift < 0 ? shift : 0);
    int32_t left;
    for (left = n; left > 0; left -= 8, output_gate += 8, tanh_cell += 8, hidden += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)left);
        const int16x8_t a = vldrhq_z_s16(output_gate, lanes), b = vldrhq_z_s16(tanh_cell, lanes);
        const int32x4_t even =
            mcu_mul_by_quantized_mul_n_x4(vmullbq_int_s16(a, b), p->hidden_multiplier, left_shift, right);
        const int32x4_t odd =
            mcu_mul_by_quantized_mul_n_x4(vmulltq_int_s16(a, b), p->hidden_multiplier, left_shift, right);
        int16x8_t value = vqaddq_n_s16(vqmovntq_s32(vqmovnbq_s32(a, even), odd), (int16_t)zero_point);
        value = vmaxq_s16(vminq_s16(value, vdupq_n_s16(INT8_MAX)), vdupq_n_s16(INT8_MIN));
        vstrbq_p_s16(hidden, value, lanes);
    }
}
#endif

/* LstmStepInteger8x8_16 for `rows` batch rows. */
static void step_s8(const mcu_lstm_s8_params *p, const lstm_s8_gates *w, int32_t rows, const int8_t *input,
                    int8_t *output_state, int16_t *cell_state, int8_t *output)
{
    const size_t n = (size_t)rows * (size_t)p->n_cell;
    int16_t *const input_gate = w->gate_scratch;
    int16_t *const forget_gate = input_gate + n;
    int16_t *const cell_gate = forget_gate + n;
    int16_t *const output_gate = cell_gate + n;
    const int use_cifg = w->input_weights[MCU_LSTM_GATE_INPUT] == NULL;
    int8_t *const hidden = w->projection_weights != NULL ? w->hidden_scratch : output_state;
    /* TFLite (b/246629213) writes the hidden values with -hidden_zp before
     * a projection and with +hidden_zp without one. */
    const int32_t hidden_zero_point = w->projection_weights != NULL ? -p->hidden_zero_point : p->hidden_zero_point;
    int g;
    size_t i;
    for (g = use_cifg ? MCU_LSTM_GATE_FORGET : MCU_LSTM_GATE_INPUT; g <= MCU_LSTM_GATE_CELL; ++g) {
        gate_s8(p, w, g, rows, input, output_state, cell_state, w->gate_scratch + (size_t)g * n);
    }

    /* UpdateLstmCellInteger: the forget gate's buffer becomes the scratch. */
#if defined(MCU_MVE)
    update_cell_mve(p, w->gate_scratch, (int32_t)n, use_cifg, cell_state);
    (void)forget_gate;
    (void)cell_gate;
#else
    for (i = 0; i < n; ++i) {
        const int16_t forget = forget_gate[i];
        const int16_t in_gate = use_cifg ? (int16_t)(INT16_MAX - forget) : input_gate[i];
        /* CwiseMul: rounded shifts (of products of two int16, shifts 15 ..
         * 21), then a plain (wrapping) cast to int16. */
        const int16_t kept = (int16_t)mcu_rounding_divide_by_pot_bounded((int32_t)forget * cell_state[i], 15);
        const int16_t added =
            (int16_t)mcu_rounding_divide_by_pot_bounded((int32_t)in_gate * cell_gate[i], (int)p->cell_product_shift);
        int32_t cell = mcu_clamp_s32((int32_t)kept + added, INT16_MIN, INT16_MAX);
        if (p->quantized_cell_clip > 0) {
            cell = mcu_clamp_s32(cell, -p->quantized_cell_clip, p->quantized_cell_clip);
        }
        cell_state[i] = (int16_t)cell;
    }
#endif

    gate_s8(p, w, MCU_LSTM_GATE_OUTPUT, rows, input, output_state, cell_state, output_gate);

    /* CalculateLstmOutputInteger8x8_16: tanh(cell) goes to the input gate's
     * buffer (allocated even under CIFG). */
    tanh_cell_s16(p, cell_state, n, input_gate);
#if defined(MCU_MVE)
    hidden_mve(p, output_gate, input_gate, (int32_t)n, hidden_zero_point, hidden);
#else
    {
        const mcu_prepared_mul hidden_rescale = mcu_prepare_mul(p->hidden_multiplier, (int)p->hidden_shift);
        for (i = 0; i < n; ++i) {
            int32_t value = (int32_t)output_gate[i] * input_gate[i];
            value = mcu_apply_prepared_mul(value, &hidden_rescale) + hidden_zero_point;
            hidden[i] = (int8_t)mcu_clamp_s32(value, INT8_MIN, INT8_MAX);
        }
    }
#endif
    if (w->projection_weights != NULL) {
        const size_t outputs = (size_t)rows * (size_t)p->n_output;
        memset(output_state, 0, outputs);
        mat_vec_accumulate_s8(w->hidden_scratch, p->projection_effective_bias, w->projection_weights,
                              p->projection_multiplier, p->projection_shift, rows, p->n_cell, p->n_output,
                              p->output_state_zero_point, output_state);
        if (p->quantized_proj_clip > 0) {
            for (i = 0; i < outputs; ++i) {
                output_state[i] = (int8_t)mcu_clamp_s32(output_state[i], -p->quantized_proj_clip, p->quantized_proj_clip);
            }
        }
    }
    memcpy(output, output_state, (size_t)rows * (size_t)p->n_output);
}

void mcu_lstm_s8(const mcu_lstm_s8_params *p, const mcu_lstm_s8_tensors *t)
{
    const lstm_s8_gates w = {
        {t->input_to_input_weights, t->input_to_forget_weights, t->input_to_cell_weights, t->input_to_output_weights},
        {t->recurrent_to_input_weights, t->recurrent_to_forget_weights, t->recurrent_to_cell_weights,
         t->recurrent_to_output_weights},
        {t->cell_to_input_weights, t->cell_to_forget_weights, NULL, t->cell_to_output_weights},
        {t->input_gate_bias, t->forget_gate_bias, t->cell_gate_bias, t->output_gate_bias},
        {t->input_layer_norm_coefficients, t->forget_layer_norm_coefficients, t->cell_layer_norm_coefficients,
         t->output_layer_norm_coefficients},
        t->projection_weights,
        t->gate_scratch,
        t->hidden_scratch,
    };
    const int8_t *const input = t->input;
    int8_t *const output_state = t->output_state, *const output = t->output;
    int16_t *const cell_state = t->cell_state;
    const size_t in_row = (size_t)p->n_input, out_row = (size_t)p->n_output;
    int32_t step, b;
    /* t->projection_bias is folded into p->projection_effective_bias. */
    if (p->time_major) {
        /* All batch rows step together. */
        for (step = 0; step < p->n_time; ++step) {
            const size_t row = (size_t)step * (size_t)p->n_batch;
            step_s8(p, &w, p->n_batch, input + row * in_row, output_state, cell_state, output + row * out_row);
        }
        return;
    }
    /* Batch-major: each sequence on its own, with its rows of the states. */
    for (b = 0; b < p->n_batch; ++b) {
        for (step = 0; step < p->n_time; ++step) {
            const size_t row = (size_t)b * (size_t)p->n_time + (size_t)step;
            step_s8(p, &w, 1, input + row * in_row, output_state + (size_t)b * out_row,
                    cell_state + (size_t)b * (size_t)p->n_cell, output + row * out_row);
        }
    }
}
