"""Snapshot of what `mcu-plan` writes, for refactors that must not change it.

    python bench/program_snapshot.py OUTDIR [--only SUBSTRING] [--jobs N]
    python bench/program_snapshot.py --compare BEFORE AFTER

For every shared model (../shared/models/*/*.tflite) at the default budget and
at tight `--ram` budgets that turn on overlaps, in-place depthwise and patches
(the smallest budgets of bench/results/techniques.md, and vww_96_int8 at 36K
as issue 19 measures), plus every tflm-seanet peer model at the default, it
runs `mcu-plan MODEL [--ram R] -o OUTDIR/CASE/c --json OUTDIR/CASE/plan.json
--map` from this checkout and keeps the C sources, the plan JSON, stdout,
stderr and the exit code. `--compare` lists the files of two snapshots that
differ once the snapshot directories, the checkouts' paths and the planners'
times ("3.1 ms)") are masked; `elapsed.txt` (wall seconds) is not compared.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MODELS = SHARED / "models"
SEANET = SHARED / "peer-tests" / "tflm-seanet"

# stem -> tight budgets (bytes); techniques.md's smallest --ram plus a middle one
TIGHT: dict[str, list[str]] = {
    "kws_ref_model": ["9024", "12K"],
    "pretrainedResnet": ["161792"],
    "pretrainedResnet_quant": ["40448"],
    "str_ww_ref_model": ["4416"],
    "vww_96_float": ["126960"],
    "vww_96_int8": ["36K", "31760"],
    "magic_wand": ["3104"],
    "micro_speech_quantized": ["4192"],
    "mobilenet_v2_quantized_1x3x224x224": ["560352"],
    "model_runner_codegen_model": ["704"],
    "person_detect": ["24K", "15392"],
    "simple_add_model": ["32768"],
}


def cases(only: str | None) -> list[tuple[str, Path, list[str]]]:
    found: list[tuple[str, Path, list[str]]] = []
    for model in sorted(MODELS.glob("*/*.tflite")):
        found.append((f"{model.stem}-default", model, []))
        for budget in TIGHT.get(model.stem, []):
            found.append((f"{model.stem}-ram{budget}", model, ["--ram", budget]))
    for model in sorted(SEANET.glob("*/*.tflite")):
        found.append((f"seanet-{model.stem}-default", model, []))
    return [case for case in found if only is None or only in case[0]]


def run(out: Path, name: str, model: Path, extra: list[str]) -> str:
    case = out / name
    case.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "mcu_planner.cli", str(model), *extra]
    command += ["-o", str(case / "c"), "--json", str(case / "plan.json"), "--map"]
    started = time.monotonic()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    (case / "elapsed.txt").write_text(f"{time.monotonic() - started:.2f}\n")
    (case / "stdout.txt").write_text(result.stdout)
    (case / "stderr.txt").write_text(result.stderr)
    (case / "exit.txt").write_text(f"{result.returncode}\n")
    return f"{name}: exit {result.returncode}, {time.monotonic() - started:.1f} s"


_TIME = re.compile(rb"\d+(\.\d+)? (ms|s)\)")


def _masked(path: Path, root: Path) -> bytes:
    text = path.read_bytes().replace(str(root).encode(), b"SNAPSHOT")
    text = re.sub(rb"\S*/shared/", b"SHARED/", text)
    return _TIME.sub(b"TIME)", text)


def compare(before: Path, after: Path) -> list[str]:
    """Files (relative paths) missing from one snapshot or differing once masked."""
    names = {p.relative_to(before) for p in before.rglob("*") if p.is_file()}
    names |= {p.relative_to(after) for p in after.rglob("*") if p.is_file()}
    differing = []
    for name in sorted(names):
        if name.name == "elapsed.txt":
            continue
        a, b = before / name, after / name
        if not a.is_file() or not b.is_file() or _masked(a, before) != _masked(b, after):
            differing.append(str(name))
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--only", default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        differing = compare(*args.compare)
        print("\n".join(differing) or "identical")
        sys.exit(1 if differing else 0)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        jobs = [pool.submit(run, args.out, *case) for case in cases(args.only)]
        for job in jobs:
            print(job.result(), flush=True)


if __name__ == "__main__":
    main()
