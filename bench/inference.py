"""Host inference time: generated C vs TensorFlow Lite Micro, same run.

For every shared model the runtime supports, the generated C (auto plan,
`cc -O2`) is timed inside its C harness over N invocations, and TFLM's Python
interpreter `invoke()` over the same N on the same input.  Both clocks are
process CPU time.  Writes bench/results/inference.md.

    python bench/inference.py [--seconds 0.5] [--models stem,stem] [--out FILE]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.emit.c_literals import c_identifier  # noqa: E402
from mcu_planner.emit.output_dir import write_output  # noqa: E402
from mcu_planner.errors import UnsupportedModel, one_line  # noqa: E402
from mcu_planner.pipeline import generate_for_model  # noqa: E402
from mcu_planner.targets.check import HostTarget, random_inputs  # noqa: E402
from mcu_planner_testing.shared import MODELS_DIR, provenance_lines, shared_model_paths  # noqa: E402


def tflm_seconds(model_bytes: bytes, inputs: list[np.ndarray], iterations: int, arena_bytes: int) -> float:
    from tflite_micro.python.tflite_micro import runtime

    # TFLM's own planner may need more than ours, plus its persistent structs.
    interpreter = runtime.Interpreter.from_bytes(model_bytes, arena_size=2 * arena_bytes + (1 << 20))
    for index, array in enumerate(inputs):
        interpreter.set_input(array, index)
    interpreter.invoke()  # first invoke outside the timing, as in the C harness
    started = time.process_time()
    for _ in range(iterations):
        interpreter.invoke()
    return (time.process_time() - started) / iterations


def generated_seconds(
    target: HostTarget, generated: Path, name: str, graph, sample: list[bytes], iterations: int, workdir: Path
) -> float:
    run = target.run(
        generated,
        name,
        [sample],
        input_bytes=[graph.tensors[t].nbytes for t in graph.inputs],
        output_bytes=[graph.tensors[t].nbytes for t in graph.outputs],
        check_build=False,
        workdir=workdir,
        iterations=iterations,
    )
    assert run.ticks_per_inference is not None
    return run.ticks_per_inference


def bench_model(path: Path, seconds: float, workdir: Path) -> dict:
    model_bytes = path.read_bytes()
    name = c_identifier(path.stem)
    graph, plan, files = generate_for_model(model_bytes, name=name, label=str(path))
    generated = write_output(files, workdir / "generated")
    inputs = random_inputs(graph, np.random.default_rng(0))
    sample = [np.ascontiguousarray(a).tobytes() for a in inputs]
    target = HostTarget(optimization="-O2")
    # One timed invocation sizes the count so each side runs about `seconds`.
    probe = generated_seconds(target, generated, name, graph, sample, 1, workdir / "probe")
    iterations = int(min(max(seconds / max(probe, 1e-7), 3), 100000))
    ours = generated_seconds(target, generated, name, graph, sample, iterations, workdir / "timed")
    theirs = tflm_seconds(model_bytes, inputs, iterations, plan.arena_bytes)
    return {
        "model": path.stem,
        "iterations": iterations,
        "generated": ours,
        "tflm": theirs,
        "arena": plan.arena_bytes,
    }


def format_seconds(s: float) -> str:
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} µs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="about how long each side runs per model")
    parser.add_argument("--models", help="comma-separated model stems (default: all shared models)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "inference.md"))
    args = parser.parse_args(argv)

    if not (MODELS_DIR / "MODELS.md").is_file():
        print(f"no shared models at {MODELS_DIR}", file=sys.stderr)
        return 2
    rows, skipped, inputs = [], [], []
    for path in shared_model_paths(args.models):
        inputs.append(path)
        workdir = Path(tempfile.mkdtemp(prefix=f"mcu-plan-bench-{path.stem}-"))
        try:
            rows.append(bench_model(path, args.seconds, workdir))
            r = rows[-1]
            print(
                f"{r['model']}: generated {format_seconds(r['generated'])}, TFLM {format_seconds(r['tflm'])}, "
                f"x{r['tflm'] / r['generated']:.2f} ({r['iterations']} invocations)",
                flush=True,
            )
        except UnsupportedModel as exc:
            skipped.append((path.stem, one_line(exc)))
            print(f"{path.stem}: unsupported: {one_line(exc)}", flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    compiler = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = [
        "# Host inference time: generated C vs TFLM",
        "",
        "Written by `python bench/inference.py`. Per model: the generated C (auto plan, "
        "`cc -std=c99 -O2`) timed inside its C harness over N invocations, and TensorFlow Lite "
        "Micro's Python interpreter (`tflite-micro` package, reference kernels) `invoke()` timed "
        "over the same N on the same seeded input, in the same run. Both are process CPU time; "
        "ratio = TFLM time / generated time (above 1: the generated C is faster).",
        "",
        f"Machine: {platform.machine()}, {platform.system()} {platform.release()}; compiler: {compiler}.",
        "",
        "| model | arena B | N | generated C / inference | TFLM / inference | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['arena']:,} | {r['iterations']} | {format_seconds(r['generated'])} "
            f"| {format_seconds(r['tflm'])} | {r['tflm'] / r['generated']:.2f} |"
        )
    if skipped:
        lines += ["", "Not run (the runtime refuses them):", ""]
        lines += [f"- {stem}: {reason}" for stem, reason in skipped]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines + [""] + provenance_lines(inputs)))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
