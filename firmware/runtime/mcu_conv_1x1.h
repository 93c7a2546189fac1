/* int8 pointwise convolutions (1x1 filter, no padding, one group). */
#ifndef MCU_CONV_1X1_H
#define MCU_CONV_1X1_H

#include "mcu_conv.h"

/* `columns`: p->column_bytes of scratch for the M4 DSP's interleaved filter
 * pairs (2 x input_c), or NULL. */
void mcu_conv_1x1_s8(const mcu_conv_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                     int8_t *output, int8_t *columns);

#endif /* MCU_CONV_1X1_H */
