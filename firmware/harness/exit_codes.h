/* Exit status of a firmware run under QEMU (QEMU's own process exit status).
 *
 * 0 .. 99 are the model's invoke() status, passed through unchanged (clamped
 * to 99).  100 and up mean the harness or the core stopped the run.  Python
 * (mcu_planner/targets/qemu.py) reads the names and values from this file, so keep
 * one `#define EXIT_NAME value` per line. */
#ifndef MCU_EXIT_CODES_H
#define MCU_EXIT_CODES_H

#define EXIT_OK 0
#define EXIT_INVOKE_STATUS_MAX 99

#define EXIT_HARD_FAULT 101
#define EXIT_MEM_MANAGE_FAULT 102
#define EXIT_BUS_FAULT 103
#define EXIT_USAGE_FAULT 104
#define EXIT_SECURE_FAULT 105
#define EXIT_NMI 106
#define EXIT_UNEXPECTED_INTERRUPT 107
#define EXIT_MAIN_RETURNED 108

#define EXIT_INPUT_MISSING 110
#define EXIT_INPUT_SIZE 111
#define EXIT_INPUT_READ 112
#define EXIT_OUTPUT_OPEN 113
#define EXIT_OUTPUT_WRITE 114
#define EXIT_STACK_OVERFLOW 115

#endif
