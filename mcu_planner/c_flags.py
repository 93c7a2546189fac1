"""The compiler flags of every build of generated C that mcu-plan runs: the
host build of `mcu-plan check` (check.py) and the board Makefile
(templates/board/Makefile.j2, filled in by firmware_build.py)."""

from __future__ import annotations

# C99, and the warnings the generated model, the runtime kernels, the host and
# semihosting harnesses and the board start-up code are kept clean of, as errors.
STRICT_WARNING_FLAGS = (
    "-std=c99",
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
