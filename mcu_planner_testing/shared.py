"""Where the real models, benchmark instances and anchors live: ../shared
beside the checkout, or MCU_PLANNER_SHARED.  Used by tests/conftest.py and by
the bench scripts (which run outside pytest)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCU_PLANNER_SHARED", REPO.parent / "shared")).resolve()
MODELS_DIR = SHARED / "models"
BENCHMARKS_DIR = SHARED / "benchmarks"
ANCHORS_DIR = SHARED / "anchors"


def shared_model_paths(stems: str | None = None) -> list[Path]:
    """The real models, one directory level below models/, sorted; only those
    whose file stem is in `stems` (comma-separated, as bench's --models) if given."""
    if not MODELS_DIR.is_dir():
        return []
    wanted = set(stems.split(",")) if stems else None
    return [p for p in sorted(MODELS_DIR.glob("*/*.tflite")) if wanted is None or p.stem in wanted]


def shared_model_table() -> list[dict[str, str]]:
    """Rows of models/MODELS.md as dicts keyed by column header."""
    rows = [line for line in (MODELS_DIR / "MODELS.md").read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in rows[2:]]


def parse_int(cell: str) -> int | None:
    """A table cell such as '12,345' as an int; None when it holds no number."""
    cell = re.sub(r"[ ,]", "", cell)
    return int(cell) if cell.isdigit() else None


def _shown(path: Path) -> str:
    """`path` as a reader finds it: under ../shared or the checkout when it is there."""
    path = path.resolve()
    for root, name in ((SHARED, "../shared"), (REPO, ".")):
        if path.is_relative_to(root):
            return f"{name}/{path.relative_to(root).as_posix()}"
    return str(path)


def provenance_lines(inputs: Iterable[Path]) -> list[str]:
    """Markdown lines for a bench result: the commit it was measured at (and
    whether the checkout had uncommitted changes), and the SHA-256 of every
    input file it read, so that a figure can be traced to exact bytes."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown (not a git checkout)"
    dirty = " plus uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    lines = [f"Measured at commit `{commit}`{dirty}.", ""]
    files = sorted({Path(p).resolve() for p in inputs}, key=_shown)
    if not files:
        return lines + ["Inputs: none read from files (every model built in memory at that commit).", ""]
    lines += [f"Inputs ({len(files)} file{'s' if len(files) != 1 else ''}, SHA-256):", ""]
    lines += [f"- `{_shown(p)}` `{hashlib.sha256(p.read_bytes()).hexdigest()}`" for p in files]
    return lines + [""]
