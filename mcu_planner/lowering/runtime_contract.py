"""The parameter contract between lowering (Python) and the C runtime, and
every other check of a lowered kernel call (check_kernel_call).

Each kernel's parameter struct is declared once, as a `typedef struct { ... }
NAME;` in a header of firmware/runtime.  This module reads those declarations
(a small, strict parser of the subset the headers use: scalar, pointer and
fixed-size array fields, pointers to opaque structs, field-list macros,
comments) and checks every
KernelCall against them at generation time: the call's function is declared
taking a pointer to its params struct and one pointer per tensor argument; the
params dict names exactly the struct's fields; each value fits its field's C
type.  A disagreement is a bug in a lowering, reported naming the kernel, the
field and the op, instead of C's designated initializers silently zeroing a
forgotten field.

A kernel with many tensor arguments takes them grouped instead, as its one
parameter after the params pointer: `const NAME_tensors *t`, a struct of
pointer fields declared in the same header, one field per tensor argument in
the call's order (the generated C passes a compound literal of it).

Every header in firmware/runtime is read, so a kernel in a new runtime file is
checked without registering anything.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..emit.resources import firmware_dir
from ..errors import McuPlanError

if TYPE_CHECKING:
    from ..graph import Graph, Operator
    from . import KernelCall

# C scalar types a params field may have -> the integer range it holds
# (None for the floating-point types).
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8_t": (-(2**7), 2**7 - 1),
    "uint8_t": (0, 2**8 - 1),
    "int16_t": (-(2**15), 2**15 - 1),
    "uint16_t": (0, 2**16 - 1),
    "int32_t": (-(2**31), 2**31 - 1),
    "uint32_t": (0, 2**32 - 1),
    "int64_t": (-(2**63), 2**63 - 1),
    "uint64_t": (0, 2**64 - 1),
}
FLOAT_TYPES = frozenset({"float", "double"})
SCALAR_TYPES = frozenset(INTEGER_RANGES) | FLOAT_TYPES

# The one string a pointer field may take instead of an array: no array.
NULL = "NULL"
# What an opaque pointer field may take besides NULL (CField.opaque).
OPAQUE_VALUE = re.compile(r"[A-Z][A-Z0-9_]*\(\d+(?:, \d+)*\)")


class ContractError(McuPlanError):
    """A lowering's params disagree with the C struct, or a runtime header
    leaves the parsed subset: a bug in mcu-planner (exit 1)."""


@dataclass(frozen=True)
class CField:
    name: str
    c_type: str  # the scalar type, without const: "int32_t", "float" ...
    pointer: bool = False  # `const T *name`: a CArray of T or NULL
    length: int | None = None  # `T name[N]`: a sequence of exactly N values
    # `const T *name` with T an opaque struct (`typedef struct T T;`): NULL
    # or a macro of the runtime's headers naming one of its objects, given
    # integer literals (OPAQUE_VALUE: MCU_CONV_ROWS_S8(4, 0)).
    opaque: bool = False

    def declaration(self) -> str:
        if self.pointer:
            return f"const {self.c_type} *{self.name}"
        return f"{self.c_type} {self.name}" + (f"[{self.length}]" if self.length is not None else "")


@dataclass(frozen=True)
class CStruct:
    name: str
    header: str
    fields: tuple[CField, ...]
    # Why the struct is outside the subset a params struct may use (None: it
    # is not).  Kept, not raised, so that a helper struct of some kernel's own
    # stays out of the way until a lowering names it as params.
    problem: str | None = None

    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class CFunction:
    name: str
    header: str
    params_type: str  # the struct its first parameter points at
    num_tensor_args: int  # parameters after the params pointer
    returns_status: bool = False  # declared `mcu_status NAME(...)`: it can fail (mcu_runtime.h)
    # The struct grouping the tensor arguments (num_tensor_args: its fields),
    # or None where they are parameters of their own.
    tensors_type: str | None = None


@dataclass(frozen=True)
class RuntimeDeclarations:
    structs: dict[str, CStruct]
    functions: dict[str, CFunction]


# ---------------------------------------------------------------- the parser

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.MULTILINE)
_DIRECTIVE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)
# `typedef struct T T;`: a type only the runtime's own code looks inside.
_OPAQUE_STRUCT = re.compile(r"\btypedef\s+struct\s+([A-Za-z_]\w*)\s+\1\s*;")
_TYPEDEF_STRUCT = re.compile(r"\btypedef\s+struct\s*(?:[A-Za-z_]\w*\s*)?\{([^{}]*)\}\s*([A-Za-z_]\w*)\s*;")
_FIELD = re.compile(
    r"^(?P<const>const\s+)?(?P<type>[A-Za-z_]\w*)\s*(?P<star>\*)?\s*(?P<name>[A-Za-z_]\w*)"
    r"\s*(?:\[\s*(?P<length>[A-Za-z_0-9]+)\s*\])?$"
)
# A prototype whose first parameter points at a params struct (groups: return
# type, name, params type, the other parameters).
_PROTOTYPE = re.compile(
    r"\b([A-Za-z_]\w*)\s+\**\s*([A-Za-z_]\w*)\s*\(\s*const\s+([A-Za-z_]\w*)\s*\*\s*(?:const\s+)?[A-Za-z_]\w*\s*([^;{}]*)\)\s*;"
)


def _integer_literal(text: str, macros: dict[str, str]) -> int | None:
    text = text.strip()
    for _ in range(8):  # a macro naming a macro naming a number
        stripped = text.strip("() \t")
        if re.fullmatch(r"\d+[uU]?", stripped):
            return int(stripped.rstrip("uU"))
        if stripped in macros:
            text = macros[stripped]
            continue
        return None
    return None


def _expand(body: str, macros: dict[str, str], header: str, depth: int = 0) -> str:
    """`body` with the field-list macros it names (MCU_CONV_GEOMETRY_FIELDS ...) expanded."""
    if depth > 8:
        raise ContractError(f"{header}: field macros nest deeper than 8")

    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in macros and ";" in macros[word]:
            return _expand(macros[word], macros, header, depth + 1)
        return word

    return re.sub(r"\b[A-Za-z_]\w*\b", replace, body)


def _parse_field(
    declaration: str, struct_name: str, header: str, macros: dict[str, str], opaque: frozenset[str] = frozenset()
) -> CField:
    text = " ".join(declaration.split())
    match = _FIELD.match(text)
    if match is None:
        raise ContractError(f"{header}: struct {struct_name}: cannot read field declaration {text!r}")
    c_type, name = match.group("type"), match.group("name")
    pointer = match.group("star") is not None
    if pointer and match.group("const") is not None and match.group("length") is None and c_type in opaque:
        return CField(name=name, c_type=c_type, pointer=True, opaque=True)
    if c_type not in SCALAR_TYPES:
        raise ContractError(
            f"{header}: struct {struct_name}: field {name} has type {c_type}, not one of "
            f"{', '.join(sorted(SCALAR_TYPES))}"
        )
    if pointer and match.group("const") is None:
        raise ContractError(f"{header}: struct {struct_name}: pointer field {name} must point at const data")
    length = None
    if match.group("length") is not None:
        if pointer:
            raise ContractError(f"{header}: struct {struct_name}: field {name} is an array of pointers")
        length = _integer_literal(match.group("length"), macros)
        if length is None or length < 1:
            raise ContractError(f"{header}: struct {struct_name}: array field {name} has no constant length")
    elif match.group("const") is not None and not pointer:
        raise ContractError(f"{header}: struct {struct_name}: field {name} is const (cannot be a params field)")
    return CField(name=name, c_type=c_type, pointer=pointer, length=length)


# The one parameter after the params pointer of a kernel taking its tensor
# arguments grouped (group: the struct's type), and a field of that struct.
_TENSORS_PARAMETER = re.compile(r"^,\s*const\s+([A-Za-z_]\w*)\s*\*\s*(?:const\s+)?[A-Za-z_]\w*$")
_POINTER_FIELD = re.compile(r"^(?:const\s+)?[A-Za-z_]\w*\s*\*\s*[A-Za-z_]\w*$")


def _pointer_struct_sizes(code: str, macros: dict[str, str], header: str) -> dict[str, int]:
    """The typedef structs of `code` whose fields are all pointers: name ->
    number of fields (a kernel's grouped tensor arguments)."""
    sizes = {}
    for match in _TYPEDEF_STRUCT.finditer(code):
        body, name = match.groups()
        declarations = [" ".join(d.split()) for d in _expand(body, macros, header).split(";")]
        fields = [d for d in declarations if d]
        if fields and all(_POINTER_FIELD.match(d) for d in fields):
            sizes[name] = len(fields)
    return sizes


def _count_parameters(rest: str) -> int:
    """Parameters after the first, from the text after it (`, const int8_t *input, ...`)."""
    rest = rest.strip()
    if not rest:
        return 0
    if not rest.startswith(","):
        return -1  # not a plain parameter list; never matches a call
    return rest.count(",")


def parse_header(
    text: str, header: str, macros: dict[str, str] | None = None, opaque: frozenset[str] = frozenset()
) -> tuple[list[CStruct], list[CFunction]]:
    """The params structs and kernel prototypes one header declares (`opaque`:
    the opaque struct types other headers declare)."""
    macros = dict(macros or {})
    code = _COMMENT.sub(" ", text).replace("\\\n", " ")
    for name, body in _DEFINE.findall(code):
        macros[name] = body
    code = _DIRECTIVE.sub(" ", code)
    opaque = opaque | frozenset(_OPAQUE_STRUCT.findall(code))
    structs = []
    for match in _TYPEDEF_STRUCT.finditer(code):
        body, name = match.groups()
        declarations = [d for d in _expand(body, macros, header).split(";")]
        if declarations[-1].strip():
            structs.append(
                CStruct(
                    name, header, (), f"{header}: struct {name}: {declarations[-1].strip()!r} does not end with ';'"
                )
            )
            continue
        try:
            fields = [_parse_field(d, name, header, macros, opaque) for d in declarations[:-1] if d.strip()]
            if not fields:
                raise ContractError(f"{header}: struct {name} has no fields")
            duplicates = sorted({f.name for f in fields if [g.name for g in fields].count(f.name) > 1})
            if duplicates:
                raise ContractError(f"{header}: struct {name}: field {duplicates[0]} is declared twice")
        except ContractError as exc:
            structs.append(CStruct(name=name, header=header, fields=(), problem=str(exc)))
            continue
        structs.append(CStruct(name=name, header=header, fields=tuple(fields)))
    pointer_structs = _pointer_struct_sizes(code, macros, header)
    functions = []
    for returns, name, params_type, rest in _PROTOTYPE.findall(code):
        grouped = _TENSORS_PARAMETER.match(rest.strip())
        tensors_type = grouped.group(1) if grouped and grouped.group(1) in pointer_structs else None
        functions.append(
            CFunction(
                name=name,
                header=header,
                params_type=params_type,
                num_tensor_args=_count_parameters(rest) if tensors_type is None else pointer_structs[tensors_type],
                returns_status=returns == "mcu_status",
                tensors_type=tensors_type,
            )
        )
    return structs, functions


def _header_macros(texts: dict[str, str]) -> dict[str, str]:
    """Object-like macros of every header: field lists and array lengths may
    come from an included header (MCU_MAX_RANK)."""
    macros: dict[str, str] = {}
    for text in texts.values():
        code = _COMMENT.sub(" ", text).replace("\\\n", " ")
        for name, body in _DEFINE.findall(code):
            macros[name] = body
    return macros


def parse_runtime(runtime: Path) -> RuntimeDeclarations:
    texts = {path.name: path.read_text(encoding="utf-8") for path in sorted(Path(runtime).glob("*.h"))}
    macros = _header_macros(texts)
    opaque = frozenset(name for text in texts.values() for name in _OPAQUE_STRUCT.findall(_COMMENT.sub(" ", text)))
    structs: dict[str, CStruct] = {}
    functions: dict[str, CFunction] = {}
    for header, text in texts.items():
        header_structs, header_functions = parse_header(text, header, macros, opaque)
        for s in header_structs:
            if s.name in structs:
                raise ContractError(f"struct {s.name} is declared in both {structs[s.name].header} and {header}")
            structs[s.name] = s
        for f in header_functions:
            functions.setdefault(f.name, f)
    return RuntimeDeclarations(structs, functions)


@functools.lru_cache(maxsize=4)
def _declarations(runtime: str) -> RuntimeDeclarations:
    return parse_runtime(Path(runtime))


def runtime_declarations() -> RuntimeDeclarations:
    """The structs and prototypes of firmware/runtime/*.h (read once)."""
    return _declarations(str(firmware_dir() / "runtime"))


# ---------------------------------------------------------------- the check


def _is_float32(value: float) -> bool:
    if math.isnan(value) or math.isinf(value):
        return True
    try:
        return bool(struct.unpack("<f", struct.pack("<f", value))[0] == value)
    except OverflowError:
        return False


def scalar_problem(value: object, c_type: str) -> str | None:
    """Why `value` cannot initialise a `c_type`, or None when it can."""
    if c_type in FLOAT_TYPES:
        if not isinstance(value, float):
            return f"{type(value).__name__} {value!r} for a {c_type} (give a Python float)"
        if c_type == "float" and not _is_float32(value):
            return f"{value!r} is not a float32 value (round it where the reference rounds it)"
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{type(value).__name__} {value!r} for an integer {c_type}"
    lo, hi = INTEGER_RANGES[c_type]
    if not lo <= value <= hi:
        return f"{value} is outside {c_type} [{lo}, {hi}]"
    return None


def field_problem(field: CField, value: object) -> str | None:
    """Why `value` cannot initialise `field`, or None when it can."""
    from . import CArray

    if field.opaque:
        if not isinstance(value, str) or not (value == NULL or OPAQUE_VALUE.fullmatch(value)):
            return f"{type(value).__name__} {value!r} for {field.declaration()} (give NULL or MACRO(1, 2))"
        return None
    if field.pointer:
        if value == NULL:
            return None
        if not isinstance(value, CArray):
            return f"{type(value).__name__} {value!r} for pointer {field.declaration()} (give a CArray or NULL)"
        if value.c_type != field.c_type:
            return f"a CArray of {value.c_type} for {field.declaration()}"
        for i, element in enumerate(value.values):
            problem = scalar_problem(element, field.c_type)
            if problem is not None:
                return f"element {i}: {problem}"
        return None
    if field.length is not None:
        if not isinstance(value, (tuple, list)):
            return f"{type(value).__name__} {value!r} for array {field.declaration()} (give a tuple)"
        if len(value) != field.length:
            return f"{len(value)} values for array {field.declaration()}"
        for i, element in enumerate(value):
            problem = scalar_problem(element, field.c_type)
            if problem is not None:
                return f"element {i}: {problem}"
        return None
    if isinstance(value, (str, tuple, list, CArray)):
        return f"{type(value).__name__} {value!r} for scalar {field.declaration()}"
    return scalar_problem(value, field.c_type)


def check_call(call: KernelCall, op_label: str) -> CStruct:
    """The params struct of `call`, after checking the call against the
    runtime's declarations; ContractError naming the kernel, the field and
    `op_label` (e.g. "op 3 SOFTMAX") on any disagreement."""
    declarations = runtime_declarations()
    where = f"kernel {call.function} ({op_label})"
    params_struct = declarations.structs.get(call.params_type)
    if params_struct is None:
        raise ContractError(
            f"{where}: params type {call.params_type} is declared in no firmware/runtime header "
            "(as `typedef struct { ... } NAME;` without nested braces)"
        )
    if params_struct.problem is not None:
        raise ContractError(f"{where}: {params_struct.problem}")
    function = declarations.functions.get(call.function)
    if function is None:
        raise ContractError(
            f"{where}: no firmware/runtime header declares {call.function}(const {call.params_type} *, ...)"
        )
    if function.params_type != call.params_type:
        raise ContractError(
            f"{where}: {function.header} declares it taking {function.params_type}, "
            f"the lowering gives {call.params_type}"
        )
    if function.num_tensor_args != len(call.args):
        raise ContractError(
            f"{where}: {function.header} declares {function.num_tensor_args} tensor arguments, "
            f"the lowering gives {len(call.args)}"
        )
    declared = params_struct.field_names()
    missing = [name for name in declared if name not in call.params]
    extra = [name for name in call.params if name not in declared]
    if missing:
        raise ContractError(
            f"{where}: {params_struct.name} field {missing[0]} is missing from the lowering's "
            f"params" + (f" (also {', '.join(missing[1:])})" if missing[1:] else "")
        )
    if extra:
        raise ContractError(
            f"{where}: field {extra[0]} is not in {params_struct.name} ({params_struct.header})"
            + (f" (also {', '.join(extra[1:])})" if extra[1:] else "")
        )
    for f in params_struct.fields:
        problem = field_problem(f, call.params[f.name])
        if problem is not None:
            raise ContractError(f"{where}: {params_struct.name}.{f.name}: {problem}")
    return params_struct


# ---------------------------------------------------------------- constants derived from the model

# fail(rule, detail): report a broken rule as bad input (validate.Context.fail).
Fail = Callable[[str, str], None]


def _out_of_range(values: Iterable[object], c_type: str) -> int | None:
    lo, hi = INTEGER_RANGES[c_type]
    for value in values:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and not lo <= int(value) <= hi:
            return int(value)
    return None


def rule_shift_range(graph: Graph, call: KernelCall, op: Operator, fail: Fail) -> None:
    """Right shifts stay below the int32 width (quantize_multiplier flushes
    smaller multipliers to zero; a right shift of 32 or more is undefined)."""
    from . import CArray

    for name, value in call.params.items():
        if not name.endswith("shift"):
            continue
        values = value.values if isinstance(value, CArray) else (value,)
        for s in values:
            if isinstance(s, int) and s < -31:
                fail("rescale-shift-range", f"{name} = {s}: a right shift of {-s} bits")


def rule_single_rounding_range(graph: Graph, call: KernelCall, op: Operator, fail: Fail) -> None:
    """The int8 FULLY_CONNECTED rescale (ruy's single rounding) is defined
    only while the rescaled accumulator fits int32 (ruy checks that in debug
    builds; release builds return values no portable code reproduces).  A
    tiny output scale breaks that: refuse when the largest accumulator the
    weights, bias and offsets allow, times the rescale factor, reaches 2^31."""
    if call.function != "mcu_fully_connected_s8":
        return
    p: dict[str, Any] = dict(call.params)  # this kernel's fields, by name
    filt = graph.tensors[op.inputs[1]]
    bias = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    units, depth = p["output_depth"], p["accum_depth"]
    input_reach = max(abs(-128 + p["input_offset"]), abs(127 + p["input_offset"]))
    if filt.is_constant and filt.dtype == "int8" and filt.data is not None:
        weights = np.frombuffer(filt.data, dtype=np.int8).astype(np.int64).reshape(units, depth)
        row_reach = np.abs(weights + p["filter_offset"]).sum(axis=1) * input_reach
    else:
        row_reach = np.full(units, depth * 255 * input_reach, dtype=np.int64)
    if bias is not None and bias.is_constant and bias.dtype == "int32" and bias.data is not None:
        row_reach = row_reach + np.abs(np.frombuffer(bias.data, dtype="<i4").astype(np.int64))
    elif bias is not None:
        row_reach = row_reach + 2**31
    multipliers, shifts = p["output_multiplier"].values, p["output_shift"].values
    for o in range(units):
        q = o if p["per_channel"] else 0
        factor = multipliers[q] * 2.0 ** (shifts[q] - 31)
        if float(row_reach[o]) * factor >= 2.0**31:
            fail(
                "fc-rescale-range",
                f"output {o}: accumulators up to {int(row_reach[o])} times the rescale factor "
                f"{factor:.6g} leave int32 (output scale too small for the int8 kernel)",
            )
            return


def rule_c_types(graph: Graph, call: KernelCall, op: Operator, fail: Fail) -> None:
    """Every integer constant fits the C type of the field or array it is
    written into (types from the runtime headers).  Checked before the
    contract check, because an out-of-range value that comes from the model
    (a zero point, a tiny scale) is bad input, not a bug in a lowering."""
    from . import CArray

    struct = runtime_declarations().structs.get(call.params_type)
    fields = {f.name: f.c_type for f in struct.fields} if struct is not None else {}
    for name, value in call.params.items():
        c_type: str | None
        values: tuple[object, ...]
        if isinstance(value, CArray):
            c_type, values = value.c_type, tuple(value.values)
        else:
            c_type, values = fields.get(name), (value,)
        if c_type not in INTEGER_RANGES:
            continue
        bad = _out_of_range(values, c_type)
        if bad is not None:
            fail("c-type-range", f"derived constant {name} = {bad} does not fit {c_type}")


KERNEL_CALL_RULES: list[Callable[[Graph, KernelCall, Operator, Fail], None]] = [
    rule_shift_range,
    rule_single_rounding_range,
    rule_c_types,
]


def check_kernel_call(graph: Graph, op: Operator, call: KernelCall, label: str = "") -> None:
    """The constants one lowered op derived from the model: InvalidModel
    (exit 2, validate's one-line form) when one breaks a rule.  check_call
    then checks the call against the C declarations."""
    from ..frontend.validate import Context

    ctx = Context(graph, label)

    def fail(rule: str, detail: str) -> None:
        ctx.fail(rule, detail, op, op.outputs[0] if op.outputs else None)

    for rule in KERNEL_CALL_RULES:
        rule(graph, call, op, fail)
