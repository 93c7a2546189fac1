"""What generated code came from: the mcu-planner version and one digest of
the C runtime and the templates.  `mcu-plan --version` prints it and every
generated header carries it, so a header can be traced to the sources that
made it even between releases (a runtime fix changes the digest, not the
version)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from .. import __version__
from .resources import firmware_dir, templates_dir


def _tree_digest(root: Path) -> str:
    """SHA-256 over every file under `root`: its path relative to `root`, then its bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        name = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(4, "little") + name + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


@lru_cache(maxsize=1)
def sources_sha256() -> str:
    """One SHA-256 of the C runtime (firmware/runtime) and the templates."""
    digest = hashlib.sha256()
    for label, root in (("runtime", firmware_dir() / "runtime"), ("templates", templates_dir())):
        digest.update(f"{label}:{_tree_digest(root)}\n".encode())
    return digest.hexdigest()


def version_line() -> str:
    """`mcu-plan --version`'s line: what the generated header's NAME_GENERATOR says."""
    return f"mcu-planner {__version__} (runtime+templates sha256 {sources_sha256()[:16]})"
