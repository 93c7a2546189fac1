/* EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL with
 * broadcasting (bool output, one byte per element), the LOGICAL_* ops, and
 * SELECT / SELECT_V2: the ops on and producing bool.
 *
 * The comparisons broadcast as ADD does (mcu_broadcast.h: the output walked
 * as `rank` dims, each input with its own element strides, 0 where
 * broadcast).  float32, int16, int32, int64 and bool compare the stored
 * values; int8 and uint8 compare them rescaled as TFLite's comparisons.cc
 * does (offset, << left_shift, times each input's scale as a multiplier
 * below one), so inputs of different scales compare by real value.
 */
#ifndef MCU_COMPARISONS_H
#define MCU_COMPARISONS_H

#include "mcu_runtime.h"

/* The comparison a kernel makes, by the codes lowering/comparisons.py gives. */
typedef enum {
    MCU_COMPARE_EQUAL = 0,
    MCU_COMPARE_NOT_EQUAL = 1,
    MCU_COMPARE_GREATER = 2,
    MCU_COMPARE_GREATER_EQUAL = 3,
    MCU_COMPARE_LESS = 4,
    MCU_COMPARE_LESS_EQUAL = 5
} mcu_comparison;

typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t comparison; /* an mcu_comparison */
} mcu_comparison_params;

/* int8 / uint8: both inputs brought to comparable int32 values first. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
    int32_t comparison; /* an mcu_comparison */
    int32_t input1_offset; /* -input1 zero point */
    int32_t input2_offset; /* -input2 zero point */
    int32_t left_shift;
    int32_t input1_multiplier;
    int32_t input1_shift; /* <= 0 */
    int32_t input2_multiplier;
    int32_t input2_shift; /* <= 0 */
} mcu_comparison_q8_params;

void mcu_compare_f32(const mcu_comparison_params *p, const float *input1, const float *input2, uint8_t *output);
void mcu_compare_s16(const mcu_comparison_params *p, const int16_t *input1, const int16_t *input2, uint8_t *output);
void mcu_compare_s32(const mcu_comparison_params *p, const int32_t *input1, const int32_t *input2, uint8_t *output);
void mcu_compare_s64(const mcu_comparison_params *p, const int64_t *input1, const int64_t *input2, uint8_t *output);
/* bool (and unquantized uint8) compares the stored bytes. */
void mcu_compare_u8(const mcu_comparison_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void mcu_compare_s8_quantized(const mcu_comparison_q8_params *p, const int8_t *input1, const int8_t *input2,
                              uint8_t *output);
void mcu_compare_u8_quantized(const mcu_comparison_q8_params *p, const uint8_t *input1, const uint8_t *input2,
                              uint8_t *output);

/* LOGICAL_AND, LOGICAL_OR (broadcasting as the comparisons, the walk alone)
 * and LOGICAL_NOT on bool bytes: any non-zero byte is true, results are 0
 * or 1. */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *input1_strides;
    const int32_t *input2_strides;
} mcu_logical_params;

typedef struct {
    int32_t size;
} mcu_logical_not_params;

void mcu_logical_and(const mcu_logical_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void mcu_logical_or(const mcu_logical_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void mcu_logical_not(const mcu_logical_not_params *p, const uint8_t *input, uint8_t *output);

/* SELECT_V2 (and SELECT of equal shapes): output[i] = condition ? x : y,
 * the three inputs broadcast against the output (strides in elements, 0
 * where broadcast), elements of element_bytes copied as stored (TFLite
 * copies quantized values without rescaling). */
typedef struct {
    int32_t rank;
    const int32_t *dims;
    const int32_t *condition_strides;
    const int32_t *x_strides;
    const int32_t *y_strides;
    int32_t element_bytes;
} mcu_select_params;

void mcu_select(const mcu_select_params *p, const uint8_t *condition, const void *x, const void *y, void *output);

#endif /* MCU_COMPARISONS_H */
