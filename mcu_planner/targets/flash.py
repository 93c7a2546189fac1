"""The model's whole flash: its weights, the tables derived from them
(per-channel multipliers and shifts, lookup tables ...) and the code (the
generated op calls and the runtime kernels it uses, with the C library
functions they call).

Measured by compiling and linking the generated sources for the chosen core
with arm-none-eabi-gcc the way the firmware build does (-O2, one section per
function and object, --gc-sections from the model's entry points), then
reading each symbol's size: weights and tables are the generated arrays
(`const_tN`, `NAME_initial_tN`; `opN_FIELD`), code is all else.  Without a
cross compiler, weights and tables are counted from the arrays themselves
and the code is estimated with the host compiler in the same way (another
instruction set: the report says so).  Nothing is cached: every call
compiles in a temporary directory.  The weight arrays are compiled with
their sizes but without their values (all zero, still const data): sizes
do not change, and a model of megabytes compiles in about a second."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..emit.c_literals import element_bytes
from ..errors import InputError, McuPlanError
from ..graph import Graph
from ..lowering import CArray, KernelCall
from ..lowering.program import Program
from ..sizes import format_bytes
from .c_flags import C_STANDARD, FLOAT_FLAGS

# Cortex-M4F, the default board's core (firmware/boards/mps2-an386/board.json).
DEFAULT_BOARD = "mps2-an386"
# As the firmware build compiles, without its warnings: a warning must not stop a measurement.
COMPILE_FLAGS = (*C_STANDARD, "-O2", *FLOAT_FLAGS, "-ffunction-sections", "-fdata-sections", "-DNDEBUG")
BUILD_TIMEOUT_SECONDS = 300.0

# A weight array's definition in the generated NAME.c (templates/model.c.j2).
_WEIGHT_DEFINITION = re.compile(
    r"^(static const \w+ (?:const_t\d+|\w+_initial_t\d+)\[\d+\][^\n=]*= \{\n).*?^(\};)$", re.M | re.S
)
_WEIGHT_SYMBOL = re.compile(r"^(const_t\d+|\w+_initial_t\d+)$")
_TABLE_SYMBOL = re.compile(r"^op\d+_(?!params$)\w+$")  # opN_params: the parameter struct, counted as code


@dataclass(frozen=True)
class FlashReport:
    weights: int  # the model's constant tensors as the code stores them
    tables: int  # arrays derived from them at generation time
    code: int | None  # generated code, runtime kernels, C library pieces (None: not known)
    how: str  # how `code` was found: measured for a core, or estimated

    @property
    def total(self) -> int | None:
        return None if self.code is None else self.weights + self.tables + self.code

    def line(self) -> str:
        code = "unknown" if self.code is None else format_bytes(self.code)
        total = "" if self.total is None else f"{format_bytes(self.total)} = "
        return (
            f"flash: {total}weights {format_bytes(self.weights)} + tables {format_bytes(self.tables)} "
            f"+ code {code} ({self.how})"
        )


def table_bytes(call: KernelCall) -> int:
    """Bytes of the arrays a kernel call's parameters hold (per-channel
    multipliers and shifts, lookup tables ...): flash beside the weights."""
    return sum(
        max(len(value.values), 1) * element_bytes(value.c_type)
        for value in call.params.values()
        if isinstance(value, CArray)
    )


def counted_flash(graph: Graph, calls: dict[int, KernelCall]) -> tuple[int, int]:
    """(weights, tables) bytes: the constant tensors the kernel calls read
    (each once) and the parameter arrays."""
    from ..lowering.control_flow import kernel_calls

    every_call = [inner for call in calls.values() for inner in kernel_calls(call)]
    read: set[int] = set()
    for call in every_call:
        read.update(t for t in call.args if t >= 0 and graph.tensors[t].is_constant)
    read.update(t.index for t in graph.tensors if t.is_variable and t.data is not None)
    weights = sum(max(graph.tensors[t].nbytes, 1) for t in read)
    return weights, sum(table_bytes(call) for call in every_call)


def _entry_points(name: str) -> list[str]:
    return [f"{name}_{f}" for f in ("invoke", "reset", "input", "output", "input_bytes", "output_bytes")]


class CompileFailed(RuntimeError):
    """The compiler ran and refused the generated C: never a note, always an error."""


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECONDS)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
        raise CompileFailed(lines[0] if lines else f"exit status {done.returncode}")


def _link(compiler: str, cpu_flags: tuple[str, ...], sources: Path, name: str, cross: bool) -> Path:
    """Compile every source (in parallel: one compiler per core) and link
    them from the model's entry points with --gc-sections."""
    from concurrent.futures import ThreadPoolExecutor

    elf = sources / "model.elf"
    entry = _entry_points(name)
    objects = []
    commands = []
    for source in sorted(sources.glob("*.c")):
        objects.append(str(source.with_suffix(".o")))
        commands.append(
            [compiler, *cpu_flags, *COMPILE_FLAGS, "-I", str(sources), "-c", str(source), "-o", objects[-1]]
        )
    with ThreadPoolExecutor(max_workers=max(1, min(len(commands), os.cpu_count() or 1))) as pool:
        for _ in pool.map(_run, commands):  # re-raises the first failure
            pass
    system = ["-nostartfiles", f"-Wl,--entry={entry[0]}"]
    if cross:
        system += ["--specs=nano.specs", "--specs=nosys.specs"]
    roots = [f"-Wl,--undefined={symbol}" for symbol in entry]
    _run([compiler, *cpu_flags, *objects, *system, "-Wl,--gc-sections", *roots, "-o", str(elf), "-lm"])
    return elf


def _symbol_sizes(nm: str, elf: Path) -> tuple[int, int, int]:
    """(weights, tables, everything else) bytes of the symbols that take flash."""
    done = subprocess.run([nm, "-S", "--size-sort", str(elf)], capture_output=True, text=True, check=True)
    weights = tables = other = 0
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[2] in "bBuUvVwW":  # RAM (bss) and weak undefined take no flash
            continue
        size, symbol = int(parts[1], 16), parts[3]
        if _WEIGHT_SYMBOL.match(symbol):
            weights += size
        elif _TABLE_SYMBOL.match(symbol):
            tables += size
        else:
            other += size
    return weights, tables, other


def _flash_of(size: str, elf: Path) -> int:
    """text + data: what is stored in flash (initialised data is copied from it)."""
    done = subprocess.run([size, str(elf)], capture_output=True, text=True, check=True)
    text, data = done.stdout.splitlines()[1].split()[:2]
    return int(text) + int(data)


# An arena the application defines (--extern-arena): `extern uint8_t X[SIZE];` in a header.
_EXTERN_ARENA = re.compile(rb"^extern uint8_t (\w+)\[(\w+)\];$", re.M)


def _define_extern_arenas(files: dict[str, bytes], sources: Path) -> None:
    """Define, as the application would, every arena the headers leave to
    it (RAM, no flash): the measurement links without undefined symbols."""
    lines = [
        f'#include "{header}"\nuint8_t {symbol.decode()}[{size.decode()}];\n'
        for header, data in sorted(files.items())
        if header.endswith(".h")
        for symbol, size in _EXTERN_ARENA.findall(data)
    ]
    if lines:
        (sources / "mcu_plan_flash_arenas.c").write_text("#include <stdint.h>\n" + "".join(lines))


def measure_flash(files: dict[str, bytes], name: str, counted: tuple[int, int], board: str | None) -> FlashReport:
    """The model's flash: compiled for `board`'s core (default: Cortex-M4F)
    when arm-none-eabi-gcc is installed, else estimated (see the module)."""
    from .firmware_build import cpu_flags_for

    try:
        cpu_flags = cpu_flags_for(board or DEFAULT_BOARD)
    except InputError as exc:
        return FlashReport(counted[0], counted[1], None, f"code not measured: {exc}")
    cross = shutil.which("arm-none-eabi-gcc")
    tools = (cross, shutil.which("arm-none-eabi-nm"), shutil.which("arm-none-eabi-size"))
    weights, tables = counted
    with tempfile.TemporaryDirectory(prefix="mcu-plan-flash-") as scratch:
        sources = Path(scratch)
        for file_name, data in files.items():
            if file_name == f"{name}.c":
                data = _WEIGHT_DEFINITION.sub(r"\1    0\n\2", data.decode()).encode()
            if file_name.endswith((".c", ".h")):
                (sources / file_name).write_bytes(data)
        _define_extern_arenas(files, sources)
        try:
            if all(tools):
                core = next((f.split("=", 1)[1] for f in cpu_flags if f.startswith("-mcpu=")), board or DEFAULT_BOARD)
                elf = _link(tools[0], cpu_flags, sources, name, cross=True)  # type: ignore[arg-type]
                how = f"measured: arm-none-eabi-gcc -O2 for {core}, --gc-sections"
                nm, size = tools[1], tools[2]
            else:
                host = shutil.which("cc") or shutil.which("gcc")
                if host is None or not shutil.which("nm") or not shutil.which("size"):
                    return FlashReport(weights, tables, None, "code not estimated: no C compiler found")
                elf = _link(host, (), sources, name, cross=False)
                how = "estimated: no arm-none-eabi-gcc, code size from the host compiler (-O2, another instruction set)"
                nm, size = "nm", "size"
            measured_weights, measured_tables, _ = _symbol_sizes(nm, elf)  # type: ignore[arg-type]
            total = _flash_of(size, elf)  # type: ignore[arg-type]
        except CompileFailed as exc:
            # -o must not report success over C that does not compile.  With a
            # board file's own cpu_flags the flags are as likely the cause.
            from .firmware_build import is_board_file

            error = InputError if board and is_board_file(board) else McuPlanError
            raise error(f"the generated C does not compile for {board or DEFAULT_BOARD}: {exc}") from None
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return FlashReport(weights, tables, None, f"code not measured: {exc}")
    return FlashReport(measured_weights, measured_tables, total - measured_weights - measured_tables, how)


def flash_shortfall(board_name: str, program: Program, elided_ops: frozenset[int] = frozenset()) -> str | None:
    """Why no firmware of the model links on the board whatever its RAM: the
    weights and tables alone overflow the board's region for them (the code
    comes on top); None when they fit or the model cannot be generated."""
    from ..emit.codegen import lower_all
    from ..errors import UnsupportedModel
    from .firmware_build import load_board

    try:
        calls = lower_all(program, elided_ops)
    except UnsupportedModel:
        return None
    weights, tables = counted_flash(program.graph, calls)
    board = load_board(board_name)
    region = board.const or board.code
    if weights + tables <= region.length:
        return None
    holds = "weights" if board.const is not None else "code and weights"
    return (
        f"does not fit {board.name}'s flash: weights and tables alone take {weights + tables:,} B, more than its "
        f"{region.name} ({region.length:,} B, holding {holds}) by {weights + tables - region.length:,} B"
    )
