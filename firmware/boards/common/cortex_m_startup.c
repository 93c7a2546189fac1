/* Reset and fault handling shared by the Cortex-M boards.
 *
 * No C library start-up runs before main: newlib's rdimon crt0 would move
 * the stack to the largest RAM region it finds, and then the RAM figures
 * the linker enforces would no longer be the RAM the firmware uses. */
#include "cortex_m.h"

#include "exit_codes.h"
#include "semihost.h"

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)

/* Words left unpainted below the reset handler's own stack pointer, so the
 * painting loop never overwrites the frame it runs in. */
#define PAINT_GUARD_WORDS 16u

static void enable_fpu(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    /* Full access to CP10 and CP11 (FPU, and MVE on v8.1-M). */
    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
}

static void paint_stack(void)
{
    uint32_t sp;
    volatile uint32_t *word;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (word = __stack_bottom; (uintptr_t)(word + PAINT_GUARD_WORDS) < sp; ++word) {
        *word = STACK_PAINT;
    }
}

size_t stack_reserve_bytes(void)
{
    return (size_t)((uintptr_t)__stack_top - (uintptr_t)__stack_bottom);
}

size_t stack_high_water_bytes(void)
{
    const uint32_t *word = __stack_bottom;
    while (word < __stack_top && *word == STACK_PAINT) {
        ++word;
    }
    return (size_t)((uintptr_t)__stack_top - (uintptr_t)word);
}

void Reset_Handler(void)
{
    volatile uint32_t *dst;
    const volatile uint32_t *src;

    /* Before anything the compiler might lower to FP or MVE instructions. */
    enable_fpu();
    for (src = __data_load, dst = __data_start; dst < __data_end;) {
        *dst++ = *src++;
    }
    for (dst = __bss_start; dst < __bss_end;) {
        *dst++ = 0;
    }
    paint_stack();
    (void)main();
    semihost_exit(EXIT_MAIN_RETURNED);
}

static void put_hex(uint32_t value)
{
    char text[11];
    int i;
    text[0] = '0';
    text[1] = 'x';
    for (i = 0; i < 8; ++i) {
        text[2 + i] = "0123456789abcdef"[(value >> (28 - 4 * i)) & 0xFu];
    }
    text[10] = '\0';
    semihost_write0(text);
}

/* Called by the naked handlers below, on a fresh stack, with the program
 * counter the core stacked for the fault (0 when there was no readable
 * frame) and the exit status for the fault. */
void fault_exit(uint32_t pc, int status) __attribute__((noreturn, used));
void fault_exit(uint32_t pc, int status)
{
    semihost_write0("mcu-harness: fault status=");
    put_hex((uint32_t)status);
    semihost_write0(" pc=");
    put_hex(pc);
    semihost_write0(" cfsr=");
    put_hex(SCB_CFSR);
    semihost_write0(" hfsr=");
    put_hex(SCB_HFSR);
    semihost_write0(" bfar=");
    put_hex(SCB_BFAR);
    semihost_write0("\n");
    semihost_exit(status);
}

/* Each fault exits QEMU with its own status rather than spinning forever,
 * so a crashing model fails a test at once instead of at its timeout.
 *
 * The handler reads the stacked pc only when the exception frame lies inside
 * the stack reserve: a frame below it means the stack overflowed (the core
 * could not stack the frame), reported as EXIT_STACK_OVERFLOW.  It then
 * resets MSP to the top of the reserve, since the run ends here anyway and
 * the faulting stack may be unusable; a fault inside the handler would
 * otherwise lock the core up. */
#define FAULT_HANDLER(name, status)                                  \
    __attribute__((naked)) void name(void)                           \
    {                                                                \
        __asm__ volatile("tst lr, #4\n\t"                            \
                         "ite eq\n\t"                                \
                         "mrseq r0, msp\n\t"                         \
                         "mrsne r0, psp\n\t"                         \
                         "movs r1, %0\n\t"                           \
                         "movw r2, #:lower16:__stack_bottom\n\t"     \
                         "movt r2, #:upper16:__stack_bottom\n\t"     \
                         "movw r3, #:lower16:__stack_top\n\t"        \
                         "movt r3, #:upper16:__stack_top\n\t"        \
                         "cmp r0, r2\n\t"                            \
                         "blo 1f\n\t"                                \
                         "subs r2, r3, #32\n\t"                      \
                         "cmp r0, r2\n\t"                            \
                         "bhi 2f\n\t"                                \
                         "ldr r0, [r0, #24]\n\t"                     \
                         "b 3f\n"                                    \
                         "1:\n\t"                                    \
                         "movs r1, %1\n"                             \
                         "2:\n\t"                                    \
                         "movs r0, #0\n"                             \
                         "3:\n\t"                                    \
                         "msr msp, r3\n\t"                           \
                         "isb\n\t"                                   \
                         "b fault_exit\n\t" ::"i"(status),          \
                         "i"(EXIT_STACK_OVERFLOW));                  \
    }

FAULT_HANDLER(NMI_Handler, EXIT_NMI)
FAULT_HANDLER(HardFault_Handler, EXIT_HARD_FAULT)
FAULT_HANDLER(MemManage_Handler, EXIT_MEM_MANAGE_FAULT)
FAULT_HANDLER(BusFault_Handler, EXIT_BUS_FAULT)
FAULT_HANDLER(UsageFault_Handler, EXIT_USAGE_FAULT)
FAULT_HANDLER(SecureFault_Handler, EXIT_SECURE_FAULT)
FAULT_HANDLER(Unexpected_Handler, EXIT_UNEXPECTED_INTERRUPT)

void SVC_Handler(void) __attribute__((weak, alias("Unexpected_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Unexpected_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Unexpected_Handler")));
