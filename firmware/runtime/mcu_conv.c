/* CONV_2D and DEPTHWISE_CONV_2D: which variant family runs each layer.
 *
 * Families, one file each (CMSIS-NN style):
 *   mcu_conv_reference.c  the reference loops (input offset per tap, groups)
 *   mcu_conv_1x1.c        pointwise (M4/M7 SMLAD pairs; Helium in mcu_conv_helium_rows.c)
 *   mcu_conv_window.c     windows in columns or in place, any core
 *   mcu_conv_dsp_block.c  pointwise and windows of 5+ input channels in blocks
 *                         of eight pixels (M4/M7 SMLAD, pixels widened once)
 *   mcu_conv_few_channels_dsp.c  first layers of 1-4 input channels (M4/M7)
 *   mcu_conv_helium_rows.c  Helium rows: pointwise pixels and windows in columns
 *   mcu_conv_helium_interleaved.c  Helium windows of whole vectors (input_c 16k)
 *                         in interleaved columns, 4 pixels x 2 channels a pass
 *   mcu_conv_helium.c     Helium passes: windows of any length in chunks
 *   mcu_conv_helium_small.c  Helium first layers: four columns per pass, channels inside
 *   mcu_depthwise.c       depthwise runs and raster groups (mcu_depthwise_dsp.c
 *                         without Helium)
 *   mcu_conv_f32.c        float
 * shared helpers in mcu_conv_internal.h. */
#include "mcu_conv.h"

#include "mcu_conv_1x1.h"
#include "mcu_conv_dsp_block.h"
#include "mcu_conv_few_channels_dsp.h"
#include "mcu_conv_f32.h"
#include "mcu_conv_helium.h"
#include "mcu_conv_helium_small.h"
#include "mcu_conv_internal.h"
#include "mcu_conv_reference.h"
#include "mcu_conv_window.h"
#include "mcu_depthwise.h"
#include "mcu_depthwise_3x3_dsp.h"

/* The int8 CONV_2D entries, one per family of layers.  The generator picks
 * each layer's family from facts its shape fixes (mcu_planner/lowering/
 * conv.py, conv_2d_s8_entry: the one place that condition is written), so
 * that a firmware links only the variants its layers can take; the entries
 * take it as given.  Each keeps its own core choice (MCU_DSP, MCU_MVE), so
 * that the generated C stays the same for every core, and the run-time
 * checks its variants need (column_bytes, rescales, window lengths).
 *
 *   mcu_conv_2d_s8_any_layer        no window offset terms, or groups: the
 *                                   reference loops (mcu_conv_reference.c)
 *   mcu_conv_2d_s8_pointwise_blocks pointwise, 5+ input channels, columns for
 *                                   MCU_CONV_BLOCK_BYTES(input_c)
 *   mcu_conv_1x1_s8                 other pointwise, 5+ input channels
 *                                   (mcu_conv_1x1.c)
 *   mcu_conv_2d_s8_first_pointwise  pointwise, at most 4 input channels
 *   mcu_conv_2d_s8_first_layer      windows of at most 4 input channels and
 *                                   FEW_BLOCK_WINDOW_MAX values
 *   mcu_conv_2d_s8_first_layer_long longer windows of at most 4 input channels
 *   mcu_conv_2d_s8_windows          windows of up to MCU_CONV_COLUMN_MAX values
 *   mcu_conv_2d_s8_wide_windows     those past 256 values (conv.py
 *                                   CONV_CHUNKS_MIN), not first layers
 *   mcu_conv_2d_s8_long_windows     longer windows, or any without columns
 *                                   for four of them, read in place
 *
 * Within the pointwise and windows entries, Helium's loop unrolled for the
 * layer's rows is named the same way, in p->rows (mcu_conv.h,
 * MCU_CONV_ROWS_S8; conv.py helium_rows_variant), and within the first-layer
 * ones Helium's pass for the layer's windows, in p->first
 * (MCU_CONV_FIRST_S8; conv.py helium_first_variant).
 *
 * Memory-plan contract (mcu_planner/lowering/conv.py, WALKS): with
 * p->raster_walk set, every path below writes output pixels in raster order
 * (batch, row, column), at most four at a time (two without Helium), each
 * block reading only its own windows (reads and writes interleaved within
 * the block).
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */

/* Windows of whole columns.  The generator takes this only where the
 * planned scratch holds four of them (every core's MCU_CONV_COLUMNS); the
 * reference loops are the net below that. */
static void conv_windows_in_columns(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, int8_t *columns)
{
    const int32_t window = p->filter_h * p->filter_w * p->input_c;
    if (columns != NULL && window <= MCU_CONV_COLUMN_MAX && MCU_CONV_COLUMNS * window <= p->column_bytes) {
#if defined(MCU_MVE)
        if (!mcu_conv_2d_s8_first_helium(p, input, filter, bias, output, columns)) {
            mcu_conv_2d_s8_columns_helium(p, input, filter, bias, output, columns);
        }
#else
        mcu_conv_2d_s8_columns(p, input, filter, bias, output, columns);
#endif
    } else {
        mcu_conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
    }
}

void mcu_conv_2d_s8_any_layer(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *columns)
{
    (void)columns; /* planned for a layer whose offset terms overflow int32: not needed */
    mcu_conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
}

/* On the M4/M7 the DSP blocks take every layer the generator gives this
 * (the reference loops are the net); elsewhere mcu_conv_1x1_s8. */
void mcu_conv_2d_s8_pointwise_blocks(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (!mcu_conv_1x1_block_s8(p, input, filter, bias, output, columns)) {
        mcu_conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
    }
#else
    mcu_conv_1x1_s8(p, input, filter, bias, output, columns);
#endif
}

/* First layers' few input channels on the M4/M7 (mcu_conv_few_channels_dsp.c):
 * the eight-pixel blocks take windows of up to FEW_BLOCK_WINDOW_MAX values,
 * the direct loops longer ones; each returns 0 having written
 * nothing when it does not take the layer. */
void mcu_conv_2d_s8_first_pointwise(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (mcu_conv_few_channels_block_s8(p, input, filter, bias, output, columns)) {
        return;
    }
#endif
    mcu_conv_1x1_s8(p, input, filter, bias, output, columns);
}

void mcu_conv_2d_s8_first_layer(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (mcu_conv_few_channels_block_s8(p, input, filter, bias, output, columns)) {
        return;
    }
#endif
    conv_windows_in_columns(p, input, filter, bias, output, columns);
}

void mcu_conv_2d_s8_first_layer_long(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (mcu_conv_2d_s8_few_channels(p, input, filter, bias, output)) {
        return;
    }
#endif
    conv_windows_in_columns(p, input, filter, bias, output, columns);
}

void mcu_conv_2d_s8_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (mcu_conv_window_block_s8(p, input, filter, bias, output, columns)) {
        return;
    }
#endif
    conv_windows_in_columns(p, input, filter, bias, output, columns);
}

/* Helium runs these as one chunk of two channels at a time (the columns
 * the generator plans hold four windows rounded up to vectors of 16); the
 * other cores as any windows in columns. */
void mcu_conv_2d_s8_wide_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_MVE)
    if (!mcu_conv_2d_s8_chunks_helium(p, input, filter, bias, output, columns)) {
        mcu_conv_2d_s8_per_tap_offset(p, input, filter, bias, output);
    }
#else
    mcu_conv_2d_s8_windows(p, input, filter, bias, output, columns);
#endif
}

void mcu_conv_2d_s8_long_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *columns)
{
#if defined(MCU_MVE)
    if (mcu_conv_2d_s8_chunks_helium(p, input, filter, bias, output, columns) ||
        mcu_conv_2d_s8_long_windows_helium(p, input, filter, bias, output, columns)) {
        return;
    }
#else
    (void)columns; /* the paths of whole columns take no window this long */
#endif
    mcu_conv_2d_s8_one_group(p, input, filter, bias, output);
}

/* The int8 DEPTHWISE_CONV_2D entries, picked per layer as the CONV_2D ones
 * (mcu_planner/lowering/conv.py, depthwise_conv_2d_s8_entry):
 *
 *   mcu_depthwise_conv_2d_s8_per_tap_offset  no window offset terms
 *                                            (mcu_conv_reference.c)
 *   mcu_depthwise_conv_2d_s8_3x3             3 x 3 filters
 *   mcu_depthwise_conv_2d_s8_windows         other filters (mcu_depthwise.c)
 *
 * Memory-plan contract (mcu_planner/lowering/conv.py, WALKS): with
 * p->raster_walk set, the int8 depthwise kernel writes output pixels in
 * raster order (batch, row, column) in the aligned groups of four its entry
 * declares, each group reading only its own windows
 * (depthwise_conv_2d_s8_raster4; the per-tap-offset path one pixel at a
 * time); the runs along whole rows and down columns run only without it.
 * With depth multiplier 1 each channel's pixels also go in raster order,
 * each read before it is written (KERNEL_ORDERS' channel_wise): four
 * channels of one pixel after another in depthwise_windows4_s8 and the
 * reference loop; on Helium (mcu_depthwise_helium.c) eight channels of the
 * group's pixels at a time, the sums of each pair of pixels (or of the
 * group's, when its windows are evenly spaced) before their stores.
 * The float one (and mcu_conv_2d_f32) writes one pixel at a time in raster
 * order, reading only that pixel's window.
 * The plan may start the output inside, or just before, the input this op
 * reads for the last time, as far as that walk never writes an input byte
 * still to be read (mcu_planner/memory/overlap.py).  Loops that change the walk must
 * change the kernel's entry there; tests/test_overlap.py runs each listed
 * kernel bit-exact at the tightest overlap the entry allows. */
void mcu_depthwise_conv_2d_s8_3x3(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                  const int32_t *bias, int8_t *output)
{
#if defined(MCU_DSP) && !defined(MCU_MVE)
    if (mcu_depthwise_3x3_s8(p, input, filter, bias, output)) {
        return; /* mcu_depthwise_3x3_dsp.c */
    }
#endif
    mcu_depthwise_conv_2d_s8_windows(p, input, filter, bias, output);
}
