"""Interval-set files: planning problems given directly as buffers.

The format is minimalloc's CSV: a header naming the columns `id`, `lower`,
`upper` and `size`, then one row per buffer whose bytes are held during the
half-open step range [lower, upper).  Extra columns (such as the `offset`
column `write_offsets` adds) are ignored, so a written plan reads back as the
same problem.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .problem import Buffer

REQUIRED_COLUMNS = ("id", "lower", "upper", "size")
# The planners' native solver keeps sizes, offsets and steps in 64-bit
# integers with room for sums: each value of a row stays within 2**48.
MAX_INTERVAL_VALUE = 2**48


@dataclass(frozen=True)
class IntervalBuffer(Buffer):
    """A buffer read from an interval file, keeping the id as written there
    (ids such as `b1` are not integers; `id` is then the row number)."""

    label: str = ""


def _parse_int(text: str, column: str, where: str) -> int:
    try:
        return int(text.strip())
    except (ValueError, AttributeError):
        raise InputError(f"{where}: column {column!r} must be an integer, got {text!r}") from None


def read_intervals(path: str | Path) -> list[Buffer]:
    """Buffers of an interval file (sizes as written, not yet aligned)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such interval file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read interval file ({exc.__class__.__name__}: {exc})") from None

    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InputError(f"{path}: empty interval file (expected a header id,lower,upper,size)")
    header_number, header_line = lines[0]
    header = [name.strip() for name in next(csv.reader([header_line]))]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise InputError(
            f"{path}:{header_number}: header lacks column(s) {', '.join(missing)} (expected id,lower,upper,size)"
        )
    column = {name: header.index(name) for name in REQUIRED_COLUMNS}

    rows: list[tuple[str, int, int, int]] = []
    for number, line in lines[1:]:
        where = f"{path}:{number}"
        cells = next(csv.reader([line]))
        if len(cells) != len(header):
            raise InputError(f"{where}: expected {len(header)} fields, got {len(cells)}")
        label = cells[column["id"]].strip()
        if not label:
            raise InputError(f"{where}: empty id")
        lower = _parse_int(cells[column["lower"]], "lower", where)
        upper = _parse_int(cells[column["upper"]], "upper", where)
        size = _parse_int(cells[column["size"]], "size", where)
        if lower < 0 or upper <= lower:
            raise InputError(f"{where}: lifetime [{lower}, {upper}) must satisfy 0 <= lower < upper")
        if size < 0:
            raise InputError(f"{where}: negative size {size}")
        if max(upper, size) > MAX_INTERVAL_VALUE:
            raise InputError(f"{where}: sizes and steps above 2**48 ({MAX_INTERVAL_VALUE:,}) are not supported")
        rows.append((label, lower, upper, size))

    labels = [row[0] for row in rows]
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            raise InputError(f"{path}: id {label!r} appears more than once")
        seen.add(label)
    numeric = all(_is_int(label) for label in labels)
    if numeric and len({int(label) for label in labels}) != len(labels):
        numeric = False  # e.g. "1" and "01": keep them apart by row number
    return [
        IntervalBuffer(int(label) if numeric else row_number, size, lower, upper, label)
        for row_number, (label, lower, upper, size) in enumerate(rows)
    ]


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def format_offsets(buffers: list[Buffer], offsets: dict[int, int]) -> str:
    """`id,lower,upper,size,offset`, one row per buffer in the given order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED_COLUMNS, "offset"])
    for b in buffers:
        label = b.label if isinstance(b, IntervalBuffer) and b.label else str(b.id)
        writer.writerow([label, b.start, b.end, b.size, offsets[b.id]])
    return out.getvalue()


def write_offsets(path: str | Path, buffers: list[Buffer], offsets: dict[int, int]) -> None:
    Path(path).write_text(format_offsets(buffers, offsets))
