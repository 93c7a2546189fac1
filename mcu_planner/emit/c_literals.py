"""C literals and identifiers: Python values and names as C99 text that reads
back to exactly the same value (codegen's templates print numbers no other way)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from ..errors import InputError

VALUES_PER_LINE = {1: 24, 2: 16, 4: 12, 8: 8}


def c_identifier(stem: str) -> str:
    """A model file stem as a C identifier: lowercase, non-alphanumerics -> '_'.
    A leading digit or underscore gets an `m_` prefix: C reserves names that
    start with `__` or `_` and a capital (the header's NAME_ARENA_SIZE...)."""
    ident = re.sub(r"[^a-z0-9_]", "_", stem.lower())
    if not ident:
        ident = "model"
    if ident[0].isdigit() or ident[0] == "_":
        ident = "m_" + ident
    return ident


# The generated code's C prefix: long enough for any sensible model name,
# short enough that every file and symbol made from it stays far below the
# file system's 255-byte names (NAME_sections.ld, a check's work directory).
MAX_PREFIX_CHARS = 64
# The C runtime's own symbols (mcu_depthwise_conv_2d_s8, ...): a model prefix
# starting so could define one of them.
RUNTIME_PREFIX = "mcu_"


def c_prefix(stem: str) -> str:
    """A model file stem as the generated code's C prefix: c_identifier's,
    with `m_` before a name in the runtime's `mcu_` namespace, cut to
    MAX_PREFIX_CHARS."""
    ident = c_identifier(stem)
    if ident.startswith(RUNTIME_PREFIX):
        ident = "m_" + ident
    return ident[:MAX_PREFIX_CHARS]


PREFIX_RULE = (
    f"lowercase letters, digits and '_' (others become '_'; a leading digit or '_' gets 'm_'), "
    f"at most {MAX_PREFIX_CHARS} characters, not starting with {RUNTIME_PREFIX} (the runtime's)"
)


def checked_prefix(name: str) -> str:
    """`--name` as the C prefix: InputError when too long or in the runtime's
    namespace; otherwise c_identifier's spelling of it."""
    if len(name) > MAX_PREFIX_CHARS:
        raise InputError(f"--name is {len(name)} characters; a C prefix has at most {MAX_PREFIX_CHARS}")
    ident = c_identifier(name)
    if ident.startswith(RUNTIME_PREFIX):
        raise InputError(f"--name {name!r}: the prefix {RUNTIME_PREFIX} is reserved for the runtime's symbols")
    return ident


# What GNU as, ld and linker scripts take as a section name unquoted.
_SECTION_NAME = re.compile(r"[.A-Za-z_][.A-Za-z0-9_$]*")


def validate_section_name(text: str) -> str:
    """`text` if it can name the arena's linker section, else InputError."""
    if not _SECTION_NAME.fullmatch(text):
        raise InputError(
            f"--arena-section {text!r} is not a section name "
            "(letters, digits, '_', '.', '$'; not starting with a digit), e.g. .model_arena"
        )
    return text


# ---------------------------------------------------------------- C literals


def c_int(value: int) -> str:
    value = int(value)
    if -(2**31) < value < 2**31:
        return str(value)
    if value == -(2**31):
        return "(-2147483647 - 1)"
    if -(2**63) < value < 2**63:
        return f"{value}LL"
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    if 0 <= value < 2**64:
        return f"{value}ULL"
    raise ValueError(f"integer {value} does not fit in 64 bits")


def c_float(value: float) -> str:
    """A float32 value as a literal that reads back to the same float32."""
    value = float(value)
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = f"{value:.9g}"
    if not any(c in text for c in ".en"):
        text += ".0"
    return text + "f"


def c_double(value: float) -> str:
    """A double value as a literal that reads back to the same double."""
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return c_float(value)
    text = repr(value)
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def c_string(text: str) -> str:
    """A C string literal with only printable ASCII inside."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":  # '?' could start a trigraph
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_comment(text: str) -> str:
    """Text safe inside /* */ on one line."""
    return re.sub(r"[^A-Za-z0-9_.:;,=+\-\[\]()<>@#%/ ]", "?", text)[:80]


def value_lines(values: list[str], per_line: int) -> list[str]:
    return [", ".join(values[i : i + per_line]) for i in range(0, len(values), per_line)]


def format_values(values: Iterable[int | float], c_type: str) -> list[str]:
    if c_type == "float":
        return [c_float(v) for v in values]
    if c_type == "double":
        return [c_double(v) for v in values]
    if c_type in ("int32_t", "uint32_t", "int64_t", "uint64_t", "int", "long"):
        return [c_int(int(v)) for v in values]
    return [str(int(v)) for v in values]


def element_bytes(c_type: str) -> int:
    return {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int64_t": 8, "uint64_t": 8, "double": 8}.get(
        c_type, 4
    )
