"""Codegen: graph + lifetimes + verified plan -> C99 sources, in memory.

Everything C comes from the Jinja templates in templates/; this module only
decides *what* goes in them (which arrays, which calls, which offsets) and
formats numbers as C literals.  The generated directory is self-contained: it
also carries the runtime files from firmware/runtime that the model's kernel
calls need.

Memory discipline of the generated code (seed 001, reference-counted release):
every planned buffer has a count of the ops that still have to read it; after
each op the counts of the buffers it read drop by one and a buffer is released
at zero.  A normal build only keeps the counters; a build with -DMCU_PLAN_CHECK
poisons released bytes and, before each op, checks that the buffers the op
starts writing overlap no live buffer other than an in-place partner the
problem allows.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .errors import InputError, UnsupportedModel, unsupported_model_error
from .graph import DTYPE_C_TYPE, Graph, Tensor, operator_dtype_key, operator_name
from .lifetimes import activation_tensors
from .lowering import CArray, KernelCall, NotLowerable, lower
from .lowering.traits import op_traits
from .resources import firmware_dir, templates_dir
from .runtime_contract import check_call
from .validate import check_kernel_call

# Graph dtypes -> how their stored little-endian bytes decode.
_NUMPY_DTYPE = {
    "bool": "<u1",
    "int8": "<i1",
    "uint8": "<u1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "float32": "<f4",
}
# Activation dtypes the runtime has kernels for; everything else is refused up front.
ACTIVATION_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64", "float32", "bool"})

_VALUES_PER_LINE = {1: 24, 2: 16, 4: 12, 8: 8}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# Fill value for released bytes in check builds: an unlikely, recognisable byte.
POISON_BYTE = 0xA5
# The runtime file that checks a plan's memory discipline in check builds.
PLAN_CHECK_RUNTIME = "mcu_plan_check"


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
    text = "%.9g" % value
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


def _value_lines(values: list[str], per_line: int) -> list[str]:
    return [", ".join(values[i : i + per_line]) for i in range(0, len(values), per_line)]


def _format_values(values, c_type: str) -> list[str]:
    if c_type == "float":
        return [c_float(v) for v in values]
    if c_type == "double":
        return [c_double(v) for v in values]
    if c_type in ("int32_t", "uint32_t", "int64_t", "uint64_t", "int", "long"):
        return [c_int(v) for v in values]
    return [str(int(v)) for v in values]


def _element_bytes(c_type: str) -> int:
    return {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int64_t": 8, "uint64_t": 8, "double": 8}.get(
        c_type, 4
    )


# ---------------------------------------------------------------- the model as the templates see it


@dataclass
class CArrayDef:
    symbol: str
    c_type: str
    count: int
    lines: list[str]
    comment: str = ""
    mutable: bool = False


@dataclass
class VariableDef:
    """One variable tensor in the persistent state region, and how
    NAME_reset() gives it its initial value: every byte `fill`, or a copy of
    the `initial` array (flash) when the model stores values that differ."""

    tensor: int
    offset: int
    nbytes: int
    comment: str
    fill: int = 0
    initial: CArrayDef | None = None


@dataclass
class Slot:
    """One planned buffer as the generated code tracks it."""

    index: int  # position in the generated tables
    buffer: int  # buffer id (root tensor index)
    offset: int
    size: int
    consumers: int  # reads still due at invoke start (+1 for graph outputs: never released)
    live_at_start: bool


@dataclass(frozen=True)
class KernelArg:
    """One pointer argument of a kernel call, as the template renders it:
    `kind` is "null", "arena" (slot, inner: bytes into the slot), "variable"
    (inner: bytes into the state region) or "constant" (symbol: the array's
    name)."""

    kind: str
    c_type: str = ""
    const: bool = True
    slot: int = 0
    inner: int = 0
    symbol: str = ""


@dataclass
class OpCode:
    index: int
    opcode: str
    comment: str
    call: KernelCall | None  # None: the plan made this op a no-op (alias)
    params: list[tuple[str, str]] = field(default_factory=list)
    arrays: list[CArrayDef] = field(default_factory=list)
    args: list[KernelArg] = field(default_factory=list)
    claims: list[int] = field(default_factory=list)  # slots this op writes first
    releases: list[int] = field(default_factory=list)  # slots whose count drops after it


@dataclass
class IoInfo:
    index: int
    tensor: int
    name: str
    c_type: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    elements: int
    scale: str
    zero_point: int
    slot: int
    inner: int


def buffer_enum_name(model_name: str, tensor: Tensor) -> str:
    """The enum constant naming a planned buffer in generated code, from its
    root tensor: NAME_T<index>_<TENSOR NAME>, the index keeping it unique."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", tensor.name).strip("_").upper()[:32].rstrip("_")
    return f"{model_name.upper()}_T{tensor.index}" + (f"_{words}" if words else "")


def zero_point_of(tensor: Tensor) -> int:
    q = tensor.quantization
    return q.zero_points[0] if q and q.zero_points else 0


def _tensor_c_type(tensor: Tensor) -> str:
    try:
        return DTYPE_C_TYPE[tensor.dtype]
    except KeyError:
        raise UnsupportedModel(f"unsupported tensor type: {tensor.dtype} (tensor {tensor.index} '{tensor.name}')")


def lower_all(graph: Graph, elided: frozenset[int] = frozenset()) -> dict[int, KernelCall]:
    """A KernelCall for every op that runs, or one UnsupportedModel naming
    every operator and dtype combination and every tensor type the runtime
    lacks, each once with its count."""
    calls: dict[int, KernelCall] = {}
    unsupported: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for op in graph.operators:
        if op.index in elided:
            continue
        try:
            calls[op.index] = lower(op, graph)
        except NotLowerable as exc:
            key = operator_dtype_key(op, graph.tensors)
            unsupported[key] += 1
            reason = str(exc).strip()
            if key not in reasons and reason and reason != operator_name(op):
                reasons[key] = reason
            continue
        check_kernel_call(graph, op, calls[op.index])
    bad_types: Counter[str] = Counter()
    for t in activation_tensors(graph):
        # A scratch tensor's dtype is its kernel's choice, not the model's.
        if graph.tensors[t].dtype not in ACTIVATION_DTYPES and not graph.tensors[t].is_scratch:
            bad_types[graph.tensors[t].dtype] += 1
    if unsupported or bad_types:
        raise unsupported_model_error(dict(unsupported), reasons, dict(bad_types))
    return calls


class _Builder:
    def __init__(self, graph: Graph, lifetimes, plan, name: str):
        self.graph = graph
        self.lifetimes = lifetimes
        self.plan = plan
        self.name = name
        self.constants: dict[int, CArrayDef] = {}
        self.variables: dict[int, VariableDef] = {}
        buffers = sorted(lifetimes.problem.buffers, key=lambda b: b.id)
        self.slot_of = {b.id: i for i, b in enumerate(buffers)}
        self.buffers = buffers

    # -- addresses

    def tensor_slot(self, t: int) -> tuple[int, int]:
        placement = self.lifetimes.placements[t]
        return self.slot_of[placement.buffer], placement.offset

    def tensor_address(self, t: int) -> int:
        return self.lifetimes.tensor_offset(self.plan.offsets, t)

    def arg(self, t: int, writes: bool) -> KernelArg:
        if t < 0:
            return KernelArg("null")
        tensor = self.graph.tensors[t]
        c_type = _tensor_c_type(tensor)
        if t in self.lifetimes.placements:
            slot, inner = self.tensor_slot(t)
            return KernelArg("arena", c_type, not writes, slot=slot, inner=inner)
        if tensor.is_variable:
            # Ops read variable tensors as inputs and update them in place.
            return KernelArg("variable", c_type, False, inner=self.variable(tensor).offset)
        if tensor.is_constant:
            if writes:
                raise UnsupportedModel(f"operator writes constant tensor {t} '{tensor.name}'")
            return KernelArg("constant", c_type, True, symbol=self.constant(tensor).symbol)
        raise UnsupportedModel(f"tensor {t} '{tensor.name}' has no data and no place in the arena")

    def _array_of(self, tensor: Tensor, symbol: str, mutable: bool) -> CArrayDef:
        c_type = _tensor_c_type(tensor)
        count = tensor.num_elements
        if tensor.data is not None:
            values = np.frombuffer(tensor.data, dtype=_NUMPY_DTYPE[tensor.dtype], count=count).tolist()
        else:
            values = [0] * count
        if not values:  # C has no empty arrays
            values = [0]
        return CArrayDef(
            symbol=symbol,
            c_type=c_type,
            count=len(values),
            lines=_value_lines(_format_values(values, c_type), _VALUES_PER_LINE[_element_bytes(c_type)]),
            comment=f"tensor {tensor.index} {c_comment(tensor.name)} {list(tensor.shape)} {tensor.dtype}",
            mutable=mutable,
        )

    def constant(self, tensor: Tensor) -> CArrayDef:
        if tensor.index not in self.constants:
            self.constants[tensor.index] = self._array_of(tensor, f"const_t{tensor.index}", mutable=False)
        return self.constants[tensor.index]

    def variable(self, tensor: Tensor) -> VariableDef:
        """The variable's place in the state region and initial value: the
        model's stored values if it has any, else what TFLite's
        ResetVariableTensor writes (every byte the zero point for int8, 0
        otherwise)."""
        if tensor.index not in self.variables:
            fill = zero_point_of(tensor) & 0xFF if tensor.dtype == "int8" else 0
            initial = None
            if tensor.data is not None and any(byte != fill for byte in tensor.data[: tensor.nbytes]):
                initial = self._array_of(tensor, f"{self.name}_initial_t{tensor.index}", mutable=False)
            self.variables[tensor.index] = VariableDef(
                tensor=tensor.index,
                offset=self.lifetimes.variable_offsets[tensor.index],
                nbytes=tensor.nbytes,
                comment=f"tensor {tensor.index} {c_comment(tensor.name)} {list(tensor.shape)} {tensor.dtype}",
                fill=fill,
                initial=initial,
            )
        return self.variables[tensor.index]

    # -- ops

    def ops(self, calls: dict[int, KernelCall]) -> list[OpCode]:
        graph = self.graph
        produced: set[int] = set()
        for t in graph.inputs:
            if t in self.lifetimes.placements:
                produced.add(self.tensor_slot(t)[0])
        written_by_ops = {t for op in graph.operators for t in op.outputs + op.scratch if t >= 0}
        for t in self.lifetimes.placements:
            if t not in written_by_ops:  # read but produced by nobody: the application's to fill
                produced.add(self.tensor_slot(t)[0])
        self.live_at_start = set(produced)

        result = []
        for op in graph.operators:
            call = calls.get(op.index)
            if call is not None and op_traits(op.opcode).reinterprets_input and self._output_shares_input(op):
                call = None
            code = OpCode(op.index, op.opcode, c_comment(f"op {op.index}: {op.opcode}"), call)
            if call is not None:
                self._render_call(op, call, code)
            for t in op.outputs + op.scratch:
                if t in self.lifetimes.placements:
                    slot = self.tensor_slot(t)[0]
                    if slot not in produced:
                        produced.add(slot)
                        code.claims.append(slot)
            for t in op.inputs:
                if t in self.lifetimes.placements:
                    slot = self.tensor_slot(t)[0]
                    if slot not in code.releases:
                        code.releases.append(slot)
            result.append(code)
        return result

    def _output_shares_input(self, op) -> bool:
        src, dst = op.inputs[0], op.outputs[0]
        placements = self.lifetimes.placements
        return src in placements and dst in placements and self.tensor_address(src) == self.tensor_address(dst)

    def _render_call(self, op, call: KernelCall, code: OpCode) -> None:
        params_struct = check_call(call, f"op {op.index} {op.opcode}")
        for f in params_struct.fields:
            value = call.params[f.name]
            if isinstance(value, CArray):
                symbol = f"op{op.index}_{f.name}"
                values = list(value.values) or [0]  # C has no empty arrays
                code.arrays.append(
                    CArrayDef(
                        symbol=symbol,
                        c_type=value.c_type,
                        count=len(values),
                        lines=_value_lines(
                            _format_values(values, value.c_type), _VALUES_PER_LINE[_element_bytes(value.c_type)]
                        ),
                    )
                )
                code.params.append((f.name, symbol))
            elif f.pointer:  # NULL
                code.params.append((f.name, "NULL"))
            elif f.length is not None:
                code.params.append((f.name, "{ " + ", ".join(_format_values(value, f.c_type)) + " }"))
            else:
                code.params.append((f.name, _format_values([value], f.c_type)[0]))
        outputs = set(op.outputs) | set(op.scratch)
        code.args = [self.arg(t, writes=t in outputs) for t in call.args]

    # -- slots and I/O

    def slots(self, ops: list[OpCode]) -> list[Slot]:
        consumers = Counter(slot for code in ops for slot in code.releases)
        held = {self.tensor_slot(t)[0] for t in self.graph.outputs if t in self.lifetimes.placements}
        # A buffer nobody reads is released right after the op that wrote it.
        for code in ops:
            for slot in code.claims:
                if consumers[slot] == 0 and slot not in held:
                    code.releases.append(slot)
                    consumers[slot] += 1
        # So is a graph input nobody reads (one read only by folded ops, say):
        # the plan lets op 1 onwards reuse its bytes.
        for slot in sorted(self.live_at_start):
            if ops and consumers[slot] == 0 and slot not in held:
                ops[0].releases.append(slot)
                consumers[slot] += 1
        return [
            Slot(
                index=i,
                buffer=b.id,
                offset=self.plan.offsets[b.id],
                size=b.size,
                consumers=consumers[i] + (1 if i in held else 0),
                live_at_start=i in self.live_at_start,
            )
            for i, b in enumerate(self.buffers)
        ]

    def io(self, tensors: tuple[int, ...]) -> list[IoInfo]:
        infos = []
        for i, t in enumerate(tensors):
            tensor = self.graph.tensors[t]
            if t not in self.lifetimes.placements:
                raise UnsupportedModel(f"graph input/output tensor {t} '{tensor.name}' is not an activation")
            q = tensor.quantization
            slot, inner = self.tensor_slot(t)
            infos.append(
                IoInfo(
                    index=i,
                    tensor=t,
                    name=c_comment(tensor.name),
                    c_type=_tensor_c_type(tensor),
                    dtype=tensor.dtype,
                    shape=tensor.shape or (1,),
                    nbytes=tensor.nbytes,
                    elements=tensor.num_elements,
                    scale=c_float(q.scales[0]) if q and q.scales else "0.0f",
                    zero_point=q.zero_points[0] if q and q.zero_points else 0,
                    slot=slot,
                    inner=inner,
                )
            )
        return infos


def _in_place_table(lifetimes, slot_of: dict[int, int]) -> list[tuple[int, int, int]]:
    table = []
    for step_index, step in enumerate(lifetimes.problem.steps):
        for out_id, in_id in step.in_place:
            table.append((step_index, slot_of[out_id], slot_of[in_id]))
    return table


def _runtime_files(stems: list[str]) -> dict[str, bytes]:
    """The runtime sources the calls name, plus every header they include
    (and the .c beside such a header), transitively."""
    runtime = firmware_dir() / "runtime"
    files: dict[str, bytes] = {}
    pending = []
    for stem in stems:
        for suffix in (".c", ".h"):
            pending.append(stem + suffix)
    while pending:
        file_name = pending.pop()
        if file_name in files:
            continue
        path = runtime / file_name
        if not path.is_file():
            if file_name.endswith(".h"):
                raise FileNotFoundError(f"runtime file {path} is missing")
            continue  # a header-only part of the runtime
        data = path.read_bytes()
        files[file_name] = data
        for included in _INCLUDE.findall(data.decode("utf-8", "replace")):
            if (runtime / included).is_file():
                pending.append(included)
                if included.endswith(".h"):
                    pending.append(included[:-2] + ".c")
    return files


def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, **context) -> bytes:
    return _environment().get_template(template).render(**context).encode("utf-8")


# The CMake drop-in of every OUTDIR (a static library target named after the model).
DROP_IN_CMAKE = "CMakeLists.txt"


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


class GeneratedSources(dict):
    """File name -> contents of a generated directory (a plain dict to every
    caller), with the model's `interface` alongside."""

    def __init__(self, files: dict[str, bytes], interface: ModelInterface):
        super().__init__(files)
        self.interface = interface


def generate(
    graph: Graph,
    lifetimes,
    plan,
    *,
    name: str,
    arena_section: str | None = None,
    extern_arena: bool = False,
) -> GeneratedSources:
    """File name -> contents of the self-contained generated directory."""
    if name != c_identifier(name):
        raise InputError(f"model name {name!r} is not a C identifier (try {c_identifier(name)!r})")
    if arena_section is not None:
        validate_section_name(arena_section)
    calls = lower_all(graph, lifetimes.elided_ops)
    builder = _Builder(graph, lifetimes, plan, name)
    ops = builder.ops(calls)
    slots = builder.slots(ops)
    inputs = builder.io(graph.inputs)
    outputs = builder.io(graph.outputs)
    arena_size = max(plan.arena_bytes, max((s.offset + s.size for s in slots), default=0), 1)

    stems: list[str] = []
    for code in ops:
        if code.call is not None:
            for stem in code.call.sources:
                if stem not in stems:
                    stems.append(stem)
    # Every model carries the plan checker its -DMCU_PLAN_CHECK build calls.
    runtime = _runtime_files(stems + [PLAN_CHECK_RUNTIME])
    for generated_name in (f"{name}.c", f"{name}.h", f"{name}.mk", DROP_IN_CMAKE, MANIFEST_NAME):
        if generated_name in runtime:
            raise InputError(f"model name {name!r} collides with runtime file {generated_name}")

    releases = [slot for code in ops for slot in code.releases]
    context = dict(
        name=name,
        guard=name.upper() + "_H",
        arena_size=arena_size,
        arena_section=c_string(arena_section) if arena_section else None,
        extern_arena=extern_arena,
        headers=sorted(stem + ".h" for stem in stems),
        constants=[builder.constants[t] for t in sorted(builder.constants)],
        variables=[builder.variables[t] for t in sorted(builder.variables)],
        state_size=max(lifetimes.variable_bytes, 1),
        state_bytes=lifetimes.variable_bytes if builder.variables else 0,
        ops=ops,
        slots=slots,
        slot_names=[c_string(f"{s.buffer}:{graph.tensors[s.buffer].name}") for s in slots],
        buffer_enum=[buffer_enum_name(name, graph.tensors[s.buffer]) for s in slots],
        op_names=[c_string(op.opcode) for op in graph.operators],
        count_type="uint16_t" if max((s.consumers for s in slots), default=0) < 65536 else "uint32_t",
        offset_type="uint32_t",
        in_place=_in_place_table(lifetimes, builder.slot_of),
        num_releases=len(releases),
        inputs=inputs,
        outputs=outputs,
        poison_byte=f"0x{POISON_BYTE:02X}u",
        planner=plan.planner,
        num_ops=len(graph.operators),
    )
    files = {
        f"{name}.h": render("model.h.j2", **context),
        f"{name}.c": render("model.c.j2", **context),
    }
    files.update(runtime)
    # Drop-in build files: the sources to compile and the flags they need.
    build_context = dict(
        name=name,
        sources=sorted(file_name for file_name in files if file_name.endswith(".c")),
        needs_libm=any(b"<math.h>" in data for data in files.values()),
    )
    files[DROP_IN_CMAKE] = render("CMakeLists.txt.j2", **build_context)
    files[f"{name}.mk"] = render("model.mk.j2", **build_context)
    interface = ModelInterface(
        name=name,
        num_inputs=len(inputs),
        num_outputs=len(outputs),
        arena_bytes=arena_size,
        arena_section=arena_section,
        extern_arena=extern_arena,
        variable_bytes=lifetimes.variable_bytes,
    )
    return GeneratedSources(dict(sorted(files.items())), interface)


# ---------------------------------------------------------------- OUTDIR

# mcu-plan replaces an existing OUTDIR only when everything in it is its own:
# this file in OUTDIR lists what it wrote (and, in a firmware OUTDIR, what the
# Makefile makes), so that `-o .` on a user's project refuses instead of deleting it.
MANIFEST_NAME = ".mcu-plan-output"


def _plain_name(file_name: str) -> str:
    if "/" in file_name or "\\" in file_name or file_name in ("", ".", ".."):
        raise ValueError(f"generated file name {file_name!r} is not a plain name")
    return file_name


def write_manifest(directory: Path, entries, interface: ModelInterface | None = None) -> None:
    """Record `entries` (top-level names in `directory`, added to any it
    already lists) as mcu-plan's own, with the model's interface if given."""
    directory = Path(directory)
    previous = read_manifest(directory)
    owned = set(previous.get("entries", ())) | {_plain_name(e) for e in entries}
    owned.discard(MANIFEST_NAME)
    record = {"written_by": "mcu-plan", "entries": sorted(owned)}
    if interface is not None:
        record["model"] = asdict(interface)
    elif "model" in previous:
        record["model"] = previous["model"]
    (directory / MANIFEST_NAME).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_manifest(directory: Path) -> dict:
    """The manifest mcu-plan left in `directory`, or {} when there is none
    (or it is not one mcu-plan could have written)."""
    try:
        record = json.loads((Path(directory) / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or not isinstance(record.get("entries"), list):
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
    )
    return interface if well_formed else None


def check_output_dir(outdir: str | os.PathLike) -> None:
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
    owned = set(read_manifest(outdir).get("entries", ())) | {MANIFEST_NAME}
    foreign = [entry for entry in present if entry not in owned]
    if foreign:
        raise InputError(
            f"OUTDIR {outdir} contains files mcu-plan did not write (e.g. {foreign[0]}); "
            "choose a new or empty directory"
        )


def make_parents(path: str | os.PathLike) -> list[Path]:
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

    def __enter__(self):
        self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, self._SIGNALS)
        return self

    def __exit__(self, *exc_info):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)
        return False


def replace_output_dir(staging: str | os.PathLike, outdir: str | os.PathLike) -> Path:
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


def write_output(files: dict[str, bytes], outdir: str | os.PathLike) -> Path:
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
