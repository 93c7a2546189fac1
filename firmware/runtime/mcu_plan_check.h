/* Run-time check of a generated model's memory plan, for builds with
 * -DMCU_PLAN_CHECK: released bytes are poisoned, and before an op first
 * writes a buffer, no other live buffer may share its bytes unless the plan
 * lets the op run in place over it, or partly over it no further than its
 * kernel's walk allows.  Every generated model describes its plan
 * to these functions with const tables; a normal build uses none of them. */
#ifndef MCU_PLAN_CHECK_H
#define MCU_PLAN_CHECK_H

#include <stdint.h>

typedef struct {
    const char *model; /* the model's name, for messages */
    uint8_t *arena;
    uint32_t arena_size;
    uint32_t num_buffers;
    const uint32_t *offset;        /* per buffer: arena offset */
    const uint32_t *size;          /* per buffer: bytes */
    const uint8_t *live_at_start;  /* per buffer: written before invoke (graph inputs) */
    const int32_t *in_place;       /* (op, output buffer, input buffer) triples, ending with op -1 */
    const int32_t *overlaps;       /* (op, output buffer, input buffer, max offset), ending with op -1 */
    const char *const *buffer_name; /* per buffer: "tensor:name" (NULL with MCU_PLAN_CHECK_REPORT) */
    const char *const *op_name;     /* per op: opcode (NULL with MCU_PLAN_CHECK_REPORT) */
    const int32_t *buffer_tensor;   /* per buffer: root tensor (for MCU_PLAN_CHECK_REPORT) */
    uint8_t *live;                  /* per buffer: the model's own state */
    uint8_t poison;                 /* the byte released memory is filled with */
} mcu_plan_check_plan;

/* At invoke start: every buffer inside the arena, the arena aligned to 16
 * bytes; marks the buffers live at start and poisons the rest.  0 if so. */
int mcu_plan_check_start(const mcu_plan_check_plan *plan);

/* Where a graph input lives: its buffer, its offset inside the buffer, its bytes. */
typedef uint32_t mcu_plan_check_place[3];

/* 1 when the bytes of a graph input at `place` lie inside the arena. */
int mcu_plan_check_input_inside(const mcu_plan_check_plan *plan, const mcu_plan_check_place place);

/* At invoke start, before any op runs: every graph input inside the arena,
 * apart from the other inputs and from every other buffer live at the
 * start.  0 if so; else reports the input and returns 1. */
int mcu_plan_check_inputs(const mcu_plan_check_plan *plan, uint32_t num_inputs, const mcu_plan_check_place *places);

/* Before `op` first writes `buffer`: 0 when it overlaps no live buffer the
 * plan does not let it overwrite; else reports the pair and returns 1. */
int mcu_plan_check_claim(const mcu_plan_check_plan *plan, int32_t op, uint32_t buffer);

/* After the last read of `buffer`: not live any more, its bytes poisoned
 * (except those of buffers still live). */
void mcu_plan_check_release(const mcu_plan_check_plan *plan, uint32_t buffer);

#endif /* MCU_PLAN_CHECK_H */
