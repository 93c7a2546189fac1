/* GATHER, GATHER_ND, the gathers MIRROR_PAD and BATCH_TO_SPACE_ND use, and
 * DYNAMIC_UPDATE_SLICE: the byte movers driven by indices.
 *
 * GATHER along one axis with batch dimensions, any element type, int16,
 * int32 or int64 indices.
 *
 * As TFLite's reference_ops::Gather views it: the input is
 * batch_size x outer_size x axis_size blocks of inner_bytes, the indices are
 * batch_size x coord_size, and the output is batch_size x outer_size x
 * coord_size blocks, each the input block its index names.
 */
#ifndef MCU_GATHER_H
#define MCU_GATHER_H

#include "mcu_runtime.h"

typedef struct {
    int32_t batch_size;
    int32_t outer_size;
    int32_t axis_size;
    int32_t coord_size;
    int32_t inner_bytes;
    int32_t index_bytes; /* 2, 4 or 8: the indices' element size */
} mcu_gather_params;

/* An index outside [0, axis_size) makes TFLite fail the invoke: here too
 * (MCU_STATUS_INDEX_OUT_OF_RANGE, the input never read out of bounds). */
mcu_status mcu_gather(const mcu_gather_params *p, const void *input, const void *indices, void *output);

/* GATHER_ND, any element type, int16, int32 or int64 indices: as
 * reference_ops::GatherNd, slice i of the output is the slice_size elements
 * of the input starting at sum_j indices[i * indices_nd + j] *
 * dims_to_count[j]. */
typedef struct {
    int32_t n_slices;
    int32_t indices_nd; /* the indices' last dimension, <= MCU_MAX_RANK */
    const int32_t *dims;          /* the indexed dimensions' extents */
    const int32_t *dims_to_count; /* elements one step of each indexed dimension skips */
    int32_t slice_size;           /* elements per slice */
    int32_t element_bytes;
    int32_t index_bytes; /* 2, 4 or 8 */
} mcu_gather_nd_params;

/* An index outside [0, its dimension) fails the invoke, as in LiteRT's
 * gather_nd.cc (MCU_STATUS_INDEX_OUT_OF_RANGE, checked before anything is
 * written). */
mcu_status mcu_gather_nd(const mcu_gather_nd_params *p, const void *input, const void *indices, void *output);

/* A gather whose input offset is a sum of one term per output dimension
 * (MIRROR_PAD, BATCH_TO_SPACE_ND): along each (padded) dimension d, output
 * index i adds axis_offsets[axis_starts[d] + i] elements (computed at
 * generation time: a mirrored index, or a block position, times the input
 * stride). */
typedef struct {
    int32_t element_bytes;
    const int32_t *output_dims; /* padded to MCU_MAX_RANK with leading ones */
    const int32_t *axis_starts; /* MCU_MAX_RANK entries into axis_offsets */
    const int32_t *axis_offsets;
} mcu_gather_axes_params;

void mcu_gather_axes(const mcu_gather_axes_params *p, const void *input, void *output);

/* DYNAMIC_UPDATE_SLICE, any element type, int32 or int64 start indices read
 * at run time: the output is the operand with the update written over it
 * from the start indices, each clamped to [0, operand dim - update dim] as
 * LiteRT's dynamic_update_slice.cc clamps them (so the update always fits).
 * Shapes are padded to MCU_MAX_RANK with leading ones; the index_count
 * start indices belong to the last index_count dimensions. */
typedef struct {
    const int32_t *operand_dims; /* MCU_MAX_RANK entries */
    const int32_t *update_dims;  /* MCU_MAX_RANK entries, each <= the operand's */
    int32_t index_count;         /* the operand's own rank, <= MCU_MAX_RANK */
    int32_t element_bytes;
    int32_t index_bytes; /* 4 or 8 */
} mcu_dynamic_update_slice_params;

void mcu_dynamic_update_slice(const mcu_dynamic_update_slice_params *p, const void *operand, const void *update,
                              const void *start_indices, void *output);

#endif /* MCU_GATHER_H */
