/* SPLIT, SPLIT_V and UNPACK: one input cut along one axis into consecutive
 * pieces, any element type.
 *
 * Viewed around the axis, the input is outer_size blocks of
 * input_block_bytes, and output k is outer_size blocks of copy_bytes[k]
 * taken one after the other from each input block (UNPACK is a SPLIT into
 * pieces of length 1 whose axis is then dropped: the same bytes).  Unused
 * output pointers are NULL.  A piece that already sits in its place inside
 * the input (the planner aliased it there) is left alone.
 */
#ifndef MCU_SPLIT_H
#define MCU_SPLIT_H

#include "mcu_runtime.h"

#define MCU_SPLIT_MAX_OUTPUTS 16

typedef struct {
    int32_t num_outputs;
    int32_t outer_size;
    int32_t input_block_bytes;  /* axis length * inner size * element bytes */
    const int32_t *copy_bytes;  /* per output: its axis length * inner size * element bytes */
} mcu_split_params;

/* The tensor arguments: the input, MCU_SPLIT_MAX_OUTPUTS outputs (unused ones NULL). */
typedef struct {
    const void *input;
    void *output0;
    void *output1;
    void *output2;
    void *output3;
    void *output4;
    void *output5;
    void *output6;
    void *output7;
    void *output8;
    void *output9;
    void *output10;
    void *output11;
    void *output12;
    void *output13;
    void *output14;
    void *output15;
} mcu_split_tensors;

void mcu_split(const mcu_split_params *p, const mcu_split_tensors *t);

#endif /* MCU_SPLIT_H */
