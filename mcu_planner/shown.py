"""Strings from a model (tensor names, custom op codes) as they may be printed.

A model is untrusted input: its strings can hold ESC sequences, CR, NUL or a
newline followed by a forged `mcu-plan: ...` line, and converters write names
hundreds of characters long.  Everything that prints such a string passes it
through `shown` first."""

from __future__ import annotations

# A name on a line of the report, a memory map row or an error message is cut
# to this many characters (what remains still identifies it; the JSON plan
# keeps every name whole).
MAX_SHOWN_CHARS = 60


def shown(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` with every character that is not printable (control bytes,
    bidi overrides, ...) and every backslash written as a repr-style escape
    (\\x1b, \\r, \\u202e, \\\\), cut to `limit` characters ending in "..."."""
    out: list[str] = []
    length = 0
    for char in text:
        piece = char if char.isprintable() and char != "\\" else repr(char)[1:-1]
        if length + len(piece) > limit:
            return _cut(out, limit)
        out.append(piece)
        length += len(piece)
    return "".join(out)


def _cut(pieces: list[str], limit: int) -> str:
    """The pieces that fit in `limit` characters with "..." after them (an
    escape is never split)."""
    kept, length = [], 0
    for piece in pieces:
        if length + len(piece) > limit - 3:
            break
        kept.append(piece)
        length += len(piece)
    return "".join(kept) + "..."


def escape_controls(text: str) -> str:
    """A message that may span lines with every other control character
    escaped: the last guard before stderr, for strings no caller escaped."""
    return "".join(c if c == "\n" or c == "\t" or c.isprintable() else repr(c)[1:-1] for c in text)
