/* FULLY_CONNECTED with int8 activations and an int4 filter kept packed in
 * flash as TFLite stores it: two weights a byte, the first in the low nibble
 * (rows of an odd depth start inside a byte).  Same parameters and results
 * as mcu_fully_connected_s8 on the unpacked filter. */
#ifndef MCU_FULLY_CONNECTED_S4_H
#define MCU_FULLY_CONNECTED_S4_H

#include "mcu_fully_connected.h"

/* Weights unpacked per pass where a row is unpacked: four rows of this many
 * values, on the stack. */
#define MCU_S4_CHUNK 32

/* filter: the packed bytes, ceil(output_depth * accum_depth / 2) of them.
 * bias may be NULL. */
void mcu_fully_connected_s8_s4(const mcu_fully_connected_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output);

#endif /* MCU_FULLY_CONNECTED_S4_H */
