"""One RAM budget, swept: `python bench/ram_budget.py` writes bench/results/ram-budget.md.

For every shared model (`--models stem,stem` for a subset) on each board
(`--boards`, default mps2-an386 and mps3-an547), at the budgets around its
need: R0, the RAM (ram_budget.py, with the board's stack reserve) of the plan
without a budget, and R0 - 16 (one alignment unit less), each planned as
`mcu-plan MODEL --ram R --board BOARD` plans it:

- when the plan fits, the firmware `-o OUTDIR --board BOARD` builds is linked
  against R: it must link, and the RAM it takes (from the region's start to
  the end of .bss, the gap before .bss included) must be the total the plan
  command printed;
- either way, the plan's sources are linked against one byte less than their
  counted total, bypassing the check before make: the linker must refuse,
  so that "fits" is exactly "links" (no byte counted that the link lacks).

    python bench/ram_budget.py [--models stem,stem] [--boards a,b] [--time-limit S] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.emit.c_literals import c_identifier  # noqa: E402
from mcu_planner.emit.output_dir import write_output  # noqa: E402
from mcu_planner.errors import DoesNotFit, McuPlanError, one_line  # noqa: E402
from mcu_planner.pipeline import PlanOptions, plan_model  # noqa: E402
from mcu_planner.targets.firmware_build import (  # noqa: E402
    DEFAULT_STACK_BYTES,
    build_firmware,
    firmware_target,
    linked_ram_bytes,
    load_board,
    make_firmware,
    write_firmware_files,
)
from mcu_planner.targets.flash import flash_shortfall  # noqa: E402
from mcu_planner_testing.shared import shared_model_paths  # noqa: E402

BOARDS = ("mps2-an386", "mps3-an547")


def _link_total(files, board: str, budget: int, workdir: Path) -> tuple[bool, int | None, int]:
    """(links at `budget`, its RAM when it does, counted total)."""
    out = write_output(files, workdir / "fw")
    try:
        report = build_firmware(out, model=files.interface, board=board, ram_bytes=budget)
    except DoesNotFit:
        return False, None, -1
    assert report.budget is not None
    return True, linked_ram_bytes(report.elf, load_board(board)), report.budget.total


def _overflows_one_byte_below(files, board: str, total: int, workdir: Path) -> bool:
    """The sources linked against total - 1 with no check before make: does the linker refuse?"""
    out = write_output(files, workdir / "short")
    spec = load_board(board)
    write_firmware_files(out, model=files.interface, board=spec, ram_bytes=total - 1, stack_bytes=DEFAULT_STACK_BYTES)
    try:
        make_firmware(out, spec, total - 1)
    except DoesNotFit as exc:
        return exc.short_bytes is not None
    return False


def sweep(path: Path, board: str, time_limit: float) -> list[str]:
    target = firmware_target(board, DEFAULT_STACK_BYTES)
    options = PlanOptions(target=target, time_limit=time_limit)
    name = c_identifier(path.stem)
    roomy = plan_model(path, options)
    need = roomy.ram_needed
    rows = []
    for budget in (need - 16, need):
        started = time.monotonic()
        planned = plan_model(path, replace(options, ram=budget))
        total = planned.ram_needed
        # As the plan command decides: the RAM, then the weights against the board's flash.
        fits = planned.fits and flash_shortfall(board, planned.program, planned.lifetimes.elided_ops) is None
        with tempfile.TemporaryDirectory(prefix="ram-budget-") as scratch:
            work = Path(scratch)
            files = planned.generate(name)
            links, linked_ram, counted = (False, None, total)
            if fits:
                links, linked_ram, counted = _link_total(files, board, budget, work)
            flash_bound = planned.fits and not fits  # RAM aside, the weights overflow: no link to compare
            refused = flash_bound or _overflows_one_byte_below(files, board, total, work)
        agree = fits == links and (not links or linked_ram == total == counted) and refused
        rows.append(
            f"| {path.stem} | {board} | {budget:,} | {total:,} | {'fits' if fits else 'does not fit' if planned.fits is False else 'flash overflows'} | "
            f"{'links' if links else 'refused'} | {'' if linked_ram is None else f'{linked_ram:,}'} | "
            f"{'n/a (flash)' if flash_bound else 'overflows' if refused else 'LINKS'} | {'yes' if agree else 'NO'} | {time.monotonic() - started:.1f} |"
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated file stems (default: every shared model)")
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--time-limit", type=float, default=2.0, help="exact planner seconds per plan (default 2)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "ram-budget.md"))
    args = parser.parse_args(argv)
    lines = [
        "# One RAM budget: `--ram R --board B` fits exactly when the firmware links",
        "",
        "Written by `python bench/ram_budget.py` (see its docstring). R0 is the RAM of the plan without a",
        "budget (stack reserve 1,024 B); each model is planned at R0 - 16 and R0 with `--board`. *counted*: the",
        "total the plan command prints; *-o at R*: the firmware linked against R when the plan fits; *ELF RAM*:",
        "RAM start to the end of .bss; *at counted - 1 B*: the same sources linked one byte short (no check",
        "before make).",
        f"Exact planner time limit {args.time_limit:g} s.",
        "",
        "| model | board | --ram R | counted | plan command | -o at R | ELF RAM | at counted - 1 B | agree | s |",
        "|---|---|---:|---:|---|---|---:|---|---|---:|",
    ]
    for path in shared_model_paths(args.models):
        for board in args.boards.split(","):
            try:
                lines += sweep(path, board, args.time_limit)
            except McuPlanError as exc:
                lines.append(f"| {path.stem} | {board} | | | {one_line(exc)} | | | | | |")
                print(lines[-1], flush=True)
            Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
