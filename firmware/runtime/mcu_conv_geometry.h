/* The geometry fields every convolution parameter block starts with
 * (CONV_2D and DEPTHWISE_CONV_2D, every dtype: mcu_conv.h, mcu_conv_s16.h),
 * and the walk over output pixels the straightforward kernels share
 * (mcu_conv_u8.c, mcu_conv_hybrid.c, mcu_conv_s16.c). */
#ifndef MCU_CONV_GEOMETRY_H
#define MCU_CONV_GEOMETRY_H

#include "mcu_runtime.h"
#include "mcu_window.h"

/* Geometry shared by both convolutions (both dtypes). */
#define MCU_CONV_GEOMETRY_FIELDS                                                  \
    int32_t batches;                                                              \
    int32_t input_h;                                                              \
    int32_t input_w;                                                              \
    int32_t input_c;                                                              \
    int32_t filter_h;                                                             \
    int32_t filter_w;                                                             \
    int32_t output_h;                                                             \
    int32_t output_w;                                                             \
    int32_t output_c;                                                             \
    int32_t stride_h;                                                             \
    int32_t stride_w;                                                             \
    int32_t dilation_h;                                                           \
    int32_t dilation_w;                                                           \
    int32_t pad_h;                                                                \
    int32_t pad_w;                                                                \
    /* CONV_2D: input channels each filter sees (input_c / groups); \
     * DEPTHWISE_CONV_2D: the depth multiplier. */                               \
    int32_t filter_in_c_or_multiplier;

/* One output pixel (b, out_y, out_x) and the windows of its taps. */
typedef struct {
    int32_t b;
    int32_t out_y;
    int32_t out_x;
    mcu_window_axis wy;
    mcu_window_axis wx;
} mcu_conv_pixel;

/* The pixel's windows, from any params struct with MCU_CONV_GEOMETRY_FIELDS. */
#define MCU_CONV_PIXEL_WINDOWS(p, px)                                                                             \
    ((px)->wy = mcu_window_axis_at((px)->out_y, (p)->stride_h, (p)->pad_h, (p)->dilation_h, (p)->filter_h,       \
                                   (p)->input_h),                                                                 \
     (px)->wx = mcu_window_axis_at((px)->out_x, (p)->stride_w, (p)->pad_w, (p)->dilation_w, (p)->filter_w,       \
                                   (p)->input_w))

/* Every output pixel of params `p` in NHWC order (batch, row, column):
 *
 *     mcu_conv_pixel px;
 *     for (MCU_CONV_FIRST_PIXEL(p, &px); px.b < p->batches; MCU_CONV_NEXT_PIXEL(p, &px)) { ... }
 *
 * The body computes the pixel's output channels from px.wy and px.wx. */
#define MCU_CONV_FIRST_PIXEL(p, px)                                                                               \
    ((px)->b = (p)->output_h > 0 && (p)->output_w > 0 ? 0 : (p)->batches, (px)->out_y = (px)->out_x = 0,            \
     MCU_CONV_PIXEL_WINDOWS(p, px))
#define MCU_CONV_NEXT_PIXEL(p, px)                                                                                \
    (++(px)->out_x < (p)->output_w                                                                                \
         ? (void)0                                                                                                \
         : (void)((px)->out_x = 0, ++(px)->out_y < (p)->output_h ? 0 : ((px)->out_y = 0, ++(px)->b)),            \
     MCU_CONV_PIXEL_WINDOWS(p, px))

#endif /* MCU_CONV_GEOMETRY_H */
