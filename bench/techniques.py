"""Arena techniques, measured: `python bench/techniques.py` writes bench/results/techniques.md.

For every shared model (`--models stem,stem` for a subset), in one run:

- the layer-wise live peak (the most aligned bytes of whole tensors alive at
  one op step) and the default arena (`mcu-plan MODEL`: no budget, so the
  techniques that cost time stay off);
- the smallest `--ram` the tool reaches, found by `pipeline.smallest_ram`:
  a bisection, in alignment units, between the default plan's RAM need
  (fits) and one unit below the variable tensors (cannot), each probe
  planned as `mcu-plan MODEL --ram R` plans it; the arena at that budget;
- the techniques each plan uses, read from its plan JSON
  (`report.plan_json`): `techniques` counts such as overlaps, in-place ops
  and in-place depthwise convolutions, a memory-aware op order, and a
  `patches` record when patch-based execution is on; the MAC overhead is
  the patches' `extra_macs` over `model_macs` (recomputed halos), 0 for
  every other technique (they move bytes, not work);
- M4 ticks (mps2-an386, `bench/cortex_m.py`'s `measure`: the same firmware,
  QEMU command and seeded input) at both plans, the tick overhead of the
  smallest plan over the default one, and whether each run's outputs equal
  LiteRT's reference kernels; a model that does not fit the board says so;
- TensorFlow Lite Micro's own arena for the model (head: its planned
  activations; total: head and its persistent tail; `tflite-micro` package).

Every plan is checked by mcu_planner.memory.verify before it is counted.  Below the
table, for each model whose smallest arena lies below its live peak, the op
steps at which that arena's top is reached: the buffers alive there, their
offsets, and each overlap bound the step allows against the offset taken.

    python bench/techniques.py [--models stem,stem] [--time-limit S] [--no-qemu] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import cortex_m  # noqa: E402

from mcu_planner.emit.report import mac_overhead_percent, plan_json, technique_names  # noqa: E402
from mcu_planner.emit.tflm_plan import tflm_arena  # noqa: E402
from mcu_planner.errors import McuPlanError, one_line  # noqa: E402
from mcu_planner.memory.problem import Buffer, align_down, peak_live  # noqa: E402
from mcu_planner.memory.verify import verify  # noqa: E402
from mcu_planner.pipeline import PlannedModel, PlanOptions, plan_model, smallest_ram  # noqa: E402
from mcu_planner_testing.shared import MODELS_DIR, provenance_lines, shared_model_paths  # noqa: E402

BOARD = "mps2-an386"


def plan_record(planned: PlannedModel, model: str) -> dict:
    """The plan JSON `mcu-plan --json` writes for `planned`."""
    alias = planned.options.alias
    return plan_json(model, planned.graph, planned.lifetimes, planned.plan, alias, planned.op_order)


# One naming of a plan's techniques for the bench and `mcu-plan --ram min` (report.py).
techniques_used, mac_overhead = technique_names, mac_overhead_percent


def _buffer_line(planned: PlannedModel, buffer: Buffer) -> str:
    tensor = planned.graph.tensors[buffer.id]
    shape = "x".join(str(d) for d in tensor.shape)
    at = planned.plan.offsets[buffer.id]
    return (
        f"buffer #{buffer.id} {tensor.dtype}[{shape}] at {at:,}..{at + buffer.size:,} ({buffer.size:,} B, "
        f"steps {buffer.start}..{buffer.end - 1})"
    )


def _step_name(planned: PlannedModel, index: int) -> str:
    op = planned.graph.operators[index]
    return f"step {index} ({op.opcode}, model op {op.index})"


def peak_steps(planned: PlannedModel) -> list[str]:
    """Markdown lines: each op step at which the plan's arena top is reached
    with its live buffers, then every overlap the plan takes at its bound
    (the constraints that hold the arena where it is), with its walk."""
    problem, offsets, top = planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes
    buffers = problem.by_id()
    lines = []
    for index in range(problem.num_steps):
        live = [b for b in problem.buffers if b.start <= index < b.end]
        if live and max(offsets[b.id] + b.size for b in live) == top:
            lines.append(f"- top reached at {_step_name(planned, index)}:")
            lines += [f"  - {_buffer_line(planned, b)}" for b in sorted(live, key=lambda b: offsets[b.id])]
    limits = problem.overlap_limits()
    for index, step in enumerate(problem.steps):
        for o in step.overlaps:
            if (o.output, o.input) not in limits:
                continue
            taken = offsets[o.output] - offsets[o.input]
            if taken != align_down(o.max_offset, problem.alignment):
                continue
            a = o.access
            walk = (
                f"{a.input_h}x{a.input_w}x{a.input_pixel_bytes} B -> {a.output_h}x{a.output_w}x{a.output_pixel_bytes}"
                f" B, window {a.filter_h}x{a.filter_w} stride {a.stride_h}, groups of {a.group} pixels"
            )
            lines.append(
                f"- overlap at its bound, {_step_name(planned, index)}: output #{o.output} starts {taken:+,} B from "
                f"input #{o.input} (bound {o.max_offset:+,} B; {walk}{', slower walk' if o.slower else ''}); "
                f"{_buffer_line(planned, buffers[o.output])}"
            )
    return lines


@dataclass
class Measured:
    cells: list[str]
    peaks: list[str]


def _ticks(path: Path, ram: int | None, time_limit: float, arena: int) -> cortex_m.Row:
    with tempfile.TemporaryDirectory(prefix="mcu-techniques-") as scratch:
        row = cortex_m.measure(path, BOARD, Path(scratch), "auto", ram=ram, time_limit=time_limit)
    if row.arena is not None and row.arena != arena:
        row.note = f"firmware arena {row.arena:,} B, not the plan's {arena:,} B"
    return row


def _tick_cells(default: cortex_m.Row, small: cortex_m.Row) -> list[str]:
    def cell(row: cortex_m.Row) -> str:
        if row.ticks is None:
            return row.note or "-"
        return f"{row.ticks:,}" + (f" ({row.note})" if row.note else "")

    overhead = "-"
    if default.ticks and small.ticks:
        overhead = f"{100.0 * (small.ticks - default.ticks) / default.ticks:+.1f}%"
    exact = " / ".join(cortex_m._exact(row.exact) for row in (default, small))
    return [cell(default), cell(small), overhead, exact]


def measure(path: Path, time_limit: float, qemu: bool) -> Measured:
    options = PlanOptions(time_limit=time_limit)
    default = plan_model(path, options)
    started = time.perf_counter()
    small = smallest_ram(path, options)
    seconds = time.perf_counter() - started
    for planned in (default, small):
        problem, plan = planned.lifetimes.problem, planned.plan
        assert verify(problem, plan.offsets, plan.arena_bytes) == [], path
    records = [plan_record(planned, path.stem) for planned in (default, small)]
    live_peak = peak_live(default.lifetimes.problem).bytes
    tflm = tflm_arena(str(path))
    cells = [
        path.stem,
        f"{live_peak:,}",
        f"{default.plan.arena_bytes:,}",
        ", ".join(techniques_used(records[0])) or "-",
        f"{small.options.ram:,}",
        f"{small.plan.arena_bytes:,}",
        ", ".join(techniques_used(records[1])) or "-",
        f"{mac_overhead(records[1]):.1f}%",
    ]
    if qemu:
        cells += _tick_cells(
            _ticks(path, None, time_limit, default.plan.arena_bytes),
            _ticks(path, small.options.ram, time_limit, small.plan.arena_bytes),
        )
    else:
        cells += ["not run"] * 4
    cells += [f"{seconds:.1f}", f"{tflm[0]:,} / {tflm[1]:,}" if tflm else "refused"]
    below = small.plan.arena_bytes < live_peak
    return Measured(cells, [f"**{path.stem}** at `--ram {small.options.ram}`:"] + peak_steps(small) if below else [])


HEADER = [
    "model",
    "live peak B",
    "arena B (default)",
    "techniques (default)",
    "smallest --ram B",
    "arena B there",
    "techniques there",
    "MAC overhead",
    f"{BOARD} ticks (default)",
    "ticks (smallest)",
    "tick overhead",
    "exact (default / smallest)",
    "search s",
    "TFLM head / total B",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model file stems (default: all shared models)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="the exact planner's limit per plan")
    parser.add_argument("--no-qemu", action="store_true", help="plans only: no firmware, no ticks")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "techniques.md")
    args = parser.parse_args()
    paths = shared_model_paths(args.models)
    if not paths:
        print(f"no shared models found under {MODELS_DIR}", file=sys.stderr)
        return 2
    rows, peaks = [], []
    started = time.monotonic()
    for path in paths:
        try:
            measured = measure(path, args.time_limit, not args.no_qemu)
        except McuPlanError as exc:
            measured = Measured([path.stem, f"not planned: {one_line(exc)}"] + [""] * (len(HEADER) - 2), [])
        rows.append(measured.cells)
        peaks += measured.peaks + ([""] if measured.peaks else [])
        print(" | ".join(measured.cells), flush=True)
    lines = [
        "# Arena techniques: smallest --ram, MAC and tick overhead, TFLM",
        "",
        f"Written by `python bench/techniques.py` ({len(rows)} models, {time.monotonic() - started:.0f} s; see its",
        "docstring). Every plan verified. The smallest `--ram` is found by bisection over the budget through",
        "`pipeline.smallest_ram` (one alignment unit less does not fit); like `--ram` it counts the variable",
        "tensors kept beside the arena. Ticks: SysTick ticks of one inference",
        f"on {BOARD} under `qemu-system-arm -icount shift=0` (as `bench/cortex_m.py`), outputs compared with",
        "LiteRT's reference kernels (float outputs within 1e-5 of the largest magnitude).",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if peaks:
        lines += ["", "## Where the smallest arenas peak", ""] + peaks
    lines += [""] + provenance_lines(paths)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
