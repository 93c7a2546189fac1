/* CONV_2D and DEPTHWISE_CONV_2D on NHWC tensors.
 *
 * Filters are laid out as TFLite stores them: CONV_2D [out_c][fh][fw][in_c per
 * group], DEPTHWISE_CONV_2D [1][fh][fw][in_c * depth_multiplier].  Padding is
 * given as the rows/columns added before the first input element. */
#ifndef MCU_CONV_H
#define MCU_CONV_H

#include "mcu_conv_geometry.h"
#include "mcu_dsp.h" /* MCU_MVE */
#include "mcu_runtime.h"

/* Helium's loops over four rows of one length against four filters at a
 * time, each compiled for the rows' number of sixteen-byte vectors
 * (2 .. MCU_CONV_ROWS_UNROLLED_MAX) and whether the last is partial
 * (mcu_conv_helium_rows.c).  The generator names in each layer's params
 * the one its rows take (mcu_planner/lowering/conv.py helium_rows_variant:
 * the one place that condition is written), as MCU_CONV_ROWS_S8(vectors,
 * tail), so that a firmware links only those; the same C names none
 * (NULL) without Helium.  The kernel runs the named loop only for rows it
 * was compiled for, the generic loop otherwise. */
#define MCU_CONV_ROWS_UNROLLED_MAX 8
typedef struct mcu_conv_rows_s8 mcu_conv_rows_s8;
#if defined(MCU_MVE)
#define MCU_CONV_ROWS_S8(vectors, tail) (&mcu_conv_rows_s8_##vectors##_##tail)
extern const mcu_conv_rows_s8 mcu_conv_rows_s8_2_0, mcu_conv_rows_s8_2_1, mcu_conv_rows_s8_3_0,
    mcu_conv_rows_s8_3_1, mcu_conv_rows_s8_4_0, mcu_conv_rows_s8_4_1, mcu_conv_rows_s8_5_0, mcu_conv_rows_s8_5_1,
    mcu_conv_rows_s8_6_0, mcu_conv_rows_s8_6_1, mcu_conv_rows_s8_7_0, mcu_conv_rows_s8_7_1, mcu_conv_rows_s8_8_0,
    mcu_conv_rows_s8_8_1;
/* Windows of whole vectors (input_c a multiple of 16) copied into four
 * columns interleaved a vector at a time, passes of 4 pixels x 2 channels
 * (mcu_conv_helium_interleaved.c), named the same way. */
#define MCU_CONV_INTERLEAVED_S8(pixels, channels) (&mcu_conv_interleaved_s8_##pixels##_##channels)
extern const mcu_conv_rows_s8 mcu_conv_interleaved_s8_4_2;
#else
#define MCU_CONV_ROWS_S8(vectors, tail) NULL
#define MCU_CONV_INTERLEAVED_S8(pixels, channels) NULL
#endif

/* Helium's passes over first layers' windows (1-4 input channels), each
 * compiled for the windows' number of sixteen-byte vectors (1 ..
 * MCU_CONV_FIRST_VECTORS_MAX; mcu_conv_helium_small.c).  The generator names
 * the one a layer runs (mcu_planner/lowering/conv.py helium_first_variant,
 * the one place that choice is written) as MCU_CONV_FIRST_S8(vectors), so
 * that a firmware links only those; NULL for other layers and without
 * Helium. */
#define MCU_CONV_FIRST_VECTORS_MAX 2
typedef struct mcu_conv_first_s8 mcu_conv_first_s8;
#if defined(MCU_MVE)
#define MCU_CONV_FIRST_S8(vectors) (&mcu_conv_first_s8_##vectors)
extern const mcu_conv_first_s8 mcu_conv_first_s8_1, mcu_conv_first_s8_2;
#else
#define MCU_CONV_FIRST_S8(vectors) NULL
#endif

/* Helium's walks over an int8 depthwise layer with window offset terms
 * (mcu_depthwise.c), one per depth multiplier -- 1 (eight channels per
 * vector, mcu_depthwise_helium.c) or 4 for a multiple of 4 (four lanes read
 * one input value) -- and walk: raster 0 for runs of pixels whose windows
 * share their taps, 1 for the raster groups of four a planned overlap needs
 * (raster_walk).  The generator names a layer's
 * (mcu_planner/lowering/conv.py helium_depthwise_variant, the one place that
 * choice is written) as MCU_DEPTHWISE_S8(multiplier, raster), so that a
 * firmware links only the kernels its layers run; NULL for other layers and
 * without Helium. */
typedef struct mcu_depthwise_s8 mcu_depthwise_s8;
#if defined(MCU_MVE)
#define MCU_DEPTHWISE_S8(multiplier, raster) (&mcu_depthwise_s8_##multiplier##_##raster)
extern const mcu_depthwise_s8 mcu_depthwise_s8_1_0, mcu_depthwise_s8_1_1, mcu_depthwise_s8_4_0,
    mcu_depthwise_s8_4_1;
#else
#define MCU_DEPTHWISE_S8(multiplier, raster) NULL
#endif

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    const int32_t *output_multiplier; /* one per output channel */
    const int32_t *output_shift;
    int32_t act_min;
    int32_t act_max;
    /* Per output channel: input_offset * (sum of the channel's filter taps),
     * so that windows wholly inside the input skip the per-tap offset add.
     * NULL: the offset is added per tap everywhere. */
    const int32_t *window_offset_terms;
    /* Nonzero when the plan starts the output inside the input it reads for
     * the last time (a partial overlap, mcu_planner/memory/overlap.py): the kernel
     * then writes output pixels in raster order, as KERNEL_ORDERS in
     * mcu_planner/lowering/conv.py (WALKS) declares, instead of its faster
     * channel-outermost loops.  0: any order. */
    int32_t raster_walk;
    /* Bytes at the `columns` scratch of the CONV_2D entries (planned in the arena,
     * mcu_planner/lowering/conv.py conv_columns_bytes); the kernel takes the
     * paths that need columns only when they fit.  0 for the depthwise
     * kernels. */
    int32_t column_bytes;
    /* MCU_CONV_ROWS_S8(vectors, tail) of the layer's rows, or NULL (the
     * depthwise kernels; rows no unrolled loop takes). */
    const mcu_conv_rows_s8 *rows;
    /* MCU_CONV_FIRST_S8(vectors) of a first layer Helium runs that way, or
     * NULL. */
    const mcu_conv_first_s8 *first;
    /* MCU_DEPTHWISE_S8(multiplier, raster) of a depthwise layer Helium runs that
     * way, or NULL (channel by channel). */
    const mcu_depthwise_s8 *depthwise;
} mcu_conv_s8_params;

typedef struct {
    MCU_CONV_GEOMETRY_FIELDS
    float act_min;
    float act_max;
} mcu_conv_f32_params;

/* The int8 CONV_2D entries, one per family of layers (mcu_conv.c; other
 * pointwise layers of 5+ input channels take mcu_conv_1x1_s8, mcu_conv_1x1.h).  bias
 * and columns may be NULL; columns: p->column_bytes of working memory. */
void mcu_conv_2d_s8_any_layer(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_pointwise_blocks(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_first_pointwise(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_first_layer(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_first_layer_long(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_wide_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_s8_long_windows(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, int8_t *columns);
void mcu_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter, const float *bias,
                     float *output);
/* int8 depthwise convolutions of 3 x 3 filters with window offset terms
 * (mcu_conv.c; others: mcu_depthwise_conv_2d_s8_windows, mcu_depthwise.h,
 * and without the terms mcu_depthwise_conv_2d_s8_per_tap_offset,
 * mcu_conv_reference.h). */
void mcu_depthwise_conv_2d_s8_3x3(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                  const int32_t *bias, int8_t *output);
/* Depth multiplier 1 only; `output` may be `input` (TinyEngine's in-place
 * depthwise convolution): `scratch` holds one channel of the output,
 * batches x output_h x output_w values. */
void mcu_depthwise_conv_2d_s8_in_place(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter,
                                       const int32_t *bias, int8_t *output, int8_t *scratch);
void mcu_depthwise_conv_2d_f32(const mcu_conv_f32_params *p, const float *input, const float *filter,
                               const float *bias, float *output);

#endif /* MCU_CONV_H */
