"""The output directory: mcu-plan writes OUTDIR atomically and replaces an
existing one only when everything in it is its own (listed in its manifest,
which also records the generated model's interface for `check` and the
firmware build)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from ..errors import InputError
from .c_literals import c_identifier


@dataclass(frozen=True)
class ModelInterface:
    """What the firmware build needs to know about a generated model, as
    data (never recovered from the C text)."""

    name: str
    num_inputs: int
    num_outputs: int
    arena_bytes: int  # NAME_ARENA_SIZE
    arena_section: str | None
    extern_arena: bool
    variable_bytes: int = 0  # variable tensors' state region (NAME_reset), outside the arena
    # Linker sections of the memory regions (--region NAME=SIZE@SECTION), zero-initialised RAM.
    region_sections: list[str] = field(default_factory=list)
    # What ram_budget.py counts besides the arena and the state: the planned
    # buffers (one counter each) and the C kernels the model calls.
    num_buffers: int = 0
    kernel_functions: list[str] = field(default_factory=list)
    arena_alignment: int = 16  # --align above 16 aligns the arena array(s) to it


# mcu-plan replaces an existing OUTDIR only when everything in it is its own:
# this file in OUTDIR lists what it wrote (and, in a firmware OUTDIR, what the
# Makefile makes), so that `-o .` on a user's project refuses instead of deleting it.
# "entries" are the top-level names; "files" every file inside the owned
# directories (board/, build/, ...), so that a file a user put in one of them
# stops a replacement too.
MANIFEST_NAME = ".mcu-plan-output"


def _plain_name(file_name: str) -> str:
    if "/" in file_name or "\\" in file_name or file_name in ("", ".", ".."):
        raise ValueError(f"generated file name {file_name!r} is not a plain name")
    return file_name


def _relative_path(path: str) -> str:
    parts = path.split("/")
    for part in parts:
        _plain_name(part)
    return path


def write_manifest(
    directory: Path,
    entries: Iterable[str],
    interface: ModelInterface | None = None,
    files: Iterable[str] = (),
) -> None:
    """Record `entries` (top-level names in `directory`) and `files` (paths
    inside those that are directories, "board/linker.ld"), added to any it
    already lists, as mcu-plan's own, with the model's interface if given."""
    directory = Path(directory)
    previous = read_manifest(directory)
    owned = set(previous.get("entries", ())) | {_plain_name(e) for e in entries}
    owned.discard(MANIFEST_NAME)
    owned_files = set(previous.get("files", ())) | {_relative_path(f) for f in files}
    record: dict[str, Any] = {"written_by": "mcu-plan", "entries": sorted(owned)}
    if owned_files:
        record["files"] = sorted(owned_files)
    if interface is not None:
        record["model"] = asdict(interface)
        if not interface.region_sections:  # the manifest of a one-arena model stays as it was
            del record["model"]["region_sections"]
    elif "model" in previous:
        record["model"] = previous["model"]
    (directory / MANIFEST_NAME).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest mcu-plan left in `directory`, or {} when there is none
    (or it is not one mcu-plan could have written)."""
    try:
        record = json.loads((Path(directory) / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or not isinstance(record.get("entries"), list):
        return {}
    if not isinstance(record.get("files", []), list):
        return {}
    return record


def read_interface(directory: Path) -> ModelInterface | None:
    """The interface of the model generated into `directory`, from its
    manifest; None when there is none or it does not describe one."""
    model = read_manifest(directory).get("model")
    if not isinstance(model, dict):
        return None
    try:
        interface = ModelInterface(**model)
    except TypeError:  # missing or unknown keys: not a manifest this version wrote
        return None
    counts = (interface.num_inputs, interface.num_outputs, interface.arena_bytes, interface.variable_bytes)
    well_formed = (
        isinstance(interface.name, str)
        and interface.name == c_identifier(interface.name)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        and isinstance(interface.extern_arena, bool)
        and (interface.arena_section is None or isinstance(interface.arena_section, str))
        and isinstance(interface.region_sections, list)
        and all(isinstance(section, str) for section in interface.region_sections)
        and isinstance(interface.num_buffers, int)
        and isinstance(interface.arena_alignment, int)
        and isinstance(interface.kernel_functions, list)
        and all(isinstance(function, str) for function in interface.kernel_functions)
    )
    return interface if well_formed else None


def check_output_dir(outdir: str | os.PathLike[str]) -> None:
    """InputError unless `outdir` is absent, empty, or holds only what
    mcu-plan wrote there (its manifest lists every entry)."""
    outdir = Path(outdir)
    if not outdir.exists() and not outdir.is_symlink():
        return
    if outdir.is_symlink() or not outdir.is_dir():
        raise InputError(f"OUTDIR {outdir} exists and is not a directory; choose a new or empty directory")
    present = sorted(p.name for p in outdir.iterdir())
    if not present:
        return
    manifest = read_manifest(outdir)
    owned = set(manifest.get("entries", ())) | {MANIFEST_NAME}
    foreign = [entry for entry in present if entry not in owned]
    if not foreign:
        owned_files = {f for f in manifest.get("files", ()) if isinstance(f, str)}
        for entry in present:
            foreign += _foreign_inside(outdir, entry, owned_files)
    if foreign:
        raise InputError(
            f"OUTDIR {outdir} contains files mcu-plan did not write (e.g. {foreign[0]}); "
            "choose a new or empty directory"
        )


def _foreign_inside(outdir: Path, entry: str, owned_files: set[str]) -> list[str]:
    """The first path under the directory OUTDIR/`entry` (none when it is not
    a directory) that the manifest does not list."""
    top = outdir / entry
    if top.is_symlink() or not top.is_dir():
        return []
    for root, dirs, names in os.walk(top):
        base = Path(root).relative_to(outdir).as_posix()
        # A symlink to a directory is a user's entry too (os.walk lists it
        # among `dirs` but does not enter it).
        linked = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        for name in sorted(names + linked):
            if f"{base}/{name}" not in owned_files:
                return [f"{base}/{name}"]
    return []


def make_parents(path: str | os.PathLike[str]) -> list[Path]:
    """Create the missing parent directories of `path`; return the ones this
    call created, outermost first, for remove_created() after a failure."""
    created: list[Path] = []
    parent = Path(os.path.abspath(path)).parent
    missing = []
    while not parent.exists() and not parent.is_symlink():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except OSError as exc:
            remove_created(created)
            raise InputError(f"cannot create {directory}: {exc.strerror or exc}") from None
        created.append(directory)
    return created


def remove_created(created: list[Path]) -> None:
    """Remove directories make_parents created (innermost first) when empty."""
    for directory in reversed(created):
        try:
            directory.rmdir()
        except OSError:
            break


class _SignalsHeld:
    """SIGINT and SIGTERM wait (are blocked) while the block runs, so that
    the two renames that swap OUTDIR are never separated by an interruption:
    OUTDIR is either the old or the new directory, never absent."""

    _SIGNALS = {signal.SIGINT, signal.SIGTERM}

    def __enter__(self) -> _SignalsHeld:
        self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, self._SIGNALS)
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)
        return False


def replace_output_dir(staging: str | os.PathLike[str], outdir: str | os.PathLike[str]) -> Path:
    """Move the finished directory `staging` to `outdir` in one rename,
    retiring what was there, but only when check_output_dir allows it.
    `staging` must be on the same file system (e.g. made beside `outdir`)."""
    staging, outdir = Path(staging), Path(os.path.abspath(outdir))
    check_output_dir(outdir)
    if not outdir.exists():
        os.rename(staging, outdir)
        return outdir
    retired = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.old.", dir=outdir.parent))
    try:
        with _SignalsHeld():
            os.rename(outdir, retired / "dir")
            try:
                os.rename(staging, outdir)
            except BaseException:
                os.rename(retired / "dir", outdir)
                raise
    finally:
        shutil.rmtree(retired, ignore_errors=True)
    return outdir


def write_output(files: dict[str, bytes], outdir: str | os.PathLike[str]) -> Path:
    """Write `files` as the whole of `outdir`, atomically: a half-written
    directory is never visible.  An existing `outdir` is replaced only when
    everything in it is mcu-plan's own (see check_output_dir); otherwise
    InputError and nothing is written."""
    outdir = Path(os.path.abspath(outdir))  # `..` resolved, symlinks not followed
    check_output_dir(outdir)
    created = make_parents(outdir)
    staging = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=outdir.parent))
        for file_name, data in files.items():
            (staging / _plain_name(file_name)).write_bytes(data)
        write_manifest(staging, files, getattr(files, "interface", None))
        os.chmod(staging, 0o755)
        replace_output_dir(staging, outdir)
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        remove_created(created)
        raise
    return outdir


class OutputLock:
    """An exclusive lock on writing OUTDIR, held for a whole run: a second
    mcu-plan run given the same OUTDIR meanwhile is refused (exit 2) instead
    of silently replacing the first one's output.

    The lock is flock(2) on `.NAME.mcu-plan-lock` beside OUTDIR (OUTDIR
    itself is replaced by a rename, so it cannot hold a lock); missing parent
    directories are created first, so that every run locks the same file,
    and removed again by release() when the run failed."""

    def __init__(self, outdir: str | os.PathLike[str]):
        import fcntl

        outdir = Path(os.path.abspath(outdir))
        self.created = make_parents(outdir)
        self.path = outdir.parent / f".{outdir.name}.mcu-plan-lock"
        self.fd: int | None = None
        try:
            while self.fd is None:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise InputError(
                        f"another mcu-plan run is writing OUTDIR {outdir} (lock {self.path}); "
                        "wait for it to finish or choose another directory"
                    ) from None
                # The run that held it may have removed the file meanwhile:
                # a lock on a removed file guards nothing, so try again.
                try:
                    same = os.path.samestat(os.fstat(fd), os.stat(self.path))
                except FileNotFoundError:
                    same = False
                if same:
                    self.fd = fd
                else:
                    os.close(fd)
        except OSError as exc:
            remove_created(self.created)
            raise InputError(f"cannot lock OUTDIR {outdir}: {exc.strerror or exc}") from None
        except BaseException:
            remove_created(self.created)
            raise

    def release(self, succeeded: bool) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink()  # while still held: a waiting run then locks a new file
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        if not succeeded:
            remove_created(self.created)

    def __enter__(self) -> OutputLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        self.release(succeeded=exc_type is None)
        return False
