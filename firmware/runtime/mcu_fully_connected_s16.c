/* 16x8 FULLY_CONNECTED as LiteRT's reference interpreter (ai-edge-litert
 * 2.3) computes it, found by probing it: the dot product exactly (int64),
 * plus the bias, times the double scale input * filter / output (not the
 * quantized multiplier), rounded half away from zero, converted to int32 as
 * x86 does (out of range -> INT32_MIN: a positive overflow clamps to -32768
 * there, and so here), then clamped.  TFLM instead applies the Q15-reduced
 * multiplier to the int64 sum (mcu_mul_by_quantized_mul_s64), which can
 * differ by one; LiteRT is the target. */
#include "mcu_fully_connected_s16.h"

#include "mcu_quant.h"

/* Memory-plan contract (mcu_planner/lowering/fully_connected.py, WALKS): output
 * row b is written only after input row b is read, and no other input row is
 * read for it (rows in order).  The plan may start the output inside, or just
 * before, the input this op reads for the last time, as far as that walk
 * never writes an input byte still to be read (mcu_planner/memory/overlap.py).  Loops
 * that change the walk must change the kernel's entry there;
 * tests/test_overlap.py runs each listed kernel bit-exact at the tightest
 * overlap the entry allows. */
void mcu_fully_connected_s16(const mcu_fully_connected_s16_params *p, const int16_t *input, const int8_t *filter,
                             const int64_t *bias, int16_t *output)
{
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const int16_t *x = input + (size_t)b * (size_t)p->accum_depth;
        int16_t *y = output + (size_t)b * (size_t)p->output_depth;
        for (o = 0; o < p->output_depth; ++o) {
            const int8_t *w = filter + (size_t)o * (size_t)p->accum_depth;
            int64_t acc = 0;
            for (d = 0; d < p->accum_depth; ++d) {
                acc += (int32_t)x[d] * (int32_t)w[d];
            }
            if (bias != NULL) {
                acc += bias[o];
            }
            y[o] = (int16_t)mcu_clamp_s32(mcu_round_to_int32_x86((double)acc * p->output_scale[p->per_channel ? o : 0]),
                                          p->act_min, p->act_max);
        }
    }
}
