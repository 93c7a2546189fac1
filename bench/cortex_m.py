"""Cortex-M figures under QEMU: flash, RAM and ticks per inference.

For every shared model the runtime supports and every board, the model is
planned (auto), generated, linked into firmware.elf with the semihosting
harness (RAM budget = the board's largest RAM region, so that only the link
decides what fits) and run once under `qemu-system-arm -icount shift=0` on a
seeded random input, whose outputs are compared with the TFLite reference
interpreter.  TFLM's total arena (head + tail) comes from
../shared/models/MODELS.md.  Writes bench/results/cortex-m.md.

    python bench/cortex_m.py [--boards mps2-an386,mps3-an547] [--models stem,stem] [--out FILE]
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

from shared_data import MODELS_DIR, parse_int, shared_model_paths, shared_model_table  # noqa: E402
from mcu_planner.check import random_inputs  # noqa: E402
from mcu_planner.pipeline import generate_for_model  # noqa: E402
from mcu_planner.codegen import c_identifier, write_output  # noqa: E402
from mcu_planner.errors import DoesNotFit, UnsupportedModel  # noqa: E402
from mcu_planner.firmware_build import board_names, build_firmware, load_board  # noqa: E402
from mcu_planner.qemu import run_firmware  # noqa: E402
from mcu_planner.reference import ReferenceModel  # noqa: E402

SEED = 2024


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
    tflm_total: int | None = None
    note: str = ""


def tflm_totals() -> dict[str, int]:
    totals = {}
    for row in shared_model_table():
        head, tail = parse_int(row["TFLM head B"]), parse_int(row["TFLM tail B"])
        if head is not None and tail is not None:
            totals[Path(row["file"]).stem] = head + tail
    return totals


def measure(path: Path, board_name: str, workdir: Path, tflm: dict[str, int], planner: str) -> Row:
    board = load_board(board_name)
    row = Row(path.stem, board_name, tflm_total=tflm.get(path.stem))
    model_bytes = path.read_bytes()
    name = c_identifier(path.stem)
    try:
        graph, plan, files = generate_for_model(model_bytes, name=name, planner=planner, label=str(path))
    except UnsupportedModel as exc:
        row.note = f"unsupported: {exc}"
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
    if any(e.dtype == np.float32 for e in expected):
        row.exact = all(
            np.allclose(np.frombuffer(got, "<f4"), e.reshape(-1), rtol=0, atol=1e-5 * max(1e-30, np.abs(e).max()))
            for got, e in zip(run.outputs, expected)
        )
    else:
        row.exact = all(got == e.tobytes() for got, e in zip(run.outputs, expected))
    return row


def _n(value) -> str:
    return "-" if value is None else f"{value:,}"


def render(rows: list[Row], boards: list[str], seconds: float, planner: str) -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = [
        "# Cortex-M under QEMU: flash, RAM, ticks per inference",
        "",
        f"Written by `python bench/cortex_m.py --planner {planner}` "
        f"({len(rows)} model x board runs, {seconds:.0f} s). Toolchain: `{gcc}`, `-O2`; `{qemu}`.",
        "",
        "- flash = text + data of firmware.elf (`arm-none-eabi-size`): code, weights, the harness and start-up.",
        "- RAM = data + bss: the arena, the stack reserve and everything else (harness, live counters).",
        "  \"stack used\" is the harness's high-water mark of the painted stack after one inference.",
        "- ticks = SysTick ticks around one `invoke()` under `-icount shift=0` (one instruction per virtual",
        "  nanosecond): deterministic, and x instructions/tick (board's SysTick clock: "
        + ", ".join(f"{b} {load_board(b).systick_hz // 10**6} MHz = {load_board(b).instructions_per_tick():g}" for b in boards)
        + ") = instructions executed.",
        "- exact: the run's outputs equal TFLite's reference interpreter (float models: within 1e-5 relative).",
        "- TFLM arena = head + tail from `../shared/models/MODELS.md` (what TFLM needs in RAM for the model,",
        "  before its own code's stack and statics). RAM / TFLM compares our whole RAM with TFLM's arena alone.",
        "",
        "| model | board | flash B | RAM B | arena B | stack reserve / used B | other B | ticks | ≈ instructions | exact | TFLM arena B | RAM / TFLM |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        if r.flash is None:
            lines.append(f"| {r.model} | {r.board} | {r.note} |||||||| {_n(r.tflm_total)} | |")
            continue
        other = r.ram - r.arena - r.stack_reserve
        ratio = f"{r.ram / r.tflm_total:.2f}" if r.tflm_total else "-"
        lines.append(
            f"| {r.model} | {r.board} | {_n(r.flash)} | {_n(r.ram)} | {_n(r.arena)} | "
            f"{_n(r.stack_reserve)} / {_n(r.stack_used)} | {_n(other)} | {_n(r.ticks)} | "
            f"{r.instructions:,.0f} | {'yes' if r.exact else 'NO'} | {_n(r.tflm_total)} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(board_names()))
    parser.add_argument("--planner", default="auto")
    parser.add_argument("--models", help="comma-separated model file stems (default: all shared models)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "cortex-m.md"))
    args = parser.parse_args()
    boards = args.boards.split(",")
    paths = shared_model_paths()
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    if not paths:
        print(f"no shared models found under {MODELS_DIR}", file=sys.stderr)
        return 2
    tflm = tflm_totals()
    rows = []
    started = time.monotonic()
    for path in paths:
        for board in boards:
            with tempfile.TemporaryDirectory(prefix="mcu-bench-") as scratch:
                try:
                    row = measure(path, board, Path(scratch), tflm, args.planner)
                except Exception as exc:  # one broken model must not hide the others' figures
                    row = Row(path.stem, board, tflm_total=tflm.get(path.stem), note=f"error: {type(exc).__name__}: {exc}")
            rows.append(row)
            print(f"{row.model:40} {row.board:11} flash {_n(row.flash):>10} RAM {_n(row.ram):>10} "
                  f"ticks {_n(row.ticks):>12} {row.note[:60]}", flush=True)
    Path(args.out).write_text(render(rows, boards, time.monotonic() - started, args.planner))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
