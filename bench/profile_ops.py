"""Where the time goes: the per-op profile of shared models on Cortex-M boards.

For every chosen model and board, `mcu-plan check --profile` (one seeded input,
the outputs still compared with the reference): ticks, share, MACs and MACs
per tick of every op, under `qemu-system-arm -icount shift=0` with the
SysTick method of bench/cortex_m.py.  Writes a Markdown file.

    python bench/profile_ops.py [--boards mps2-an386,mps3-an547] [--models stem,stem] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.errors import McuPlanError, one_line  # noqa: E402
from mcu_planner.targets.check import check_model  # noqa: E402
from mcu_planner.targets.firmware_build import board_names  # noqa: E402
from mcu_planner_testing.shared import MODELS_DIR, provenance_lines, shared_model_paths  # noqa: E402


def profile_lines(path: Path, board: str) -> list[str]:
    try:
        report = check_model(path, target=board, inputs=1, check_build=False, profile=True)
    except McuPlanError as exc:
        return [f"not profiled: {one_line(exc)}"]
    assert report.profile is not None
    return [f"whole inference (normal build): {report.ticks_per_inference:,.0f} ticks", *report.profile.format()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default=",".join(board_names()))
    parser.add_argument("--models", help="comma-separated model file stems (default: all shared models)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "profile.md"))
    args = parser.parse_args()
    paths = shared_model_paths(args.models)
    if not paths:
        print(f"no shared models found under {MODELS_DIR}", file=sys.stderr)
        return 2
    lines = ["# Per-op profile under QEMU (`mcu-plan check --profile`)", ""]
    for path in paths:
        for board in args.boards.split(","):
            body = profile_lines(path, board)
            print(f"{path.stem} on {board}: {body[0]}", flush=True)
            lines += [f"## {path.stem} on {board}", "", "```", *body, "```", ""]
    Path(args.out).write_text("\n".join(lines + provenance_lines(paths)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
