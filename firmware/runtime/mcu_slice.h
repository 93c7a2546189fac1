/* STRIDED_SLICE over up to 5 dimensions, any element type.
 *
 * The begin/end/stride/mask logic is resolved at generation time into, per
 * dimension of the (5-D padded) input, a count of elements taken and the step
 * between them in input elements (negative for reversed axes); `first` is the
 * input element offset of the first one taken.
 */
#ifndef MCU_SLICE_H
#define MCU_SLICE_H

#include "mcu_runtime.h"

#define MCU_SLICE_RANK 5

typedef struct {
    int32_t element_bytes;
    int32_t first;
    const int32_t *counts; /* MCU_SLICE_RANK entries */
    const int32_t *steps;  /* MCU_SLICE_RANK entries, in input elements */
} mcu_strided_slice_params;

void mcu_strided_slice(const mcu_strided_slice_params *p, const void *input, void *output);

#endif /* MCU_SLICE_H */
