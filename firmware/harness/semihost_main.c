/* Test firmware: load the model's inputs from host files, invoke it, write
 * the outputs back, and exit with the invoke status.
 *
 * Files live in QEMU's working directory: input0.bin, input1.bin, ... hold
 * one or more input sets (each file a whole number of its tensor's bytes,
 * the same number in every file).  The harness invokes the model once per
 * set, in order, without resetting it in between (state in variable tensors
 * carries over), reading each set straight into the model's input tensors
 * (no copy in RAM) and appending each invocation's outputs to output0.bin,
 * ....  When reset_at.bin exists (4 bytes, little-endian), the model's
 * NAME_reset() (MODEL_RESET, defined for models with state) runs before the
 * set it names.  One line of report goes to the
 * semihosting console, with the mean ticks of one invocation:
 *
 *   mcu-harness: status=0 ticks=123456 stack=812/4096 invocations=1
 *
 * Built with -DMCU_PROFILE (`make run PROFILE=1`), the harness brackets
 * every op with the SysTick through the model's profile hooks and prints,
 * after that line, one line per op that runs code and a total, each with
 * the mean ticks of one invocation and the op's multiply-accumulates:
 *
 *   mcu-profile: op 3 CONV_2D ticks=5120 macs=73728 macs/tick=14.40
 *   mcu-profile: total ticks=6012 macs=81920 macs/tick=13.62 invoke=6290
 *
 * (invoke: the whole invocation as the profile build timed it, hooks
 * included).
 *
 * harness_config.h (written by mcu_planner/targets/firmware_build.py) names the
 * model's header and maps the MODEL_* names used here onto its prefix. */
#include <stddef.h>
#include <stdint.h>

#include "cortex_m.h"
#include "exit_codes.h"
#include "harness_config.h"
#include "semihost.h"
#include "systick_timer.h"

#include MODEL_HEADER

#ifdef MODEL_DEFINE_ARENA
uint8_t MODEL_ARENA[MODEL_ARENA_SIZE] __attribute__((aligned(16)));
#endif

/* "input" or "output", a decimal index, ".bin". */
static void tensor_file_name(char *name, const char *stem, int index)
{
    char digits[12];
    int count = 0;
    unsigned value = (unsigned)index;
    while (*stem != '\0') {
        *name++ = *stem++;
    }
    do {
        digits[count++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (count > 0) {
        *name++ = digits[--count];
    }
    *name++ = '.';
    *name++ = 'b';
    *name++ = 'i';
    *name++ = 'n';
    *name = '\0';
}

static void put_decimal(uint64_t value)
{
    char text[21];
    int position = 20;
    text[position] = '\0';
    do {
        text[--position] = (char)('0' + (int)(value % 10u));
        value /= 10u;
    } while (value != 0u);
    semihost_write0(&text[position]);
}

static void put_signed(long value)
{
    if (value < 0) {
        semihost_write0("-");
        put_decimal((uint64_t)(-(int64_t)value));
    } else {
        put_decimal((uint64_t)value);
    }
}

#ifdef MCU_PROFILE
#define PROFILE_NUM_OPS (sizeof MODEL_PROFILE_OPS / sizeof MODEL_PROFILE_OPS[0])
/* Ticks inside each op, summed over all invocations. */
static uint64_t op_ticks[PROFILE_NUM_OPS];
static uint64_t op_started;

void MODEL_PROFILE_BEGIN(int op)
{
    (void)op;
    op_started = systick_timer_now();
}

void MODEL_PROFILE_END(int op)
{
    op_ticks[op] += systick_timer_now() - op_started;
}

/* "macs/tick=12.34": two decimals in integer arithmetic (no printf). */
static void put_rate(uint64_t macs, uint64_t ticks)
{
    uint64_t hundredths = ticks != 0u ? (macs * 100u + ticks / 2u) / ticks : 0u;
    semihost_write0(" macs/tick=");
    put_decimal(hundredths / 100u);
    semihost_write0(hundredths % 100u < 10u ? ".0" : ".");
    put_decimal(hundredths % 100u);
}

static void print_profile(uint32_t invocations, uint64_t invoke_ticks)
{
    uint64_t total_ticks = 0u, total_macs = 0u;
    size_t op;
    for (op = 0; op < PROFILE_NUM_OPS; ++op) {
        uint64_t ticks = op_ticks[op] / invocations;
        if (!MODEL_PROFILE_OPS[op].runs_code) {
            continue;
        }
        total_ticks += ticks;
        total_macs += MODEL_PROFILE_OPS[op].macs;
        semihost_write0("mcu-profile: op ");
        put_decimal((uint64_t)op);
        semihost_write0(" ");
        semihost_write0(MODEL_PROFILE_OPS[op].name);
        semihost_write0(" ticks=");
        put_decimal(ticks);
        semihost_write0(" macs=");
        put_decimal(MODEL_PROFILE_OPS[op].macs);
        put_rate(MODEL_PROFILE_OPS[op].macs, ticks);
        semihost_write0("\n");
    }
    semihost_write0("mcu-profile: total ticks=");
    put_decimal(total_ticks);
    semihost_write0(" macs=");
    put_decimal(total_macs);
    put_rate(total_macs, total_ticks);
    semihost_write0(" invoke=");
    put_decimal(invoke_ticks);
    semihost_write0("\n");
}
#endif

/* Called by a -DMCU_PLAN_CHECK build of the model (see plan_check.h); the
 * line starts like the host harness's so that `mcu-plan check` reads both. */
void harness_plan_violation(int op, int tensor, int other_tensor);
void harness_plan_violation(int op, int tensor, int other_tensor)
{
    semihost_write0("mcu-plan check: ");
    if (op < 0) {
        semihost_write0("buffer of tensor ");
        put_signed(tensor);
        semihost_write0(" lies outside the arena\n");
        return;
    }
    semihost_write0("op ");
    put_signed(op);
    semihost_write0(" writes tensor ");
    put_signed(tensor);
    semihost_write0(" over live tensor ");
    put_signed(other_tensor);
    semihost_write0("\n");
}

static void fail(const char *what, const char *file, int status) __attribute__((noreturn));
static void fail(const char *what, const char *file, int status)
{
    semihost_write0("mcu-harness: ");
    semihost_write0(what);
    semihost_write0(" ");
    semihost_write0(file);
    semihost_write0("\n");
    semihost_exit(status);
}

/* A file whose size is no whole number of input sets, or another number of
 * sets than input0.bin (`sets`, 0 for input0.bin itself): says both sizes. */
static void fail_input_size(const char *file, long length, long expected, uint32_t sets) __attribute__((noreturn));
static void fail_input_size(const char *file, long length, long expected, uint32_t sets)
{
    semihost_write0("mcu-harness: wrong size ");
    semihost_write0(file);
    semihost_write0(": ");
    put_signed(length);
    semihost_write0(" bytes, expected ");
    if (sets > 0u) {
        put_decimal((uint64_t)sets * (uint64_t)expected);
        semihost_write0(" (");
        put_decimal(sets);
        semihost_write0(" x the input tensor's ");
        put_signed(expected);
        semihost_write0(" bytes: as many input sets as input0.bin holds)\n");
    } else {
        semihost_write0("a positive multiple of ");
        put_signed(expected);
        semihost_write0(" (the input tensor's bytes, once per input set)\n");
    }
    semihost_exit(EXIT_INPUT_SIZE);
}

/* Opens every input<i>.bin and returns how many input sets they hold. */
static uint32_t open_inputs(int *handles)
{
    char name[24];
    uint32_t sets = 0u;
    int i;
    for (i = 0; i < MODEL_NUM_INPUTS; ++i) {
        long expected = (long)MODEL_INPUT_BYTES(i);
        long length;
        tensor_file_name(name, "input", i);
        handles[i] = semihost_open(name, SEMIHOST_MODE_READ_BINARY);
        if (handles[i] < 0) {
            fail("cannot open", name, EXIT_INPUT_MISSING);
        }
        length = semihost_flen(handles[i]);
        if (length <= 0 || (expected > 0 && length % expected != 0)) {
            fail_input_size(name, length, expected, i > 0 ? sets : 0u);
        }
        if (i > 0 && expected > 0 && (uint32_t)(length / expected) != sets) {
            fail_input_size(name, length, expected, sets);
        }
        if (expected > 0) {
            sets = (uint32_t)(length / expected);
        }
    }
    return MODEL_NUM_INPUTS > 0 && sets > 0u ? sets : 1u;
}

static void read_inputs(const int *handles)
{
    char name[24];
    int i;
    for (i = 0; i < MODEL_NUM_INPUTS; ++i) {
        size_t expected = MODEL_INPUT_BYTES(i);
        if (semihost_read(handles[i], MODEL_INPUT(i), expected) != expected) {
            tensor_file_name(name, "input", i);
            fail("short read", name, EXIT_INPUT_READ);
        }
    }
}

static void open_outputs(int *handles)
{
    char name[24];
    int i;
    for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        tensor_file_name(name, "output", i);
        handles[i] = semihost_open(name, SEMIHOST_MODE_WRITE_BINARY);
        if (handles[i] < 0) {
            fail("cannot create", name, EXIT_OUTPUT_OPEN);
        }
    }
}

static void write_outputs(const int *handles)
{
    char name[24];
    int i;
    for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        size_t size = MODEL_OUTPUT_BYTES(i);
        if (semihost_write(handles[i], MODEL_OUTPUT(i), size) != size) {
            tensor_file_name(name, "output", i);
            fail("short write", name, EXIT_OUTPUT_WRITE);
        }
    }
}

/* The input set before which to reset the model, from reset_at.bin; none
 * (UINT32_MAX) when the file is absent. */
static uint32_t reset_point(void)
{
    uint8_t bytes[4];
    int handle = semihost_open("reset_at.bin", SEMIHOST_MODE_READ_BINARY);
    uint32_t at;
    if (handle < 0) {
        return UINT32_MAX;
    }
    if (semihost_read(handle, bytes, sizeof bytes) != sizeof bytes) {
        semihost_close(handle);
        fail("short read", "reset_at.bin", EXIT_INPUT_READ);
    }
    semihost_close(handle);
    at = (uint32_t)bytes[0] | ((uint32_t)bytes[1] << 8) | ((uint32_t)bytes[2] << 16) | ((uint32_t)bytes[3] << 24);
    return at;
}

int main(void)
{
    /* One element even for a model without inputs or outputs. */
    int input_handles[MODEL_NUM_INPUTS > 0 ? MODEL_NUM_INPUTS : 1];
    int output_handles[MODEL_NUM_OUTPUTS > 0 ? MODEL_NUM_OUTPUTS : 1];
    uint64_t ticks = 0u;
    uint32_t sets, set, reset_at;
    int status = 0;
    size_t stack_used;
    int i;

    sets = open_inputs(input_handles);
    reset_at = reset_point();
    open_outputs(output_handles);
    systick_timer_start();
    for (set = 0u; set < sets && status == 0; ++set) {
        uint64_t start;
        if (set == reset_at) {
#ifdef MODEL_RESET
            MODEL_RESET();
#else
            fail("the model keeps no state to reset:", "reset_at.bin", EXIT_INPUT_READ);
#endif
        }
        read_inputs(input_handles);
        start = systick_timer_now();
        status = MODEL_INVOKE();
        ticks += systick_timer_now() - start;
        write_outputs(output_handles);
    }
    for (i = 0; i < MODEL_NUM_INPUTS; ++i) {
        semihost_close(input_handles[i]);
    }
    for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        semihost_close(output_handles[i]);
    }

    stack_used = stack_high_water_bytes();
    semihost_write0("mcu-harness: status=");
    put_signed(status);
    semihost_write0(" ticks=");
    put_decimal(ticks / set);
    semihost_write0(" stack=");
    put_decimal(stack_used);
    semihost_write0("/");
    put_decimal(stack_reserve_bytes());
    semihost_write0(" invocations=");
    put_decimal(set);
    semihost_write0("\n");
#ifdef MCU_PROFILE
    print_profile(set, ticks / set);
#endif

    if (stack_used >= stack_reserve_bytes()) {
        /* The paint is gone down to the last word: the stack ran past its
         * reserve into whatever lies below. */
        semihost_write0("mcu-harness: stack overflow\n");
        semihost_exit(EXIT_STACK_OVERFLOW);
    }
    if (status < 0 || status > EXIT_INVOKE_STATUS_MAX) {
        status = EXIT_INVOKE_STATUS_MAX;
    }
    semihost_exit(status);
}
