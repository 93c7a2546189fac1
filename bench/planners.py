"""Planner benchmark: `python bench/planners.py` writes bench/results/planners.md.

Measures, in one run on this machine:
  - per shared model (../shared/models, read by mcu_planner.frontend.reader, lifetimes
    at 16-byte alignment with aliasing on and off): the live-peak lower bound,
    every registered planner's arena and time, and TensorFlow Lite Micro's own
    arena (head = planned activations, total = head + persistent tail) from
    the `tflite-micro` package;
  - per interval instance (../shared/benchmarks): every planner's arena against
    the instance's capacity, minimalloc's own solver (built from
    ../shared/anchors/minimalloc with cmake when it and abseil are installed)
    on the same file, and OR-Tools CP-SAT when it is importable.
Every plan is checked by mcu_planner.memory.verify before it is counted.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.emit.tflm_plan import tflm_arena  # noqa: E402
from mcu_planner.errors import McuPlanError  # noqa: E402
from mcu_planner.memory.intervals import read_intervals  # noqa: E402
from mcu_planner.memory.planners import load_all  # noqa: E402
from mcu_planner.memory.planners.optimal import search  # noqa: E402
from mcu_planner.memory.planning import plan_within, run_planner  # noqa: E402
from mcu_planner.memory.problem import peak_live, problem_from_intervals  # noqa: E402
from mcu_planner.memory.verify import verify  # noqa: E402
from mcu_planner_testing.shared import ANCHORS_DIR, BENCHMARKS_DIR, provenance_lines, shared_model_paths  # noqa: E402

MINIMALLOC_SOURCES = ANCHORS_DIR / "minimalloc"
MINIMALLOC_BUILD = REPO / "bench" / "build" / "minimalloc"


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"Machine: {cpu}, {os.cpu_count()} cores (shared with other work while measured), "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}; "
        f"run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
    )


# ---- models ------------------------------------------------------------------


def cell(arena: int | None, seconds: float, proven: bool = False, note: str = "") -> str:
    if arena is None:
        return note or "failed"
    mark = "*" if proven else ""
    return f"{arena:,}{mark} ({seconds:.2f} s)"


def bench_models(names: list[str], time_limit: float) -> list[str]:
    from mcu_planner.frontend.reader import read_model
    from mcu_planner.memory.lifetimes import compute_lifetimes

    paths = shared_model_paths()
    lines = [
        "## Models",
        "",
        f"Lifetimes at 16-byte alignment; planners given {time_limit:g} s where they take a limit. "
        "Arena bytes (planner time); `*` = proven optimal for this op order. "
        "TFLM head = its planned activation section (GreedyMemoryPlanner), total = head + persistent tail, "
        "measured in this run with the `tflite-micro` package.",
        "",
        "| model | alias | buffers | lower bound | " + " | ".join(names) + " | TFLM head | TFLM total |",
        "|---|---|---:|---:|" + "---:|" * len(names) + "---:|---:|",
    ]
    for path in paths:
        label = f"{path.parent.name}/{path.stem}"
        tflm = tflm_arena(path)
        tflm_cells = [f"{tflm[0]:,}", f"{tflm[1]:,}"] if tflm else ["-", "-"]
        try:
            graph = read_model(path)
        except McuPlanError as exc:
            lines.append(
                f"| {label} | | | {type(exc).__name__}: {exc} |" + " |" * len(names) + " | ".join(tflm_cells) + " |"
            )
            continue
        for alias in (True, False):
            problem = compute_lifetimes(graph, alignment=16, alias=alias).problem
            row = [label, "on" if alias else "off", str(len(problem.buffers)), f"{peak_live(problem).bytes:,}"]
            for name in names:
                try:
                    plan = run_planner(problem, name, time_limit)
                    row.append(cell(plan.arena_bytes, plan.seconds, plan.proven_optimal))
                except Exception as exc:  # a planner bug: record it, keep measuring the rest
                    row.append(f"error: {type(exc).__name__}")
            lines.append("| " + " | ".join(row + tflm_cells) + " |")
            print("  ", " | ".join(row), flush=True)
    return lines


# ---- interval instances -------------------------------------------------------


def cpsat_fit(problem, capacity: int, time_limit: float) -> tuple[str, float]:
    """OR-Tools CP-SAT, NoOverlap2D with fixed lifetimes and free offsets, 2 workers."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x_intervals, y_intervals, offsets = [], [], {}
    for b in problem.buffers:
        if b.size <= 0 or b.end <= b.start:
            continue
        offset = model.NewIntVar(0, max(0, capacity - b.size), f"o{b.id}")
        offsets[b.id] = offset
        x_intervals.append(model.NewFixedSizeIntervalVar(b.start, b.end - b.start, f"t{b.id}"))
        y_intervals.append(model.NewFixedSizeIntervalVar(offset, b.size, f"m{b.id}"))
    model.AddNoOverlap2D(x_intervals, y_intervals)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 2
    started = time.perf_counter()
    status = solver.Solve(model)
    seconds = time.perf_counter() - started
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        plan = {i: int(solver.Value(v)) for i, v in offsets.items()}
        plan.update({b.id: 0 for b in problem.buffers if b.id not in plan})
        if verify(problem, plan, capacity):
            return "invalid plan", seconds
        return "fits", seconds
    if status == cp_model.INFEASIBLE:
        return "proved impossible", seconds
    return "no plan found", seconds


def build_minimalloc() -> tuple[Path | None, str]:
    """minimalloc's solver binary, built once into bench/build (cmake, g++,
    libabsl-dev); (None, why) when it cannot be built here."""
    binary = MINIMALLOC_BUILD / "minimalloc"
    if binary.is_file():
        return binary, ""
    if not (MINIMALLOC_SOURCES / "CMakeLists.txt").is_file():
        return None, f"no sources at {MINIMALLOC_SOURCES}"
    for step in (
        ["cmake", "-S", str(MINIMALLOC_SOURCES), "-B", str(MINIMALLOC_BUILD), "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", str(MINIMALLOC_BUILD), "-j2"],
    ):
        try:
            done = subprocess.run(step, capture_output=True, text=True)
        except FileNotFoundError:
            return None, "cmake is not installed"
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"build failed: {last[0][:120]}"
    return (binary, "") if binary.is_file() else (None, "build produced no binary")


def minimalloc_fit(binary: Path, path: Path, capacity: int, time_limit: float) -> str:
    """minimalloc asked to fit `capacity` (its own validator checks the plan)."""
    with tempfile.TemporaryDirectory(prefix="minimalloc-") as scratch:
        command = [
            str(binary),
            f"--capacity={capacity}",
            f"--input={path}",
            f"--output={scratch}/out.csv",
            "--validate",
            f"--timeout={time_limit:g}s",
        ]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=time_limit + 30)
        except subprocess.TimeoutExpired:
            return f"no plan found ({time.perf_counter() - started:.2f} s)"
        seconds = time.perf_counter() - started
    passed = re.search(r"Validation PASS, height (\d+)", done.stderr + done.stdout)
    if done.returncode == 0 and passed:
        return cell(int(passed.group(1)), seconds)
    return f"no plan found ({seconds:.2f} s)"


def interval_instances() -> list[tuple[str, Path, int | None]]:
    """(name, path, capacity) — minimalloc's capacity is in the file name; the
    TVM sets are posed without one (their optimum is the lower bound)."""
    found = []
    for path in sorted((BENCHMARKS_DIR / "minimalloc").glob("*.csv")):
        capacity = int(path.stem.split(".")[-1])
        found.append((f"minimalloc/{path.stem}", path, capacity))
    for path in sorted((BENCHMARKS_DIR / "tvm_usmp").glob("*.csv")):
        found.append((f"tvm_usmp/{path.stem.removeprefix('test_data_')}", path, None))
    return found


def bench_intervals(
    names: list[str],
    time_limit: float,
    heuristic_limit: float,
    cpsat: bool,
    cpsat_absent: str = "",
    minimalloc: Path | None = None,
    minimalloc_absent: str = "",
) -> list[str]:
    heuristics = [n for n in names if n != "optimal"]
    exact = ["optimal (first fit)", "auto"] if "optimal" in names else []
    columns = heuristics + exact + (["minimalloc (first fit)"] if minimalloc else []) + (["CP-SAT"] if cpsat else [])
    lines = [
        "## Interval instances",
        "",
        f"Arena bytes (time). `optimal (first fit)` is given the capacity and {time_limit:g} s and stops at "
        "the first plan that fits (the code path of `mcu-plan --intervals FILE --capacity N --planner optimal "
        "--stop-at-fit`: the time minimalloc's own figures measure); without a capacity it minimises. `auto` is what `mcu-plan --intervals FILE --capacity N` "
        f"does with `--time-limit {time_limit:g}`: the fast planners, then the exact one fits the capacity "
        "and tightens while time remains. "
        + f"Heuristic planners get {heuristic_limit:g} s where they take a limit. "
        + (
            f"CP-SAT: OR-Tools NoOverlap2D, 2 workers, {time_limit:g} s, asked to fit the capacity "
            "(the lower bound for the TVM sets). "
            if cpsat
            else f"CP-SAT: not measured in this run ({cpsat_absent}). "
        )
        + (
            f"minimalloc: its own solver built from `../shared/anchors/minimalloc`, run on the same file with "
            f"`--capacity` and `--timeout={time_limit:g}s` (stops at the first plan that fits; its validator checks it). "
            if minimalloc
            else f"minimalloc: not measured in this run ({minimalloc_absent}). "
        )
        + "`*` = proven optimal; `>cap` = over the capacity.",
        "",
        "| instance | buffers | lower bound | capacity | " + " | ".join(columns) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(columns),
    ]
    for label, path, capacity in interval_instances():
        buffers = read_intervals(path)
        problem = problem_from_intervals(buffers)
        bound = peak_live(problem).bytes
        target = capacity if capacity is not None else bound
        row = [label, str(len(buffers)), f"{bound:,}", f"{capacity:,}" if capacity else "-"]

        def over(arena: int, capacity: int | None = capacity) -> str:
            return " >cap" if capacity is not None and arena > capacity else ""

        for name in heuristics:
            try:
                plan = run_planner(problem, name, heuristic_limit)
                row.append(cell(plan.arena_bytes, plan.seconds, plan.proven_optimal) + over(plan.arena_bytes))
            except Exception as exc:
                row.append(f"error: {type(exc).__name__}")
        if "optimal" in names:
            started = time.perf_counter()
            if capacity is None:
                report = search(problem, time_limit)
                seconds = time.perf_counter() - started
                errors = verify(problem, report.offsets, report.arena_bytes)
                row.append("invalid plan" if errors else cell(report.arena_bytes, seconds, report.proven_optimal))
            else:
                # What `mcu-plan --intervals FILE --capacity N --planner optimal --stop-at-fit` runs
                # (plan_within verifies the plan).
                first = plan_within(problem, "optimal", time_limit, capacity, stop_at_fit=True)
                row.append(cell(first.arena_bytes, first.seconds, first.proven_optimal) + over(first.arena_bytes))
            plan = run_planner(problem, "auto", time_limit, capacity)
            row.append(cell(plan.arena_bytes, plan.seconds, plan.proven_optimal) + over(plan.arena_bytes))
        if minimalloc:
            row.append(minimalloc_fit(minimalloc, path, target, time_limit))
        if cpsat:
            answer, seconds = cpsat_fit(problem, target, time_limit)
            row.append(f"{answer} ({seconds:.2f} s)")
        lines.append("| " + " | ".join(row) + " |")
        print("  ", " | ".join(row), flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "planners.md"))
    parser.add_argument(
        "--time-limit", type=float, default=60.0, help="seconds per interval instance (optimal, CP-SAT)"
    )
    parser.add_argument("--model-time-limit", type=float, default=10.0, help="seconds per model for planners")
    parser.add_argument(
        "--heuristic-time-limit",
        type=float,
        default=10.0,
        help="seconds for time-limited heuristics on interval instances",
    )
    parser.add_argument("--no-cpsat", action="store_true", help="skip CP-SAT even when ortools is importable")
    parser.add_argument("--no-minimalloc", action="store_true", help="skip building and running minimalloc")
    parser.add_argument("--skip-models", action="store_true")
    args = parser.parse_args(argv)

    names = list(load_all())
    try:
        import ortools  # noqa: F401

        cpsat, cpsat_absent = not args.no_cpsat, "skipped with --no-cpsat"
    except ImportError:
        cpsat, cpsat_absent = False, "`ortools` is not importable; it is not a dependency"

    minimalloc, minimalloc_absent = (None, "skipped with --no-minimalloc") if args.no_minimalloc else build_minimalloc()
    lines = [
        "# Planner benchmark",
        "",
        machine_line(),
        "",
        f"Command: `python bench/planners.py` ({' '.join(sys.argv[1:]) or 'defaults'}).",
        "",
    ]
    if not args.skip_models:
        print("models:", flush=True)
        lines += bench_models(names, args.model_time_limit) + [""]
    print("interval instances:", flush=True)
    lines += bench_intervals(
        names, args.time_limit, args.heuristic_time_limit, cpsat, cpsat_absent, minimalloc, minimalloc_absent
    ) + [""]
    inputs = ([] if args.skip_models else shared_model_paths()) + [path for _, path, _ in interval_instances()]
    lines += provenance_lines(inputs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
