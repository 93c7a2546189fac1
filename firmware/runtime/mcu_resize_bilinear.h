/* RESIZE_BILINEAR on NHWC tensors: float32, uint8, int8, int16.
 *
 * Where each output row and column samples the input is computed at
 * generation time, as TensorFlow Lite's ComputeInterpolationValues does it,
 * and stored as tables: the two input rows (columns) it blends and the
 * distance past the first of them.  The kernels only blend:
 *  - float32 and uint8 as reference_ops::ResizeBilinear<T>: float weights,
 *    the uint8 result rounded half away from zero;
 *  - int8 and int16 as the integer reference (ResizeBilinearInteger): distances in
 *    1/1024ths, the blend in 64 bits rounded half away from zero. */
#ifndef MCU_RESIZE_BILINEAR_H
#define MCU_RESIZE_BILINEAR_H

#include "mcu_runtime.h"

#define MCU_RESIZE_BILINEAR_GEOMETRY_FIELDS                            \
    int32_t batches;                                                   \
    int32_t input_height;                                              \
    int32_t input_width;                                               \
    int32_t depth;                                                     \
    int32_t output_height;                                             \
    int32_t output_width;                                              \
    const int32_t *row_lower;    /* output_height entries: y0 */       \
    const int32_t *row_upper;    /* y1 */                              \
    const int32_t *column_lower; /* output_width entries: x0 */        \
    const int32_t *column_upper; /* x1 */

typedef struct {
    MCU_RESIZE_BILINEAR_GEOMETRY_FIELDS
    const float *row_fraction;    /* input_y - y0 */
    const float *column_fraction; /* input_x - x0 */
} mcu_resize_bilinear_float_params;

typedef struct {
    MCU_RESIZE_BILINEAR_GEOMETRY_FIELDS
    const int32_t *row_fraction;    /* input_y - 1024 * y0, input_y in 1/1024ths */
    const int32_t *column_fraction; /* input_x - 1024 * x0 */
} mcu_resize_bilinear_int_params;

void mcu_resize_bilinear_f32(const mcu_resize_bilinear_float_params *p, const float *input, float *output);
void mcu_resize_bilinear_u8(const mcu_resize_bilinear_float_params *p, const uint8_t *input, uint8_t *output);
void mcu_resize_bilinear_s8(const mcu_resize_bilinear_int_params *p, const int8_t *input, int8_t *output);
void mcu_resize_bilinear_s16(const mcu_resize_bilinear_int_params *p, const int16_t *input, int16_t *output);

#endif /* MCU_RESIZE_BILINEAR_H */
