/* Vector table for a board described by a board.json without start-up code
 * of its own: the core's exceptions and 32 device interrupts.  The harness
 * enables no device interrupt; one that fires anyway ends the run through
 * Unexpected_Handler instead of jumping through an empty table entry. */
#include "cortex_m.h"

#define DEVICE_INTERRUPTS 32

__attribute__((section(".vectors"), used)) const vector_fn vector_table[16 + DEVICE_INTERRUPTS] = {
    (vector_fn)(uintptr_t)__stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    Unexpected_Handler, /* SecureFault on Armv8-M */
    0,
    0,
    0,
    SVC_Handler,
    Unexpected_Handler, /* DebugMonitor */
    0,
    PendSV_Handler,
    SysTick_Handler,
    UNEXPECTED_8, UNEXPECTED_8, UNEXPECTED_8, UNEXPECTED_8,
};
