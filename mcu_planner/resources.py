"""Where the Jinja templates and the C runtime live: inside the installed
package (the wheel ships them as mcu_planner/templates and mcu_planner/firmware)
or, in a source checkout, beside the package."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mcu-planner installation is missing its {name}/ directory")


def templates_dir() -> Path:
    return _find("templates")


def firmware_dir() -> Path:
    return _find("firmware")
