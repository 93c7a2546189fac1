/* Follows TensorFlow Lite's FULLY_CONNECTED as its interpreter runs it:
 * int8 through ruy, whose output rescale rounds once (not the double rounding
 * of the reference convolution kernels); float as reference_ops. */
#include "mcu_fully_connected.h"

#include "mcu_dsp.h"
#include "mcu_quant.h"

/* The reference loop, both offsets added per term. */
static void fully_connected_s8_per_term_offsets(const mcu_fully_connected_s8_params *p, const int8_t *input,
                                                const int8_t *filter, const int32_t *bias, int8_t *output)
{
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_row = input + (size_t)b * (size_t)p->accum_depth;
        for (o = 0; o < p->output_depth; ++o) {
            const int8_t *filter_row = filter + (size_t)o * (size_t)p->accum_depth;
            const int32_t q = p->per_channel ? o : 0;
            int32_t acc = 0;
            for (d = 0; d < p->accum_depth; ++d) {
                acc += ((int32_t)filter_row[d] + p->filter_offset) * ((int32_t)in_row[d] + p->input_offset);
            }
            if (bias) {
                acc += bias[o];
            }
            acc = mcu_mul_by_quantized_mul_single_round(acc, p->output_multiplier[q], (int)p->output_shift[q]);
            acc += p->output_offset;
            output[(size_t)b * (size_t)p->output_depth + (size_t)o] = (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
        }
    }
}

static int8_t requantize_s8(const mcu_fully_connected_s8_params *p, int32_t acc, const int32_t *bias, int32_t o)
{
    const int32_t q = p->per_channel ? o : 0;
    if (bias) {
        acc += bias[o];
    }
    acc = mcu_mul_by_quantized_mul_single_round(acc, p->output_multiplier[q], (int)p->output_shift[q]);
    acc += p->output_offset;
    return (int8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
}

/* A function of its own so that its five pointers and four sums stay in
 * registers.  With MCU_DSP four terms at a time go through SMLAD (see
 * mcu_dsp.h), the rest through the C loop. */
MCU_NOINLINE MCU_SOURCE_ORDER void mcu_dot4_s8(const int8_t *x, const int8_t *w0, int32_t depth, int32_t sums[4])
{
    const int8_t *w1 = w0 + depth, *w2 = w1 + depth, *w3 = w2 + depth;
    const int8_t *const end = x + depth;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#if defined(MCU_MVE)
    /* Whole vectors without predication, then one predicated pass for the
     * last 1 to 15 values. */
    const int32_t left = depth & 15;
    int32_t blocks;
    /* Pointers stepped after each load (post-incremented loads), a block
     * count as the loop counter. */
    for (blocks = depth >> 4; blocks > 0; --blocks) {
        const int8x16_t a = vld1q_s8(x);
        x += 16;
        s0 = vmladavaq_s8(s0, a, vld1q_s8(w0));
        w0 += 16;
        s1 = vmladavaq_s8(s1, a, vld1q_s8(w1));
        w1 += 16;
        s2 = vmladavaq_s8(s2, a, vld1q_s8(w2));
        w2 += 16;
        s3 = vmladavaq_s8(s3, a, vld1q_s8(w3));
        w3 += 16;
    }
    if (left > 0) {
        const mve_pred16_t lanes = vctp8q((uint32_t)left);
        const int8x16_t a = vldrbq_z_s8(x, lanes);
        s0 = vmladavaq_s8(s0, a, vldrbq_z_s8(w0, lanes));
        s1 = vmladavaq_s8(s1, a, vldrbq_z_s8(w1, lanes));
        s2 = vmladavaq_s8(s2, a, vldrbq_z_s8(w2, lanes));
        s3 = vmladavaq_s8(s3, a, vldrbq_z_s8(w3, lanes));
    }
    x = end; /* nothing left for the loop below */
#elif defined(MCU_DSP)
    /* Rows 1 and 3 are read `depth` past rows 0 and 2 (register-offset
     * loads), which saves two pointers: all stays in registers. */
    const int8_t *const end4 = x + (depth & ~(int32_t)3);
    while (x != end4) {
        const uint32_t a = mcu_load_s8x4(x);
        const int32_t a_even = mcu_s8x4_even(a), a_odd = mcu_s8x4_odd(a);
        uint32_t b = mcu_load_s8x4(w0);
        x += 4;
        s0 = __smlad(a_even, mcu_s8x4_even(b), s0);
        s0 = __smlad(a_odd, mcu_s8x4_odd(b), s0);
        b = mcu_load_s8x4(w0 + depth);
        s1 = __smlad(a_even, mcu_s8x4_even(b), s1);
        s1 = __smlad(a_odd, mcu_s8x4_odd(b), s1);
        b = mcu_load_s8x4(w2);
        s2 = __smlad(a_even, mcu_s8x4_even(b), s2);
        s2 = __smlad(a_odd, mcu_s8x4_odd(b), s2);
        b = mcu_load_s8x4(w2 + depth);
        s3 = __smlad(a_even, mcu_s8x4_even(b), s3);
        s3 = __smlad(a_odd, mcu_s8x4_odd(b), s3);
        w0 += 4;
        w2 += 4;
    }
    w1 = w0 + depth;
    w3 = w2 + depth;
#endif
    while (x != end) {
        const int32_t v = *x++;
        s0 += v * *w0++;
        s1 += v * *w1++;
        s2 += v * *w2++;
        s3 += v * *w3++;
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
}

#if defined(MCU_MVE)
/* requantize_s8 on four outputs sharing the multiplier and a shift <= 0
 * (mcu_mul_by_quantized_mul_single_round_n_x4 is the scalar helper per
 * lane); the int32 additions wrap alike. */
MCU_NOINLINE static void requantize4_s8(const mcu_fully_connected_s8_params *p, const int32_t *sums, int32_t input_term,
                                        const int32_t *terms, const int32_t *bias, int8_t *out)
{
    int32x4_t acc = vaddq_s32(vaddq_n_s32(vld1q_s32(sums), input_term), vld1q_s32(terms));
    if (bias) {
        acc = vaddq_s32(acc, vld1q_s32(bias));
    }
    acc = mcu_mul_by_quantized_mul_single_round_n_x4(acc, p->output_multiplier[0], p->output_shift[0]);
    acc = vaddq_n_s32(acc, p->output_offset);
    vstrbq_s32(out, vmaxq_s32(vminq_s32(acc, vdupq_n_s32(p->act_max)), vdupq_n_s32(p->act_min)));
}
#endif

#if defined(MCU_MVE)
/* One row's raw products (the 1-3 rows after the groups of four): sixteen
 * per VMLADAVA, the last 1-15 under a tail predicate. */
static int32_t dot_s8_mve(const int8_t *x, const int8_t *w, int32_t depth)
{
    int32_t sum = 0;
    for (; depth >= 16; depth -= 16, x += 16, w += 16) {
        sum = vmladavaq_s8(sum, vld1q_s8(x), vld1q_s8(w));
    }
    if (depth > 0) {
        const mve_pred16_t lanes = vctp8q((uint32_t)depth);
        sum = vmladavaq_s8(sum, vldrbq_z_s8(x, lanes), vldrbq_z_s8(w, lanes));
    }
    return sum;
}
#endif

/* sum((w + fo) * (x + io)) = sum(w * x) + fo * sum(x) + io * (sum(w) + n * fo):
 * raw products, the row term from generation time and fo * sum(x) once per
 * input row.  Four outputs per pass share each input load. */
static void fully_connected_s8_raw_products(const mcu_fully_connected_s8_params *p, const int8_t *input,
                                            const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t depth = p->accum_depth, outputs = p->output_depth;
    const int32_t *terms = p->row_offset_terms;
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *x = input + (size_t)b * (size_t)depth;
        int8_t *out = output + (size_t)b * (size_t)outputs;
        const int32_t input_term = mcu_fully_connected_input_term(p->filter_offset, x, depth);
        for (o = 0; o + 4 <= outputs; o += 4) {
            int32_t sums[4];
            int k;
            mcu_dot4_s8(x, filter + (size_t)o * (size_t)depth, depth, sums);
#if defined(MCU_MVE)
            if (!p->per_channel && p->output_shift[0] <= 0) {
                requantize4_s8(p, sums, input_term, terms + o, bias ? bias + o : NULL, out + o);
                continue;
            }
#endif
            for (k = 0; k < 4; ++k) {
                out[o + k] = requantize_s8(p, sums[k] + input_term + terms[o + k], bias, o + k);
            }
        }
        for (; o < outputs; ++o) {
            const int8_t *w = filter + (size_t)o * (size_t)depth;
            int32_t s = 0;
#if defined(MCU_MVE)
            s = dot_s8_mve(x, w, depth);
            (void)d;
#else
            for (d = 0; d < depth; ++d) {
                s += (int32_t)x[d] * w[d];
            }
#endif
            out[o] = requantize_s8(p, s + input_term + terms[o], bias, o);
        }
    }
}

/* Memory-plan contract (mcu_planner/lowering/fully_connected.py, WALKS): the int8 and float
 * kernels write output row b only after reading input row b, and read no
 * other row for it (rows in order).
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
void mcu_fully_connected_s8(const mcu_fully_connected_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output)
{
    if (p->row_offset_terms == NULL) {
        fully_connected_s8_per_term_offsets(p, input, filter, bias, output);
    } else {
        fully_connected_s8_raw_products(p, input, filter, bias, output);
    }
}

/* Four rows' totals, each summed in the reference's order (d = 0, 1, ...,
 * one rounding per multiply and per add): the rows are independent, so
 * interleaving them changes no value, and each input value is loaded once
 * for the four.  Four columns per pass halve the loop's own instructions. */
MCU_NOINLINE static void dot4_f32(const float *x, const float *w0, int32_t depth, float totals[4])
{
    const float *w1 = w0 + depth, *w2 = w1 + depth, *w3 = w2 + depth;
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
    int32_t d;
    for (d = 0; d + 4 <= depth; d += 4) {
        const float x0 = x[d], x1 = x[d + 1], x2 = x[d + 2], x3 = x[d + 3];
        t0 += x0 * w0[d];
        t1 += x0 * w1[d];
        t2 += x0 * w2[d];
        t3 += x0 * w3[d];
        t0 += x1 * w0[d + 1];
        t1 += x1 * w1[d + 1];
        t2 += x1 * w2[d + 1];
        t3 += x1 * w3[d + 1];
        t0 += x2 * w0[d + 2];
        t1 += x2 * w1[d + 2];
        t2 += x2 * w2[d + 2];
        t3 += x2 * w3[d + 2];
        t0 += x3 * w0[d + 3];
        t1 += x3 * w1[d + 3];
        t2 += x3 * w2[d + 3];
        t3 += x3 * w3[d + 3];
    }
    for (; d < depth; ++d) {
        const float xd = x[d];
        t0 += xd * w0[d];
        t1 += xd * w1[d];
        t2 += xd * w2[d];
        t3 += xd * w3[d];
    }
    totals[0] = t0;
    totals[1] = t1;
    totals[2] = t2;
    totals[3] = t3;
}

/* One row's total, in the reference's order. */
MCU_NOINLINE static float dot_f32(const float *x, const float *w, int32_t depth)
{
    float total = 0.0f;
    int32_t d;
    for (d = 0; d < depth; ++d) {
        total += x[d] * w[d];
    }
    return total;
}

void mcu_fully_connected_f32(const mcu_fully_connected_f32_params *p, const float *input, const float *filter,
                             const float *bias, float *output)
{
    const int32_t depth = p->accum_depth;
    int32_t b, o, k;
    for (b = 0; b < p->batches; ++b) {
        const float *in_row = input + (size_t)b * (size_t)depth;
        float *out = output + (size_t)b * (size_t)p->output_depth;
        for (o = 0; o < p->output_depth;) {
            float totals[4];
            const int32_t count = o + 4 <= p->output_depth ? 4 : 1;
            if (count == 4) {
                dot4_f32(in_row, filter + (size_t)o * (size_t)depth, depth, totals);
            } else {
                totals[0] = dot_f32(in_row, filter + (size_t)o * (size_t)depth, depth);
            }
            for (k = 0; k < count; ++k, ++o) {
                /* total + bias (0.0f without one), as the reference adds it. */
                out[o] = mcu_clamp_f32(totals[k] + (bias ? bias[o] : 0.0f), p->act_min, p->act_max);
            }
        }
    }
}
