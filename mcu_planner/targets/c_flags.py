"""The compiler flags of every build of generated C that mcu-plan runs or
writes: the host build of `mcu-plan check` (check.py), the board and library
Makefiles (templates/board/*.j2, filled in by firmware_build.py) and the
flash measurement (flash.py)."""

from __future__ import annotations

C_STANDARD = ("-std=c99",)
# C99, and the warnings the generated model, the runtime kernels, the host and
# semihosting harnesses and the board start-up code are kept clean of, as errors.
STRICT_WARNING_FLAGS = (
    *C_STANDARD,
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-Wconversion",
    "-Wsign-conversion",
    "-Wcast-align=strict",
    "-Wshadow",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
    "-Wdouble-promotion",
)
# TFLite rounds every float multiply and add on its own; a fused multiply-add
# would round once and change float outputs.
FLOAT_FLAGS = ("-ffp-contract=off",)
