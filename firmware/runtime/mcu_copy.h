/* RESHAPE, SQUEEZE, EXPAND_DIMS: the bytes stay as they are, only the shape
 * changes.  Codegen calls this only when the plan did not give output and
 * input the same bytes. */
#ifndef MCU_COPY_H
#define MCU_COPY_H

#include "mcu_runtime.h"

typedef struct {
    int32_t bytes;
} mcu_copy_params;

void mcu_copy(const mcu_copy_params *p, const void *input, void *output);

#endif /* MCU_COPY_H */
