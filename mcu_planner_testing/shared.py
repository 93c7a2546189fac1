"""Where the real models, benchmark instances and anchors live: ../shared
beside the checkout, or MCU_PLANNER_SHARED.  Used by tests/conftest.py and by
the bench scripts (which run outside pytest)."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCU_PLANNER_SHARED", REPO.parent / "shared")).resolve()
MODELS_DIR = SHARED / "models"
BENCHMARKS_DIR = SHARED / "benchmarks"
ANCHORS_DIR = SHARED / "anchors"


def shared_model_paths() -> list[Path]:
    """The real models, one directory level below models/, sorted."""
    if not MODELS_DIR.is_dir():
        return []
    return sorted(MODELS_DIR.glob("*/*.tflite"))


def shared_model_table() -> list[dict[str, str]]:
    """Rows of models/MODELS.md as dicts keyed by column header."""
    rows = [line for line in (MODELS_DIR / "MODELS.md").read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in rows[2:]]


def parse_int(cell: str) -> int | None:
    """A table cell such as '12,345' as an int; None when it holds no number."""
    cell = re.sub(r"[ ,]", "", cell)
    return int(cell) if cell.isdigit() else None
