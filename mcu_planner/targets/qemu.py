"""Running firmware.elf under qemu-system-arm with the semihosting harness.

The harness (firmware/harness/semihost_main.c) reads input0.bin, ... from
QEMU's working directory (one or more input sets each), invokes the model
once per set in order, appends to output0.bin, ..., prints one report line and ends QEMU with an exit status from
firmware/harness/exit_codes.h.  Every run here has a timeout: a core that
locks up (e.g. a fault while stacking a fault) never exits on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..emit.resources import firmware_dir
from ..errors import CheckMismatch, InputError, McuPlanError
from .check import BOARD_FILE_TARGETS, Target, TargetRun, register_target
from .profiling import CycleEstimate, Profile, parse_profile

if TYPE_CHECKING:
    from .firmware_build import FirmwareReport

QEMU_BINARY = "qemu-system-arm"
DEFAULT_TIMEOUT_SECONDS = 300.0
# A firmware that overflows its stack reserve is run once more with this many
# times the reserve, to measure the reserve it needs; the figure suggested is
# the use measured, rounded up past it to a multiple of STACK_ROUNDING.
STACK_PROBE_FACTOR = 8
STACK_ROUNDING = 64

# A profile build's stack reserve above the normal build's (`check --profile`).
PROFILE_STACK_HEADROOM = 256
# The RAM a plan-check or profile build may use above the budget: their tables.
DIAGNOSTIC_RAM_HEADROOM = 4096

_REPORT = re.compile(r"mcu-harness: status=(-?\d+) ticks=(\d+) stack=(\d+)/(\d+)")
# The harness's optional file naming the input set before which it calls NAME_reset().
RESET_FILE = "reset_at.bin"


class QemuError(McuPlanError):
    """QEMU is missing, timed out, or the firmware stopped abnormally."""


def exit_code_names() -> dict[int, str]:
    """Exit status -> name (HARD_FAULT, INPUT_MISSING, ...) from exit_codes.h."""
    text = (firmware_dir() / "harness" / "exit_codes.h").read_text()
    return {int(value): name for name, value in re.findall(r"#define EXIT_(\w+) (\d+)", text)}


def qemu_command(machine: str, elf: Path, *, icount: bool = True) -> list[str]:
    """Without the chardev, QEMU sends semihosting console output to stderr."""
    command = [QEMU_BINARY, "-M", machine]
    if icount:
        # One instruction per virtual nanosecond: SysTick ticks become
        # proportional to instructions executed, the same on every host.
        command += ["-icount", "shift=0"]
    command += [
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        "none",
        "-chardev",
        "stdio,id=sh0",
        "-semihosting-config",
        "enable=on,target=native,chardev=sh0",
        "-kernel",
        str(elf),
    ]
    return command


@dataclass(frozen=True)
class QemuRun:
    exit_status: int
    console: str
    outputs: tuple[bytes, ...]  # output0.bin, ... as the harness wrote them
    invoke_status: int | None = None  # from the report line; None when the run did not get there
    ticks: int | None = None  # SysTick ticks around invoke()
    stack_used: int | None = None
    stack_reserve: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and self.invoke_status == 0

    def describe_exit(self) -> str:
        if self.exit_status == 0:
            return "exit 0"
        if self.exit_status < 0:
            cause = " (QEMU aborted: the core locked up)" if "Lockup" in self.console else ""
            return f"QEMU killed by signal {-self.exit_status}{cause}"
        name = exit_code_names().get(self.exit_status)
        if name is None and self.invoke_status is not None:
            name = f"invoke returned {self.invoke_status}"
        return f"exit {self.exit_status} ({name or 'unknown status'})"

    def check(self) -> QemuRun:
        """Self, or QemuError naming how the run ended."""
        if not self.ok:
            console = self.console.strip().replace("\n", " | ")
            raise QemuError(f"firmware run failed: {self.describe_exit()}; console: {console or '(empty)'}")
        return self


def _qemu() -> str:
    path = shutil.which(QEMU_BINARY)
    if path is None:
        raise QemuError(f"{QEMU_BINARY} not found; install it (apt-get install qemu-system-arm)")
    return path


def run_firmware(
    elf: str | os.PathLike[str],
    *,
    machine: str,
    inputs: Sequence[bytes],
    num_outputs: int,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    icount: bool = True,
    workdir: str | os.PathLike[str] | None = None,
    reset_at: int | None = None,
) -> QemuRun:
    """Run `elf` once on `inputs` (the bytes of input tensor 0, 1, ...: one
    input set, or several back to back, which the harness invokes in order)
    and collect its outputs (each output's sets back to back).  With
    `reset_at` the harness resets the model before that set.  Abnormal exits
    come back in the QemuRun (see `check()`); only a timeout or a missing
    QEMU raise here."""
    _qemu()
    elf = Path(elf).resolve()
    with tempfile.TemporaryDirectory(prefix="mcu-qemu-") as scratch:
        run_dir = Path(workdir) if workdir is not None else Path(scratch)
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.glob("output*.bin"):
            stale.unlink()
        for index, data in enumerate(inputs):
            (run_dir / f"input{index}.bin").write_bytes(bytes(data))
        reset_file = run_dir / RESET_FILE
        if reset_at is not None:
            reset_file.write_bytes(int(reset_at).to_bytes(4, "little"))
        elif reset_file.exists():
            reset_file.unlink()
        try:
            result = subprocess.run(
                qemu_command(machine, elf, icount=icount),
                cwd=run_dir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            console = (exc.stdout or b"").decode(errors="replace").strip()
            raise QemuError(
                f"{elf.name} on {machine} did not finish within {timeout:g} s (hung or locked up); "
                f"console: {console or '(empty)'}"
            ) from None
        console = (result.stdout + result.stderr).decode(errors="replace")
        outputs = []
        for index in range(num_outputs):
            path = run_dir / f"output{index}.bin"
            outputs.append(path.read_bytes() if path.is_file() else b"")
    report = _REPORT.search(console)
    figures: dict[str, int | None] = dict(invoke_status=None, ticks=None, stack_used=None, stack_reserve=None)
    if report:
        figures = dict(
            invoke_status=int(report.group(1)),
            ticks=int(report.group(2)),
            stack_used=int(report.group(3)),
            stack_reserve=int(report.group(4)),
        )
    return QemuRun(result.returncode, console, tuple(outputs), **figures)


# ---------------------------------------------------------------- `mcu-plan check --target BOARD`


class QemuTarget(Target):
    """A board under QEMU: builds the generated directory with the
    semihosting harness, then runs one QEMU process per input set."""

    tick_unit = "SysTick ticks (-icount shift=0)"

    def __init__(
        self,
        board: str,
        *,
        ram_bytes: int | None = None,
        stack_bytes: int | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ):
        from .firmware_build import DEFAULT_STACK_BYTES, load_board

        self.name = board
        self.board = load_board(board)
        # Default budget: the board's largest RAM region, so that the check
        # tests the code rather than the budget.
        self.ram_bytes = ram_bytes or max(region.length for region in self.board.ram)
        self.stack_bytes = stack_bytes or DEFAULT_STACK_BYTES
        self.timeout = timeout

    def with_ram(self, ram_bytes: int | None, stack_bytes: int | None = None) -> QemuTarget:
        """This board with `ram_bytes` as the linker's RAM region and `stack_bytes` of stack reserve."""
        return QemuTarget(self.name, ram_bytes=ram_bytes, stack_bytes=stack_bytes, timeout=self.timeout)

    def build(
        self, generated: Path, model_name: str, *, check_build: bool, workdir: Path, profile: bool = False
    ) -> FirmwareReport:
        from ..emit.output_dir import read_interface
        from .firmware_build import PLAN_CHECK_CFLAGS, PROFILE_CFLAGS, build_firmware

        # The model's interface comes from the manifest write_output left in `generated`.
        interface = read_interface(generated)
        if interface is None or interface.name != model_name:
            raise McuPlanError(f"{generated} holds no model {model_name!r} generated by mcu-plan")
        outdir = Path(workdir) / "firmware"
        if outdir.exists():
            shutil.rmtree(outdir)
        shutil.copytree(generated, outdir)
        ram_bytes, stack_bytes = self.ram_bytes, self.stack_bytes
        if profile:
            # The per-op hooks run inside invoke, on top of its deepest frame.
            stack_bytes += PROFILE_STACK_HEADROOM
        if check_build or profile:
            # The instrumented builds carry tables the shipped one has not
            # (live flags, per-op ticks): RAM above the budget, which the
            # normal build alone is linked against.
            # Never past the board's largest RAM (the default budget is all of it).
            largest = max(region.length for region in self.board.ram)
            ram_bytes = min(ram_bytes + stack_bytes - self.stack_bytes + DIAGNOSTIC_RAM_HEADROOM, largest)
        return build_firmware(
            outdir,
            model=interface,
            board=self.name,
            ram_bytes=ram_bytes,
            stack_bytes=stack_bytes,
            extra_cflags=(PLAN_CHECK_CFLAGS if check_build else ()) + (PROFILE_CFLAGS if profile else ()),
        )

    def run(
        self,
        generated: Path,
        model_name: str,
        samples: list[list[bytes]],
        *,
        input_bytes: list[int],
        output_bytes: list[int],
        check_build: bool,
        workdir: Path,
        iterations: int = 0,
        reset_at: int | None = None,
        profile: bool = False,
    ) -> TargetRun:
        """All samples in one QEMU run, one invocation each, in order: state
        in variable tensors carries over as in an application."""
        firmware = self.build(
            Path(generated), model_name, check_build=check_build, workdir=Path(workdir), profile=profile
        )
        for index, sample in enumerate(samples):
            if [len(data) for data in sample] != list(input_bytes):
                raise McuPlanError(f"input set {index} has sizes {[len(d) for d in sample]}, expected {input_bytes}")
        inputs = [b"".join(sample[i] for sample in samples) for i in range(len(input_bytes))]
        machine = self.board.qemu_machine
        if machine is None:
            raise McuPlanError(f"board {self.name} names no qemu_machine: its firmware builds but cannot run here")
        run = run_firmware(
            firmware.elf,
            machine=machine,
            inputs=inputs,
            num_outputs=len(output_bytes),
            timeout=self.timeout * max(1, len(samples)),
            workdir=Path(workdir) / "run",
            reset_at=reset_at,
        )
        violation = next((line for line in run.console.splitlines() if line.startswith("mcu-plan check:")), None)
        if violation:
            raise CheckMismatch(f"{model_name} on {self.name}: {violation}")
        if exit_code_names().get(run.exit_status) == "STACK_OVERFLOW":
            build = "profile build" if profile else "check build" if check_build else "build"
            raise CheckMismatch(
                f"{model_name} on {self.name}: the {build}'s firmware overflowed its stack reserve of "
                f"{self.stack_bytes} B; "
                + self._stack_needed(
                    Path(generated), model_name, machine, check_build, profile, Path(workdir), samples[:1]
                )
            )
        run.check()
        expected_sizes = [size * len(samples) for size in output_bytes]
        if [len(data) for data in run.outputs] != expected_sizes:
            raise McuPlanError(
                f"firmware wrote outputs of {[len(d) for d in run.outputs]} bytes, expected {expected_sizes}"
            )
        outputs = [
            [run.outputs[o][s * size : (s + 1) * size] for o, size in enumerate(output_bytes)]
            for s in range(len(samples))
        ]
        timings = parse_profile(run.console, "SysTick ticks") if profile else None
        if timings is not None:
            timings = self._with_cycles(timings, firmware.elf, model_name, machine, Path(workdir) / "run", len(samples))
        return TargetRun(outputs, run.ticks, self.tick_unit, timings)

    def _with_cycles(
        self, timings: Profile, elf: Path, model_name: str, machine: str, run_dir: Path, invocations: int
    ) -> Profile:
        """The profile with the cycle estimate of a traced run of the same
        firmware on the same inputs (still in `run_dir`): one region per
        profile bracket, the k-th of an invocation being the k-th op."""
        from .cycles import core_for_cpu_flags, estimate, symbol_address

        timing = core_for_cpu_flags(self.board.cpu_flags)
        begin = symbol_address(elf, f"{model_name}_profile_begin")
        end = symbol_address(elf, f"{model_name}_profile_end")
        if timing is None or begin is None or end is None:
            return timings
        command = qemu_command(machine, elf)
        regions = estimate(elf, command, timing, run_dir, begin={begin}, end={end}, timeout=self.timeout * invocations)
        count = len(timings.ops)
        total = round(sum(r.cycles for r in regions) / invocations)
        op_cycles = None
        if count and len(regions) == count * invocations:
            op_cycles = tuple(
                round(sum(regions[i * count + k].cycles for i in range(invocations)) / invocations)
                for k in range(count)
            )
        estimate_ = CycleEstimate(timing.name, op_cycles, total, self.board.systick_hz, "the board's nominal clock")
        return replace(timings, cycles=estimate_)

    def _stack_needed(
        self,
        generated: Path,
        model_name: str,
        machine: str,
        check_build: bool,
        profile: bool,
        workdir: Path,
        samples: list[list[bytes]],
    ) -> str:
        """What stack reserve the overflowing build needs, measured by one
        more run of it with STACK_PROBE_FACTOR times the reserve."""
        larger = self.stack_bytes * STACK_PROBE_FACTOR
        probe = QemuTarget(self.name, ram_bytes=self.ram_bytes, timeout=self.timeout, stack_bytes=larger)
        try:
            firmware = probe.build(
                generated, model_name, check_build=check_build, workdir=workdir / "stack-probe", profile=profile
            )
            run = run_firmware(
                firmware.elf,
                machine=machine,
                inputs=[b"".join(sample[i] for sample in samples) for i in range(len(samples[0]))],
                num_outputs=0,  # only the stack figure is wanted
                timeout=self.timeout,
                workdir=workdir / "stack-probe" / "run",
            )
        except McuPlanError as exc:
            return f"a larger reserve could not be measured ({exc})"
        if run.exit_status != 0 or run.stack_used is None:
            return f"it needs more than {larger} B (a run with {larger} B ended: {run.describe_exit()})"
        fits = (run.stack_used // STACK_ROUNDING + 1) * STACK_ROUNDING
        return f"it uses {run.stack_used} B: a stack reserve of {fits} B fits (--stack {fits})"


def register_qemu_targets() -> None:
    from .firmware_build import board_names

    for board in board_names():
        register_target(QemuTarget(board))
    BOARD_FILE_TARGETS["qemu"] = board_file_target


def board_file_target(path: str) -> QemuTarget:
    """`check --target PATH/board.json`: that board under QEMU, when it names a machine QEMU emulates."""
    target = QemuTarget(path)
    if target.board.qemu_machine is None:
        raise InputError(
            f"board {path} names no qemu_machine: its firmware builds (mcu-plan -o OUTDIR --board) "
            "but check cannot run it"
        )
    return target


register_qemu_targets()
