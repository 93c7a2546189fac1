"""Our plan inside TFLM: `mcu-plan --tflm-plan` over every shared model.

For each model, the copy with our OfflineMemoryAllocation plan is loaded by
TFLM's Python interpreter (the `tflite-micro` package): its arena head and
total are set against the original model's, and both run the same three
seeded input sets in one sequence, outputs compared byte for byte.  Writes
bench/results/tflm-plan.md.

    python bench/tflm_plan.py [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.emit.tflm_plan import TFLM_MEASURE_ARENA, tflm_arena, tflm_plan_model  # noqa: E402
from mcu_planner.errors import McuPlanError  # noqa: E402
from mcu_planner.frontend.reader import read_model  # noqa: E402
from mcu_planner.pipeline import PlanOptions  # noqa: E402
from mcu_planner.targets.check import random_inputs  # noqa: E402
from mcu_planner_testing.shared import provenance_lines, shared_model_paths  # noqa: E402


def tflm_outputs(path: Path, input_sets: list[list[np.ndarray]], num_outputs: int) -> list[bytes]:
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(path), arena_size=TFLM_MEASURE_ARENA)
    outputs = []
    for inputs in input_sets:
        for k, value in enumerate(inputs):
            interpreter.set_input(value, k)
        interpreter.invoke()
        outputs += [np.asarray(interpreter.get_output(k)).tobytes() for k in range(num_outputs)]
    return outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "tflm-plan.md"))
    args = parser.parse_args()
    lines = [
        "# Our plan inside TFLM (`--tflm-plan`)",
        "",
        "TFLM head = its planned (non-persistent) arena section, total = head + persistent tail, both as its "
        "RecordingMicroAllocator reports them (`tflite-micro` package); ours = the extent of our offline buffers "
        "in TFLM's arena (holes for kernels' scratch included); plan = which of our plans TFLM could hold. "
        "Outputs: the model with our plan against the original in TFLM, three seeded input sets in one sequence.",
        "",
        "| model | TFLM head | with our plan | ours | TFLM total | with our plan | plan | outputs |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="tflm-plan-") as scratch:
        for path in shared_model_paths():
            label = f"{path.parent.name}/{path.stem}"
            before = tflm_arena(str(path))
            try:
                data, plan = tflm_plan_model(str(path), PlanOptions())
            except McuPlanError as exc:
                lines.append(f"| {label} | {before[0] if before else '-'} | refused: {exc} | | | | | |")
                continue
            planned = Path(scratch) / path.name
            planned.write_bytes(data)
            after = tflm_arena(str(planned))
            if before is None or after is None:
                lines.append(f"| {label} | - | - | {plan.arena_bytes:,} | - | - | {plan.source} | TFLM refuses it |")
                continue
            graph = read_model(path)
            input_sets = [random_inputs(graph, np.random.default_rng(seed)) for seed in range(3)]
            same = tflm_outputs(planned, input_sets, len(graph.outputs)) == tflm_outputs(
                path, input_sets, len(graph.outputs)
            )
            lines.append(
                f"| {label} | {before[0]:,} | {after[0]:,} | {plan.arena_bytes:,} | {before[1]:,} | {after[1]:,} "
                f"| {plan.source} | {'identical' if same else 'DIFFER'} |"
            )
            print(lines[-1], flush=True)
    lines += ["", "Command: `python bench/tflm_plan.py`.", ""] + provenance_lines(shared_model_paths())
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
