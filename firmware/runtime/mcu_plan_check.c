/* See mcu_plan_check.h.  Compiled to nothing without -DMCU_PLAN_CHECK. */
#include "mcu_plan_check.h"

#ifdef MCU_PLAN_CHECK

#include <stddef.h>
#include <string.h>

#ifndef MCU_PLAN_CHECK_REPORT
#include <stdio.h>
#endif

/* op -1: `buffer` lies outside the arena. */
static void report(const mcu_plan_check_plan *plan, int32_t op, uint32_t buffer, uint32_t other)
{
#ifdef MCU_PLAN_CHECK_REPORT
    MCU_PLAN_CHECK_REPORT((int)op, (int)plan->buffer_tensor[buffer], (int)plan->buffer_tensor[other]);
#else
    const uint32_t *offset = plan->offset;
    const uint32_t *size = plan->size;
    if (op < 0) {
        fprintf(stderr, "mcu-plan check: %s: buffer of tensor %s [%lu, %lu) lies outside the arena of %lu bytes\n",
                plan->model, plan->buffer_name[buffer], (unsigned long)offset[buffer],
                (unsigned long)(offset[buffer] + size[buffer]), (unsigned long)plan->arena_size);
        return;
    }
    fprintf(stderr, "mcu-plan check: %s: op %d (%s) writes tensor %s [%lu, %lu) over live tensor %s [%lu, %lu)\n",
            plan->model, (int)op, plan->op_name[op], plan->buffer_name[buffer], (unsigned long)offset[buffer],
            (unsigned long)(offset[buffer] + size[buffer]), plan->buffer_name[other], (unsigned long)offset[other],
            (unsigned long)(offset[other] + size[other]));
#endif
}

static int overlap(const mcu_plan_check_plan *plan, uint32_t a, uint32_t b)
{
    return plan->offset[a] < plan->offset[b] + plan->size[b] && plan->offset[b] < plan->offset[a] + plan->size[a];
}

/* Whether the plan lets `op` write `out` over `in`: listed in place and at
 * exactly the same bytes, or listed as an overlap and starting no further
 * after `in` than its max offset (a pair may be listed both ways: an
 * elementwise kernel with a walk, such as QUANTIZE). */
static int may_share(const mcu_plan_check_plan *plan, int32_t op, uint32_t out, uint32_t in)
{
    const int32_t *entry;
    for (entry = plan->in_place; entry[0] >= 0; entry += 3) {
        if (entry[0] == op && (uint32_t)entry[1] == out && (uint32_t)entry[2] == in &&
            plan->offset[out] == plan->offset[in] && plan->size[out] == plan->size[in]) {
            return 1;
        }
    }
    for (entry = plan->overlaps; entry[0] >= 0; entry += 4) {
        if (entry[0] == op && (uint32_t)entry[1] == out && (uint32_t)entry[2] == in) {
            return (int64_t)plan->offset[out] - (int64_t)plan->offset[in] <= (int64_t)entry[3];
        }
    }
    return 0;
}

/* Fills [lo, hi) with the poison byte, except the bytes of live buffers:
 * from left to right, each step skips the live buffer that reaches into the
 * rest of the range first. */
static void poison(const mcu_plan_check_plan *plan, uint32_t lo, uint32_t hi)
{
    while (lo < hi) {
        uint32_t k, skip_lo = hi, skip_hi = hi;
        for (k = 0; k < plan->num_buffers; ++k) {
            uint32_t k_lo = plan->offset[k];
            uint32_t k_hi = k_lo + plan->size[k];
            if (plan->live[k] && k_lo < hi && lo < k_hi && k_lo < skip_lo) {
                skip_lo = k_lo;
                skip_hi = k_hi;
            }
        }
        if (lo < skip_lo) {
            memset(plan->arena + lo, plan->poison, skip_lo - lo);
        }
        lo = skip_hi;
    }
}

int mcu_plan_check_start(const mcu_plan_check_plan *plan)
{
    uint32_t k;
    if (((uintptr_t)plan->arena & 15u) != 0u) {
        return 1;
    }
    for (k = 0; k < plan->num_buffers; ++k) {
        uint32_t end = plan->offset[k] + plan->size[k];
        if (end > plan->arena_size || end < plan->offset[k]) {
            report(plan, -1, k, k);
            return 1;
        }
        plan->live[k] = plan->live_at_start[k];
    }
    poison(plan, 0u, plan->arena_size);
    return 0;
}

/* The bytes [*lo, *hi) of the graph input at `place`; 1 when they lie inside the arena. */
static int input_range(const mcu_plan_check_plan *plan, const mcu_plan_check_place place, uint32_t *lo, uint32_t *hi)
{
    if (place[0] >= plan->num_buffers) {
        *lo = *hi = 0u;
        return 0;
    }
    *lo = plan->offset[place[0]] + place[1];
    *hi = *lo + place[2];
    return *lo >= plan->offset[place[0]] && *hi >= *lo && *hi <= plan->arena_size;
}

int mcu_plan_check_input_inside(const mcu_plan_check_plan *plan, const mcu_plan_check_place place)
{
    uint32_t lo, hi;
    return input_range(plan, place, &lo, &hi);
}

/* Graph input `index` is outside the arena (other < 0), over graph input
 * `other`, or over the live buffer `other - num_inputs`. */
static void report_input(const mcu_plan_check_plan *plan, uint32_t index, int32_t other, uint32_t num_inputs,
                         const mcu_plan_check_place *places)
{
#ifdef MCU_PLAN_CHECK_REPORT
    (void)num_inputs;
    MCU_PLAN_CHECK_REPORT(-1, (int)plan->buffer_tensor[places[index][0]],
                          other < 0 ? -1 : (int)plan->buffer_tensor[(uint32_t)other < num_inputs
                                                                        ? places[other][0]
                                                                        : (uint32_t)other - num_inputs]);
#else
    uint32_t lo, hi;
    (void)input_range(plan, places[index], &lo, &hi);
    if (other < 0) {
        fprintf(stderr, "mcu-plan check: %s: graph input %lu [%lu, %lu) lies outside the arena of %lu bytes\n",
                plan->model, (unsigned long)index, (unsigned long)lo, (unsigned long)hi,
                (unsigned long)plan->arena_size);
    } else if ((uint32_t)other < num_inputs) {
        fprintf(stderr, "mcu-plan check: %s: graph input %lu [%lu, %lu) overlaps graph input %d\n", plan->model,
                (unsigned long)index, (unsigned long)lo, (unsigned long)hi, (int)other);
    } else {
        fprintf(stderr, "mcu-plan check: %s: graph input %lu [%lu, %lu) overlaps live tensor %s\n", plan->model,
                (unsigned long)index, (unsigned long)lo, (unsigned long)hi,
                plan->buffer_name[(uint32_t)other - num_inputs]);
    }
#endif
}

int mcu_plan_check_inputs(const mcu_plan_check_plan *plan, uint32_t num_inputs, const mcu_plan_check_place *places)
{
    uint32_t i, j, k, lo, hi, other_lo, other_hi;
    for (i = 0; i < num_inputs; ++i) {
        if (!input_range(plan, places[i], &lo, &hi)) {
            report_input(plan, i, -1, num_inputs, places);
            return 1;
        }
        for (j = 0; j < i; ++j) {
            (void)input_range(plan, places[j], &other_lo, &other_hi);
            if (lo < other_hi && other_lo < hi) {
                report_input(plan, i, (int32_t)j, num_inputs, places);
                return 1;
            }
        }
        for (k = 0; k < plan->num_buffers; ++k) {
            int is_input = 0;
            for (j = 0; j < num_inputs; ++j) {
                is_input |= places[j][0] == k;
            }
            other_lo = plan->offset[k];
            other_hi = other_lo + plan->size[k];
            if (!is_input && plan->live_at_start[k] && lo < other_hi && other_lo < hi) {
                report_input(plan, i, (int32_t)(num_inputs + k), num_inputs, places);
                return 1;
            }
        }
    }
    return 0;
}

int mcu_plan_check_claim(const mcu_plan_check_plan *plan, int32_t op, uint32_t buffer)
{
    uint32_t other;
    for (other = 0; other < plan->num_buffers; ++other) {
        if (other != buffer && plan->live[other] && overlap(plan, buffer, other) &&
            !may_share(plan, op, buffer, other)) {
            report(plan, op, buffer, other);
            return 1;
        }
    }
    plan->live[buffer] = 1u;
    return 0;
}

void mcu_plan_check_release(const mcu_plan_check_plan *plan, uint32_t buffer)
{
    plan->live[buffer] = 0u;
    poison(plan, plan->offset[buffer], plan->offset[buffer] + plan->size[buffer]);
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int mcu_plan_check_unused;

#endif /* MCU_PLAN_CHECK */
