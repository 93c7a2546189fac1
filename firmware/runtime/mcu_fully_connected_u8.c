/* Follows reference_ops::FullyConnected for uint8 of TensorFlow Lite:
 * sum((filter + filter_offset) * (input + input_offset)) + bias, rescaled
 * with MultiplyByQuantizedMultiplier. */
#include "mcu_fully_connected_u8.h"

#include "mcu_quant.h"

/* Memory-plan contract (mcu_planner/lowering/fully_connected.py, WALKS): output
 * row b is written only after input row b is read, and no other input row is
 * read for it (rows in order).  The plan may start the output inside, or just
 * before, the input this op reads for the last time, as far as that walk
 * never writes an input byte still to be read (mcu_planner/memory/overlap.py).  Loops
 * that change the walk must change the kernel's entry there;
 * tests/test_overlap.py runs each listed kernel bit-exact at the tightest
 * overlap the entry allows. */
void mcu_fully_connected_u8(const mcu_fully_connected_u8_params *p, const uint8_t *input, const uint8_t *filter,
                            const int32_t *bias, uint8_t *output)
{
    int32_t b, o, d;
    for (b = 0; b < p->batches; ++b) {
        const uint8_t *in_row = input + (size_t)b * (size_t)p->accum_depth;
        for (o = 0; o < p->output_depth; ++o) {
            const uint8_t *filter_row = filter + (size_t)o * (size_t)p->accum_depth;
            int32_t acc = 0;
            for (d = 0; d < p->accum_depth; ++d) {
                acc += ((int32_t)filter_row[d] + p->filter_offset) * ((int32_t)in_row[d] + p->input_offset);
            }
            if (bias) {
                acc += bias[o];
            }
            acc = mcu_mul_by_quantized_mul(acc, p->output_multiplier, (int)p->output_shift) + p->output_offset;
            *output++ = (uint8_t)mcu_clamp_s32(acc, p->act_min, p->act_max);
        }
    }
}
