/* Test firmware: load the model's inputs from host files, invoke it once,
 * write the outputs back, and exit with the invoke status.
 *
 * Files live in QEMU's working directory: input0.bin, input1.bin, ... are
 * read straight into the model's input tensors (no copy in RAM), and
 * output0.bin, ... are written from its output tensors.  One line of report
 * goes to the semihosting console:
 *
 *   mcu-harness: status=0 ticks=123456 stack=812/4096
 *
 * harness_config.h (written by mcu_planner/firmware_build.py) names the
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

static void load_inputs(void)
{
    char name[24];
    int i;
    for (i = 0; i < MODEL_NUM_INPUTS; ++i) {
        size_t expected = MODEL_INPUT_BYTES(i);
        int handle;
        tensor_file_name(name, "input", i);
        handle = semihost_open(name, SEMIHOST_MODE_READ_BINARY);
        if (handle < 0) {
            fail("cannot open", name, EXIT_INPUT_MISSING);
        }
        if (semihost_flen(handle) != (long)expected) {
            semihost_close(handle);
            fail("wrong size (expected the input tensor's bytes):", name, EXIT_INPUT_SIZE);
        }
        if (semihost_read(handle, MODEL_INPUT(i), expected) != expected) {
            semihost_close(handle);
            fail("short read", name, EXIT_INPUT_READ);
        }
        semihost_close(handle);
    }
}

static void store_outputs(void)
{
    char name[24];
    int i;
    for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) {
        size_t size = MODEL_OUTPUT_BYTES(i);
        int handle;
        tensor_file_name(name, "output", i);
        handle = semihost_open(name, SEMIHOST_MODE_WRITE_BINARY);
        if (handle < 0) {
            fail("cannot create", name, EXIT_OUTPUT_OPEN);
        }
        if (semihost_write(handle, MODEL_OUTPUT(i), size) != size) {
            semihost_close(handle);
            fail("short write", name, EXIT_OUTPUT_WRITE);
        }
        semihost_close(handle);
    }
}

int main(void)
{
    uint64_t start, end;
    int status;
    size_t stack_used;

    load_inputs();
    systick_timer_start();
    start = systick_timer_now();
    status = MODEL_INVOKE();
    end = systick_timer_now();
    store_outputs();

    stack_used = stack_high_water_bytes();
    semihost_write0("mcu-harness: status=");
    put_signed(status);
    semihost_write0(" ticks=");
    put_decimal(end - start);
    semihost_write0(" stack=");
    put_decimal(stack_used);
    semihost_write0("/");
    put_decimal(stack_reserve_bytes());
    semihost_write0("\n");

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
