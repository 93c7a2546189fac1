/* The walk every broadcasting elementwise kernel shares (ADD, SUB, MUL of
 * each dtype): the output in row-major order, one innermost row at a time,
 * each input addressed with its own element strides (0 along the dimensions
 * it is broadcast over).  Lowering merged the dimensions beforehand (see
 * mcu_planner/lowering/elementwise.py: broadcast_walk). */
#ifndef MCU_BROADCAST_H
#define MCU_BROADCAST_H

#include "mcu_runtime.h"

typedef struct {
    const void *params;
    const void *input1;
    const void *input2;
    void *output;
} mcu_broadcast_context;

/* One run of the innermost dimension: n outputs starting at out_offset, the
 * inputs starting at their own offsets and stepping by stride1 / stride2. */
typedef void (*mcu_broadcast_row_fn)(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1,
                                     int32_t offset2, int32_t stride2, int32_t out_offset, int32_t n);

static inline void mcu_for_each_broadcast_row(int32_t rank, const int32_t *dims, const int32_t *strides1,
                                              const int32_t *strides2, mcu_broadcast_row_fn row, const void *params,
                                              const void *input1, const void *input2, void *output)
{
    const mcu_broadcast_context ctx = {params, input1, input2, output};
    int32_t index[MCU_MAX_RANK] = {0};
    const int32_t inner = rank - 1;
    const int32_t n = dims[inner];
    int32_t offset1 = 0, offset2 = 0, out_offset = 0;
    int32_t d;
    for (;;) {
        row(&ctx, offset1, strides1[inner], offset2, strides2[inner], out_offset, n);
        out_offset += n;
        /* Advance the outer index like an odometer. */
        for (d = inner - 1; d >= 0; --d) {
            offset1 += strides1[d];
            offset2 += strides2[d];
            if (++index[d] < dims[d]) {
                break;
            }
            offset1 -= strides1[d] * dims[d];
            offset2 -= strides2[d] * dims[d];
            index[d] = 0;
        }
        if (d < 0) {
            return;
        }
    }
}

/* Defines `name`, an mcu_broadcast_row_fn computing out[i] = expr from
 * x = input1's and y = input2's element, with p pointing at the kernel's
 * params_t. */
#define MCU_BROADCAST_ROW(name, params_t, in_t, out_t, expr)                                                  \
    static void name(const mcu_broadcast_context *ctx, int32_t offset1, int32_t stride1, int32_t offset2,       \
                     int32_t stride2, int32_t out_offset, int32_t n)                                            \
    {                                                                                                           \
        const params_t *p = (const params_t *)ctx->params;                                                      \
        const in_t *a = (const in_t *)ctx->input1 + offset1;                                                    \
        const in_t *b = (const in_t *)ctx->input2 + offset2;                                                    \
        out_t *out = (out_t *)ctx->output + out_offset;                                                         \
        int32_t i;                                                                                              \
        (void)p;                                                                                                \
        for (i = 0; i < n; ++i) {                                                                               \
            const in_t x = a[i * stride1];                                                                      \
            const in_t y = b[i * stride2];                                                                      \
            out[i] = (expr);                                                                                    \
        }                                                                                                       \
    }

#endif /* MCU_BROADCAST_H */
