/* Index arithmetic of the MEAN kernels (every dtype): the tensor viewed as
 * MCU_MAX_RANK dimensions, walked in row-major order. */
#ifndef MCU_REDUCE_WALK_H
#define MCU_REDUCE_WALK_H

#include "mcu_runtime.h"

/* Offset into the input of index k[] (element strides). */
static inline size_t mcu_reduce_offset(const int32_t *strides, const int32_t *k)
{
    size_t base = 0;
    int i;
    for (i = 0; i < MCU_MAX_RANK; ++i) {
        base += (size_t)k[i] * (size_t)strides[i];
    }
    return base;
}

/* Steps idx[] through dims[] in row-major order; 0 when it wraps around. */
static inline int mcu_reduce_next(int32_t *idx, const int32_t *dims)
{
    int i;
    for (i = MCU_MAX_RANK - 1; i >= 0; --i) {
        if (++idx[i] < dims[i]) {
            return 1;
        }
        idx[i] = 0;
    }
    return 0;
}

#endif /* MCU_REDUCE_WALK_H */
