"""Check a .tflite file's bytes the way flatbuffers' C++ Verifier does.

LiteRT runs `VerifyModelBuffer` on every model it is given as bytes and
refuses the model when it fails; the Python `flatbuffers` package has no
verifier, so this module repeats its checks, for every table reachable from
the Model root (all subgraphs, every options table, sparsity, signatures),
before the reader reads anything:

* the root offset and the "TFL3" identifier, in a buffer of at least 12 bytes;
* every table: its start 4-aligned and inside the buffer, its vtable 2-aligned,
  of even length and inside the buffer;
* every field present in a vtable: scalars aligned to their size and inside the
  buffer; offsets 4-aligned, non-zero, below 2^31 and pointing inside the buffer;
* vectors: the length word aligned and the elements inside the buffer (and a
  length that cannot overflow); strings: the same, plus a 0 byte after them;
* union members verified as the table their type field names (unknown types
  pass, as in the generated C++);
* at most 64 nested tables and at most 1,000,000 table visits in all.

The C++ verifier walks shared sub-objects once per reference, so its table
count can exceed the file size many times over; here each (position, type) is
verified once and its subtree's table count and height are remembered, which
gives the same verdict in time linear in the file size.

Which fields each table has is read from the generated `tflite` bindings (the
schema the reader reads with), plus the few fields LiteRT's newer schema adds
(NEWER_SCHEMA_FIELDS), so that a vtable claiming those slots is checked as
LiteRT checks it.
"""

from __future__ import annotations

import inspect
import re
import struct
from dataclasses import dataclass
from functools import cache

import tflite

# flatbuffers' Verifier::Options defaults, which LiteRT keeps.
MAX_DEPTH = 64
MAX_TABLES = 1_000_000
# FLATBUFFERS_MAX_BUFFER_SIZE: vector lengths are checked against it...
MAX_BUFFER_SIZE = 2**31 - 1
# ...and LiteRT verifies at most this many bytes of a larger file (the rest
# holds buffers addressed by Buffer.offset).
MAX_VERIFIED_BYTES = MAX_BUFFER_SIZE - 1
# uoffset + soffset + two voffsets.
MIN_BUFFER_SIZE = 12
IDENTIFIER = b"TFL3"
ROOT_TABLE = "Model"

_WIDTHS = {
    "Bool": 1,
    "Int8": 1,
    "Uint8": 1,
    "Int16": 2,
    "Uint16": 2,
    "Int32": 4,
    "Uint32": 4,
    "Float32": 4,
    "Int64": 8,
    "Uint64": 8,
    "Float64": 8,
}

# Field kinds.
SCALAR, STRING, TABLE, UNION, SCALAR_VECTOR, STRING_VECTOR, TABLE_VECTOR = range(7)


@dataclass(frozen=True)
class Field:
    name: str  # the binding's accessor, for messages
    vt: int  # byte offset of the field's entry in the vtable (4, 6, ...)
    kind: int
    width: int = 4  # scalar or vector element size in bytes
    table: str = ""  # TABLE / TABLE_VECTOR: the table type; UNION: the union's enum


# Union fields and the enum that says which table they hold.
UNION_ENUMS = {
    ("Operator", "BuiltinOptions"): "BuiltinOptions",
    ("Operator", "BuiltinOptions2"): "BuiltinOptions2",
    ("QuantizationParameters", "Details"): "QuantizationDetails",
    ("DimensionMetadata", "ArraySegments"): "SparseIndexVector",
    ("DimensionMetadata", "ArrayIndices"): "SparseIndexVector",
}

# What LiteRT's schema (ai_edge_litert 2.x) has beyond the installed `tflite`
# bindings; tests/test_flatbuffer_verifier.py checks this list against the
# schema ai_edge_litert ships.  Entries already in the bindings are ignored.
NEWER_SCHEMA_FIELDS: dict[str, tuple[Field, ...]] = {
    "Model": (
        Field("ExternalBufferGroups", 20, TABLE_VECTOR, 4, "ExternalBufferGroup"),
        Field("ExternalBuffers", 22, TABLE_VECTOR, 4, "ExternalBuffer"),
    ),
    "Tensor": (Field("ExternalBuffer", 24, SCALAR, 4),),
    "FullyConnectedOptions": (Field("QuantSpec", 14, SCALAR_VECTOR, 1),),
    "ExternalBufferGroup": (Field("Name", 4, STRING),),
    "ExternalBuffer": (
        Field("Id", 4, SCALAR, 4),
        Field("Group", 6, SCALAR, 4),
        Field("Offset", 8, SCALAR, 8),
        Field("Packing", 12, STRING),
    ),
    "BlockwiseQuantization": (
        Field("Scales", 4, SCALAR, 4),
        Field("ZeroPoints", 6, SCALAR, 4),
        Field("BlockSize", 8, SCALAR, 4),
        Field("BlockShape", 10, SCALAR_VECTOR, 4),
    ),
    "MultiAxisQuantization": (
        Field("Scales", 4, SCALAR, 4),
        Field("ZeroPoints", 6, SCALAR, 4),
        Field("BlockSize", 8, SCALAR, 4),
        Field("QuantizedDimensions", 10, SCALAR_VECTOR, 4),
    ),
    "StablehloCaseOptions": (Field("BranchSubgraphIndices", 4, SCALAR_VECTOR, 4),),
}
NEWER_UNION_MEMBERS: dict[str, dict[int, str]] = {
    "QuantizationDetails": {2: "BlockwiseQuantization", 3: "MultiAxisQuantization"},
    "BuiltinOptions2": {23: "StablehloCaseOptions"},
}

_METHOD_RE = re.compile(r"\n    def (\w+)\(self(, j)?\):\n(.*?)(?=\n    (?:#|def |@)|\n\S|\Z)", re.S)


def fields_from_binding_source(table: str, source: str) -> tuple[Field, ...]:
    """The fields of one table, read from the source of its flatc-generated
    Python class (uniform output: one accessor per field, reading vtable
    entry N through `self._tab.Offset(N)`)."""
    fields: dict[int, Field] = {}
    for name, indexed, body in _METHOD_RE.findall(source):
        vt = re.search(r"self\._tab\.Offset\((\d+)\)", body)
        if not vt or name.endswith(("AsNumpy", "Length", "IsNone")):
            continue
        number = re.search(r"number_types\.(\w+)Flags, (?:o|a) \+", body)
        target = re.search(r"obj = (\w+)\(\)", body)
        strings = "self._tab.String(" in body
        if "self._tab.Union(" in body:
            enum = UNION_ENUMS.get((table, name))
            if enum is None:
                raise LookupError(f"union field {table}.{name} has no entry in UNION_ENUMS")
            field = Field(name, int(vt.group(1)), UNION, 4, enum)
        elif indexed:
            if strings:
                field = Field(name, int(vt.group(1)), STRING_VECTOR)
            elif target:
                field = Field(name, int(vt.group(1)), TABLE_VECTOR, 4, target.group(1))
            elif number:
                field = Field(name, int(vt.group(1)), SCALAR_VECTOR, _WIDTHS[number.group(1)])
            else:
                raise LookupError(f"cannot tell the element type of vector {table}.{name}")
        elif strings:
            field = Field(name, int(vt.group(1)), STRING)
        elif target:
            field = Field(name, int(vt.group(1)), TABLE, 4, target.group(1))
        elif number:
            field = Field(name, int(vt.group(1)), SCALAR, _WIDTHS[number.group(1)])
        else:
            raise LookupError(f"cannot tell the type of field {table}.{name}")
        fields[field.vt] = field
    return tuple(fields[vt] for vt in sorted(fields))


@cache
def table_fields(table: str) -> tuple[Field, ...]:
    """Every field of `table` LiteRT's verifier checks, in vtable order."""
    known: dict[int, Field] = {}
    cls = getattr(tflite, table, None)
    if isinstance(cls, type):
        known = {f.vt: f for f in fields_from_binding_source(table, inspect.getsource(cls))}
    elif table not in NEWER_SCHEMA_FIELDS:
        raise LookupError(f"no schema table {table!r}")
    for extra in NEWER_SCHEMA_FIELDS.get(table, ()):
        known.setdefault(extra.vt, extra)
    return tuple(known[vt] for vt in sorted(known))


@cache
def union_members(enum: str) -> dict[int, str]:
    """Union type value -> table name (NONE left out)."""
    members = {v: k for k, v in vars(getattr(tflite, enum)).items() if not k.startswith("_") and isinstance(v, int)}
    members.pop(0, None)
    for value, name in NEWER_UNION_MEMBERS.get(enum, {}).items():
        members.setdefault(value, name)
    return members


class CorruptFlatbuffer(Exception):
    """What the C++ verifier would reject, and where (one line)."""


class _Verifier:
    def __init__(self, data: bytes):
        self.data = data
        self.size = min(len(data), MAX_VERIFIED_BYTES)
        # (position, table) -> (tables in the subtree, capped; its height)
        self.tables: dict[tuple[int, str], tuple[int, int]] = {}
        self.table_vectors: dict[tuple[int, str], tuple[int, int]] = {}
        self.string_vectors: set[int] = set()
        self.path: list[str] = []

    def fail(self, problem: str) -> None:
        where = ".".join(self.path) or "file header"
        raise CorruptFlatbuffer(f"{where}: {problem}"[:300])

    def inside(self, position: int, length: int) -> bool:
        """flatbuffers' Verify(elem, elem_len)."""
        return 0 <= position and length < self.size and position <= self.size - length

    def u16(self, position: int) -> int:
        value: int = struct.unpack_from("<H", self.data, position)[0]
        return value

    def u32(self, position: int) -> int:
        value: int = struct.unpack_from("<I", self.data, position)[0]
        return value

    def aligned_inside(self, position: int, width: int, what: str) -> None:
        if position % width:
            self.fail(f"{what} at byte {position} is not {width}-byte aligned")
        if not self.inside(position, width):
            self.fail(f"{what} at byte {position} lies outside the {self.size}-byte buffer")

    def offset(self, position: int) -> int:
        """The object an offset field at `position` points to."""
        self.aligned_inside(position, 4, "offset")
        o = self.u32(position)
        if o == 0:
            self.fail(f"offset at byte {position} is 0")
        if o >= 2**31:
            self.fail(f"offset {o} at byte {position} is negative as a signed offset")
        if not self.inside(position + o, 1):
            self.fail(f"offset at byte {position} points to byte {position + o}, outside the {self.size}-byte buffer")
        return position + o

    def vector(self, position: int, width: int) -> int:
        """Element count of the vector at `position`, after its bounds check."""
        self.aligned_inside(position, 4, "vector length")
        count = self.u32(position)
        if count >= MAX_BUFFER_SIZE // width:
            self.fail(f"vector at byte {position} claims {count} elements")
        if not self.inside(position, 4 + width * count):
            self.fail(f"vector at byte {position} of {count} x {width} bytes runs past the {self.size}-byte buffer")
        return count

    def string(self, position: int) -> None:
        length = self.vector(position, 1)
        end = position + 4 + length
        if not self.inside(end, 1) or self.data[end] != 0:
            self.fail(f"string at byte {position} ({length} bytes) has no terminating 0 byte")

    def table(self, position: int, name: str) -> tuple[int, int]:
        """(tables in the subtree, its height); memoised per position and type."""
        key = (position, name)
        known = self.tables.get(key)
        if known is not None:
            return known
        self.path.append(name)
        self.aligned_inside(position, 4, "table")
        vtable = position - struct.unpack_from("<i", self.data, position)[0]
        if vtable % 2 or not self.inside(vtable, 2):
            self.fail(f"vtable at byte {vtable} is misaligned or outside the {self.size}-byte buffer")
        vtable_size = self.u16(vtable)
        if vtable_size % 2 or not self.inside(vtable, vtable_size):
            self.fail(f"vtable at byte {vtable} of {vtable_size} bytes is odd or runs past the buffer")
        count, height = 1, 0
        for field in table_fields(name):
            if field.vt >= vtable_size:
                continue
            field_offset = self.u16(vtable + field.vt)
            if not field_offset:
                continue
            self.path.append(field.name)
            where = position + field_offset
            if field.kind == SCALAR:
                self.aligned_inside(where, field.width, "field")
            else:
                c, h = self.referenced(field, self.offset(where), position, vtable, vtable_size)
                count, height = min(count + c, MAX_TABLES + 1), max(height, h)
            self.path.pop()
        self.path.pop()
        result = (count, height + 1)
        self.tables[key] = result
        return result

    def referenced(self, field: Field, target: int, table: int, vtable: int, vtable_size: int) -> tuple[int, int]:
        """Verify what an offset field points to; (tables, height) below it."""
        if field.kind == STRING:
            self.string(target)
        elif field.kind == SCALAR_VECTOR:
            self.vector(target, field.width)
        elif field.kind == TABLE:
            return self.table(target, field.table)
        elif field.kind == UNION:
            # The type field sits in the vtable entry before the union's.
            type_entry = field.vt - 2
            type_offset = self.u16(vtable + type_entry) if type_entry < vtable_size else 0
            member = union_members(field.table).get(self.data[table + type_offset] if type_offset else 0)
            if member is not None:
                return self.table(target, member)
        elif field.kind == STRING_VECTOR:
            if target not in self.string_vectors:
                for i in range(self.vector(target, 4)):
                    element = target + 4 + 4 * i
                    self.string(element + self.u32(element))
                self.string_vectors.add(target)
        elif field.kind == TABLE_VECTOR:
            return self.table_vector(target, field.table)
        return 0, 0

    def table_vector(self, position: int, name: str) -> tuple[int, int]:
        key = (position, name)
        known = self.table_vectors.get(key)
        if known is not None:
            return known
        count, height = 0, 0
        for i in range(self.vector(position, 4)):
            element = position + 4 + 4 * i
            self.path.append(f"[{i}]")
            c, h = self.table(element + self.u32(element), name)
            self.path.pop()
            count, height = min(count + c, MAX_TABLES + 1), max(height, h)
        self.table_vectors[key] = (count, height)
        return count, height

    def model(self) -> None:
        if self.size < MIN_BUFFER_SIZE:
            self.fail(f"{self.size} bytes is shorter than any flatbuffer ({MIN_BUFFER_SIZE})")
        if self.data[4:8] != IDENTIFIER:
            self.fail(f"no {IDENTIFIER.decode()} identifier")
        root = self.offset(0)
        tables, height = self.table(root, ROOT_TABLE)
        if height > MAX_DEPTH:
            self.fail(f"tables nest {height} deep (the verifier allows {MAX_DEPTH})")
        if tables > MAX_TABLES:
            self.fail(f"more than {MAX_TABLES:,} table visits (the verifier's limit)")


def verify_model_buffer(data: bytes) -> None:
    """Raise CorruptFlatbuffer when flatbuffers' C++ verifier, as LiteRT runs
    it (VerifyModelBuffer, default options), would reject `data`."""
    _Verifier(data).model()
