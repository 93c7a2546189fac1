"""`mcu-plan check`: does the generated C compute what TFLite computes?

The model is planned and generated into a temporary directory, built for a
target twice (normally and with -DMCU_PLAN_CHECK, which also checks the plan's
memory discipline at run time), run on seeded random inputs, and every output
byte is compared with TFLite's reference interpreter.

The input sets run as one sequence of invocations, on one reference
interpreter and in one run of the generated model, so that state kept in
variable tensors (SVDF, LSTM) carries over exactly as in an application and
outputs are compared after every invocation.  A model with such state then
calls NAME_reset() and runs the first sets again: they must give what a
new reference interpreter gives for them, as a fresh start does.

Targets register themselves in TARGETS: "host" (the machine's `cc`) lives
here; Cortex-M targets live in their own module, listed in TARGET_MODULES,
which calls `register_target` on import (registry.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..emit.c_literals import c_prefix
from ..emit.codegen import render
from ..emit.output_dir import read_interface, write_output
from ..errors import CheckMismatch, DoesNotFit, InputError, McuPlanError
from ..graph import Graph
from ..pipeline import DEFAULT_TIME_LIMIT, generate_for_model
from ..registry import Registry
from .c_flags import FLOAT_FLAGS, STRICT_WARNING_FLAGS
from .firmware_build import DEFAULT_STACK_BYTES, PROFILE_CFLAGS, first_error_line, run_tool
from .profiling import Profile, parse_profile

if TYPE_CHECKING:
    from ..emit.codegen import GeneratedSources
    from ..memory.planning import ArenaPlan
    from ..memory.regions import Region

# A model as check_model takes it: a .tflite path or its bytes.
ModelSource = str | os.PathLike[str] | bytes

# Modules that add targets when imported.
TARGET_MODULES = ("mcu_planner.targets.qemu",)
# How such a module runs a board described by PATH/board.json (qemu.py adds
# QemuTarget): looked up here, not imported, so that it may import this module.
BOARD_FILE_TARGETS: dict[str, Callable[[str], Target]] = {}

# Generous: the largest shared model builds in seconds and runs a set of
# inputs in well under one; a hung build or a generated model stuck in a
# loop still ends the check.
HOST_BUILD_TIMEOUT_SECONDS = 600.0
HOST_RUN_TIMEOUT_SECONDS = 600.0
# Invocations a host profile build times after the checked ones.
HOST_PROFILE_ITERATIONS = 50

# `check --sanitize`: any report stops the program at once, so it cannot be missed.
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")
# The lines in a sanitizer's stderr that say what went wrong.
_SANITIZER_MARKERS = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "SUMMARY: ")


class SanitizerReport(CheckMismatch):
    """The generated C, built with ASan/UBSan, did something undefined."""


def sanitizer_line(stderr: str) -> str | None:
    """The one line of a sanitizer report that names the fault, if any."""
    for marker in _SANITIZER_MARKERS:
        for line in stderr.splitlines():
            if marker in line:
                return " ".join(line.split())[:300]
    return None


# Float outputs may differ from the reference by summation order: accepted
# within 1e-5 relative to the output's magnitude.
FLOAT_RELATIVE_TOLERANCE = 1e-5
# Input sets run again after NAME_reset() in a model with state (the
# default of `mcu-plan check --after-reset`, whose help repeats it).
REPLAYED_AFTER_RESET = 2


@dataclass
class TargetRun:
    outputs: list[list[bytes]]  # [sample][graph output] raw bytes
    ticks_per_inference: float | None = None
    tick_unit: str = "s"
    profile: Profile | None = None  # a profile build's per-op timings


class Target:
    """Builds a generated directory plus a harness and runs it on input bytes."""

    name = ""

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
        """`samples[s][i]` is input i of sample s; the samples run in order in
        one instance of the model (state carried over), with NAME_reset()
        called before sample `reset_at` when given.  With `profile` the build
        is a -DMCU_PROFILE one and the run's profile is returned with its
        outputs.  Raise CheckMismatch when
        the model reports a broken plan (check build), McuPlanError when the
        build or the run fails for another reason."""
        raise NotImplementedError

    def with_ram(self, ram_bytes: int | None, stack_bytes: int = DEFAULT_STACK_BYTES) -> Target:
        """This target with a RAM budget and stack reserve (boards link against them); the host has none."""
        return self


_REGISTRY: Registry[Target] = Registry("target", lambda: list(TARGET_MODULES))
TARGETS = _REGISTRY.entries


def register_target(target: Target) -> Target:
    return _REGISTRY.add(target.name, target)


def load_targets() -> dict[str, Target]:
    return _REGISTRY.load()


def resolve_target(name: str) -> Target:
    """A registered target, or a board described by PATH/board.json (run under QEMU)."""
    targets = load_targets()
    if name in targets:
        return targets[name]
    from .firmware_build import is_board_file

    if is_board_file(name) and BOARD_FILE_TARGETS:
        (make_target,) = BOARD_FILE_TARGETS.values()
        return make_target(name)
    raise InputError(f"unknown target {name!r} (known: {', '.join(sorted(targets))}, or PATH/board.json)")


class HostTarget(Target):
    """The machine's own C compiler."""

    name = "host"

    def __init__(
        self,
        compiler: str | None = None,
        optimization: str = "-O2",
        *,
        build_timeout: float = HOST_BUILD_TIMEOUT_SECONDS,
        run_timeout: float = HOST_RUN_TIMEOUT_SECONDS,
        sanitize: bool = False,
    ):
        self.sanitize = sanitize
        self.compiler = compiler or os.environ.get("CC", "cc")
        self.optimization = optimization
        self.build_timeout = build_timeout
        self.run_timeout = run_timeout

    def build(
        self,
        generated: Path,
        model_name: str,
        *,
        input_bytes: list[int],
        check_build: bool,
        workdir: Path,
        profile: bool = False,
    ) -> Path:
        workdir.mkdir(parents=True, exist_ok=True)
        harness = workdir / "harness.c"
        # NAME_reset() exists in every generated model; the harness calls it
        # only for one with state (so hand-written stand-ins need not have it).
        interface = read_interface(generated)
        has_state = interface is not None and interface.variable_bytes > 0
        harness.write_bytes(render("host_harness.c.j2", name=model_name, input_bytes=input_bytes, has_state=has_state))
        program = workdir / ("model_check" if check_build else "model")
        sources = sorted(str(p) for p in generated.glob("*.c"))
        command = [
            *shlex.split(self.compiler),
            *STRICT_WARNING_FLAGS,
            *FLOAT_FLAGS,
            *(SANITIZE_FLAGS if self.sanitize else ()),
            self.optimization,
            *(["-DMCU_PLAN_CHECK"] if check_build else []),
            *(PROFILE_CFLAGS if profile else ()),
            "-I",
            str(generated),
            *sources,
            str(harness),
            "-lm",
            "-o",
            str(program),
        ]
        try:
            done = run_tool(command, text=True, timeout=self.build_timeout)
        except subprocess.TimeoutExpired:
            raise McuPlanError(f"host build did not finish within {self.build_timeout:g} s") from None
        if done.returncode != 0:
            reason = first_error_line(done.stderr) or f"exit status {done.returncode}"
            raise McuPlanError(f"host build failed: {reason}")
        return program

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
        program = self.build(
            generated, model_name, input_bytes=input_bytes, check_build=check_build, workdir=workdir, profile=profile
        )
        if profile:
            # Nanosecond clocks on a busy host: average over more invocations than the check's few.
            iterations = max(iterations, HOST_PROFILE_ITERATIONS)
        stdin = b"".join(b"".join(sample) for sample in samples)
        args = [str(program), str(len(samples)), str(iterations), str(-1 if reset_at is None else reset_at)]
        try:
            done = run_tool(args, input=stdin, timeout=self.run_timeout)
        except subprocess.TimeoutExpired:
            raise McuPlanError(
                f"generated model did not finish {len(samples)} input set(s) on the host within "
                f"{self.run_timeout:g} s (hung?)"
            ) from None
        stderr = done.stderr.decode("utf-8", "replace")
        report = sanitizer_line(stderr) if self.sanitize else None
        if report:
            raise SanitizerReport(f"sanitizer: {report}")
        if done.returncode != 0:
            violation = next((line for line in stderr.splitlines() if line.startswith("mcu-plan check:")), None)
            if violation:
                raise CheckMismatch(violation)
            reason = first_error_line(stderr) or f"exit status {done.returncode}"
            raise McuPlanError(f"generated model failed on the host: {reason}")
        per_sample = sum(output_bytes)
        if len(done.stdout) != per_sample * len(samples):
            raise McuPlanError(f"harness wrote {len(done.stdout)} bytes, expected {per_sample * len(samples)}")
        outputs = []
        for s in range(len(samples)):
            at = s * per_sample
            sample_outputs = []
            for size in output_bytes:
                sample_outputs.append(done.stdout[at : at + size])
                at += size
            outputs.append(sample_outputs)
        seconds = None
        for line in stderr.splitlines():
            if line.startswith("seconds-per-inference "):
                seconds = float(line.split()[1])
        return TargetRun(outputs, seconds, "s", parse_profile(stderr, "ns") if profile else None)


register_target(HostTarget())


# ---------------------------------------------------------------- inputs


def _float_input_range(graph: Graph, tensor: int) -> tuple[float, float]:
    """The range a downstream QUANTIZE can represent, else [-1, 1]."""
    for op in graph.operators:
        if op.opcode == "QUANTIZE" and op.inputs and op.inputs[0] == tensor:
            out = graph.tensors[op.outputs[0]]
            q = out.quantization
            if q and q.scales and out.dtype in ("int8", "uint8", "int16"):
                info = np.iinfo(out.dtype)
                scale, zero = q.scales[0], q.zero_points[0]
                return scale * (info.min - zero), scale * (info.max - zero)
    return -1.0, 1.0


def extreme_inputs(graph: Graph) -> list[list[np.ndarray]]:
    """Three input sets at the edges: every element at its type's minimum,
    at its maximum, and at the input's zero point (floats: the ends of the
    range random_inputs draws from, and 0)."""
    sets: list[list[np.ndarray]] = [[], [], []]
    for t in graph.inputs:
        tensor = graph.tensors[t]
        q = tensor.quantization
        zero = q.zero_points[0] if q and q.zero_points else 0
        values: tuple[float, float, float]  # (minimum, maximum, zero point); bools are ints
        if tensor.dtype in ("int8", "uint8", "int16"):
            info = np.iinfo(tensor.dtype)
            values = (info.min, info.max, zero)
        elif tensor.dtype in ("int32", "int64") and (static := _static_shape_fed_by(graph, t)) is not None:
            for s in range(3):
                sets[s].append(np.array(static, dtype=tensor.dtype).reshape(tensor.shape))
            continue
        elif tensor.dtype in ("int32", "int64"):
            values = (-100, 100, zero)  # random_inputs' range: such inputs are often indices or sizes
        elif tensor.dtype == "float32":
            lo, hi = _float_input_range(graph, t)
            values = (lo, hi, 0.0)
        elif tensor.dtype == "bool":
            values = (False, True, False)
        else:
            raise InputError(f"cannot make inputs of type {tensor.dtype}")
        for s, value in enumerate(values):
            sets[s].append(np.full(tensor.shape, value, dtype=np.bool_ if tensor.dtype == "bool" else tensor.dtype))
    return sets


# Operators whose input `position` is the shape of their output.
_OUTPUT_SHAPE_OPERANDS = {"TRANSPOSE_CONV": 0}


def _static_shape_fed_by(graph: Graph, tensor: int) -> tuple[int, ...] | None:
    """The output shape a graph input must hold when it is an op's output
    shape operand (any other value would resize the reference's output)."""
    for op in graph.operators:
        position = _OUTPUT_SHAPE_OPERANDS.get(op.opcode)
        if position is not None and position < len(op.inputs) and op.inputs[position] == tensor:
            return graph.tensors[op.outputs[0]].shape
    return None


def random_inputs(graph: Graph, rng: np.random.Generator) -> list[np.ndarray]:
    """One set of inputs: integers uniform over their whole range, floats over
    the range the model quantizes them to (or [-1, 1]), output-shape operands
    the output's static shape."""
    arrays = []
    for t in graph.inputs:
        tensor = graph.tensors[t]
        shape = tensor.shape
        if tensor.dtype in ("int8", "uint8", "int16"):
            info = np.iinfo(tensor.dtype)
            arrays.append(rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=tensor.dtype))
        elif tensor.dtype == "float32":
            lo, hi = _float_input_range(graph, t)
            arrays.append(rng.uniform(lo, hi, size=shape).astype(np.float32))
        elif tensor.dtype == "bool":
            arrays.append(rng.integers(0, 1, size=shape, endpoint=True).astype(np.bool_))
        elif tensor.dtype in ("int32", "int64") and (static := _static_shape_fed_by(graph, t)) is not None:
            arrays.append(np.array(static, dtype=tensor.dtype).reshape(shape))
        elif tensor.dtype in ("int32", "int64"):
            arrays.append(rng.integers(-100, 100, size=shape, endpoint=True, dtype=tensor.dtype))
        else:
            raise InputError(f"cannot make random inputs of type {tensor.dtype}")
    return arrays


# ---------------------------------------------------------------- comparing


@dataclass
class CheckReport:
    model: str
    target: str
    total: int  # input sets run in sequence (not counting those after the reset)
    exact: int  # sets whose every output byte matched (floats: within tolerance)
    first_mismatch: tuple[int, int, object, object] | None  # (output, byte/element index, expected, got)
    ticks_per_inference: float | None = None
    tick_unit: str = "s"
    arena_bytes: int = 0
    planner: str = ""
    float_outputs: bool = False  # some output is float32: compared within FLOAT_RELATIVE_TOLERANCE
    max_float_error: float = 0.0
    notes: list[str] = field(default_factory=list)
    # Models with state: the first sets run again after NAME_reset(), and how
    # many of those matched the first outputs.
    reset_total: int = 0
    reset_exact: int = 0
    mismatch_set: int | None = None  # invocation of first_mismatch (sets after the reset count on)
    profile: Profile | None = None  # per-op timings of the profile build (`check --profile`)

    @property
    def passed(self) -> bool:
        return self.exact == self.total and self.reset_exact == self.reset_total

    def summary(self) -> str:
        word = "bit-exact" if not self.float_outputs else f"within {FLOAT_RELATIVE_TOLERANCE:g}"
        if not self.reset_total:
            return f"{word} {self.exact}/{self.total}"
        return (
            f"{word} {self.exact}/{self.total} (one sequence, state carried over); "
            f"after reset {self.reset_exact}/{self.reset_total}"
        )

    def format(self) -> list[str]:
        lines = [f"{self.model}: target {self.target}, arena {self.arena_bytes:,} B ({self.planner} plan)"]
        if self.ticks_per_inference is not None:
            if self.tick_unit == "s":
                lines.append(f"time per inference: {self.ticks_per_inference * 1e3:.3f} ms")
            else:
                lines.append(f"time per inference: {self.ticks_per_inference:,.0f} {self.tick_unit}")
        if self.profile is not None:
            lines.extend(self.profile.format())
        if self.float_outputs:
            lines.append(f"largest float error: {self.max_float_error:.3g} of the output's magnitude")
        lines.append(self.summary())
        return lines

    def mismatch_message(self) -> str:
        if self.first_mismatch is None:
            return ""
        output, index, expected, got = self.first_mismatch
        unit = "element" if self.float_outputs else "byte"
        where = ""
        if self.reset_total and self.mismatch_set is not None:
            where = f"invocation {self.mismatch_set}"
            if self.mismatch_set >= self.total:
                where += " (after reset)"
            where += " "
        return (
            f"{self.model}: {self.target} {where}output {output} {unit} {index}: expected {expected}, got {got} "
            f"({self.exact}/{self.total} input sets exact"
            + (f", {self.reset_exact}/{self.reset_total} after reset)" if self.reset_total else ")")
        )


def _compare(expected: np.ndarray, got: bytes) -> tuple[int, object, object] | None:
    """None if equal; (index, expected, got) of the first difference otherwise."""
    if expected.dtype == np.float32:
        values = np.frombuffer(got, dtype="<f4")
        ref = expected.reshape(-1).astype(np.float64)
        if values.size != ref.size:
            return (values.size, ref.size, values.size)
        finite = np.isfinite(ref)
        bound = FLOAT_RELATIVE_TOLERANCE * max(float(np.max(np.abs(ref[finite]), initial=0.0)), 1e-30)
        with np.errstate(invalid="ignore"):
            error = np.abs(values.astype(np.float64) - ref)
        # NaN matches NaN and an infinity the same infinity; finite values within the bound.
        same_special = (np.isnan(ref) & np.isnan(values)) | (np.isinf(ref) & (values == ref))
        bad = np.flatnonzero(~(same_special | (finite & (error <= bound))))
        if bad.size:
            i = int(bad[0])
            return (i, float(ref[i]), float(values[i]))
        return None
    want = expected.tobytes()
    if want == got:
        return None
    if len(want) != len(got):
        return (min(len(want), len(got)), len(want), len(got))
    diff = np.flatnonzero(np.frombuffer(want, np.uint8) != np.frombuffer(got, np.uint8))
    i = int(diff[0])
    flat = expected.reshape(-1)
    element = i // expected.itemsize
    got_element = np.frombuffer(got, dtype=expected.dtype)[element]
    return (i, flat[element].item(), got_element.item())


def _float_error(expected: np.ndarray, got: bytes) -> float:
    values = np.frombuffer(got, dtype="<f4").astype(np.float64)
    ref = expected.reshape(-1).astype(np.float64)
    if values.size != ref.size:
        return 0.0
    finite = np.isfinite(ref) & np.isfinite(values)
    if not finite.any():
        return 0.0
    return float(np.max(np.abs(values[finite] - ref[finite])) / max(float(np.max(np.abs(ref[finite]))), 1e-30))


# ---------------------------------------------------------------- the check


def _load(model: ModelSource | bytearray | memoryview) -> tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "model"
    from ..frontend.model_file import read_model_file

    path = Path(model)
    return read_model_file(path), path.stem


def run_generated(
    graph: Graph,
    files: dict[str, bytes],
    name: str,
    input_sets: list[list[np.ndarray]],
    *,
    target: str = "host",
    ram: int | None = None,
    stack: int = DEFAULT_STACK_BYTES,
    check_build: bool = True,
    keep_dir: str | os.PathLike[str] | None = None,
    reset_at: int | None = None,
    sanitize: bool = False,
    profile: bool = False,
) -> list[TargetRun]:
    """Build the generated `files` for `target` and run them on `input_sets`
    (one array per graph input each) in one sequence of invocations, calling
    NAME_reset() before set `reset_at` when given: one TargetRun per build,
    the normal one first, then (check_build) the -DMCU_PLAN_CHECK one, then
    (profile) the -DMCU_PROFILE one."""
    resolved = resolve_target(target)
    samples = [[np.ascontiguousarray(a).tobytes() for a in arrays] for arrays in input_sets]
    input_bytes = [graph.tensors[t].nbytes for t in graph.inputs]
    output_bytes = [graph.tensors[t].nbytes for t in graph.outputs]
    for arrays in samples:
        sizes = [len(a) for a in arrays]
        if sizes != input_bytes:
            raise InputError(f"input sizes {sizes} B do not match the model's {input_bytes} B")
    work = Path(tempfile.mkdtemp(prefix=f"mcu-plan-check-{name}-"))
    try:
        generated = write_output(files, work / "generated")
        # (plan check, profile) of each build.
        builds = [(False, False)] + ([(True, False)] if check_build else []) + ([(False, True)] if profile else [])
        runner = resolved.with_ram(ram, stack) if ram is not None or stack != DEFAULT_STACK_BYTES else resolved
        if sanitize:
            if not isinstance(runner, HostTarget):
                raise InputError("--sanitize builds with the host compiler's sanitizers: use --target host")
            runner = HostTarget(
                runner.compiler,
                runner.optimization,
                build_timeout=runner.build_timeout,
                run_timeout=runner.run_timeout,
                sanitize=True,
            )

        def run(build: tuple[bool, bool]) -> TargetRun:
            check, profiled = build
            return runner.run(
                generated,
                name,
                samples,
                input_bytes=input_bytes,
                output_bytes=output_bytes,
                check_build=check,
                workdir=work / ("check" if check else "profile" if profiled else "normal"),
                reset_at=reset_at,
                profile=profiled,
            )

        # At most two at a time: each build compiles the whole model.
        with ThreadPoolExecutor(max_workers=min(2, len(builds))) as pool:
            runs = list(pool.map(run, builds))
        if keep_dir is not None:
            write_output(files, keep_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return runs


def check_model(
    model: ModelSource,
    *,
    target: str = "host",
    inputs: int = 3,
    seed: int = 0,
    planner: str = "auto",
    time_limit: float = DEFAULT_TIME_LIMIT,
    alias: bool = True,
    check_build: bool = True,
    raise_on_mismatch: bool = True,
    ram: int | None = None,
    keep_dir: str | os.PathLike[str] | None = None,
    input_sets: list[list[np.ndarray]] | None = None,
    sanitize: bool = False,
    extremes: bool = False,
    order: str | tuple[int, ...] = "auto",
    regions: tuple[Region, ...] = (),
    profile: bool = False,
    patches: str = "default",
    after_reset: int | None = None,
    stack: int = DEFAULT_STACK_BYTES,
) -> CheckReport:
    """Generate, build and run `model` (a path or the .tflite bytes) on
    `inputs` seeded random input sets and compare with the reference.
    A model with state then runs the first `after_reset` sets (default
    REPLAYED_AFTER_RESET) again after NAME_reset().
    `input_sets` (one array per graph input in each set) replaces the random
    sets with chosen values, e.g. a sweep of the edge cases of a kernel.
    `profile` adds a -DMCU_PROFILE build (its outputs are compared too) whose
    per-op timings come back in the report.

    The model is planned as `mcu-plan --ram RAM -o OUTDIR [--board TARGET
    --stack STACK]` plans it, so the check runs the C that command writes.
    Raises CheckMismatch on the first difference (unless raise_on_mismatch is
    False), DoesNotFit when the model's RAM (ram_budget.py) exceeds `ram`,
    UnsupportedModel / InputError from the stages before."""
    resolve_target(target)
    if input_sets is not None:
        inputs = len(input_sets)
    if inputs < 1:
        raise InputError("--inputs must be at least 1")
    model_bytes, stem = _load(model)
    name = c_prefix(stem)
    label = str(model) if isinstance(model, (str, os.PathLike)) else stem  # never the bytes
    on_board = target != "host"
    firmware = None
    if on_board and not regions:
        from .firmware_build import firmware_target

        # --ram is the firmware's RAM: the plan leaves room for all else it holds (ram_budget.py).
        firmware = firmware_target(target, stack)
    graph, plan, files = generate_for_model(
        model_bytes,
        name=name,
        planner=planner,
        time_limit=time_limit,
        ram=ram,
        alias=alias,
        label=label,
        order=order,
        regions=regions,
        patches=patches,
        target=firmware,
    )
    link_ram = ram
    if regions and on_board:
        from .firmware_build import region_firmware_ram

        link_ram = region_firmware_ram(files.interface, target, sum(region.size for region in regions), stack)
    return _check_generated(
        model_bytes,
        stem,
        graph,
        plan,
        files,
        target=target,
        inputs=inputs,
        seed=seed,
        check_build=check_build,
        raise_on_mismatch=raise_on_mismatch,
        ram=link_ram,
        stack=stack,
        keep_dir=keep_dir,
        input_sets=input_sets,
        sanitize=sanitize,
        extremes=extremes,
        profile=profile,
        after_reset=after_reset,
    )


def check_models(
    models: list[ModelSource],
    *,
    target: str = "host",
    inputs: int = 3,
    seed: int = 0,
    ram: int | None = None,
    concurrent: bool = False,
    planner: str = "auto",
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> list[CheckReport]:
    """Several models generated into one directory around the arena they
    share (as `mcu-plan A B ... -o OUTDIR` writes it), each then built with
    all of them and compared with the reference as check_model does."""
    from ..pipeline import PlanOptions, generate_models, plan_model, share_arena

    resolve_target(target)
    loaded = [_load(model) for model in models]
    names = [c_prefix(stem) for _, stem in loaded]
    if len(set(names)) < len(names):
        raise InputError("two models would get the same C prefix: give them different file names")
    firmware = None
    if target != "host":
        from .firmware_build import firmware_target

        firmware = firmware_target(target, DEFAULT_STACK_BYTES)  # --ram is the firmware's RAM
    options = PlanOptions(planner=planner, time_limit=time_limit, ram=ram, target=firmware)
    planned = [plan_model(data, options, label=stem) for data, stem in loaded]
    shared = share_arena(names, planned, concurrent=concurrent)
    if ram is not None and shared.ram_needed > ram:
        raise DoesNotFit(f"the models need {shared.ram_needed:,} B, more than the {ram:,} B RAM budget")
    reports = []
    for index, ((data, stem), model) in enumerate(zip(loaded, planned, strict=True)):
        files = generate_models(shared, interface_of=index)
        reports.append(
            _check_generated(
                data, stem, model.graph, model.plan, files, target=target, inputs=inputs, seed=seed, ram=ram
            )
        )
    return reports


def _check_generated(
    model_bytes: bytes,
    stem: str,
    graph: Graph,
    plan: ArenaPlan,
    files: GeneratedSources,
    *,
    target: str,
    inputs: int,
    seed: int,
    check_build: bool = True,
    raise_on_mismatch: bool = True,
    ram: int | None = None,
    stack: int = DEFAULT_STACK_BYTES,
    keep_dir: str | os.PathLike[str] | None = None,
    input_sets: list[list[np.ndarray]] | None = None,
    sanitize: bool = False,
    extremes: bool = False,
    profile: bool = False,
    after_reset: int | None = None,
) -> CheckReport:
    """Run the generated `files` of one model on `target` and compare every
    output with the reference (see check_model)."""
    from .reference import run_isolated

    name = files.interface.name

    rng = np.random.default_rng(seed)
    if input_sets is None:
        input_sets = (extreme_inputs(graph) if extremes else []) + [random_inputs(graph, rng) for _ in range(inputs)]
    inputs = len(input_sets)
    # One interpreter, never reset: its variable tensors carry over as the C's do.
    expected = run_isolated(model_bytes, input_sets)
    reset_at = None
    if files.interface.variable_bytes:
        # After NAME_reset() the first sets must give what a new interpreter
        # gives for them (the first outputs again, unless the reference's
        # own start differs from its reset).
        reset_at = inputs
        replayed = min(REPLAYED_AFTER_RESET if after_reset is None else after_reset, inputs)
        expected = expected + run_isolated(model_bytes, input_sets[:replayed])
        input_sets = input_sets + input_sets[:replayed]
    runs = run_generated(
        graph,
        files,
        name,
        input_sets,
        target=target,
        ram=ram,
        stack=stack,
        check_build=check_build,
        keep_dir=keep_dir,
        reset_at=reset_at,
        sanitize=sanitize,
        profile=profile,
    )

    float_outputs = any(e.dtype == np.float32 for e in expected[0])
    report = CheckReport(
        model=stem,
        target=target,
        total=inputs,
        reset_total=len(input_sets) - inputs,
        exact=0,
        first_mismatch=None,
        ticks_per_inference=runs[0].ticks_per_inference,
        tick_unit=runs[0].tick_unit,
        arena_bytes=plan.arena_bytes,
        planner=plan.planner,
        float_outputs=float_outputs,
        notes=list(graph.notes),
        profile=runs[-1].profile if profile else None,
    )
    for s in range(len(input_sets)):
        sample_ok = True
        for run in runs:
            for o, want in enumerate(expected[s]):
                got = run.outputs[s][o]
                if want.dtype == np.float32:
                    report.max_float_error = max(report.max_float_error, _float_error(want, got))
                difference = _compare(want, got)
                if difference is not None:
                    sample_ok = False
                    if report.first_mismatch is None:
                        report.first_mismatch = (o, *difference)
                        report.mismatch_set = s
        if s < inputs:
            report.exact += sample_ok
        else:
            report.reset_exact += sample_ok
    if raise_on_mismatch and not report.passed:
        raise CheckMismatch(report.mismatch_message())
    return report
