"""Byte sizes as users write them: 262144, 256K, 256KiB, 1M, 1.5M (K = 1024)."""

from __future__ import annotations

import re

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 262144, 256K, 256KiB, 1.5M)")
    number, unit = match.groups()
    value = float(number) * _UNITS[unit.lower()]
    if value != int(value):
        raise ValueError(f"size {text!r} is not a whole number of bytes")
    return int(value)


def format_bytes(n: int) -> str:
    return f"{n:,} B"
