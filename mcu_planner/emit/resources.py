"""Where the Jinja templates and the C runtime live: inside the installed
package (the wheel ships them as mcu_planner/templates and mcu_planner/firmware)
or, in a source checkout, beside the package."""

from __future__ import annotations

import functools
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

_PACKAGE = Path(__file__).resolve().parents[1]  # mcu_planner/, above emit/


@functools.cache  # asked once per lowered op: a 10,000-op model spent 3 s in stat()
def _find(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mcu-planner installation is missing its {name}/ directory")


def templates_dir() -> Path:
    return _find("templates")


def firmware_dir() -> Path:
    return _find("firmware")


@functools.cache
def template_environment(autoescape: bool = False) -> Environment:
    """One environment per process and escaping mode (C templates: none; the
    HTML report: HTML escaping): it caches the compiled templates, which
    otherwise cost most of a small model's generation time."""
    return Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=autoescape,
    )
