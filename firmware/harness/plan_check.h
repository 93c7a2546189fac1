/* Force-included (-include) into check builds (-DMCU_PLAN_CHECK) of the
 * generated model: its plan-discipline violations go to the semihosting
 * console through the harness, since the firmware has no stdio. */
#ifndef MCU_PLAN_CHECK_HOOK_H
#define MCU_PLAN_CHECK_HOOK_H

/* op -1: `tensor`'s buffer lies outside the arena. */
void harness_plan_violation(int op, int tensor, int other_tensor);

#define MCU_PLAN_CHECK_REPORT(op, tensor, other_tensor) harness_plan_violation((op), (tensor), (other_tensor))

#endif
