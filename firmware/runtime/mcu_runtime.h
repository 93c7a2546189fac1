/* Types and conventions shared by every kernel of the C runtime.
 *
 * Kernels take a params struct first (built at generation time by
 * mcu_planner/lowering, all constant) and then tensor pointers.  Shapes are
 * NHWC, as TFLite lays tensors out; 2-D kernels view lower-rank tensors as
 * 4-D with leading ones.  No kernel allocates, every one is C99.
 */
#ifndef MCU_RUNTIME_H
#define MCU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#define MCU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MCU_MAX(a, b) ((a) > (b) ? (a) : (b))

/* What a kernel that can fail returns (a kernel without a failure mode
 * returns void).  The generated invoke stops at the first kernel that does
 * not return MCU_STATUS_OK and returns NAME_KERNEL_FAILED, where TFLite's
 * interpreter fails the invoke on the same input. */
typedef enum {
    MCU_STATUS_OK = 0,
    MCU_STATUS_INDEX_OUT_OF_RANGE = 1, /* GATHER: an index outside its axis */
    MCU_STATUS_DIVISION_BY_ZERO = 2,   /* quantized DIV: a divisor whose value is 0 */
    MCU_STATUS_INCOMPATIBLE_SHAPES = 3 /* BROADCAST_ARGS: dimensions neither equal nor 1 */
} mcu_status;

/* Largest tensor rank the shape-generic kernels (transpose, pad, mean) take;
 * TFLite's reference Transpose and Pad stop at 6 too. */
#define MCU_MAX_RANK 6

/* Keeps an inner loop in a function of its own, so that the compiler gives
 * the loop's pointers and sums the registers instead of spilling them for the
 * state of the loops around it. */
#if defined(__GNUC__)
#define MCU_NOINLINE __attribute__((noinline))
#else
#define MCU_NOINLINE
#endif

/* For a short step (requantizing one output) inside a kernel's output loop:
 * inlined, the per-channel parameters stay in registers across outputs
 * instead of being reloaded behind a call. */
#if defined(__GNUC__)
#define MCU_ALWAYS_INLINE __attribute__((always_inline))
#else
#define MCU_ALWAYS_INLINE
#endif

/* One byte of an int8 or uint8 tensor as its value: kernels that compute
 * alike on both types read the bytes through this and store the clamped
 * result's low byte, which is the same two's complement byte for int8. */
static inline int32_t mcu_widen_8bit(uint8_t byte, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)byte : (int32_t)byte;
}

#endif /* MCU_RUNTIME_H */
