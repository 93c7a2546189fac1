/* What every board's start-up shares: the linker-script symbols, the
 * handlers its vector table points at, and the stack paint the harness
 * reads back as a high-water mark. */
#ifndef MCU_CORTEX_M_H
#define MCU_CORTEX_M_H

#include <stddef.h>
#include <stdint.h>

/* From templates/board/linker.ld.j2. */
extern uint32_t __stack_bottom[];
extern uint32_t __stack_top[];
extern const uint32_t __data_load[];
extern uint32_t __data_start[];
extern uint32_t __data_end[];
extern uint32_t __bss_start[];
extern uint32_t __bss_end[];

#define STACK_PAINT 0xC0FFEE5Au

typedef void (*vector_fn)(void);

/* Eight vector-table entries for device interrupts the firmware never enables. */
#define UNEXPECTED_8                                                                    \
    Unexpected_Handler, Unexpected_Handler, Unexpected_Handler, Unexpected_Handler,     \
        Unexpected_Handler, Unexpected_Handler, Unexpected_Handler, Unexpected_Handler

void Reset_Handler(void) __attribute__((noreturn));
void NMI_Handler(void);
void HardFault_Handler(void);
void MemManage_Handler(void);
void BusFault_Handler(void);
void UsageFault_Handler(void);
void SecureFault_Handler(void);
void Unexpected_Handler(void);
/* Weak defaults; the harness overrides SysTick_Handler for its timer. */
void SVC_Handler(void);
void PendSV_Handler(void);
void SysTick_Handler(void);

/* Bytes of the stack reserve ever written since reset (paint disturbed). */
size_t stack_high_water_bytes(void);
size_t stack_reserve_bytes(void);

int main(void);

#endif
