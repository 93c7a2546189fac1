/* CAST between the element types TFLite's cast.cc converts: each element
 * through C's own conversion, as the reference's static_cast does (integers
 * to narrower integers wrap modulo 2^bits, floats truncate toward zero,
 * anything to bool is x != 0, integers to float round to nearest).
 *
 * One kernel per source type family: the integer sources read each element
 * widened to int64_t (exact), the float32 source reads it as float, and the
 * destination type is a switch outside the element loop.
 */
#ifndef MCU_CAST_H
#define MCU_CAST_H

#include "mcu_runtime.h"

/* Element types by the codes lowering/cast.py gives them (CAST_TYPE_CODES). */
typedef enum {
    MCU_CAST_BOOL = 0,
    MCU_CAST_INT8 = 1,
    MCU_CAST_UINT8 = 2,
    MCU_CAST_INT16 = 3,
    MCU_CAST_UINT16 = 4,
    MCU_CAST_INT32 = 5,
    MCU_CAST_UINT32 = 6,
    MCU_CAST_INT64 = 7,
    MCU_CAST_FLOAT32 = 8
} mcu_cast_type;

typedef struct {
    int32_t size;
    int32_t input_type;  /* an mcu_cast_type */
    int32_t output_type; /* an mcu_cast_type */
} mcu_cast_params;

/* Input and output never share bytes (their element sizes differ or the
 * plan keeps them apart). */
void mcu_cast(const mcu_cast_params *p, const void *input, void *output);

#endif /* MCU_CAST_H */
