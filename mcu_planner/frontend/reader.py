"""Read a .tflite file into the Graph classes (mcu_planner/graph.py).

Subgraph 0 is read, and the init subgraph a CALL_ONCE names, which
resource_variables.py runs now to give the resource variables their initial
values, and the subgraphs an IF or WHILE runs, which control_flow.py hands
to the op running them (CALL is refused).  Every field the later stages use is read and checked
here, once, so that no later stage ever touches a flatbuffer; any problem with
the bytes ends as one InputError line naming the file and what was being read.
"""

from __future__ import annotations

import inspect
import os
import re
import struct
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any

import flatbuffers
import numpy as np
import tflite

from ..errors import InputError, InvalidModel, McuPlanError, UnsupportedModel, unsupported_model_error
from ..graph import DTYPE_BITS, Graph, Operator, Quantization, Tensor, operator_dtype_key
from ..memory.scratch import with_scratch_tensors
from .control_flow import CONTROL_FLOW_OPCODES, inline_control_flow
from .flatbuffer_verifier import CorruptFlatbuffer, verify_model_buffer
from .resource_variables import RESOURCE_OPCODES, SubgraphRead, resolve_resource_variables

TFLITE_IDENTIFIER = b"TFL3"
OFFLINE_PLAN_METADATA = "OfflineMemoryAllocation"

# Larger tensors cannot be meant for a microcontroller; refusing them early also
# keeps corrupt shapes from producing absurd numbers downstream.
MAX_TENSOR_BYTES = 2**40

_DTYPE_NAMES = {
    tflite.TensorType.FLOAT32: "float32",
    tflite.TensorType.FLOAT16: "float16",
    tflite.TensorType.INT32: "int32",
    tflite.TensorType.UINT8: "uint8",
    tflite.TensorType.INT64: "int64",
    tflite.TensorType.BOOL: "bool",
    tflite.TensorType.INT16: "int16",
    tflite.TensorType.INT8: "int8",
    tflite.TensorType.INT4: "int4",
    tflite.TensorType.BFLOAT16: "bfloat16",
    tflite.TensorType.UINT16: "uint16",
    tflite.TensorType.UINT32: "uint32",
    tflite.TensorType.UINT64: "uint64",
    tflite.TensorType.FLOAT64: "float64",
    tflite.TensorType.COMPLEX64: "complex64",
    tflite.TensorType.COMPLEX128: "complex128",
}
assert set(_DTYPE_NAMES.values()) <= set(DTYPE_BITS)


def _enum_names(enum_cls: Any) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_") and isinstance(v, int)}


BUILTIN_NAMES: dict[int, str] = _enum_names(tflite.BuiltinOperator)
BUILTIN_CODES: dict[str, int] = {v: k for k, v in BUILTIN_NAMES.items()}
_OPTIONS_NAMES = _enum_names(tflite.BuiltinOptions)
_OPTIONS2_NAMES = _enum_names(tflite.BuiltinOptions2)
_TENSOR_TYPE_NAMES = _enum_names(tflite.TensorType)

# Option fields that hold a schema enum.  The generated Python bindings return
# bare integers, so which enum a field means is stated here, by field name
# (one name means the same enum in every options table of the schema).
ENUM_FIELDS: dict[str, Any] = {
    "fused_activation_function": tflite.ActivationFunctionType,
    "padding": tflite.Padding,
    "weights_format": tflite.FullyConnectedOptionsWeightsFormat,
    "kernel_type": tflite.LSTMKernelType,
    "combiner": tflite.CombinerType,
    "mode": tflite.MirrorPadMode,
    "algorithm": tflite.RngAlgorithm,
    "composite_attributes_format": tflite.CustomOptionsFormat,
    "comparison_direction": tflite.StablehloComparisonDirection,
    "compare_type": tflite.StablehloComparisonType,
    "precision_config": tflite.StablehloPrecisionConfig,
    "reduce_function": tflite.ReduceWindowFunction,
    "quantized_bias_type": tflite.TensorType,
    "output_type": tflite.TensorType,
    "in_data_type": tflite.TensorType,
    "out_data_type": tflite.TensorType,
    "key_dtype": tflite.TensorType,
    "value_dtype": tflite.TensorType,
    "out_type": tflite.TensorType,
    "idx_out_type": tflite.TensorType,
}
# The one field name whose enum depends on the table.
_ENUM_FIELDS_BY_TABLE = {("LSHProjectionOptions", "type"): tflite.LSHProjectionType}

# Opcodes whose options table is not simply "<OpcodeInCamelCase>Options".
_SHARED_OPTIONS_TABLES: dict[str, str] = {
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "CONCAT_EMBEDDINGS": "ConcatEmbeddingsOptions",
}
# Options table name -> (union field of Operator, its union type value), for writers of models.
OPTIONS_UNION_MEMBERS: dict[str, tuple[str, int]] = {
    name: (union_field, value)
    for union_field, enum in (("builtin_options", tflite.BuiltinOptions), ("builtin_options_2", tflite.BuiltinOptions2))
    for name, value in vars(enum).items()
    if not name.startswith("_") and name != "NONE"
}
_TABLE_BY_FOLDED_NAME = {name.lower(): name for name in OPTIONS_UNION_MEMBERS}


def options_table_for(opcode: str) -> str | None:
    """Name of the options table TFLite writes for `opcode` (None: the op has none).

    Most tables are named after their opcode ("DEPTHWISE_CONV_2D" ->
    DepthwiseConv2DOptions); the few shared ones are listed above."""
    if opcode in _SHARED_OPTIONS_TABLES:
        return _SHARED_OPTIONS_TABLES[opcode]
    return _TABLE_BY_FOLDED_NAME.get(opcode.replace("_", "").lower() + "options")


def _one_line(text: str, limit: int = 80) -> str:
    """`text` for an error message: control characters as '?', at most `limit` characters."""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


def enum_for(table: str, field: str) -> Any:
    return _ENUM_FIELDS_BY_TABLE.get((table, field)) or ENUM_FIELDS.get(field)


def snake_case(camel: str) -> str:
    """'DilationWFactor' -> 'dilation_w_factor', the schema's own spelling."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", camel)
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


# The note a model gets when its shape signatures leave a non-batch dimension open.
DYNAMIC_INNER_NOTE = "dimensions dynamic (-1) in shape_signature beyond the batch are planned with the sizes in shape"


@dataclass(frozen=True)
class OptionField:
    name: str  # snake_case schema name
    accessor: str  # CamelCase method of the generated class
    kind: str  # "scalar", "vector", "string" or "table"
    number_type: str | None  # flatbuffers number type, e.g. "Int32" (scalars and vectors)
    slot: int  # field position in the table (vtable slot)


_METHOD_RE = re.compile(r"\n    def (\w+)\(self(, j)?\):\n(.*?)(?=\n    (?:#|def |@)|\Z)", re.S)


@cache
def option_fields(table: str) -> tuple[OptionField, ...]:
    """The fields of an options table, in schema order, found by reading the
    generated binding's source (uniform flatc output), so that every options
    table of the installed schema is understood without a hand-written list."""
    cls = getattr(tflite, table)
    fields = []
    for match in _METHOD_RE.finditer(inspect.getsource(cls)):
        name, indexed, body = match.groups()
        vt = re.search(r"self\._tab\.Offset\((\d+)\)", body)
        if not vt or name.endswith(("AsNumpy", "Length", "IsNone")):
            continue
        number = re.search(r"number_types\.(\w+)Flags, (?:o|a) \+", body)
        if "self._tab.String(" in body:
            kind = "string"
        elif "Indirect" in body or "Union" in body:
            kind = "table"
        elif indexed:
            kind = "vector"
        else:
            kind = "scalar"
        slot = (int(vt.group(1)) - 4) // 2
        fields.append(OptionField(snake_case(name), name, kind, number.group(1) if number else None, slot))
    return tuple(sorted(fields, key=lambda f: f.slot))


def read_model(source: str | os.PathLike[str] | bytes | bytearray | memoryview, label: str | None = None) -> Graph:
    """Parse a .tflite file (path or its bytes) into a Graph.

    Raises InputError for anything wrong with the bytes and UnsupportedModel for
    valid models using features outside what mcu-planner handles (control flow,
    sparse tensors).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        label = label or "model"
    else:
        from .model_file import read_model_file

        label = label or str(source)
        data = read_model_file(source, label)
    if not data:
        raise InputError(f"{label}: empty file")
    if len(data) < 8 or data[4:8] != TFLITE_IDENTIFIER:
        raise InputError(f"{label}: not a TFLite file (no TFL3 identifier)")
    try:
        # What LiteRT's loader refuses is refused before anything is read.
        verify_model_buffer(data)
    except CorruptFlatbuffer as exc:
        raise InputError(f"{label}: corrupt flatbuffer ({_one_line(str(exc), 300)})") from None
    parser = _ModelParser(data, label)
    try:
        graph = parser.parse()
    except McuPlanError:
        raise
    except RecursionError:
        raise InputError(f"{label}: corrupt flatbuffer ({parser.where}: tables nest without end)") from None
    except MemoryError:
        raise InputError(f"{label}: corrupt flatbuffer ({parser.where}: sizes too large to hold)") from None
    except Exception as exc:  # flatbuffers reports bad offsets with whatever exception the read hits
        raise InputError(f"{label}: truncated or corrupt flatbuffer ({parser.where}{_describe(exc)})") from None
    # Per-op working memory becomes short-lived tensors before lifetimes sees the graph.
    return with_scratch_tensors(graph)


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, (struct.error, IndexError)) or (isinstance(exc, ValueError) and "buffer" in text):
        return " reads past the end of the file"
    if isinstance(exc, TypeError) and text.startswith("bad number"):
        return ": an offset points outside the file"
    return f": {type(exc).__name__}: {text or 'no detail'}"[:200]


class _ModelParser:
    def __init__(self, data: bytes, label: str):
        self.data = data
        self.label = label
        self.where = "model header"
        self.notes: list[str] = []
        # Used tensors of a type without an element size: index -> type name.
        self.unsized_types: dict[int, str] = {}

    def fail(self, message: str) -> None:
        raise InputError(f"{self.label}: {message}")

    # -- bounds checks the python flatbuffers bindings do not do -------------

    def check_table(self, obj: Any) -> None:
        """The table and its vtable lie inside the file and every field offset
        stays inside the table (the flatbuffers verifier's table check)."""
        size = len(self.data)
        pos = obj._tab.Pos
        if not 0 <= pos <= size - 4:
            self.fail(f"corrupt flatbuffer ({self.where}: table offset {pos} outside the file)")
        vtable = pos - struct.unpack_from("<i", self.data, pos)[0]
        if not 0 <= vtable <= size - 4:
            self.fail(f"corrupt flatbuffer ({self.where}: vtable offset {vtable} outside the file)")
        vtable_len, table_len = struct.unpack_from("<HH", self.data, vtable)
        if vtable_len < 4 or vtable_len % 2 or vtable + vtable_len > size or pos + table_len > size:
            self.fail(f"truncated or corrupt flatbuffer ({self.where} reads past the end of the file)")
        fields = struct.unpack_from(f"<{vtable_len // 2 - 2}H", self.data, vtable + 4)
        if any(f and f + 1 > table_len for f in fields):
            self.fail(f"corrupt flatbuffer ({self.where}: field outside its table)")

    def check_vector(self, obj: Any, vtable_offset: int, element_size: int) -> int:
        """Length of a vector field after checking it fits in the file (0 if absent)."""
        tab = obj._tab
        o = tab.Offset(vtable_offset)
        if not o:
            return 0
        start = tab.Vector(o)
        length: int = tab.VectorLen(o)
        if start < 0 or start + length * element_size > len(self.data):
            self.fail(f"truncated or corrupt flatbuffer ({self.where} reads past the end of the file)")
        return length

    def ints(self, array: Any) -> tuple[int, ...]:
        # Absent vectors come back from the bindings as the scalar 0.
        if isinstance(array, int):
            return ()
        return tuple(int(v) for v in array)

    def text(self, raw: bytes | None) -> str:
        return raw.decode("utf-8", errors="replace") if raw else ""

    # -- the model -------------------------------------------------------------

    def parse(self) -> Graph:
        model = tflite.Model.GetRootAs(self.data, 0)
        self.where = "model table"
        self.check_table(model)
        num_subgraphs = self.check_vector(model, 8, 4)
        if num_subgraphs == 0:
            self.fail("model has no subgraphs")
        self.num_subgraphs = num_subgraphs
        self.num_buffers = self.check_vector(model, 12, 4)
        self.model = model

        self.where = "operator codes"
        op_codes = self.read_op_codes(model)

        main = self.read_subgraph(0, op_codes)
        tensors, operators = main.tensors, main.operators
        _refuse_stored_variable_values(self.label, tensors, operators)
        if any(op.opcode in RESOURCE_OPCODES for op in operators):
            tensors, operators, note = resolve_resource_variables(
                main, lambda index: self.read_init_subgraph(index, op_codes), self.label
            )
            self.notes.append(note)
        if any(op.opcode in CONTROL_FLOW_OPCODES for op in operators):
            tensors, operators = inline_control_flow(
                tensors, operators, lambda index: self.read_subgraph(index, op_codes), self.num_subgraphs, self.label
            )
        used = set(main.inputs) | set(main.outputs)
        for op in operators:
            used.update(op.inputs + op.outputs + op.intermediates)
        unsized = {t: name for t, name in main.unsized_types.items() if t in used and tensors[t].dtype == name}
        if unsized:
            self.refuse_unsized_types(tensors, operators, unsized)

        self.where = "metadata"
        offline = self.read_offline_offsets(model, len(main.tensors))
        self.where = "model description"
        description = self.text(model.Description())
        return Graph(
            tensors=tuple(tensors),
            operators=tuple(operators),
            inputs=main.inputs,
            outputs=main.outputs,
            offline_offsets=offline,
            notes=tuple(self.notes),
            description=description,
        )

    def read_subgraph(self, index: int, op_codes: list[tuple[str, int, str | None]]) -> SubgraphRead:
        """Subgraph `index`'s tensors and operators, every field checked."""
        name = f"subgraph {index}"
        self.where = name
        subgraph = self.model.Subgraphs(index)
        self.check_table(subgraph)
        num_tensors = self.check_vector(subgraph, 4, 4)
        self.num_tensors = num_tensors
        self.check_vector(subgraph, 6, 4)
        self.check_vector(subgraph, 8, 4)
        num_ops = self.check_vector(subgraph, 10, 4)
        self.unsized_types = {}

        self.where = f"{name} inputs"
        inputs = self.tensor_refs(subgraph.InputsAsNumpy(), "graph input")
        self.where = f"{name} outputs"
        outputs = self.tensor_refs(subgraph.OutputsAsNumpy(), "graph output")
        if index == 0 and not outputs:
            self.fail("the model has no outputs: nothing to compute")

        operators = []
        prefix = "" if index == 0 else f"{name} "
        for i in range(num_ops):
            self.where = f"{prefix}operator {i}"
            operators.append(self.read_operator(i, subgraph.Operators(i), op_codes))

        used = set(inputs) | set(outputs)
        for op in operators:
            used.update(t for t in op.inputs + op.outputs + op.intermediates if t >= 0)

        tensors = []
        for i in range(num_tensors):
            self.where = f"{prefix}tensor {i}"
            tensors.append(self.read_tensor(i, subgraph.Tensors(i), i in used))
        return SubgraphRead(index, tensors, operators, inputs, outputs, dict(self.unsized_types))

    def read_init_subgraph(self, index: int, op_codes: list[tuple[str, int, str | None]]) -> SubgraphRead:
        """The subgraph a CALL_ONCE runs (resource_variables.py executes it now)."""
        if not 0 < index < self.num_subgraphs:
            raise InputError(
                f"{self.label}: CALL_ONCE init subgraph {index} out of range (model has {self.num_subgraphs} subgraphs)"
            )
        return self.read_subgraph(index, op_codes)

    def refuse_unsized_types(
        self, tensors: list[Tensor], operators: list[Operator], unsized_types: dict[int, str]
    ) -> None:
        """Exit 4 naming the ops that touch tensors of a type without an
        element size, and the types."""
        combinations: Counter[str] = Counter()
        for op in operators:
            if any(t in unsized_types for t in op.inputs + op.outputs):
                combinations[operator_dtype_key(op, tensors)] += 1
        raise unsupported_model_error(dict(combinations), {}, dict(Counter(unsized_types.values())), label=self.label)

    def read_op_codes(self, model: Any) -> list[tuple[str, int, str | None]]:
        codes = []
        for j in range(self.check_vector(model, 6, 4)):
            self.where = f"operator code {j}"
            code = model.OperatorCodes(j)
            self.check_table(code)
            deprecated = code.DeprecatedBuiltinCode()
            o = code._tab.Offset(10)
            wide = code._tab.Get(flatbuffers.number_types.Int32Flags, o + code._tab.Pos) if o else 0
            builtin = max(deprecated, wide)
            # A builtin newer than the installed schema is kept by number: the
            # lowering stage reports it as an operator it cannot generate.
            name = BUILTIN_NAMES.get(builtin, f"UNKNOWN_BUILTIN_{builtin}")
            custom = self.text(code.CustomCode()) if name == "CUSTOM" else None
            codes.append((name, code.Version(), custom))
        return codes

    def tensor_refs(self, array: Any, what: str, allow_absent: bool = False) -> tuple[int, ...]:
        refs = self.ints(array)
        low = -1 if allow_absent else 0
        for t in refs:
            if not low <= t < self.num_tensors:
                self.fail(
                    f"{self.where}: {what} tensor index {t} out of range (subgraph has {self.num_tensors} tensors)"
                )
        return refs

    def read_operator(self, index: int, op: Any, op_codes: list[tuple[str, int, str | None]]) -> Operator:
        self.check_table(op)
        for vt_offset in (6, 8, 16, 18):  # inputs, outputs, custom options, intermediates
            self.check_vector(op, vt_offset, 4 if vt_offset != 16 else 1)
        code_index = op.OpcodeIndex()
        if not 0 <= code_index < len(op_codes):
            self.fail(f"operator {index}: opcode index {code_index} out of range ({len(op_codes)} operator codes)")
        opcode, version, custom = op_codes[code_index]
        inputs = self.tensor_refs(op.InputsAsNumpy(), "input", allow_absent=True)
        outputs = self.tensor_refs(op.OutputsAsNumpy(), "output")
        intermediates = self.tensor_refs(op.IntermediatesAsNumpy(), "intermediate", allow_absent=True)
        options, tables = self.read_options(index, opcode, op)
        calls_subgraph = opcode in ("WHILE", "IF", "CALL") or any("subgraph" in k for k in options)
        if calls_subgraph and opcode not in ("CALL_ONCE", *CONTROL_FLOW_OPCODES):
            raise UnsupportedModel(
                f"{self.label}: control flow ({opcode}) with {self.num_subgraphs} subgraphs is not supported"
            )
        return Operator(
            index=index,
            opcode=opcode,
            version=version,
            inputs=inputs,
            outputs=outputs,
            intermediates=intermediates,
            options=options,
            custom_code=custom,
            options_tables=tables,
        )

    def read_options(self, index: int, opcode: str, op: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The option values and the names of the tables they came from."""
        options: dict[str, Any] = {}
        tables: list[str] = []
        for type_value, table, union_names in (
            (op.BuiltinOptionsType(), op.BuiltinOptions(), _OPTIONS_NAMES),
            (op.BuiltinOptions2Type(), op.BuiltinOptions2(), _OPTIONS2_NAMES),
        ):
            name = union_names.get(type_value)
            if not type_value or table is None or name is None or name == "NONE":
                continue
            obj = getattr(tflite, name)()
            obj.Init(table.Bytes, table.Pos)
            self.check_table(obj)
            options.update(self.options_values(index, opcode, name, obj))
            tables.append(name)
        return options, tuple(tables)

    def options_values(self, index: int, opcode: str, table: str, obj: Any) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for f in option_fields(table):
            if f.kind == "table":
                continue  # nested tables only occur in StableHLO options
            if f.kind == "string":
                values[f.name] = self.text(getattr(obj, f.accessor)())
                continue
            if f.kind == "vector":
                size = getattr(flatbuffers.number_types, f"{f.number_type}Flags").bytewidth
                self.check_vector(obj, 4 + 2 * f.slot, size)
                raw = getattr(obj, f.accessor + "AsNumpy")()
                value: Any = () if isinstance(raw, int) else tuple(v.item() for v in raw)
            else:
                value = getattr(obj, f.accessor)()
            enum = enum_for(table, f.name)
            if enum is not None:
                names = _enum_names(enum)
                items = value if isinstance(value, tuple) else (value,)
                for v in items:
                    if v not in names:
                        self.fail(f"operator {index} ({opcode}): option {f.name} = {v} is not a valid {enum.__name__}")
                value = tuple(names[v] for v in value) if isinstance(value, tuple) else names[value]
            values[f.name] = value
        return values

    def read_tensor(self, index: int, tensor: Any, used: bool) -> Tensor:
        self.check_table(tensor)
        for vt_offset in (4, 18):  # shape, shape_signature
            self.check_vector(tensor, vt_offset, 4)
        name = self.text(tensor.Name())
        # A damaged name may hold line breaks; errors stay one line.
        what = f"tensor {index} ({_one_line(name)})" if name else f"tensor {index}"
        type_code = tensor.Type()
        dtype = _DTYPE_NAMES.get(type_code)
        if dtype is None:
            if type_code not in _TENSOR_TYPE_NAMES:
                self.fail(f"{what} has type code {type_code}, which is no TFLite tensor type")
            type_name = _TENSOR_TYPE_NAMES[type_code].lower()
            if used:
                # No fixed element size (string, resource, variant): nothing
                # can be planned; parse() reports it with the ops that use it.
                self.unsized_types[index] = type_name
            # Unused tensors are never looked at again; keep the index slot.
            return Tensor(index, name, self.ints(tensor.ShapeAsNumpy()), type_name)

        shape = self.read_shape(what, tensor)
        if tensor.Sparsity() is not None:
            raise UnsupportedModel(f"{self.label}: {what} is stored sparse; sparse tensors are not supported")
        quantization = self.read_quantization(what, tensor, shape)
        t = Tensor(index, name, shape, dtype, quantization, None, bool(tensor.IsVariable()))
        if t.nbytes > MAX_TENSOR_BYTES:
            self.fail(f"{what} has shape {list(shape)}: {t.nbytes} bytes is beyond any microcontroller")
        contents = self.read_buffer(what, tensor.Buffer())
        # A variable with stored values is refused as such below, whatever their size.
        if contents is not None and len(contents) != t.nbytes and not t.is_variable:
            self.fail(f"{what}: constant data has {len(contents)} bytes but {dtype}{list(shape)} needs {t.nbytes}")
        return Tensor(index, name, shape, dtype, quantization, contents, t.is_variable)

    def read_shape(self, what: str, tensor: Any) -> tuple[int, ...]:
        shape = list(self.ints(tensor.ShapeAsNumpy()))
        signature = self.ints(tensor.ShapeSignatureAsNumpy())
        if signature and len(signature) != len(shape):
            self.fail(f"{what}: shape {shape} and shape signature {list(signature)} differ in rank")
        unknown = [i for i, d in enumerate(shape) if d == -1 and i > 0]
        if unknown:
            self.fail(
                f"{what} has dimension {unknown[0]} unknown (-1) in its shape {shape}; only a dynamic batch "
                f"(dimension 0) can be planned without a size"
            )
        if shape and (shape[0] == -1 or (signature and signature[0] == -1)):
            # The interpreter allocates `shape`; a batch it does not give is 1.
            if shape[0] == -1:
                shape[0] = 1
            note = f"input batch dimension is dynamic (-1); planned as {shape[0]}"
            if note not in self.notes:
                self.notes.append(note)
        if any(d == -1 for d in signature[1:]) and not any(n.startswith(DYNAMIC_INNER_NOTE) for n in self.notes):
            # Time-major and other sequence exports: the signature leaves a
            # dimension open, the shape holds the size it was converted with,
            # which is what the interpreter allocates.  One note names the
            # first such tensor.
            self.notes.append(f"{DYNAMIC_INNER_NOTE} (first: {what}, {list(signature)} -> {shape})")
        for d in shape:
            if d < 0:
                self.fail(f"{what} has a negative dimension in shape {shape}")
        return tuple(shape)

    def read_quantization(self, what: str, tensor: Any, shape: tuple[int, ...]) -> Quantization | None:
        q = tensor.Quantization()
        if q is None:
            return None
        self.check_table(q)
        for vt_offset, size in ((4, 4), (6, 4), (8, 4), (10, 8)):  # min, max, scale, zero_point
            self.check_vector(q, vt_offset, size)
        scales = q.ScaleAsNumpy()
        if isinstance(scales, int) or len(scales) == 0:
            return None  # float tensors often carry an empty quantization table
        zero_points = self.ints(q.ZeroPointAsNumpy())
        if not zero_points:
            zero_points = (0,) * len(scales)
        if len(zero_points) != len(scales):
            self.fail(f"{what}: {len(scales)} quantization scales but {len(zero_points)} zero points")
        axis = 0
        if len(scales) > 1:
            axis = q.QuantizedDimension()
            if len(shape) == 1 and axis > 0 and shape[0] == len(scales):
                # Old converters wrote the filter's axis (3) on depthwise biases;
                # TFLite Micro reads such a vector along its only dimension.
                axis = 0
                note = "per-channel rank-1 tensors with quantized_dimension past their rank read along dimension 0"
                if note not in self.notes:
                    self.notes.append(note)
            if not 0 <= axis < len(shape) or shape[axis] != len(scales):
                self.fail(
                    f"{what}: {len(scales)} per-channel scales do not match dimension {axis} of shape {list(shape)}"
                )
        # float32 values widened exactly, so later stages recompute TFLite's
        # multipliers from the very numbers TFLite used.
        return Quantization(tuple(float(s) for s in scales), zero_points, axis)

    def read_buffer(self, what: str, index: int) -> bytes | None:
        if index == 0 and self.num_buffers == 0:
            return None
        if not 0 <= index < self.num_buffers:
            self.fail(f"{what}: buffer index {index} out of range ({self.num_buffers} buffers)")
        buffer = self.model.Buffers(index)
        self.check_table(buffer)
        length = self.check_vector(buffer, 4, 1)
        if length:
            return bytes(buffer.DataAsNumpy().tobytes())
        if index != 0 and buffer._tab.Offset(4):
            # A data vector present but empty is still stored values to
            # LiteRT's InterpreterBuilder (only buffer 0 means "none"): zero
            # bytes a tensor of any size must then match, and a variable
            # must not have.
            return b""
        offset, size = buffer.Offset(), buffer.Size()
        if offset > 1:  # data stored after the flatbuffer, as for models over 2 GB
            if offset + size > len(self.data):
                self.fail(
                    f"{what}: buffer {index} at byte {offset} + {size} lies past the end of the file ({len(self.data)} bytes)"
                )
            return self.data[offset : offset + size] if size else None
        return None

    def read_offline_offsets(self, model: Any, num_tensors: int) -> tuple[int, ...] | None:
        for j in range(self.check_vector(model, 16, 4)):
            entry = model.Metadata(j)
            self.check_table(entry)
            if self.text(entry.Name()) != OFFLINE_PLAN_METADATA:
                continue
            self.where = f"metadata {OFFLINE_PLAN_METADATA}"
            raw = self.read_buffer(f"metadata {OFFLINE_PLAN_METADATA}", entry.Buffer()) or b""
            if len(raw) % 4 or len(raw) < 12:
                self.fail(
                    f"metadata {OFFLINE_PLAN_METADATA}: {len(raw)} bytes is not a [version, subgraphs, tensors, offsets...] int32 array"
                )
            values = np.frombuffer(raw, dtype="<i4")
            declared = int(values[2])
            if declared < num_tensors or len(values) < 3 + declared:
                self.fail(
                    f"metadata {OFFLINE_PLAN_METADATA}: holds {len(values) - 3} offsets for {declared} tensors, "
                    f"but subgraph 0 has {num_tensors} tensors"
                )
            offsets = tuple(int(v) for v in values[3 : 3 + num_tensors])
            bad = [t for t, v in enumerate(offsets) if v < -1]
            if bad:
                self.fail(f"metadata {OFFLINE_PLAN_METADATA}: tensor {bad[0]} has offset {offsets[bad[0]]}")
            return offsets
        return None


def _refuse_stored_variable_values(label: str, tensors: list[Tensor], operators: list[Operator]) -> None:
    """No variable tensor of the file carries stored values: TFLite's
    InterpreterBuilder refuses such a model ("a variable tensor with
    buffer"), whether or not an op uses the tensor, and TFLM starts every
    variable from zero.  Checked here, on the file's tensors: the resource
    variables resolve_resource_variables makes next hold the values their
    CALL_ONCE assigns."""
    for tensor in tensors:
        if tensor.is_variable and tensor.data is not None:
            user = next((op for op in operators if tensor.index in op.inputs + op.outputs), None)
            where = [f"op {user.index} ({user.opcode})"] if user is not None else []
            where.append(f"tensor {tensor.index}" + (f" '{_one_line(tensor.name)[:60]}'" if tensor.name else ""))
            raise InvalidModel(
                f"{label}: {', '.join(where)}: rule variable-without-buffer: variable tensor with a "
                f"{len(tensor.data)}-byte buffer; TFLite refuses stored values for variables"
            )
