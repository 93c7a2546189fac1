/* MEAN (and SUM, REDUCE_MAX, REDUCE_MIN) over any set of axes of a tensor of up to MCU_MAX_RANK dimensions.
 *
 * The tensor is viewed as MCU_MAX_RANK dimensions; every dimension is either
 * kept (it indexes the output) or reduced.  For each output element the
 * reduced elements are summed in the input's row-major order, which is the
 * order TFLite's reference sums them in. */
#ifndef MCU_MEAN_H
#define MCU_MEAN_H

#include "mcu_runtime.h"

#define MCU_MEAN_SHAPE_FIELDS                                                          \
    const int32_t *kept_dims;    /* size of each dimension that is kept, else 1 */     \
    const int32_t *reduced_dims; /* size of each dimension that is reduced, else 1 */  \
    const int32_t *input_strides; /* in elements */                                    \
    int32_t count;               /* number of elements summed per output */

typedef struct {
    MCU_MEAN_SHAPE_FIELDS
    int32_t input_zero_point;
    int32_t output_zero_point;
    /* input scale / (output scale * count), folded as TFLite folds it */
    int32_t multiplier;
    int32_t shift;
} mcu_mean_s8_params;

typedef struct {
    MCU_MEAN_SHAPE_FIELDS
} mcu_mean_f32_params;

void mcu_mean_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output);
/* uint8 takes the int8 parameters. */
void mcu_mean_u8(const mcu_mean_s8_params *p, const uint8_t *input, uint8_t *output);
void mcu_mean_f32(const mcu_mean_f32_params *p, const float *input, float *output);
/* int8 SUM: multiplier = input scale / output scale (no count folded in). */
void mcu_sum_s8(const mcu_mean_s8_params *p, const int8_t *input, int8_t *output);

/* SUM, REDUCE_MAX and REDUCE_MIN walk the same shape (mcu_mean_f32_params: no
 * quantization is involved; int8 REDUCE_MAX compares stored values, its
 * output sharing the input's quantization). */
void mcu_sum_f32(const mcu_mean_f32_params *p, const float *input, float *output);
void mcu_reduce_max_f32(const mcu_mean_f32_params *p, const float *input, float *output);
void mcu_reduce_max_s8(const mcu_mean_f32_params *p, const int8_t *input, int8_t *output);
void mcu_reduce_min_f32(const mcu_mean_f32_params *p, const float *input, float *output);
void mcu_reduce_min_s8(const mcu_mean_f32_params *p, const int8_t *input, int8_t *output);
/* REDUCE_ALL / REDUCE_ANY on bool (one byte per element). */
void mcu_reduce_all_b8(const mcu_mean_f32_params *p, const uint8_t *input, uint8_t *output);
void mcu_reduce_any_b8(const mcu_mean_f32_params *p, const uint8_t *input, uint8_t *output);

/* CUMSUM (reference_ops::CumSum): running sums along one axis of an
 * outer_size x axis_size x inner_size view, from the axis' end when
 * `reverse`, each output holding the sum before its own element when
 * `exclusive`.  int32 and int64 sums wrap. */
typedef struct {
    int32_t outer_size;
    int32_t axis_size;
    int32_t inner_size;
    int32_t exclusive;
    int32_t reverse;
} mcu_cumsum_params;

void mcu_cumsum_f32(const mcu_cumsum_params *p, const float *input, float *output);
void mcu_cumsum_s32(const mcu_cumsum_params *p, const int32_t *input, int32_t *output);
void mcu_cumsum_s64(const mcu_cumsum_params *p, const int64_t *input, int64_t *output);

#endif /* MCU_MEAN_H */
