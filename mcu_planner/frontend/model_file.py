"""Reading a model file: a regular file of at most MAX_MODEL_BYTES, read in
bounded chunks.  A device (/dev/zero grew until memory ran out), a FIFO (it
blocked forever), a directory or a file over the limit is refused with one
line before anything else is read.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputError

# The largest model file read: 64 MiB, far above any microcontroller's flash
# (the shared models are at most 4 MB).  Everything after reading is bounded
# by the model's size, so this bounds the whole command's memory too.
MAX_MODEL_BYTES = 64 * 1024 * 1024
_CHUNK_BYTES = 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_model_file(path: str | os.PathLike[str], label: str | None = None) -> bytes:
    """The bytes of the model file at `path`; InputError (one line naming
    `label`) for anything but a regular file of at most MAX_MODEL_BYTES."""
    label = label or str(path)
    # O_NONBLOCK: opening a FIFO must not wait for a writer (fstat then refuses it).
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{label}: is a directory, not a .tflite file") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{label}: is a directory, not a .tflite file")
        if not stat.S_ISREG(mode):
            raise InputError(f"{label}: is {_kind(mode)}, not a regular file: give a .tflite file")
        size = os.fstat(fd).st_size
        if size > MAX_MODEL_BYTES:
            raise InputError(_too_large(label, size))
        chunks: list[bytes] = []
        total = 0
        while True:  # the file may grow while it is read: stop one byte past the limit
            chunk = os.read(fd, min(_CHUNK_BYTES, MAX_MODEL_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_MODEL_BYTES:
                raise InputError(_too_large(label, total))
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{label}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _too_large(label: str, size: int) -> str:
    return (
        f"{label}: {size:,} B is over the {MAX_MODEL_BYTES:,} B limit for a model file "
        f"({MAX_MODEL_BYTES // (1024 * 1024)} MiB; no microcontroller holds more)"
    )
