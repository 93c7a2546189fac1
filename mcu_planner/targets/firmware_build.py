"""The firmware build step: generated model sources -> firmware.elf for a
Cortex-M board, inside a RAM budget the linker enforces.

`build_firmware` writes, next to the sources codegen put in OUTDIR:

    OUTDIR/Makefile            `make -C OUTDIR` -> firmware.elf, `make run` -> QEMU
    OUTDIR/board/linker.ld     RAM region = exactly the budget
    OUTDIR/board/*.c, *.h      start-up, fault handlers, semihosting harness
    OUTDIR/board/harness_config.h   which model the harness runs

and, unless told not to, runs make and measures the ELF with
`arm-none-eabi-size`.  A model that does not fit fails here (DoesNotFit)
before make when its RAM as ram_budget.py counts it (the rule the plan
command uses) exceeds the budget, and at link time otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2

from ..emit.output_dir import ModelInterface, write_manifest
from ..emit.resources import firmware_dir, templates_dir
from ..errors import DoesNotFit, InputError, McuPlanError
from ..memory.ram_budget import FirmwareTarget, RamBudget, cpu_has_helium, ram_budget
from ..shown import shown
from .c_flags import FLOAT_FLAGS, STRICT_WARNING_FLAGS

DEFAULT_BOARD = "mps2-an386"
# Above every shared model's measured high-water mark (harness and invoke
# together: bench/results/cortex-m.md, column "stack reserve / used"); the
# harness reports each run's own figure, and an overflow ends the run with
# EXIT_STACK_OVERFLOW rather than corrupting the arena.
DEFAULT_STACK_BYTES = 1024
# A firmware build of the largest shared model takes seconds; make gets this
# long before it counts as hung.
MAKE_TIMEOUT_SECONDS = 900.0

BOARD_DIR_NAME = "board"
TOOLCHAIN_PREFIX = "arm-none-eabi-"
TOOLCHAIN_PACKAGES = "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"

# Hand-written C copied into OUTDIR/board/ for every board.
# What `make` in OUTDIR produces (templates/board/Makefile.j2): mcu-plan's
# own, so that a built OUTDIR may be replaced.
BUILD_PRODUCTS = (
    "build",
    "firmware.elf",
    "firmware.map",
    "build-profile",
    "firmware-profile.elf",
    "firmware-profile.map",
)
# The compiler flag of a profile build: the model brackets every op with the
# harness's hooks, which time it with the SysTick (`make run PROFILE=1`).
PROFILE_CFLAGS = ("-DMCU_PROFILE",)

_COMMON_SOURCES = ("boards/common/cortex_m.h", "boards/common/cortex_m_startup.c")
_HARNESS_SOURCES = (
    "harness/exit_codes.h",
    "harness/semihost.h",
    "harness/semihost.c",
    "harness/systick_timer.h",
    "harness/systick_timer.c",
    "harness/semihost_main.c",
    "harness/plan_check.h",
)
# Extra compiler flags of a check build: the model checks its plan's memory
# discipline at run time and reports through the harness's hook instead of
# stdio (which bare metal lacks).
PLAN_CHECK_CFLAGS = (
    "-DMCU_PLAN_CHECK",
    f"-include {BOARD_DIR_NAME}/plan_check.h",
)


class FirmwareBuildError(McuPlanError):
    """make or the cross toolchain failed for a reason other than size."""


@dataclass(frozen=True)
class MemoryRegion:
    name: str
    origin: int
    length: int


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    qemu_machine: str | None  # None: builds, but `make run` and check need a QEMU machine
    # SysTick's processor clock in QEMU's model of the board (measured: a
    # 2-instruction loop under -icount shift=0 gives 10^9/systick_hz
    # instructions per tick).
    systick_hz: int
    cpu_flags: tuple[str, ...]
    code: MemoryRegion  # vectors, code (and constants when `const` is None)
    const: MemoryRegion | None  # a separate region for .rodata (weights)
    ram: tuple[MemoryRegion, ...]  # candidates for the RAM budget, preferred first
    # The vector table's C file; None: firmware/boards/common/generic_startup.c.
    startup: Path | None = None

    def startup_source(self) -> Path:
        return self.startup or firmware_dir() / "boards" / "common" / "generic_startup.c"

    def instructions_per_tick(self) -> float:
        """Under `-icount shift=0` QEMU runs one instruction per virtual nanosecond."""
        return 1e9 / self.systick_hz

    def ram_region_for(self, ram_bytes: int) -> MemoryRegion:
        for region in self.ram:
            if ram_bytes <= region.length:
                return region
        largest = max(r.length for r in self.ram)
        raise DoesNotFit(
            f"board {self.name} has at most {largest} bytes of contiguous RAM; "
            f"a budget of {ram_bytes} bytes cannot be placed"
        )


def firmware_target(board: str, stack_bytes: int) -> FirmwareTarget:
    """The target of `--board BOARD --stack N` (a board by name or PATH/board.json)."""
    return FirmwareTarget(board, cpu_has_helium(load_board(board).cpu_flags), stack_bytes)


def _region(entry: dict[str, Any]) -> MemoryRegion:
    return MemoryRegion(entry["name"], _address(entry["origin"]), _address(entry["length"]))


def _address(value: object) -> int:
    """A JSON number, or a string such as "0x20000000"; TypeError or ValueError for anything else."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value, 0)
    raise TypeError(f"not an address: {value!r}")


# Cores `--board CORE` builds the library for, and a board.json's "core":
# the compiler's flags, and those its FPU adds (hard-float ABI).
CORES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cortex-m0plus": (("-mcpu=cortex-m0plus", "-mthumb"), ()),
    "cortex-m4": (("-mcpu=cortex-m4", "-mthumb"), ("-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")),
    "cortex-m7": (("-mcpu=cortex-m7", "-mthumb"), ("-mfloat-abi=hard", "-mfpu=fpv5-d16")),
    "cortex-m33": (("-mcpu=cortex-m33", "-mthumb"), ("-mfloat-abi=hard", "-mfpu=fpv5-sp-d16")),
    "cortex-m55": (("-mcpu=cortex-m55", "-mthumb"), ("-mfloat-abi=hard",)),
}
# Every SysTick clock is as good as another for a board QEMU does not model.
DEFAULT_SYSTICK_HZ = 25_000_000


def core_flags(core: str, fpu: bool = True) -> tuple[str, ...]:
    flags, fpu_flags = CORES[core]
    return flags + (fpu_flags if fpu else ())


def cpu_flags_for(board: str) -> tuple[str, ...]:
    """The compiler's CPU flags for `--board`: a core's, or a board's (by name or PATH/board.json)."""
    return core_flags(board) if board in CORES else load_board(board).cpu_flags


def board_names() -> list[str]:
    boards = firmware_dir() / "boards"
    return sorted(p.parent.name for p in boards.glob("*/board.json"))


def is_board_file(board: str) -> bool:
    """`--board PATH/board.json` (a board described outside the checkout) rather than a name."""
    return board.endswith(".json") or "/" in board or os.sep in board


def load_board(name: str) -> Board:
    """A bundled board by name, or a board.json anywhere (validated: InputError
    listing every problem, one per line)."""
    if is_board_file(name):
        return _board_from_file(Path(name))
    path = firmware_dir() / "boards" / name / "board.json"
    if not path.is_file():
        known = ", ".join(board_names())
        raise InputError(
            f"unknown board {name!r}; known boards: {known}, a core for the library alone "
            f"({', '.join(CORES)}), or PATH/board.json"
        )
    facts = json.loads(path.read_text())
    problems = _board_string_problems(facts)
    if problems:  # a bundled board is held to the same rules as any other
        raise InputError(f"board {path}: " + "; ".join(problems))
    return Board(
        name=name,
        description=facts["description"],
        qemu_machine=facts["qemu_machine"],
        systick_hz=int(facts["systick_hz"]),
        cpu_flags=tuple(facts["cpu_flags"]),
        code=_region(facts["code"]),
        const=_region(facts["const"]) if facts.get("const") else None,
        ram=tuple(_region(r) for r in facts["ram"]),
        startup=path.parent / "startup.c",
    )


_BOARD_KEYS = {
    "description",
    "core",
    "fpu",
    "cpu_flags",
    "code",
    "const",
    "ram",
    "startup",
    "qemu_machine",
    "systick_hz",
}


def _region_problems(where: str, entry: object) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{where}: must be an object with name, origin, length"]
    problems = []
    if not isinstance(entry.get("name"), str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry.get("name") or ""):
        problems.append(f'{where}.name: must be an identifier, e.g. "SRAM"')
    for key in ("origin", "length"):
        value = entry.get(key)
        try:
            number = _address(value)
        except (TypeError, ValueError):
            problems.append(f'{where}.{key}: must be a number or a string such as "0x20000000", not {value!r}')
            continue
        if number < 0 or number > 0xFFFFFFFF or (key == "length" and number == 0):
            problems.append(f"{where}.{key}: {value!r} is outside the 32-bit address space or empty")
    return problems


# A board file is trusted input (its cpu_flags go to the compiler as given),
# but every string in it is pasted into the generated Makefile, linker script
# and C comments: each must match its pattern, so that none can carry make or
# shell syntax ($(...), backquotes, ;, |, quotes, a newline, a comment's end).
_BOARD_STRINGS = {
    "description": (re.compile(r"[A-Za-z0-9 _.,:;+()/%=@-]{0,200}"), "letters, digits, spaces and _.,:;+()/%=@-"),
    "qemu_machine": (re.compile(r"[A-Za-z0-9][A-Za-z0-9_.,=-]{0,63}"), "a QEMU machine name such as mps2-an386"),
}
_CPU_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_.,=+:/-]{0,127}")
# What a board's name (its directory's) keeps; other characters become '_'.
_BOARD_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def _board_string_problems(facts: dict[str, Any]) -> list[str]:
    problems = []
    for key, (pattern, allowed) in _BOARD_STRINGS.items():
        value = facts.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"{key}: must be a string")
        elif not pattern.fullmatch(value):
            problems.append(f"{key}: {shown(value)!r} holds characters a board string may not ({allowed})")
    flags = facts.get("cpu_flags")
    if isinstance(flags, list):
        for flag in flags:
            if isinstance(flag, str) and not _CPU_FLAG.fullmatch(flag):
                problems.append(
                    f"cpu_flags: {shown(flag)!r} is not one compiler option (a '-', then letters, digits and "
                    "_.,=+:/-; no spaces, quotes or shell and make characters)"
                )
    return problems


def _board_from_file(path: Path) -> Board:
    """A board.json outside the checkout: "core" (one of CORES) with an
    optional "fpu", or explicit "cpu_flags"; "code", optional "const", "ram"
    (a list, preferred first) regions; optional "startup" (a C file with the
    vector table, relative to the JSON), "qemu_machine", "systick_hz",
    "description"."""
    try:
        facts = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"cannot read board {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"board {path} is not JSON: {exc}") from None
    if not isinstance(facts, dict):
        raise InputError(f"board {path} must hold a JSON object")
    problems = [
        f"{key}: unknown key (known: {', '.join(sorted(_BOARD_KEYS))})" for key in facts if key not in _BOARD_KEYS
    ]
    core, flags = facts.get("core"), facts.get("cpu_flags")
    if (core is None) == (flags is None):
        problems.append(f'core: give "core" (one of {", ".join(CORES)}) or "cpu_flags", not both or neither')
    elif core is not None and core not in CORES:
        problems.append(f"core: {core!r} is not one of {', '.join(CORES)}")
    elif flags is not None and not (isinstance(flags, list) and flags and all(isinstance(f, str) for f in flags)):
        problems.append("cpu_flags: must be a non-empty list of compiler flags")
    if "fpu" in facts and not isinstance(facts["fpu"], bool):
        problems.append("fpu: must be true or false")
    problems += _region_problems("code", facts.get("code"))
    if facts.get("const") is not None:
        problems += _region_problems("const", facts["const"])
    ram = facts.get("ram")
    if not isinstance(ram, list) or not ram:
        problems.append("ram: must be a non-empty list of regions (preferred first)")
    else:
        for index, entry in enumerate(ram):
            problems += _region_problems(f"ram[{index}]", entry)
    startup = None
    if facts.get("startup") is not None:
        startup = (path.parent / str(facts["startup"])).resolve()
        if not startup.is_file():
            problems.append(f"startup: {startup} is not a file")
    problems += _board_string_problems(facts)
    hz = facts.get("systick_hz", DEFAULT_SYSTICK_HZ)
    if not isinstance(hz, int) or isinstance(hz, bool) or hz <= 0:
        problems.append("systick_hz: must be a positive whole number")
    if problems:
        raise InputError(f"board {path}: {len(problems)} problem(s)\n" + "\n".join(f"  {p}" for p in problems))
    # No problems: exactly one of "core" (one of CORES) and "cpu_flags" is given.
    cpu_flags = tuple(flags) if flags is not None else core_flags(facts["core"], facts.get("fpu", True))
    return Board(
        name=_BOARD_NAME_UNSAFE.sub("_", path.parent.name or path.stem),
        description=facts.get("description", "a board described by its board.json"),
        qemu_machine=facts.get("qemu_machine"),
        systick_hz=hz,
        cpu_flags=cpu_flags,
        code=_region(facts["code"]),
        const=_region(facts["const"]) if facts.get("const") else None,
        ram=tuple(_region(r) for r in facts["ram"]),
        startup=startup,
    )


@dataclass(frozen=True)
class FirmwareReport:
    outdir: Path
    board: str
    ram_budget: int
    arena_bytes: int
    stack_bytes: int
    # arm-none-eabi-size (Berkeley) figures of firmware.elf; None when make did not run.
    text: int | None = None
    data: int | None = None
    bss: int | None = None
    variable_bytes: int = 0  # variable tensors' state region (.bss), outside the arena
    budget: RamBudget | None = None  # the RAM as ram_budget.py counts it (what the plan command printed)
    linked_ram: int | None = None  # linked_ram_bytes: the end of .bss, gaps included

    @property
    def built(self) -> bool:
        return self.text is not None

    @property
    def elf(self) -> Path:
        return self.outdir / "firmware.elf"

    def _sizes(self) -> tuple[int, int, int]:
        """(text, data, bss) of the built firmware.elf."""
        if self.text is None or self.data is None or self.bss is None:
            raise ValueError(f"firmware in {self.outdir} was not built (make did not run): it has no sizes")
        return self.text, self.data, self.bss

    @property
    def flash_bytes(self) -> int:
        text, data, _ = self._sizes()
        return text + data

    @property
    def ram_bytes(self) -> int:
        """.data + .bss, where .bss holds the arena and the stack reserve."""
        _, data, bss = self._sizes()
        return data + bss

    @property
    def margin_bytes(self) -> int:
        return self.ram_budget - self.ram_bytes

    def format(self) -> list[str]:
        if not self.built:
            return [
                f"firmware sources for {self.board} written to {self.outdir} (build with: make -C {self.outdir})",
                f"RAM budget {self.ram_budget} B: arena {self.arena_bytes} B, "
                + (f"variables {self.variable_bytes} B, " if self.variable_bytes else "")
                + f"stack reserve {self.stack_bytes} B",
            ]
        other = self.ram_bytes - self.arena_bytes - self.variable_bytes - self.stack_bytes
        variables = [f"  variables      {self.variable_bytes:>9} B"] if self.variable_bytes else []
        counted = []
        if self.budget is not None:
            counted = [f"  counted {self.budget.total} B before the link; the link ends .bss at {self.linked_ram} B"]
        return [
            # OUTDIR-relative: the CLI builds in a staging directory it then renames.
            f"firmware: firmware.elf (board {self.board})",
            f"flash  {self.flash_bytes:>9} B  (text {self.text} + data {self.data})",
            f"RAM    {self.ram_bytes:>9} B  (data {self.data} + bss {self.bss}, budget {self.ram_budget})",
            f"  arena          {self.arena_bytes:>9} B",
            *variables,
            f"  stack reserve  {self.stack_bytes:>9} B",
            f"  other          {other:>9} B",
            *counted,
            f"margin {self.margin_bytes:>9} B",
        ]


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "board")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
    )


def _model_files(outdir: Path) -> tuple[list[str], list[str]]:
    """C sources and header directories of the generated model (everything in
    OUTDIR outside board/ and build/), relative to OUTDIR, sorted."""
    sources, include_dirs = [], set()
    for path in sorted(outdir.rglob("*")):
        rel = path.relative_to(outdir)
        if rel.parts[0] in (BOARD_DIR_NAME, "build") or not path.is_file():
            continue
        if path.suffix == ".c":
            sources.append(rel.as_posix())
        elif path.suffix == ".h":
            include_dirs.add(rel.parent.as_posix())
    return sources, sorted(include_dirs)


def write_firmware_files(
    outdir: Path,
    *,
    model: ModelInterface,
    board: Board,
    ram_bytes: int,
    stack_bytes: int,
    extra_cflags: tuple[str, ...] = (),
) -> None:
    header = outdir / f"{model.name}.h"
    if not header.is_file():
        raise FirmwareBuildError(f"{header} is missing: generate the model into {outdir} first")
    board_out = outdir / BOARD_DIR_NAME
    board_out.mkdir(parents=True, exist_ok=True)

    firmware = firmware_dir()
    copied = list(_COMMON_SOURCES) + list(_HARNESS_SOURCES)
    for rel in copied:
        shutil.copyfile(firmware / rel, board_out / Path(rel).name)
    shutil.copyfile(board.startup_source(), board_out / "startup.c")
    copied.append("startup.c")

    model_sources, include_dirs = _model_files(outdir)
    harness_sources = sorted(f"{BOARD_DIR_NAME}/{Path(rel).name}" for rel in copied if rel.endswith(".c"))
    env = _environment()
    context = dict(
        board=board,
        name=model.name,
        model=model,
        header=header.name,
        ram_bytes=ram_bytes,
        ram_region=board.ram_region_for(ram_bytes),
        stack_bytes=stack_bytes,
        model_sources=model_sources,
        include_dirs=include_dirs,
        harness_sources=harness_sources,
        extra_cflags=extra_cflags,
        warning_flags=STRICT_WARNING_FLAGS,
        float_flags=FLOAT_FLAGS,
    )
    outputs = {
        board_out / "linker.ld": "linker.ld.j2",
        board_out / "harness_config.h": "harness_config.h.j2",
        outdir / "Makefile": "Makefile.j2",
    }
    for path, template in outputs.items():
        path.write_text(env.get_template(template).render(**context))
    board_files = [f"{BOARD_DIR_NAME}/{Path(rel).name}" for rel in copied] + [
        f"{BOARD_DIR_NAME}/{path.name}" for path in outputs if path.parent == board_out
    ]
    objects = _object_files(("build", "build-profile"), model_sources + harness_sources)
    write_manifest(outdir, [BOARD_DIR_NAME, "Makefile", *BUILD_PRODUCTS], files=board_files + objects)


def _object_files(build_dirs: Iterable[str], sources: Iterable[str]) -> list[str]:
    """What make writes in each build directory for `sources` (OUTDIR-relative
    .c paths): an object and gcc's -MMD dependency file per source."""
    return [f"{d}/{source[:-2]}{suffix}" for d in build_dirs for source in sources for suffix in (".o", ".d")]


_RAM_OVERFLOW = re.compile(r"region `RAM' overflowed by (\d+) bytes?")
_FLASH_OVERFLOW = re.compile(r"region `(FLASH|CONST)' overflowed by (\d+) bytes?")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise FirmwareBuildError(
            f"{name} not found; install the Cortex-M toolchain (apt-get install {TOOLCHAIN_PACKAGES})"
        )
    return path


def run_tool(
    command: list[str], *, timeout: float, input: bytes | None = None, text: bool = False
) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(command, input=input, capture_output=True) in a session
    of its own, so that a timeout kills the whole process group (make's and
    the compiler driver's children too: cc1, as, ld) before TimeoutExpired
    is raised."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except BaseException:  # the timeout, or an interrupt while waiting
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def make_firmware(outdir: Path, board: Board, ram_bytes: int, jobs: int | None = None) -> None:
    """`make -C outdir firmware.elf`, turning a RAM or flash overflow into DoesNotFit."""
    _tool(TOOLCHAIN_PREFIX + "gcc")
    jobs = jobs or min(2, os.cpu_count() or 1)
    command = ["make", "-C", str(outdir), f"-j{jobs}", "firmware.elf"]
    try:
        result = run_tool(command, timeout=MAKE_TIMEOUT_SECONDS, text=True)
    except subprocess.TimeoutExpired:
        raise FirmwareBuildError(f"make -C {outdir} did not finish within {MAKE_TIMEOUT_SECONDS:g} s") from None
    if result.returncode == 0:
        return
    log = result.stdout + result.stderr
    ram = _RAM_OVERFLOW.search(log)
    if ram:
        raise DoesNotFit(
            f"firmware for {board.name} needs {ram_bytes + int(ram.group(1))} bytes of RAM "
            f"(stack, data, bss with the arena) but the budget is {ram_bytes}: "
            f"the link overflowed RAM by {ram.group(1)} B",
            short_bytes=int(ram.group(1)),
        )
    flash = _FLASH_OVERFLOW.search(log)
    if flash:
        # The linker script has a CONST region only when the board has one.
        region = board.code if flash.group(1) == "FLASH" or board.const is None else board.const
        raise DoesNotFit(
            f"firmware for {board.name} overflows {region.name} ({region.length} bytes, "
            f"holding {'code' if flash.group(1) == 'FLASH' else 'weights'}) by {flash.group(2)} B"
        )
    reason = first_error_line(log) or "no output"
    raise FirmwareBuildError(f"make -C {outdir} failed: {reason} (run the make command to see the log)")


def first_error_line(log: str) -> str:
    """The line of a build log that says why: the first compiler or linker
    error, else the tool's own last complaint; "" for an empty log."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in lines:
        if _TOOL_ERROR.search(line):
            return line
    return lines[-1] if lines else ""


# gcc's "file:line:col: error: ...", the assembler's "Error: ...", ld's
# "undefined reference to ..." (the command lines themselves carry -Werror).
_TOOL_ERROR = re.compile(r"\b(?:error|Error|fatal error):|undefined reference")


def elf_size(elf: Path, total: bool = False) -> tuple[int, int, int]:
    """(text, data, bss) as arm-none-eabi-size reports them in Berkeley format
    (`total`: summed over an archive's members)."""
    size = _tool(TOOLCHAIN_PREFIX + "size")
    result = subprocess.run([size, "-B", "-d", *(["-t"] if total else []), str(elf)], capture_output=True, text=True)
    if result.returncode != 0:
        raise FirmwareBuildError(f"{TOOLCHAIN_PREFIX}size {elf} failed: {result.stderr.strip()}")
    figures = result.stdout.splitlines()[-1 if total else 1].split()
    return int(figures[0]), int(figures[1]), int(figures[2])


def linked_ram_bytes(elf: Path, board: Board) -> int:
    """RAM the link takes: the end of .bss (the linker script's __bss_end)
    less the start of the RAM region, gaps between sections included (which
    arm-none-eabi-size's data + bss leaves out)."""
    nm = _tool(TOOLCHAIN_PREFIX + "nm")
    result = subprocess.run([nm, str(elf)], capture_output=True, text=True)
    end = re.search(r"^([0-9a-fA-F]+) \w __bss_end$", result.stdout, re.M)
    if result.returncode != 0 or end is None:
        raise FirmwareBuildError(f"{TOOLCHAIN_PREFIX}nm {elf}: no __bss_end")
    address = int(end.group(1), 16)
    region = next(r for r in board.ram if r.origin <= address <= r.origin + r.length)
    return address - region.origin


def build_firmware(
    outdir: str | os.PathLike[str],
    *,
    model: ModelInterface,
    board: str = DEFAULT_BOARD,
    ram_bytes: int,
    stack_bytes: int = DEFAULT_STACK_BYTES,
    run_make: bool = True,
    jobs: int | None = None,
    extra_cflags: tuple[str, ...] = (),
) -> FirmwareReport:
    """Write the Makefile and board files for the model already generated in
    `outdir`, and (with run_make) build firmware.elf.

    `model` is the interface codegen returned with the sources
    (`generate(...).interface`, or `read_interface(outdir)` for a directory
    write_output wrote).

    Raises DoesNotFit when the arena, the variable tensors and the stack
    reserve exceed `ram_bytes`, or when the link overflows RAM (or the
    board's flash).  `extra_cflags` go into the Makefile's EXTRA_CFLAGS
    (e.g. PLAN_CHECK_CFLAGS)."""
    outdir = Path(outdir)
    spec = load_board(board)
    if stack_bytes <= 0 or stack_bytes % 8:
        raise InputError(f"stack reserve must be a positive multiple of 8 bytes, not {stack_bytes}")
    spec.ram_region_for(ram_bytes)
    budget = firmware_budget(model, spec, stack_bytes)
    if budget.total > ram_bytes:
        terms = " + ".join(f"{name} {size} B" for name, size in budget.terms() if size)
        raise DoesNotFit(
            f"{terms} = {budget.total} B exceeds the RAM budget of {ram_bytes} B by {budget.total - ram_bytes} B",
            short_bytes=budget.total - ram_bytes,
        )
    write_firmware_files(
        outdir, model=model, board=spec, ram_bytes=ram_bytes, stack_bytes=stack_bytes, extra_cflags=tuple(extra_cflags)
    )
    report = FirmwareReport(
        outdir, spec.name, ram_bytes, model.arena_bytes, stack_bytes, variable_bytes=model.variable_bytes, budget=budget
    )
    if not run_make:
        return report
    make_firmware(outdir, spec, ram_bytes, jobs)
    text, data, bss = elf_size(report.elf)
    return replace(report, text=text, data=data, bss=bss, linked_ram=linked_ram_bytes(report.elf, spec))


def firmware_budget(model: ModelInterface, board: Board, stack_bytes: int) -> RamBudget:
    """The RAM of `model`'s firmware on `board` (ram_budget.py, as the plan command counts it)."""
    target = FirmwareTarget(board.name, cpu_has_helium(board.cpu_flags), stack_bytes)
    return ram_budget(
        model.arena_bytes,
        model.variable_bytes,
        model.num_buffers,
        frozenset(model.kernel_functions),
        target=target,
        arena_alignment=model.arena_alignment,
    )


def region_firmware_ram(model: ModelInterface, board: str, regions_bytes: int, stack_bytes: int) -> int:
    """The RAM a firmware of a model planned into --region regions links
    against: its RAM (ram_budget.py) with the regions, whole, as its arena."""
    return firmware_budget(replace(model, arena_bytes=regions_bytes), load_board(board), stack_bytes).total


@dataclass(frozen=True)
class LibraryReport:
    """`--board CORE`: the model as a static library and a linker-script fragment."""

    outdir: Path
    core: str
    name: str
    text: int | None = None  # arm-none-eabi-size of the library (all members), None when make did not run
    data: int | None = None
    bss: int | None = None

    def format(self) -> list[str]:
        lines = [f"library: lib{self.name}.a for {self.core} (make -C OUTDIR), linker fragment {self.name}_sections.ld"]
        if self.text is not None:
            lines.append(f"flash  {self.text + (self.data or 0):>9} B  (text {self.text} + data {self.data})")
            lines.append(f"RAM    {(self.data or 0) + (self.bss or 0):>9} B  (data {self.data} + bss {self.bss})")
        return lines


def build_library(
    outdir: Path,
    *,
    model: ModelInterface,
    core: str,
    alignment: int = 16,
    region_memories: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    run_make: bool = True,
) -> LibraryReport:
    """Write OUTDIR/Makefile (lib{name}.a for `core`, no start-up code) and
    {name}_sections.ld (the arena's sections, NOLOAD), and with run_make
    build the library.  `region_memories` maps each --region section to the
    MEMORY region it goes to (default RAM)."""
    outdir = Path(outdir)
    sources = sorted(p.name for p in outdir.glob("*.c"))
    memories = dict(region_memories)
    named = ([model.arena_section] if model.arena_section else []) + list(model.region_sections)
    sections = [
        dict(name=section, memory=memories.get(section, "RAM"))
        for section in dict.fromkeys(named)
        if section != ".bss"  # already placed by every linker script
    ]
    env = _environment()
    context = dict(
        name=model.name,
        core=core,
        cpu_flags=core_flags(core),
        warning_flags=STRICT_WARNING_FLAGS,
        float_flags=FLOAT_FLAGS,
        sources=sources,
        sections=sections,
        alignment=max(alignment, 16) if alignment & (alignment - 1) == 0 else 16,
        arena_bytes=model.arena_bytes,
    )
    (outdir / "Makefile").write_text(env.get_template("library.mk.j2").render(**context))
    (outdir / f"{model.name}_sections.ld").write_text(env.get_template("sections.ld.j2").render(**context))
    library = f"lib{model.name}.a"
    write_manifest(
        outdir, ["Makefile", f"{model.name}_sections.ld", "build", library], files=_object_files(("build",), sources)
    )
    report = LibraryReport(outdir, core, model.name)
    if not run_make:
        return report
    _tool(TOOLCHAIN_PREFIX + "gcc")
    command = ["make", "-C", str(outdir), f"-j{min(2, os.cpu_count() or 1)}", library]
    try:
        result = run_tool(command, timeout=MAKE_TIMEOUT_SECONDS, text=True)
    except subprocess.TimeoutExpired:
        raise FirmwareBuildError(f"make -C {outdir} did not finish within {MAKE_TIMEOUT_SECONDS:g} s") from None
    if result.returncode != 0:
        reason = first_error_line(result.stdout + result.stderr) or "no output"
        raise FirmwareBuildError(f"make -C {outdir} failed: {reason} (run the make command to see the log)")
    text, data, bss = elf_size(outdir / library, total=True)
    return replace(report, text=text, data=data, bss=bss)
