"""Cortex-M figures under QEMU: flash, RAM and ticks per inference.

For every shared model the runtime supports and every board, the model is
planned (auto), generated, linked into firmware.elf with the semihosting
harness (RAM budget = the board's largest RAM region, so that only the link
decides what fits) and run once under `qemu-system-arm -icount shift=0` on a
seeded random input, whose outputs are compared with the TFLite reference
interpreter.  In the same run, on the same input bytes, the prebuilt TFLM
runner firmware of ../shared/anchors/tflm-cortex-m (TFLM + CMSIS-NN, and TFLM
with its reference kernels) runs the same model under the same QEMU command,
so every ratio compares figures measured side by side.  Writes bench/results/cortex-m.md.

ESPHome's streaming microWakeWord models (../shared/peer-tests/microwakeword:
state in resource variables) are measured beside the shared models.  Their
first invoke also initialises the state (ours: NAME_reset() copies it in;
TFLM: CALL_ONCE runs the init subgraph), so for them the second invoke on
the same input is given as well, under the table.

Beside the shared models it runs builder-made ones (BUILDER_MODELS: the
convolution windows and other dtypes of issue 23, written to a temporary directory), named by
their stems like the shared ones.

    python bench/cortex_m.py [--boards mps2-an386,mps3-an547] [--models stem,stem] [--out FILE] [--clock 120M]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.emit.c_literals import c_identifier  # noqa: E402
from mcu_planner.emit.output_dir import write_output  # noqa: E402
from mcu_planner.errors import DoesNotFit, McuPlanError, UnsupportedModel, one_line  # noqa: E402
from mcu_planner.graph import Quantization  # noqa: E402
from mcu_planner.pipeline import DEFAULT_TIME_LIMIT, generate_for_model  # noqa: E402
from mcu_planner.targets.check import random_inputs  # noqa: E402
from mcu_planner.targets.cycles import core_for_cpu_flags, estimate_call, parse_clock  # noqa: E402
from mcu_planner.targets.firmware_build import board_names, build_firmware, load_board  # noqa: E402
from mcu_planner.targets.qemu import qemu_command, run_firmware  # noqa: E402
from mcu_planner.targets.reference import ReferenceModel  # noqa: E402
from mcu_planner_testing.builder import Int8Net, Int16x8Net, lstm_model  # noqa: E402
from mcu_planner_testing.shared import (  # noqa: E402
    ANCHORS_DIR,
    MODELS_DIR,
    SHARED,
    provenance_lines,
    shared_model_paths,
)

SEED = 2024
TFLM_RUNNERS = ANCHORS_DIR / "tflm-cortex-m"
# The runner ELFs' kernel sets, in table order: TFLM with CMSIS-NN, TFLM with its reference kernels.
TFLM_KERNEL_SETS = ("cmsis-nn", "reference")
# The function the TFLM runners time (their first call is their `ticks`), traced for the cycle estimate.
TFLM_INVOKE = "tflite::MicroInterpreter::Invoke()"
# Streaming models whose state lives in resource variables (CALL_ONCE), measured with the shared models.
STREAMING_MODELS_DIR = SHARED / "peer-tests" / "microwakeword"


def model_paths(stems: str | None) -> list[Path]:
    """The shared models and the streaming ones (only those whose stem is in `stems`, if given)."""
    wanted = set(stems.split(",")) if stems else None
    streaming = [p for p in sorted(STREAMING_MODELS_DIR.glob("*.tflite")) if wanted is None or p.stem in wanted]
    return shared_model_paths(stems) + streaming


def _single_conv(seed: int, shape: tuple[int, ...], filters: int, kernel: tuple[int, int], strides=(1, 1)) -> bytes:
    net = Int8Net(seed, description=f"bench: one {kernel[0]}x{kernel[1]}x{shape[-1]} CONV_2D")
    x = net.input(shape, -1.0, 1.0)
    return net.build(net.conv2d(x, filters, kernel=kernel, strides=strides, padding="SAME", activation="RELU"))


class _Int16x8ConverterNet(Int16x8Net):
    """Int16x8Net with the fully connected weights quantized per tensor, as
    the converter writes them (TFLM's CMSIS-NN FULLY_CONNECTED rejects
    per-channel ones in 16x8)."""

    def _weights(self, shape, axis: int, std: float) -> tuple[np.ndarray, Quantization]:
        if len(shape) != 2:
            return super()._weights(shape, axis, std)
        real = self.rng.normal(0.0, std, size=tuple(shape)).astype(np.float32)
        scale = np.float32(max(float(np.max(np.abs(real))), 1e-8)) / np.float32(127.0)
        return np.clip(np.round(real / scale), -127, 127).astype(np.int8), Quantization((float(scale),), (0,))


def _ds_cnn_16x8(seed: int) -> bytes:
    """A DS-CNN in TFLite's 16x8 scheme (int16 activations, int8 weights): a
    10x4 first convolution on one channel, four depthwise 3x3 + pointwise
    blocks on 64 channels, average pool, fully connected, softmax."""
    net = _Int16x8ConverterNet(seed, description="bench: 16x8 DS-CNN")
    x = net.input((1, 49, 10, 1), -1.0, 1.0)
    x = net.conv2d(x, 64, kernel=(10, 4), strides=(2, 2), padding="SAME", activation="RELU")
    for _ in range(4):
        x = net.depthwise_conv2d(x, kernel=(3, 3), padding="SAME", activation="RELU")
        x = net.conv2d(x, 64, kernel=(1, 1), padding="SAME", activation="RELU")
    x = net.average_pool2d(x, pool=(25, 5), strides=(25, 5))
    x = net.reshape(x, (1, 64))
    return net.build(net.softmax(net.fully_connected(x, 12)))


# Stem -> builder for models with the convolution windows the shared models
# lack (issue 23): windows past the 640 values of a column (5x5x32, 10x4x64,
# 3x3x160) and first layers on 1 and 3 input channels.
BUILDER_MODELS = {
    "conv_5x5x32": lambda: _single_conv(51, (1, 12, 12, 32), 32, (5, 5)),
    "conv_10x4x64": lambda: _single_conv(52, (1, 13, 5, 64), 64, (10, 4)),
    "conv_3x3x160": lambda: _single_conv(53, (1, 10, 10, 160), 32, (3, 3)),
    "first_conv_10x4x1": lambda: _single_conv(54, (1, 49, 10, 1), 64, (10, 4), strides=(2, 2)),
    "first_conv_3x3x3": lambda: _single_conv(55, (1, 48, 48, 3), 16, (3, 3), strides=(2, 2)),
    # Other dtypes (issue 23): a 16x8 DS-CNN and a float LSTM (25 steps, 24 cells).
    "ds_cnn_16x8": lambda: _ds_cnn_16x8(56),
    "lstm_f32_25x24": lambda: lstm_model("float32", batch=1, time=25, n_input=16, n_cell=24, seed=57),
}


def builder_model_paths(directory: Path, stems: str | None = None) -> list[Path]:
    """BUILDER_MODELS written as .tflite files under `directory` (those in `stems` if given)."""
    wanted = set(stems.split(",")) if stems else None
    paths = []
    for stem, build in BUILDER_MODELS.items():
        if wanted is None or stem in wanted:
            path = directory / f"{stem}.tflite"
            path.write_bytes(build())
            paths.append(path)
    return paths


def tflm_runner_module():
    """The anchor's own runner helper, read in place from ../shared (None when absent)."""
    helper = TFLM_RUNNERS / "tflm_runner.py"
    if not helper.is_file():
        return None
    sys.path.insert(0, str(TFLM_RUNNERS))
    import tflm_runner  # noqa: PLC0415

    return tflm_runner


def elf_code_bytes(elf: Path) -> int:
    """text + data of an ELF (arm-none-eabi-size, Berkeley format)."""
    out = subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True, check=True).stdout
    text, data = (int(v) for v in out.splitlines()[1].split()[:2])
    return text + data


@dataclass
class Row:
    model: str
    board: str
    flash: int | None = None
    ram: int | None = None
    arena: int | None = None
    stack_reserve: int | None = None
    stack_used: int | None = None
    ticks: int | None = None
    instructions: float | None = None
    exact: bool | None = None
    weight_bytes: int | None = None
    # kernel set -> (ticks, arena_used, exact vs the reference) of the TFLM runner on the same input
    tflm: dict = None  # type: ignore[assignment]
    note: str = ""
    # Models with state: ticks of the second invoke on the same input, ours and (kernel set ->) TFLM's.
    second_ticks: int | None = None
    tflm_second: dict = None  # type: ignore[assignment]
    # Cycle estimate of one invoke (mcu_planner/targets/cycles.py), ours and TFLM+CMSIS-NN's first.
    cycles: int | None = None
    tflm_cycles: int | None = None
    clock_hz: int | None = None

    def __post_init__(self) -> None:
        if self.tflm is None:
            self.tflm = {}
        if self.tflm_second is None:
            self.tflm_second = {}


def outputs_match(got: list[bytes], expected: list[np.ndarray]) -> bool:
    """Bytes equal to the reference; float outputs within 1e-5 of the largest magnitude."""
    if len(got) != len(expected):
        return False
    for raw, e in zip(got, expected, strict=True):
        if e.dtype == np.float32:
            g = np.frombuffer(raw, "<f4")
            if g.size != e.size or not np.allclose(g, e.reshape(-1), rtol=0, atol=1e-5 * max(1e-30, np.abs(e).max())):
                return False
        elif raw != e.tobytes():
            return False
    return True


def measure_tflm(
    runner,
    path: Path,
    board_name: str,
    inputs: list[np.ndarray],
    expected,
    workdir: Path,
    second: dict | None = None,
    cycles: dict | None = None,
) -> dict:
    """Ticks, arena and exactness of each TFLM runner ELF on `inputs`
    (and into `second`, when given: each one's ticks of its second invoke;
    into `cycles`, when given: TFLM+CMSIS-NN's cycle estimate of its first invoke)."""
    results = {}
    for kernels in TFLM_KERNEL_SETS:
        elf = TFLM_RUNNERS / f"{board_name}-{kernels}.elf"
        if not elf.is_file():
            continue
        r = runner.run(elf, path, inputs, board=board_name, workdir=workdir / f"tflm-{kernels}")
        if r.get("status") != 0:
            results[kernels] = (None, None, None, f"status {r.get('status')} {r.get('error', '')}".strip())
            continue
        results[kernels] = (r["ticks"], r["arena_used"], outputs_match(r["outputs"], expected), elf_code_bytes(elf))
        timing = core_for_cpu_flags(load_board(board_name).cpu_flags)
        if kernels == "cmsis-nn" and timing is not None and cycles is not None:
            # The runner left model.tflite and the inputs in its workdir: trace the same run there.
            machine = load_board(board_name).qemu_machine
            try:
                command = qemu_command(machine, elf)
                regions = estimate_call(elf, command, timing, workdir / f"tflm-{kernels}", TFLM_INVOKE)
                cycles["cmsis-nn"] = regions[0].cycles
            except McuPlanError as exc:
                print(f"{path.stem} on {board_name}: no cycle estimate for TFLM: {one_line(exc)}", file=sys.stderr)
        if second is not None:
            second[kernels] = r.get("ticks2")
    return results


def measure(
    path: Path,
    board_name: str,
    workdir: Path,
    planner: str,
    runner=None,
    *,
    ram: int | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> Row:
    """One model on one board; `ram` and `time_limit` plan it as `mcu-plan --ram RAM --time-limit T` does."""
    board = load_board(board_name)
    row = Row(path.stem, board_name)
    model_bytes = path.read_bytes()
    name = c_identifier(path.stem)
    try:
        graph, plan, files = generate_for_model(
            model_bytes, name=name, planner=planner, label=str(path), ram=ram, time_limit=time_limit
        )
    except UnsupportedModel as exc:
        row.note = f"unsupported: {one_line(exc)}"
        return row
    outdir = write_output(files, workdir / "out")
    try:
        firmware = build_firmware(
            outdir,
            model=files.interface,
            board=board_name,
            ram_bytes=max(region.length for region in board.ram),
        )
    except DoesNotFit as exc:
        row.note = f"does not fit: {exc}"
        return row
    row.flash, row.ram, row.arena = firmware.flash_bytes, firmware.ram_bytes, firmware.arena_bytes
    row.weight_bytes = sum(t.nbytes for t in graph.tensors if t.is_constant)
    row.stack_reserve = firmware.stack_bytes

    inputs = random_inputs(graph, np.random.default_rng(SEED))
    run = run_firmware(
        firmware.elf,
        machine=board.qemu_machine,
        inputs=[np.ascontiguousarray(a).tobytes() for a in inputs],
        num_outputs=len(graph.outputs),
        workdir=workdir / "run",
    ).check()
    row.ticks, row.stack_used = run.ticks, run.stack_used
    row.instructions = run.ticks * board.instructions_per_tick()
    expected = ReferenceModel(model_bytes).run(inputs)
    row.exact = outputs_match(run.outputs, expected)
    timing = core_for_cpu_flags(board.cpu_flags)
    if timing is not None:
        # The same firmware on the same input files (left in the run directory), traced.
        try:
            command = qemu_command(board.qemu_machine, firmware.elf)
            regions = estimate_call(firmware.elf, command, timing, workdir / "run", f"{name}_invoke")
            row.cycles, row.clock_hz = regions[0].cycles, board.systick_hz
        except McuPlanError as exc:  # the figures measured so far stand without the estimate
            row.note = f"no cycle estimate: {one_line(exc)}"
    stateful = files.interface.variable_bytes > 0
    if stateful:
        # The harness reports the mean of the invokes it runs: two on the same input give the second's.
        twice = run_firmware(
            firmware.elf,
            machine=board.qemu_machine,
            inputs=[np.ascontiguousarray(a).tobytes() * 2 for a in inputs],
            num_outputs=len(graph.outputs),
            workdir=workdir / "run-twice",
        ).check()
        row.second_ticks = 2 * twice.ticks - run.ticks
    if runner is not None:
        second = row.tflm_second if stateful else None
        tflm_cycles: dict = {}
        row.tflm = measure_tflm(runner, path, board_name, inputs, expected, workdir, second, tflm_cycles)
        row.tflm_cycles = tflm_cycles.get("cmsis-nn")
    return row


def _n(value) -> str:
    return "-" if value is None else f"{value:,}"


def _ratio(ours: int | None, theirs: int | None) -> str:
    return f"{ours / theirs:.2f}" if ours and theirs else "-"


def _ms(cycles: int | None, clock_hz: int | None) -> str:
    return f"{1e3 * cycles / clock_hz:.2f}" if cycles and clock_hz else "-"


def _exact(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def render(
    rows: list[Row], boards: list[str], seconds: float, planner: str, inputs: list[Path], clock_hz: int | None = None
) -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = [
        "# Cortex-M under QEMU: ticks, flash and RAM beside TFLM + CMSIS-NN",
        "",
        f"Written by `python bench/cortex_m.py --planner {planner}` "
        f"({len(rows)} model x board runs, {seconds:.0f} s). Toolchain: `{gcc}`, `-O2`; `{qemu}`.",
        "TFLM columns: the prebuilt runners of `../shared/anchors/tflm-cortex-m` (TFLM + CMSIS-NN, and TFLM with its",
        "reference kernels), run in the same script on the same input bytes under the same QEMU command line.",
        "",
        "- ticks = SysTick ticks around one invoke under `-icount shift=0` (one instruction per virtual",
        "  nanosecond): deterministic; x instructions/tick (board's SysTick clock: "
        + ", ".join(
            f"{b} {load_board(b).systick_hz // 10**6} MHz = {load_board(b).instructions_per_tick():g}" for b in boards
        )
        + ") = instructions executed. TFLM's figure is its first `Invoke()`.",
        "- ours / CMSIS-NN < 1 means we run fewer instructions than TFLM with CMSIS-NN.",
        "- cycles (est.) = the cycle estimate of one invoke (mcu_planner/targets/cycles.py: QEMU's executed",
        "  translation blocks weighted with the Cortex-M4 TRM timings, Helium by the M55's dual-beat model; zero",
        "  wait states, no caches; see docs/benchmarks.md); ms "
        + (
            f"at {clock_hz / 1e6:g} MHz (--clock);" if clock_hz else "at the board's nominal clock (its SysTick clock);"
        ),
        "  TFLM's is its first `Invoke()`, traced the same way.",
        "- exact: outputs equal LiteRT's reference kernels (float models: within 1e-5 of the largest magnitude),",
        "  for ours / TFLM+CMSIS-NN / TFLM reference.",
        "- code+tables = our firmware's text + data minus the weights (runtime kernels, per-channel tables, harness,",
        "  start-up); TFLM runner = the runner ELF's text + data (interpreter, all kernels, harness; the model is",
        "  loaded at run time, so no weights).",
        "- RAM = our data + bss (arena, stack reserve, statics); TFLM arena = `arena_used` that TFLM reports in the",
        "  same run (its planned tensors plus its runtime structures), before its own stack and statics.",
        "",
        "| model | board | ticks: ours | TFLM+CMSIS-NN | TFLM ref | ours / CMSIS-NN | ours / ref "
        f"| instructions: ours | cycles (est.): ours | ms @ {f'{clock_hz / 1e6:g} MHz' if clock_hz else 'nominal'} "
        "| cycles: TFLM+CMSIS-NN | cycles ours / CMSIS-NN "
        "| exact | code+tables B | weights B | TFLM runner B | arena B | RAM B | stack reserve / used B | TFLM arena B |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cmsis = r.tflm.get("cmsis-nn", (None,) * 4)
        ref = r.tflm.get("reference", (None,) * 4)
        if r.flash is None:
            lines.append(
                f"| {r.model} | {r.board} | {r.note} | {_n(cmsis[0])} | {_n(ref[0])} ||||||||||||||| {_n(cmsis[1])} |"
            )
            continue
        exact = " / ".join(_exact(flag) for flag in (r.exact, cmsis[2], ref[2]))
        runner_bytes = cmsis[3] if isinstance(cmsis[3], int) else None
        lines.append(
            f"| {r.model} | {r.board} | {_n(r.ticks)} | {_n(cmsis[0])} | {_n(ref[0])} | {_ratio(r.ticks, cmsis[0])} | "
            f"{_ratio(r.ticks, ref[0])} | {_n(round(r.instructions) if r.instructions else None)} | "
            f"{_n(r.cycles)} | {_ms(r.cycles, r.clock_hz)} | {_n(r.tflm_cycles)} | {_ratio(r.cycles, r.tflm_cycles)} | "
            f"{exact} | {_n(r.flash - r.weight_bytes)} | {_n(r.weight_bytes)} | "
            f"{_n(runner_bytes)} | {_n(r.arena)} | {_n(r.ram)} | {_n(r.stack_reserve)} / {_n(r.stack_used)} | "
            f"{_n(cmsis[1])} |"
        )
    stateful = [r for r in rows if r.second_ticks is not None]
    if stateful:
        lines += ["", "Models with state, second invoke on the same input (the first also initialises the state):", ""]
        for r in stateful:
            cmsis = r.tflm_second.get("cmsis-nn")
            lines.append(
                f"- {r.model} on {r.board}: ours {_n(r.second_ticks)} ticks, TFLM+CMSIS-NN {_n(cmsis)}, "
                f"TFLM ref {_n(r.tflm_second.get('reference'))} (ours / CMSIS-NN {_ratio(r.second_ticks, cmsis)})"
            )
    return "\n".join(lines + [""] + provenance_lines(inputs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(board_names()))
    parser.add_argument("--planner", default="auto")
    parser.add_argument(
        "--models", help="comma-separated model file stems (default: all shared and BUILDER_MODELS models)"
    )
    parser.add_argument("--save-models", help="also write the BUILDER_MODELS .tflite files to this directory")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "cortex-m.md"))
    parser.add_argument(
        "--clock",
        type=parse_clock,
        help="give the cycle estimate's ms at this clock, e.g. 120M (default: each board's)",
    )
    args = parser.parse_args()
    boards = args.boards.split(",")
    models_dir = Path(args.save_models or tempfile.mkdtemp(prefix="mcu-bench-models-"))
    models_dir.mkdir(parents=True, exist_ok=True)
    paths = model_paths(args.models) + builder_model_paths(models_dir, args.models)
    if not paths:
        print(f"no shared models found under {MODELS_DIR}", file=sys.stderr)
        return 2
    runner = tflm_runner_module()
    if runner is None:
        print(f"no TFLM runners under {TFLM_RUNNERS}: TFLM columns stay empty", file=sys.stderr)
    rows = []
    started = time.monotonic()
    for path in paths:
        for board in boards:
            with tempfile.TemporaryDirectory(prefix="mcu-bench-") as scratch:
                try:
                    row = measure(path, board, Path(scratch), args.planner, runner)
                except Exception as exc:  # one broken model must not hide the others' figures
                    row = Row(path.stem, board, note=f"error: {type(exc).__name__}: {exc}")
            if args.clock and row.cycles:
                row.clock_hz = args.clock
            rows.append(row)
            cmsis_ticks = row.tflm.get("cmsis-nn", (None,))[0]
            print(
                f"{row.model:40} {row.board:11} ticks {_n(row.ticks):>12} TFLM+CMSIS-NN {_n(cmsis_ticks):>12} "
                f"ratio {_ratio(row.ticks, cmsis_ticks):>5} cycles {_n(row.cycles):>12} "
                f"TFLM+CMSIS-NN {_n(row.tflm_cycles):>12} {row.note[:60]}",
                flush=True,
            )
    runners = sorted(TFLM_RUNNERS.glob("*.elf")) if runner is not None else []
    inputs = list(paths) + runners
    Path(args.out).write_text(render(rows, boards, time.monotonic() - started, args.planner, inputs, args.clock))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
