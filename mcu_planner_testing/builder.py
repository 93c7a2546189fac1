"""Write .tflite models from Python, for tests and examples.

Two layers:

* `ModelBuilder`: any TFLite graph, tensor by tensor and operator by operator.
  Operator options are given exactly as `read_model` returns them (schema field
  names in snake_case, enums by name), so `read_model(builder.build())` hands
  back what went in.  Every options table of the installed schema works; the
  table an opcode uses is found by name (see `options_table_for`).
* `Int8Net`: sequential int8 networks layer by layer, with seeded random
  per-channel weights and plausible activation ranges (`Int16x8Net`: the same
  with int16 activations and int64 biases), plus `single_op_model`
  for one-operator models and `tiny_kws_int8` for the bundled example.

`run_reference` runs a model in TFLite's reference kernels (ai-edge-litert,
BUILTIN_REF), the bit-exact target of the generated C.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np
import tflite

from mcu_planner.frontend.reader import (
    BUILTIN_CODES,
    OFFLINE_PLAN_METADATA,
    OPTIONS_UNION_MEMBERS,
    TFLITE_IDENTIFIER,
    enum_for,
    option_fields,
    options_table_for,
)
from mcu_planner.graph import Graph, Quantization

NUMPY_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint8": np.uint8,
    "int64": np.int64,
    "bool": np.bool_,
    "int16": np.int16,
    "int8": np.int8,
}
# Every schema type by lower-case name, so tests can also write the ones
# mcu-planner refuses (string, float64, ...).
_TENSOR_TYPES = {name.lower(): v for name, v in vars(tflite.TensorType).items() if not name.startswith("_")}


def pack_int4(values: np.ndarray) -> bytes:
    """Two int4 values per byte, the first in the low nibble (TFLite's packing)."""
    nibbles = (np.asarray(values, dtype=np.int8).reshape(-1) & 0x0F).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()


def tensor_bytes(values, dtype: str) -> bytes:
    if isinstance(values, (bytes, bytearray, memoryview)):
        return bytes(values)
    if dtype == "int4":
        return pack_int4(values)
    if dtype not in NUMPY_DTYPES:
        raise ValueError(f"give {dtype} data as bytes")
    return np.ascontiguousarray(values, dtype=np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<")).tobytes()


def as_quantization(quant: Quantization | tuple[float, int] | dict[str, Any] | None) -> Quantization | None:
    """Quantization from the short forms tests use: (scale, zero_point), or a
    dict with scale(s), zero_point(s) and optionally axis."""
    if quant is None or isinstance(quant, Quantization):
        return quant
    if isinstance(quant, tuple):
        scale, zero_point = quant
        return Quantization((float32(scale),), (int(zero_point),))
    scales = quant.get("scales", quant.get("scale"))
    zero_points = quant.get("zero_points", quant.get("zero_point", 0))
    scales = tuple(float32(v) for v in np.atleast_1d(scales))
    zero_points = tuple(int(v) for v in np.atleast_1d(zero_points))
    if len(zero_points) == 1 and len(scales) > 1:
        zero_points *= len(scales)
    return Quantization(scales, zero_points, int(quant.get("axis", quant.get("quantized_dimension", 0))))


@dataclass
class _TensorSpec:
    shape: tuple[int, ...]
    dtype: str
    quant: Quantization | None
    data: bytes | None
    name: str
    is_variable: bool
    shape_signature: tuple[int, ...] | None


@dataclass
class _OpSpec:
    opcode: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict[str, Any]
    options_table: str | None
    version: int
    intermediates: tuple[int, ...]
    custom_code: str | None


class ModelBuilder:
    def __init__(self, description: str = "built by mcu_planner.builder"):
        self.description = description
        self.tensors: list[_TensorSpec] = []
        self.ops: list[_OpSpec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.metadata: list[tuple[str, bytes]] = []
        # Subgraphs 1, 2, ... with tensors and ops of their own (add_subgraph),
        # then `extra_subgraphs` empty ones, for control-flow tests.
        self.subgraphs: list[ModelBuilder] = []
        self.extra_subgraphs = 0
        self.name = "main"

    def add_tensor(
        self,
        shape: Sequence[int],
        dtype: str,
        quant: Quantization | tuple[float, int] | dict[str, Any] | None = None,
        data: np.ndarray | bytes | None = None,
        name: str | None = None,
        is_variable: bool = False,
        shape_signature: Sequence[int] | None = None,
    ) -> int:
        if dtype not in _TENSOR_TYPES:
            raise ValueError(f"unknown dtype {dtype!r}; one of {sorted(_TENSOR_TYPES)}")
        quant = as_quantization(quant)
        index = len(self.tensors)
        self.tensors.append(
            _TensorSpec(
                shape=tuple(int(d) for d in shape),
                dtype=dtype,
                quant=quant,
                data=None if data is None else tensor_bytes(data, dtype),
                name=name or f"tensor_{index}",
                is_variable=is_variable,
                shape_signature=None if shape_signature is None else tuple(int(d) for d in shape_signature),
            )
        )
        return index

    def add_op(
        self,
        opcode: str,
        inputs: Iterable[int],
        outputs: Iterable[int],
        options: dict[str, Any] | None = None,
        *,
        version: int = 1,
        intermediates: Iterable[int] = (),
        custom_code: str | None = None,
        options_table: str | None = None,
    ) -> int:
        """Append an operator (execution order = order of calls).

        `options_table` overrides the table found from the opcode; ops that
        have a table always get one written, even with no options given."""
        if opcode not in BUILTIN_CODES:
            raise ValueError(f"unknown builtin opcode {opcode!r}")
        if (opcode == "CUSTOM") != (custom_code is not None):
            raise ValueError("custom_code goes with opcode CUSTOM and only with it")
        table = options_table or options_table_for(opcode)
        options = dict(options or {})
        if options and table is None:
            raise ValueError(f"{opcode} has no options table; got options {sorted(options)}")
        if table is not None:
            known = {f.name for f in option_fields(table)}
            if set(options) - known:
                raise ValueError(f"{table} has no field(s) {sorted(set(options) - known)}; fields: {sorted(known)}")
        self.ops.append(
            _OpSpec(opcode, tuple(inputs), tuple(outputs), options, table, version, tuple(intermediates), custom_code)
        )
        return len(self.ops) - 1

    @classmethod
    def from_graph(cls, graph: Graph) -> ModelBuilder:
        """A builder holding `graph` (as read_model returns it), so that tests
        can change its values -- scales, shapes, options, op order -- and
        write the model again."""
        builder = cls(graph.description or "rebuilt by mcu_planner.builder")
        for t in graph.tensors:
            builder.add_tensor(t.shape, t.dtype, t.quantization, t.data, name=t.name or None, is_variable=t.is_variable)
        for op in graph.operators:
            builder.add_op(
                op.opcode,
                op.inputs,
                op.outputs,
                op.options,
                version=op.version,
                intermediates=op.intermediates,
                custom_code=op.custom_code,
                options_table=op.options_tables[0] if op.options_tables else None,
            )
        builder.set_io(graph.inputs, graph.outputs)
        return builder

    def set_io(self, inputs: Iterable[int], outputs: Iterable[int]) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)

    def add_subgraph(self, name: str = "") -> ModelBuilder:
        """A further subgraph (index 1, 2, ... in the order added), filled
        tensor by tensor and op by op as this one; build() writes it after
        subgraph 0, sharing the model's buffers and operator codes."""
        sub = ModelBuilder()
        sub.name = name or f"subgraph_{len(self.subgraphs) + 1}"
        self.subgraphs.append(sub)
        return sub

    def subgraph_index(self, sub: ModelBuilder) -> int:
        return 1 + next(i for i, s in enumerate(self.subgraphs) if s is sub)

    # -- resource variables (TFLite's VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE)

    def var_handle(self, shared_name: str, container: str = "") -> int:
        """A VAR_HANDLE op naming the variable; returns its resource tensor."""
        handle = self.add_tensor((), "resource", name=shared_name)
        self.add_op("VAR_HANDLE", (), (handle,), {"container": container, "shared_name": shared_name})
        return handle

    def read_variable(
        self,
        handle: int,
        shape: Sequence[int],
        dtype: str,
        quant: Quantization | tuple[float, int] | dict[str, Any] | None = None,
        name: str | None = None,
    ) -> int:
        """READ_VARIABLE of `handle` into a new tensor of the given shape, type and quantization."""
        out = self.add_tensor(shape, dtype, quant, name=name)
        self.add_op("READ_VARIABLE", (handle,), (out,))
        return out

    def assign_variable(self, handle: int, value: int) -> None:
        self.add_op("ASSIGN_VARIABLE", (handle, value), ())

    def call_once(self, init: ModelBuilder) -> None:
        """A CALL_ONCE running subgraph `init` (added with add_subgraph)."""
        self.add_op("CALL_ONCE", (), (), {"init_subgraph_index": self.subgraph_index(init)})

    # -- control flow (TFLite's IF and WHILE)

    def if_op(
        self, cond: int, inputs: Iterable[int], outputs: Iterable[int], then: ModelBuilder, otherwise: ModelBuilder
    ) -> None:
        """An IF on the bool `cond` running subgraph `then` or `otherwise`
        (added with add_subgraph, each with inputs and outputs matching)."""
        options = {
            "then_subgraph_index": self.subgraph_index(then),
            "else_subgraph_index": self.subgraph_index(otherwise),
        }
        self.add_op("IF", (cond, *inputs), tuple(outputs), options)

    def while_op(self, inputs: Iterable[int], outputs: Iterable[int], cond: ModelBuilder, body: ModelBuilder) -> None:
        """A WHILE over the loop variables `inputs` -> `outputs`: subgraph
        `cond` (one bool output) says whether subgraph `body` runs again."""
        options = {"cond_subgraph_index": self.subgraph_index(cond), "body_subgraph_index": self.subgraph_index(body)}
        self.add_op("WHILE", tuple(inputs), tuple(outputs), options)

    def add_metadata(self, name: str, data: bytes) -> None:
        self.metadata.append((name, bytes(data)))

    def set_offline_offsets(self, offsets: Sequence[int]) -> None:
        """OfflineMemoryAllocation metadata: one arena offset per tensor, -1 = planner decides."""
        if len(offsets) != len(self.tensors):
            raise ValueError(f"{len(offsets)} offsets for {len(self.tensors)} tensors")
        header = [1, 1, len(offsets)]  # version, subgraphs, tensors
        self.add_metadata(OFFLINE_PLAN_METADATA, np.array(header + list(offsets), dtype="<i4").tobytes())

    # -- serialisation ---------------------------------------------------------

    def build(self, external_buffers: bool = False) -> bytes:
        """The .tflite bytes.  With external_buffers, constant data goes after
        the flatbuffer, addressed by Buffer.offset/size as in models over 2 GB."""
        if not external_buffers:
            return self._serialise(None)
        # Offsets are fixed-width fields, so a first pass with placeholders gives
        # the flatbuffer's final length, and with it where the data will sit.
        blobs = self._buffer_blobs()
        placeholder = self._serialise([(2, len(b)) for b in blobs])
        position, locations = _align16(len(placeholder)), []
        for blob in blobs:
            locations.append((position, len(blob)))
            position = _align16(position + len(blob))
        model = self._serialise(locations)
        assert len(model) == len(placeholder)
        out = bytearray(model)
        for (offset, _size), blob in zip(locations, blobs, strict=True):
            out.extend(b"\0" * (offset - len(out)))
            out.extend(blob)
        return bytes(out)

    def _buffer_blobs(self) -> list[bytes]:
        graphs = [self, *self.subgraphs]
        constants = [t.data for g in graphs for t in g.tensors if t.data is not None]
        return constants + [data for _, data in self.metadata]

    def _serialise(self, external: list[tuple[int, int]] | None) -> bytes:
        fb = flatbuffers.Builder(1024)
        # Buffer 0 is the empty buffer every activation points at.
        blobs = self._buffer_blobs()
        buffer_offsets = [_table(fb, tflite.Buffer, {})]
        for i, blob in enumerate(blobs):
            if external is None:
                buffer_offsets.append(_table(fb, tflite.Buffer, {"Data": _byte_vector(fb, blob)}))
            else:
                offset, size = external[i]
                buffer_offsets.append(_table(fb, tflite.Buffer, {"Offset": offset, "Size": size}))
        constant_buffers = iter(range(1, len(blobs) + 1))

        graphs = [self, *self.subgraphs]
        tensor_offsets: list[list[int]] = []
        for graph in graphs:
            offsets = []
            for spec in graph.tensors:
                buffer_index = next(constant_buffers) if spec.data is not None else 0
                offsets.append(self._tensor(fb, spec, buffer_index))
            tensor_offsets.append(offsets)
        metadata_offsets = [
            _table(fb, tflite.Metadata, {"Name": fb.CreateString(name), "Buffer": next(constant_buffers)})
            for name, _ in self.metadata
        ]

        codes: dict[tuple[str, int, str | None], int] = {}
        op_offsets: list[list[int]] = []
        for graph in graphs:
            offsets = []
            for op in graph.ops:
                key = (op.opcode, op.version, op.custom_code)
                code_index = codes.setdefault(key, len(codes))
                offsets.append(self._operator(fb, op, code_index))
            op_offsets.append(offsets)
        code_offsets = []
        for opcode, version, custom in codes:
            number = BUILTIN_CODES[opcode]
            fields: dict[str, Any] = {
                "DeprecatedBuiltinCode": min(number, tflite.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES),
                "BuiltinCode": number,
                "Version": version,
            }
            if custom is not None:
                fields["CustomCode"] = fb.CreateString(custom)
            code_offsets.append(_table(fb, tflite.OperatorCode, fields))

        subgraphs = [
            _table(
                fb,
                tflite.SubGraph,
                {
                    "Tensors": _offset_vector(fb, tensors),
                    "Inputs": fb.CreateNumpyVector(np.array(graph.inputs, dtype=np.int32)),
                    "Outputs": fb.CreateNumpyVector(np.array(graph.outputs, dtype=np.int32)),
                    "Operators": _offset_vector(fb, ops),
                    "Name": fb.CreateString(graph.name),
                },
            )
            for graph, tensors, ops in zip(graphs, tensor_offsets, op_offsets, strict=True)
        ]
        model_fields = {
            "Version": 3,
            "OperatorCodes": _offset_vector(fb, code_offsets),
            "Subgraphs": _offset_vector(
                fb, subgraphs + [_table(fb, tflite.SubGraph, {}) for _ in range(self.extra_subgraphs)]
            ),
            "Description": fb.CreateString(self.description),
            "Buffers": _offset_vector(fb, buffer_offsets),
        }
        if metadata_offsets:
            model_fields["Metadata"] = _offset_vector(fb, metadata_offsets)
        fb.Finish(_table(fb, tflite.Model, model_fields), file_identifier=TFLITE_IDENTIFIER)
        return bytes(fb.Output())

    def _tensor(self, fb: flatbuffers.Builder, spec: _TensorSpec, buffer_index: int) -> int:
        fields: dict[str, Any] = {
            "Shape": fb.CreateNumpyVector(np.array(spec.shape, dtype=np.int32)),
            "Type": _TENSOR_TYPES[spec.dtype],
            "Buffer": buffer_index,
            "Name": fb.CreateString(spec.name),
            "IsVariable": spec.is_variable,
        }
        if spec.shape_signature is not None:
            fields["ShapeSignature"] = fb.CreateNumpyVector(np.array(spec.shape_signature, dtype=np.int32))
        if spec.quant is not None:
            q = spec.quant
            fields["Quantization"] = _table(
                fb,
                tflite.QuantizationParameters,
                {
                    "Scale": fb.CreateNumpyVector(np.array(q.scales, dtype=np.float32)),
                    "ZeroPoint": fb.CreateNumpyVector(np.array(q.zero_points, dtype=np.int64)),
                    "QuantizedDimension": q.axis,
                },
            )
        return _table(fb, tflite.Tensor, fields)

    def _operator(self, fb: flatbuffers.Builder, op: _OpSpec, code_index: int) -> int:
        fields: dict[str, Any] = {
            "OpcodeIndex": code_index,
            "Inputs": fb.CreateNumpyVector(np.array(op.inputs, dtype=np.int32)),
            "Outputs": fb.CreateNumpyVector(np.array(op.outputs, dtype=np.int32)),
        }
        if op.intermediates:
            fields["Intermediates"] = fb.CreateNumpyVector(np.array(op.intermediates, dtype=np.int32))
        if op.options_table is not None:
            union_field, union_value = OPTIONS_UNION_MEMBERS[op.options_table]
            options = _options_table(fb, op.options_table, op.options)
            if union_field == "builtin_options":
                fields.update(BuiltinOptionsType=union_value, BuiltinOptions=options)
            else:
                fields.update(BuiltinOptions2Type=union_value, BuiltinOptions2=options)
        return _table(fb, tflite.Operator, fields)


def _align16(n: int) -> int:
    return (n + 15) // 16 * 16


def _module(cls) -> Any:
    return sys.modules[cls.__module__]


def _table(fb: flatbuffers.Builder, cls, fields: dict[str, Any]) -> int:
    """Write one table; `fields` maps the binding's CamelCase field names to
    scalars or to offsets of vectors/strings/tables already written."""
    module, name = _module(cls), cls.__name__
    getattr(module, f"{name}Start")(fb)
    for field, value in fields.items():
        getattr(module, f"{name}Add{field}")(fb, value)
    return getattr(module, f"{name}End")(fb)


def _offset_vector(fb: flatbuffers.Builder, offsets: list[int]) -> int:
    fb.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        fb.PrependUOffsetTRelative(offset)
    return fb.EndVector()


def _byte_vector(fb: flatbuffers.Builder, blob: bytes) -> int:
    # 16-byte aligned like the TFLite converter writes, so int32/float data can
    # be read in place.
    fb.StartVector(1, len(blob), 16)
    fb.head = fb.head - len(blob)
    fb.Bytes[fb.head : fb.head + len(blob)] = blob
    fb.vectorNumElems = len(blob)
    return fb.EndVector()


def _enum_value(table: str, field: str, value: Any) -> Any:
    enum = enum_for(table, field)
    if enum is None or not isinstance(value, str):
        return value
    if not hasattr(enum, value):
        raise ValueError(f"{table}.{field}: {value!r} is not a {enum.__name__} name")
    return getattr(enum, value)


def _options_table(fb: flatbuffers.Builder, table: str, options: dict[str, Any]) -> int:
    fields = {f.name: f for f in option_fields(table)}
    module = _module(getattr(tflite, table))
    values: dict[str, Any] = {}
    # Vectors and strings must be complete before their table starts.
    for name, value in options.items():
        f = fields[name]
        if f.kind == "vector":
            items = [_enum_value(table, name, v) for v in value]
            getattr(module, f"{table}Start{f.accessor}Vector")(fb, len(items))
            prepend = getattr(fb, f"Prepend{f.number_type}")
            for item in reversed(items):
                prepend(item)
            values[f.accessor] = fb.EndVector()
        elif f.kind == "string":
            values[f.accessor] = fb.CreateString(value)
        elif f.kind == "table":
            raise ValueError(f"{table}.{name}: nested option tables are not supported by the builder")
        else:
            values[f.accessor] = _enum_value(table, name, value)
    getattr(module, f"{table}Start")(fb)
    for f in fields.values():
        if f.accessor in values:
            getattr(module, f"{table}Add{f.accessor}")(fb, values[f.accessor])
    return getattr(module, f"{table}End")(fb)


# -- quantization helpers -------------------------------------------------------


def float32(value: float) -> float:
    return float(np.float32(value))


def int8_quant(low: float, high: float) -> Quantization:
    """Asymmetric int8 quantization covering [low, high] (widened to hold 0,
    which TFLite requires to be exactly representable)."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high - low <= 0:
        high = low + 1.0
    scale = float32((high - low) / 255.0)
    zero_point = int(np.clip(round(-128 - low / scale), -128, 127))
    return Quantization((scale,), (zero_point,))


def int16_quant(low: float, high: float) -> Quantization:
    """Symmetric int16 quantization covering [low, high], as TFLite's 16x8
    scheme requires: zero point 0, scale max(|low|, |high|) / 32767."""
    bound = max(abs(float(low)), abs(float(high)))
    if bound <= 0:
        bound = 1.0
    return Quantization((float32(bound / 32767.0),), (0,))


def uint8_quant(low: float, high: float) -> Quantization:
    """Asymmetric uint8 quantization covering [low, high]: int8_quant's scale
    with the zero point moved up by 128 (the legacy TF1 / Coral scheme)."""
    q = int8_quant(low, high)
    return Quantization(q.scales, (q.zero_points[0] + 128,))


def activation_quant(dtype: str, low: float, high: float) -> Quantization:
    """Quantization of an activation of `dtype` ("int8", "uint8" or "int16") covering [low, high]."""
    return {"int16": int16_quant, "uint8": uint8_quant}.get(dtype, int8_quant)(low, high)


_QUANTIZED_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def quant_range(q: Quantization, dtype: str = "int8") -> tuple[float, float]:
    """The real values a `dtype` tensor with per-tensor quantization `q` can hold."""
    scale, zero_point = q.scales[0], q.zero_points[0]
    q_min, q_max = _QUANTIZED_RANGES[dtype]
    return (q_min - zero_point) * scale, (q_max - zero_point) * scale


def per_channel_int8_weights(
    rng: np.random.Generator, shape: Sequence[int], axis: int, std: float
) -> tuple[np.ndarray, Quantization]:
    """Random normal weights quantized symmetrically per channel along `axis`
    (zero points 0, scales max|w|/127), as the TFLite converter does."""
    weights = rng.normal(0.0, std, size=tuple(shape)).astype(np.float32)
    other_axes = tuple(a for a in range(len(shape)) if a != axis)
    absmax = np.max(np.abs(weights), axis=other_axes)
    scales = np.maximum(absmax, np.float32(1e-8)).astype(np.float32) / np.float32(127.0)
    broadcast = [1] * len(shape)
    broadcast[axis] = shape[axis]
    quantized = np.clip(np.round(weights / scales.reshape(broadcast)), -127, 127).astype(np.int8)
    return quantized, Quantization(tuple(float(s) for s in scales), (0,) * len(scales), axis)


def asymmetric_uint8_weights(
    rng: np.random.Generator, shape: Sequence[int], std: float
) -> tuple[np.ndarray, Quantization]:
    """Random normal weights quantized asymmetrically per tensor to uint8 over
    their own [min, max] (widened to hold 0), as TF1's quantization-aware
    training exports them: the filter zero point is rarely 0 or 128."""
    weights = rng.normal(0.0, std, size=tuple(shape)).astype(np.float32)
    q = uint8_quant(float(weights.min()), float(weights.max()))
    scale, zero_point = q.scales[0], q.zero_points[0]
    quantized = np.clip(np.round(weights / np.float32(scale)) + zero_point, 0, 255).astype(np.uint8)
    return quantized, q


def int32_bias(
    rng: np.random.Generator, input_scale: float, weight_scales: Sequence[float], std: float, dtype: str = "int32"
) -> tuple[np.ndarray, Quantization]:
    """Random bias with scale input_scale * weight_scale[c], zero point 0 (the
    relation TFLite checks for quantized convolutions and fully connected):
    int32, or int64 as the 16x8 scheme stores it (dtype="int64")."""
    scales = np.float32(input_scale) * np.asarray(weight_scales, dtype=np.float32)
    real = rng.normal(0.0, std, size=len(scales)).astype(np.float32)
    info = np.iinfo(dtype)
    quantized = np.round(real / scales).astype(np.int64).clip(info.min, info.max).astype(NUMPY_DTYPES[dtype])
    return quantized, Quantization(tuple(float(s) for s in scales), (0,) * len(scales), 0)


# -- int8 networks layer by layer ---------------------------------------------------

_ACTIVATION_RANGES = {
    "NONE": (-math.inf, math.inf),
    "RELU": (0.0, math.inf),
    "RELU6": (0.0, 6.0),
    "RELU_N1_TO_1": (-1.0, 1.0),
}


def python_slice(begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0, ellipsis_mask=0, new_axis_mask=0):
    """The numpy index a TensorFlow strided-slice spec stands for (tf.strided_slice's docs)."""
    spec = []
    for i in range(len(begin)):
        if ellipsis_mask >> i & 1:
            spec.append(Ellipsis)
        elif new_axis_mask >> i & 1:
            spec.append(np.newaxis)
        elif shrink_axis_mask >> i & 1:
            spec.append(begin[i])
        else:
            spec.append(
                slice(None if begin_mask >> i & 1 else begin[i], None if end_mask >> i & 1 else end[i], strides[i])
            )
    return tuple(spec)


def conv_output_size(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return (size + stride - 1) // stride
    return (size - effective + stride) // stride


class Int8Net:
    """Builds an int8 network one layer call at a time.

    Weights are seeded random normals scaled 1/sqrt(fan_in), so activations keep
    roughly the spread of the layer input; each output's int8 range is chosen
    from that spread (no float model is run) so values neither vanish into one
    code nor all saturate.  `Int16x8Net` builds the same layers with int16
    activations."""

    activation_dtype = "int8"
    # Bias type of CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV.
    bias_dtype = "int32"

    def __init__(self, seed: int = 0, description: str = "int8 network built by mcu_planner.builder"):
        self.rng = np.random.default_rng(seed)
        self.mb = ModelBuilder(description)
        self.inputs: list[int] = []
        self._count: dict[str, int] = {}
        # Root mean square of each tensor's real values, estimated layer by
        # layer; it sets the int8 range of the next layer's output.
        self.rms: dict[int, float] = {}

    # bookkeeping
    def _name(self, kind: str) -> str:
        self._count[kind] = self._count.get(kind, 0) + 1
        return f"{kind}_{self._count[kind]}"

    def shape(self, t: int) -> tuple[int, ...]:
        return self.mb.tensors[t].shape

    def quant(self, t: int) -> Quantization:
        q = self.mb.tensors[t].quant
        assert q is not None, f"tensor {t} is not quantized"
        return q

    def _rms(self, t: int) -> float:
        if t not in self.rms:
            low, high = quant_range(self.quant(t), self.mb.tensors[t].dtype)
            self.rms[t] = (high - low) / 4.0
        return self.rms[t]

    def _activation(self, name: str, shape, dtype: str, quant: Quantization) -> int:
        return self.mb.add_tensor(shape, dtype, quant, name=name)

    def _int32_const(self, values, name: str) -> int:
        values = np.asarray(values, dtype=np.int32)
        return self.mb.add_tensor(values.shape, "int32", data=values, name=name)

    def _zero_mean_output(self, name, shape, std: float, activation: str) -> int:
        """An output whose pre-activation values spread as N(0, std²): the
        int8 range covers three standard deviations, cut by the activation."""
        clamp_low, clamp_high = _ACTIVATION_RANGES[activation]
        low, high = max(-3.0 * std, clamp_low), min(3.0 * std, clamp_high)
        y = self._activation(name, shape, self.activation_dtype, self._quant(low, high))
        self.rms[y] = std if low < 0 else std / math.sqrt(2.0)  # a rectifier keeps half the energy
        return y

    def _quant(self, low: float, high: float) -> Quantization:
        return activation_quant(self.activation_dtype, low, high)

    def _weights(self, shape, axis: int, std: float) -> tuple[np.ndarray, Quantization]:
        """Quantized weights, one scale per channel along `axis` (Uint8Net: uint8, one scale)."""
        return per_channel_int8_weights(self.rng, shape, axis, std)

    def _range(self, t: int) -> tuple[float, float]:
        return quant_range(self.quant(t), self.mb.tensors[t].dtype)

    # graph ends
    def input(self, shape: Sequence[int], low: float = -1.0, high: float = 1.0, name: str | None = None) -> int:
        t = self.mb.add_tensor(shape, self.activation_dtype, self._quant(low, high), name=name or self._name("input"))
        self.inputs.append(t)
        self.rms[t] = math.sqrt((low * low + low * high + high * high) / 3.0)  # uniform on [low, high]
        return t

    def float_input(self, shape: Sequence[int], name: str | None = None) -> int:
        t = self.mb.add_tensor(shape, "float32", name=name or self._name("input"))
        self.inputs.append(t)
        return t

    def build(self, *outputs: int) -> bytes:
        self.mb.set_io(self.inputs, outputs)
        return self.mb.build()

    # weighted layers
    def conv2d(
        self, x, filters, kernel=(3, 3), strides=(1, 1), padding="SAME", activation="NONE", dilation=(1, 1)
    ) -> int:
        n, h, w, c = self.shape(x)
        name = self._name("conv2d")
        weights, wq = self._weights((filters, kernel[0], kernel[1], c), 0, 1 / math.sqrt(kernel[0] * kernel[1] * c))
        return self._weighted(
            "CONV_2D",
            name,
            x,
            weights,
            wq,
            filters,
            (
                n,
                conv_output_size(h, kernel[0], strides[0], dilation[0], padding),
                conv_output_size(w, kernel[1], strides[1], dilation[1], padding),
                filters,
            ),
            {
                "padding": padding,
                "stride_h": strides[0],
                "stride_w": strides[1],
                "dilation_h_factor": dilation[0],
                "dilation_w_factor": dilation[1],
                "fused_activation_function": activation,
            },
            activation,
        )

    def depthwise_conv2d(
        self, x, kernel=(3, 3), strides=(1, 1), padding="SAME", activation="NONE", depth_multiplier=1, dilation=(1, 1)
    ) -> int:
        n, h, w, c = self.shape(x)
        channels = c * depth_multiplier
        name = self._name("depthwise_conv2d")
        weights, wq = self._weights((1, kernel[0], kernel[1], channels), 3, 1 / math.sqrt(kernel[0] * kernel[1]))
        return self._weighted(
            "DEPTHWISE_CONV_2D",
            name,
            x,
            weights,
            wq,
            channels,
            (
                n,
                conv_output_size(h, kernel[0], strides[0], dilation[0], padding),
                conv_output_size(w, kernel[1], strides[1], dilation[1], padding),
                channels,
            ),
            {
                "padding": padding,
                "stride_h": strides[0],
                "stride_w": strides[1],
                "depth_multiplier": depth_multiplier,
                "dilation_h_factor": dilation[0],
                "dilation_w_factor": dilation[1],
                "fused_activation_function": activation,
            },
            activation,
        )

    def fully_connected(self, x, units, activation="NONE", keep_num_dims=False) -> int:
        shape = self.shape(x)
        depth = shape[-1]
        rows = int(np.prod(shape[:-1]))
        out_shape = tuple(shape[:-1]) + (units,) if keep_num_dims else (rows, units)
        name = self._name("fully_connected")
        weights, wq = self._weights((units, depth), 0, 1 / math.sqrt(depth))
        return self._weighted(
            "FULLY_CONNECTED",
            name,
            x,
            weights,
            wq,
            units,
            out_shape,
            {"fused_activation_function": activation, "keep_num_dims": keep_num_dims},
            activation,
        )

    def transpose_conv(
        self, x, filters, kernel=(3, 3), strides=(2, 2), padding="SAME", activation="NONE", use_bias=True
    ) -> int:
        """TRANSPOSE_CONV with a constant output_shape: output size
        in * stride (SAME) or (in - 1) * stride + kernel (VALID)."""
        n, h, w, c = self.shape(x)

        def grown(size, k, s):
            return size * s if padding == "SAME" else (size - 1) * s + k

        out_shape = (n, grown(h, kernel[0], strides[0]), grown(w, kernel[1], strides[1]), filters)
        name = self._name("transpose_conv")
        # Each output sums about kernel_area / stride_area taps of c channels.
        fan_in = max(kernel[0] * kernel[1] * c // (strides[0] * strides[1]), 1)
        weights, wq = per_channel_int8_weights(self.rng, (filters, kernel[0], kernel[1], c), 0, 1 / math.sqrt(fan_in))
        shape_tensor = self._int32_const(out_shape, f"{name}/output_shape")
        options = {
            "padding": padding,
            "stride_h": strides[0],
            "stride_w": strides[1],
            "fused_activation_function": activation,
        }
        return self._weighted(
            "TRANSPOSE_CONV",
            name,
            x,
            weights,
            wq,
            filters,
            out_shape,
            options,
            activation,
            leading=(shape_tensor,),
            use_bias=use_bias,
        )

    # hybrid (dynamic-range) layers: float32 activations and bias, int8 weights
    def _hybrid_weighted(self, opcode, name, x, shape, axis, filter_scales, out_shape, options) -> int:
        """`filter_scales`: "per_channel", "equal" (one per channel, all the
        same) or "one" (a single scale for the tensor)."""
        weights, wq = per_channel_int8_weights(self.rng, shape, axis, 1 / math.sqrt(np.prod(shape) / shape[axis]))
        if filter_scales != "per_channel":
            scale = float32(max(wq.scales) / 2)
            broadcast = [1] * len(shape)
            broadcast[axis] = shape[axis]
            real = weights.astype(np.float32) * np.asarray(wq.scales, np.float32).reshape(broadcast)
            weights = np.clip(np.round(real / np.float32(scale)), -127, 127).astype(np.int8)
            count = 1 if filter_scales == "one" else shape[axis]
            wq = Quantization((scale,) * count, (0,) * count, axis)
        w = self.mb.add_tensor(weights.shape, "int8", wq, data=weights, name=f"{name}/weights")
        channels = out_shape[-1]
        bias = self.rng.normal(0.0, 0.1, size=channels).astype(np.float32)
        b = self.mb.add_tensor((channels,), "float32", data=bias, name=f"{name}/bias")
        y = self.mb.add_tensor(out_shape, "float32", name=name)
        self.mb.add_op(opcode, (x, w, b), (y,), options)
        return y

    def hybrid_fully_connected(
        self, x, units, activation="NONE", per_channel=True, asymmetric_quantize_inputs=False
    ) -> int:
        """FULLY_CONNECTED of a hybrid model (per output channel or one weight scale)."""
        shape = self.shape(x)
        return self._hybrid_weighted(
            "FULLY_CONNECTED",
            self._name("hybrid_fully_connected"),
            x,
            (units, shape[-1]),
            0,
            "per_channel" if per_channel else "one",
            (int(np.prod(shape[:-1])), units),
            {"fused_activation_function": activation, "asymmetric_quantize_inputs": asymmetric_quantize_inputs},
        )

    def hybrid_conv2d(
        self,
        x,
        filters,
        kernel=(3, 3),
        strides=(1, 1),
        padding="SAME",
        activation="NONE",
        dilation=(1, 1),
        filter_scales="per_channel",
    ) -> int:
        n, h, w, c = self.shape(x)
        out = (
            n,
            conv_output_size(h, kernel[0], strides[0], dilation[0], padding),
            conv_output_size(w, kernel[1], strides[1], dilation[1], padding),
            filters,
        )
        return self._hybrid_weighted(
            "CONV_2D",
            self._name("hybrid_conv2d"),
            x,
            (filters, *kernel, c),
            0,
            filter_scales,
            out,
            {
                "padding": padding,
                "stride_h": strides[0],
                "stride_w": strides[1],
                "dilation_h_factor": dilation[0],
                "dilation_w_factor": dilation[1],
                "fused_activation_function": activation,
            },
        )

    def hybrid_depthwise_conv2d(
        self,
        x,
        kernel=(3, 3),
        strides=(1, 1),
        padding="SAME",
        activation="NONE",
        depth_multiplier=1,
        dilation=(1, 1),
        filter_scales="per_channel",
    ) -> int:
        n, h, w, c = self.shape(x)
        channels = c * depth_multiplier
        out = (
            n,
            conv_output_size(h, kernel[0], strides[0], dilation[0], padding),
            conv_output_size(w, kernel[1], strides[1], dilation[1], padding),
            channels,
        )
        return self._hybrid_weighted(
            "DEPTHWISE_CONV_2D",
            self._name("hybrid_depthwise_conv2d"),
            x,
            (1, *kernel, channels),
            3,
            filter_scales,
            out,
            {
                "padding": padding,
                "stride_h": strides[0],
                "stride_w": strides[1],
                "depth_multiplier": depth_multiplier,
                "dilation_h_factor": dilation[0],
                "dilation_w_factor": dilation[1],
                "fused_activation_function": activation,
            },
        )

    def _weighted(
        self, opcode, name, x, weights, wq, channels, out_shape, options, activation, leading=(), use_bias=True
    ) -> int:
        """An op with weights: inputs leading..., x, weights, bias (CONV_2D &c.
        take x first; TRANSPOSE_CONV takes (output_shape, weights, x, bias))."""
        in_q = self.quant(x)
        # Weights of variance 1/fan_in keep the output's spread at the input's RMS.
        std = self._rms(x)
        w = self.mb.add_tensor(
            weights.shape, self._weight_dtype(opcode, weights), wq, data=weights, name=f"{name}/weights"
        )
        b = -1
        if use_bias:
            per_tensor = len(wq.scales) == 1
            bias_scales = wq.scales * (channels if per_tensor else 1)
            bias, bq = int32_bias(self.rng, in_q.scales[0], bias_scales, std=0.1 * std, dtype=self.bias_dtype)
            if per_tensor:
                bq = Quantization(bq.scales[:1], bq.zero_points[:1])
            b = self.mb.add_tensor((channels,), self.bias_dtype, bq, data=bias, name=f"{name}/bias")
        y = self._zero_mean_output(name, out_shape, std, activation)
        inputs = (*leading, w, x, b) if leading else (x, w, b)
        self.mb.add_op(opcode, inputs, (y,), options)
        return y

    def _weight_dtype(self, opcode: str, weights: np.ndarray) -> str:
        """The tensor type `opcode`'s filter is stored as (Int4Weights: int4)."""
        return str(weights.dtype)

    # layers that keep their input's quantization
    def _same_quant(self, opcode, name, x, out_shape, options=None, extra_inputs=()) -> int:
        y = self._activation(name, out_shape, self.mb.tensors[x].dtype, self.mb.tensors[x].quant)
        self.mb.add_op(opcode, (x, *extra_inputs), (y,), options)
        if x in self.rms:
            self.rms[y] = self.rms[x]
        return y

    def _pool(self, opcode, x, pool, strides, padding, activation) -> int:
        n, h, w, c = self.shape(x)
        out = (
            n,
            conv_output_size(h, pool[0], strides[0], 1, padding),
            conv_output_size(w, pool[1], strides[1], 1, padding),
            c,
        )
        options = {
            "padding": padding,
            "stride_h": strides[0],
            "stride_w": strides[1],
            "filter_height": pool[0],
            "filter_width": pool[1],
            "fused_activation_function": activation,
        }
        return self._same_quant(opcode, self._name(opcode.lower()), x, out, options)

    def average_pool2d(self, x, pool=(2, 2), strides=(2, 2), padding="VALID", activation="NONE") -> int:
        return self._pool("AVERAGE_POOL_2D", x, pool, strides, padding, activation)

    def max_pool2d(self, x, pool=(2, 2), strides=(2, 2), padding="VALID", activation="NONE") -> int:
        return self._pool("MAX_POOL_2D", x, pool, strides, padding, activation)

    def reshape(self, x, shape: Sequence[int]) -> int:
        shape = tuple(shape)
        shape_tensor = self._int32_const(shape, f"reshape_{self._count.get('reshape', 0) + 1}/shape")
        return self._same_quant("RESHAPE", self._name("reshape"), x, shape, {"new_shape": shape}, (shape_tensor,))

    def squeeze(self, x, axes: Sequence[int]) -> int:
        shape = self.shape(x)
        axes = tuple(a % len(shape) for a in axes)
        out = tuple(d for i, d in enumerate(shape) if i not in axes)
        return self._same_quant("SQUEEZE", self._name("squeeze"), x, out, {"squeeze_dims": axes})

    def expand_dims(self, x, axis: int) -> int:
        shape = list(self.shape(x))
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
        a = self._int32_const([axis], f"expand_dims_{self._count.get('expand_dims', 0) + 1}/axis")
        return self._same_quant("EXPAND_DIMS", self._name("expand_dims"), x, shape, {}, (a,))

    def transpose(self, x, perm: Sequence[int]) -> int:
        shape = self.shape(x)
        p = self._int32_const(perm, f"transpose_{self._count.get('transpose', 0) + 1}/perm")
        return self._same_quant("TRANSPOSE", self._name("transpose"), x, tuple(shape[i] for i in perm), {}, (p,))

    def pad(self, x, paddings: Sequence[tuple[int, int]]) -> int:
        shape = self.shape(x)
        p = self._int32_const(
            np.array(paddings, dtype=np.int32).reshape(len(shape), 2), f"pad_{self._count.get('pad', 0) + 1}/paddings"
        )
        out = tuple(d + before + after for d, (before, after) in zip(shape, paddings, strict=True))
        return self._same_quant("PAD", self._name("pad"), x, out, {}, (p,))

    def mean(self, x, axes: Sequence[int], keep_dims=True) -> int:
        shape = self.shape(x)
        axes = tuple(a % len(shape) for a in axes)
        out = tuple((1 if i in axes else d) for i, d in enumerate(shape) if keep_dims or i not in axes)
        a = self._int32_const(axes, f"mean_{self._count.get('mean', 0) + 1}/axes")
        return self._same_quant("MEAN", self._name("mean"), x, out, {"keep_dims": keep_dims}, (a,))

    def strided_slice(
        self, x, begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0, ellipsis_mask=0, new_axis_mask=0
    ) -> int:
        """x[spec] with TensorFlow's masks; the output shape is numpy's for the
        same Python slice (an independent statement of the rules)."""
        out = np.empty(self.shape(x), dtype=np.int8)[
            python_slice(begin, end, strides, begin_mask, end_mask, shrink_axis_mask, ellipsis_mask, new_axis_mask)
        ].shape
        name = self._name("strided_slice")
        consts = [
            self._int32_const(v, f"{name}/{k}") for k, v in (("begin", begin), ("end", end), ("strides", strides))
        ]
        options = {
            "begin_mask": begin_mask,
            "end_mask": end_mask,
            "shrink_axis_mask": shrink_axis_mask,
            "ellipsis_mask": ellipsis_mask,
            "new_axis_mask": new_axis_mask,
        }
        return self._same_quant("STRIDED_SLICE", name, x, out, options, consts)

    # data movement on any element type (the output keeps x's type and quantization)
    def _indices(self, values, name: str) -> int:
        """A tensor index as given, or an int32 constant of the given values."""
        return values if isinstance(values, (int, np.integer)) else self._int32_const(values, name)

    def slice(self, x, begin: Sequence[int], size: Sequence[int]) -> int:
        out = tuple(d - b if n == -1 else n for b, n, d in zip(begin, size, self.shape(x), strict=True))
        name = self._name("slice")
        b, n = self._int32_const(begin, f"{name}/begin"), self._int32_const(size, f"{name}/size")
        return self._same_quant("SLICE", name, x, out, {}, (b, n))

    def split(self, x, num_splits: int, axis: int = -1) -> list[int]:
        shape = list(self.shape(x))
        a = axis % len(shape)
        shape[a] //= num_splits
        name = self._name("split")
        axis_tensor = self.mb.add_tensor((), "int32", data=np.array(axis, np.int32), name=f"{name}/axis")
        return self._multi("SPLIT", name, x, [tuple(shape)] * num_splits, {"num_splits": num_splits}, (axis_tensor, x))

    def split_v(self, x, sizes: Sequence[int], axis: int = -1) -> list[int]:
        shape = list(self.shape(x))
        a = axis % len(shape)
        known = sum(s for s in sizes if s != -1)
        shapes = []
        for s in sizes:
            shape[a] = self.shape(x)[a] - known if s == -1 else s
            shapes.append(tuple(shape))
        name = self._name("split_v")
        sizes_tensor = self._int32_const(sizes, f"{name}/size_splits")
        axis_tensor = self.mb.add_tensor((), "int32", data=np.array(axis, np.int32), name=f"{name}/axis")
        return self._multi("SPLIT_V", name, x, shapes, {"num_splits": len(sizes)}, (x, sizes_tensor, axis_tensor))

    def unpack(self, x, axis: int = 0) -> list[int]:
        shape = list(self.shape(x))
        a = axis % len(shape)
        count = shape.pop(a)
        return self._multi(
            "UNPACK", self._name("unpack"), x, [tuple(shape)] * count, {"num": count, "axis": axis}, (x,)
        )

    def pack(self, *xs: int, axis: int = 0) -> int:
        shape = list(self.shape(xs[0]))
        shape.insert(axis % (len(shape) + 1), len(xs))
        y = self._activation(self._name("pack"), shape, self.mb.tensors[xs[0]].dtype, self.mb.tensors[xs[0]].quant)
        self.mb.add_op("PACK", xs, (y,), {"values_count": len(xs), "axis": axis})
        if xs[0] in self.rms:
            self.rms[y] = self.rms[xs[0]]
        return y

    def gather(self, x, indices, axis: int = 0, batch_dims: int = 0) -> int:
        """`indices`: the values of an int32 constant, or a tensor index."""
        name = self._name("gather")
        index = self._indices(indices, f"{name}/indices")
        params_shape, index_shape = self.shape(x), self.mb.tensors[index].shape
        a = axis % len(params_shape)
        b = batch_dims + len(index_shape) if batch_dims < 0 else batch_dims
        out = params_shape[:a] + index_shape[b:] + params_shape[a + 1 :]
        return self._same_quant("GATHER", name, x, out, {"axis": axis, "batch_dims": batch_dims}, (index,))

    def gather_nd(self, x, indices) -> int:
        """`indices`: the values of an int32 constant (last dimension: the
        index tuple), or a tensor index."""
        name = self._name("gather_nd")
        index = self._indices(indices, f"{name}/indices")
        index_shape = self.mb.tensors[index].shape
        out = tuple(index_shape[:-1]) + tuple(self.shape(x)[index_shape[-1] :])
        return self._same_quant("GATHER_ND", name, x, out, None, (index,))

    def cast(self, x, dtype: str) -> int:
        """CAST to plain `dtype` (no quantization: TFLite's CAST converts values as they are stored)."""
        return self.op("CAST", (x,), self.shape(x), dtype)

    def compare(self, opcode: str, a, b) -> int:
        """EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS or LESS_EQUAL: a bool tensor."""
        return self.op(opcode, (a, b), np.broadcast_shapes(self.shape(a), self.shape(b)), "bool")

    def select_v2(self, condition, x, y) -> int:
        """condition ? x : y, broadcasting all three; keeps x's type and quantization."""
        shape = np.broadcast_shapes(self.shape(condition), self.shape(x), self.shape(y))
        return self.op("SELECT_V2", (condition, x, y), shape, self.mb.tensors[x].dtype, quant=self.mb.tensors[x].quant)

    def _multi(self, opcode, name, x, shapes, options, inputs) -> list[int]:
        tensor = self.mb.tensors[x]
        ys = [self._activation(f"{name}/{i}", s, tensor.dtype, tensor.quant) for i, s in enumerate(shapes)]
        self.mb.add_op(opcode, inputs, ys, options)
        for y in ys:
            if x in self.rms:
                self.rms[y] = self.rms[x]
        return ys

    # shape arithmetic and other ops on any types: the caller states the output
    def shape_of(self, x, out_type: str = "int32") -> int:
        y = self.mb.add_tensor((len(self.shape(x)),), out_type.lower(), name=self._name("shape"))
        self.mb.add_op("SHAPE", (x,), (y,), {"out_type": out_type.upper()})
        return y

    def const(self, values, dtype: str = "int32", quant=None) -> int:
        values = np.asarray(values, dtype=NUMPY_DTYPES[dtype])
        return self.mb.add_tensor(values.shape, dtype, quant, data=values, name=self._name("const"))

    def op(
        self,
        opcode: str,
        inputs: Sequence[int],
        shape: Sequence[int],
        dtype: str = "int32",
        options: dict[str, Any] | None = None,
        quant=None,
    ) -> int:
        """Any single-output op whose output shape, type and quantization the caller knows."""
        y = self.mb.add_tensor(tuple(shape), dtype, quant, name=self._name(opcode.lower()))
        self.mb.add_op(opcode, inputs, (y,), options or {})
        return y

    def typed_input(self, shape: Sequence[int], dtype: str, quant=None, name: str | None = None) -> int:
        """A graph input of any type (`input` is int8, `float_input` float32)."""
        t = self.mb.add_tensor(shape, dtype, quant, name=name or self._name("input"))
        self.inputs.append(t)
        return t

    def resize_nearest_neighbor(self, x, size: tuple[int, int], align_corners=False, half_pixel_centers=False) -> int:
        n, _, _, c = self.shape(x)
        s = self._int32_const(size, f"resize_nearest_neighbor_{self._count.get('resize_nearest_neighbor', 0) + 1}/size")
        options = {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers}
        return self._same_quant(
            "RESIZE_NEAREST_NEIGHBOR", self._name("resize_nearest_neighbor"), x, (n, *size, c), options, (s,)
        )

    def resize_bilinear(self, x, size: tuple[int, int], align_corners=False, half_pixel_centers=False) -> int:
        n, _, _, c = self.shape(x)
        s = self._int32_const(size, f"resize_bilinear_{self._count.get('resize_bilinear', 0) + 1}/size")
        options = {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers}
        return self._same_quant("RESIZE_BILINEAR", self._name("resize_bilinear"), x, (n, *size, c), options, (s,))

    def _arg_min_max(self, opcode: str, x, axis: int, output_type: str, axis_type: str) -> int:
        shape = self.shape(x)
        out = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
        name = self._name(opcode.lower())
        values = np.array([axis], dtype=NUMPY_DTYPES[axis_type])
        a = self.mb.add_tensor((1,), axis_type, data=values, name=f"{name}/axis")
        y = self.mb.add_tensor(out, output_type, name=name)
        self.mb.add_op(opcode, (x, a), (y,), {"output_type": output_type.upper()})
        return y

    def arg_max(self, x, axis: int = -1, output_type: str = "int32", axis_type: str = "int32") -> int:
        """Index of the largest value along `axis` (int32 or int64 output)."""
        return self._arg_min_max("ARG_MAX", x, axis, output_type, axis_type)

    def arg_min(self, x, axis: int = -1, output_type: str = "int32", axis_type: str = "int32") -> int:
        return self._arg_min_max("ARG_MIN", x, axis, output_type, axis_type)

    def concatenation(self, *xs: int, axis: int = -1, activation="NONE") -> int:
        first = self.quant(xs[0])
        if any(self.quant(x) != first for x in xs):
            raise ValueError("TFLite's quantized CONCATENATION needs all inputs quantized alike")
        shapes = [self.shape(x) for x in xs]
        axis_index = axis % len(shapes[0])
        out = list(shapes[0])
        out[axis_index] = sum(s[axis_index] for s in shapes)
        y = self._activation(self._name("concatenation"), out, self.activation_dtype, first)
        self.rms[y] = max(self._rms(x) for x in xs)
        self.mb.add_op("CONCATENATION", xs, (y,), {"axis": axis, "fused_activation_function": activation})
        return y

    # elementwise
    def _binary(self, opcode, a, b, activation, std) -> int:
        shape = np.broadcast_shapes(self.shape(a), self.shape(b))
        y = self._zero_mean_output(self._name(opcode.lower()), shape, std, activation)
        options = {"fused_activation_function": activation}
        if opcode in ("ADD", "SUB") and self.activation_dtype == "int16":
            options["pot_scale_int16"] = False  # as the converter writes 16x8 models
        self.mb.add_op(opcode, (a, b), (y,), options)
        return y

    # Operands are treated as independent, so their spreads add in quadrature.
    def add(self, a, b, activation="NONE") -> int:
        return self._binary("ADD", a, b, activation, math.hypot(self._rms(a), self._rms(b)))

    def sub(self, a, b, activation="NONE") -> int:
        return self._binary("SUB", a, b, activation, math.hypot(self._rms(a), self._rms(b)))

    def mul(self, a, b, activation="NONE") -> int:
        return self._binary("MUL", a, b, activation, self._rms(a) * self._rms(b))

    def _unary(self, opcode, x, quant: Quantization, options=None) -> int:
        y = self._activation(self._name(opcode.lower()), self.shape(x), self.activation_dtype, quant)
        self.mb.add_op(opcode, (x,), (y,), options)
        return y

    # The output quantization TFLite requires of SOFTMAX / LOGISTIC (and
    # expects of TANH): int8 1/256 at zero point -128 (TANH 1/128 at 0), uint8
    # the same scales at 0 (128); int16 1/32768 at 0 for all three.
    def _fixed_output_quant(self, int8_scale: float, int8_zero_point: int) -> Quantization:
        if self.activation_dtype == "int16":
            return Quantization((1 / 32768,), (0,))
        # uint8: the same scale, the zero point 128 higher.
        return Quantization((int8_scale,), (int8_zero_point + (128 if self.activation_dtype == "uint8" else 0),))

    def softmax(self, x, beta: float = 1.0) -> int:
        return self._unary("SOFTMAX", x, self._fixed_output_quant(1 / 256, -128), {"beta": beta})

    def logistic(self, x) -> int:
        return self._unary("LOGISTIC", x, self._fixed_output_quant(1 / 256, -128))

    def tanh(self, x) -> int:
        return self._unary("TANH", x, self._fixed_output_quant(1 / 128, 0))

    def relu(self, x) -> int:
        return self._unary("RELU", x, self._quant(0.0, self._range(x)[1]))

    def relu6(self, x) -> int:
        return self._unary("RELU6", x, self._quant(0.0, min(6.0, self._range(x)[1])))

    def leaky_relu(self, x, alpha: float = 0.2) -> int:
        low, high = self._range(x)
        return self._unary("LEAKY_RELU", x, self._quant(alpha * low, high), {"alpha": alpha})

    def hard_swish(self, x) -> int:
        high = self._range(x)[1]
        return self._unary("HARD_SWISH", x, self._quant(-0.375, max(high, 0.5)))

    def quantize(self, x, low: float = -1.0, high: float = 1.0, dtype: str | None = None) -> int:
        """float32 -> the activation type, or a requantization to new
        parameters (and to `dtype`, when given: int8 <-> int16 ...)."""
        dtype = dtype or self.activation_dtype
        y = self._activation(self._name("quantize"), self.shape(x), dtype, activation_quant(dtype, low, high))
        self.mb.add_op("QUANTIZE", (x,), (y,))
        return y

    def dequantize(self, x) -> int:
        y = self.mb.add_tensor(self.shape(x), "float32", name=self._name("dequantize"))
        self.mb.add_op("DEQUANTIZE", (x,), (y,))
        return y


class Int16x8Net(Int8Net):
    """Int8Net's layers in TFLite's 16x8 scheme: int16 activations quantized
    symmetrically (zero point 0), int8 per-channel weights, int64 biases."""

    activation_dtype = "int16"
    bias_dtype = "int64"


def int4_weights(
    rng: np.random.Generator, shape: Sequence[int], axis: int | None, std: float
) -> tuple[np.ndarray, Quantization]:
    """Random normal weights quantized symmetrically to int4, per channel
    along `axis` (None: one scale for the tensor), zero points 0.  The scale
    is max|w| / 8, so every channel's largest weight lands on an end of the
    int4 range: -8, or 7 (+8 clipped), the edges a kernel must get right."""
    weights = rng.normal(0.0, std, size=tuple(shape)).astype(np.float32)
    if axis is None:
        scales = np.array([max(float(np.max(np.abs(weights))), 1e-8) / 8.0], dtype=np.float32)
        quantized = np.clip(np.round(weights / scales[0]), -8, 7).astype(np.int8)
        return quantized, Quantization((float(scales[0]),), (0,))
    other_axes = tuple(a for a in range(len(shape)) if a != axis)
    absmax = np.max(np.abs(weights), axis=other_axes)
    scales = np.maximum(absmax, np.float32(1e-8)).astype(np.float32) / np.float32(8.0)
    broadcast = [1] * len(shape)
    broadcast[axis] = shape[axis]
    quantized = np.clip(np.round(weights / scales.reshape(broadcast)), -8, 7).astype(np.int8)
    return quantized, Quantization(tuple(float(s) for s in scales), (0,) * len(scales), axis)


# The layers whose filter TFLite stores as int4 (the others keep int8 weights).
INT4_FILTER_OPCODES = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


class Int4Weights:
    """Mixin for Int8Net and Int16x8Net: CONV_2D, DEPTHWISE_CONV_2D and
    FULLY_CONNECTED filters are int4, packed two to a byte as TFLite stores
    them (int4_weights: per channel, or one scale with per_channel=False)."""

    per_channel = True
    rng: np.random.Generator

    def _weights(self, shape, axis: int, std: float) -> tuple[np.ndarray, Quantization]:
        return int4_weights(self.rng, shape, axis if self.per_channel else None, std)

    def _weight_dtype(self, opcode: str, weights: np.ndarray) -> str:
        return "int4" if opcode in INT4_FILTER_OPCODES else str(weights.dtype)


class Int4Net(Int4Weights, Int8Net):
    """Int8Net with int4 filters (Int4Weights)."""


class Int16x4Net(Int4Weights, Int16x8Net):
    """Int16x8Net (int16 activations, int64 biases) with int4 filters (Int4Weights)."""


class Uint8Net(Int8Net):
    """Int8Net's layers on the legacy TF1 / Coral quantization: uint8
    activations (int8_quant's ranges, zero points + 128) and uint8 weights
    quantized asymmetrically per tensor, so filters have non-zero zero points.
    CONCATENATION may mix input quantizations (TFLite rescales uint8 inputs)."""

    activation_dtype = "uint8"

    def __init__(self, seed: int = 0, description: str = "uint8 network built by mcu_planner.builder"):
        super().__init__(seed, description)

    def _weights(self, shape, axis: int, std: float) -> tuple[np.ndarray, Quantization]:
        return asymmetric_uint8_weights(self.rng, shape, std)

    def concatenation(self, *xs: int, axis: int = -1, activation="NONE") -> int:
        ranges = [self._range(x) for x in xs]
        shapes = [self.shape(x) for x in xs]
        axis_index = axis % len(shapes[0])
        out = list(shapes[0])
        out[axis_index] = sum(s[axis_index] for s in shapes)
        quant = self._quant(min(r[0] for r in ranges), max(r[1] for r in ranges))
        if all(self.quant(x) == self.quant(xs[0]) for x in xs):
            quant = self.quant(xs[0])
        y = self._activation(self._name("concatenation"), out, self.activation_dtype, quant)
        self.rms[y] = max(self._rms(x) for x in xs)
        self.mb.add_op("CONCATENATION", xs, (y,), {"axis": axis, "fused_activation_function": activation})
        return y


class FloatNet:
    """A float32 graph: inputs, layers added by opcode or by name, seeded
    random weights.  Output shapes follow TFLite's shape rules (numpy
    broadcasting for the binary ops)."""

    def __init__(self, seed: int = 0, description: str = "float32 network built by mcu_planner.builder"):
        self.rng = np.random.default_rng(seed)
        self.mb = ModelBuilder(description)
        self.inputs: list[int] = []

    def input(self, shape) -> int:
        t = self.mb.add_tensor(shape, "float32", name=f"input_{len(self.inputs)}")
        self.inputs.append(t)
        return t

    def shape(self, t: int) -> tuple[int, ...]:
        return self.mb.tensors[t].shape

    def const(self, shape, scale: float = 1.0) -> int:
        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.mb.add_tensor(shape, "float32", data=values)

    def int32_const(self, values) -> int:
        values = np.asarray(values, dtype=np.int32)
        return self.mb.add_tensor(values.shape, "int32", data=values)

    def scalar(self, value: float) -> int:
        """A one-element float32 constant, to broadcast against a tensor."""
        return self.mb.add_tensor((1,), "float32", data=np.array([value], dtype=np.float32))

    def op(self, opcode: str, inputs, out_shape, options=None) -> int:
        y = self.mb.add_tensor(out_shape, "float32")
        self.mb.add_op(opcode, inputs, (y,), options or {})
        return y

    def build(self, *outputs: int) -> bytes:
        self.mb.set_io(self.inputs, outputs)
        return self.mb.build()

    # binary ops, broadcasting
    def _binary(self, opcode: str, a: int, b: int, options=None) -> int:
        return self.op(opcode, (a, b), np.broadcast_shapes(self.shape(a), self.shape(b)), options)

    def div(self, a: int, b: int, activation: str = "NONE") -> int:
        return self._binary("DIV", a, b, {"fused_activation_function": activation})

    def pow(self, a: int, b: int) -> int:
        return self._binary("POW", a, b)

    def squared_difference(self, a: int, b: int) -> int:
        return self._binary("SQUARED_DIFFERENCE", a, b)

    def maximum(self, a: int, b: int) -> int:
        return self._binary("MAXIMUM", a, b)

    def minimum(self, a: int, b: int) -> int:
        return self._binary("MINIMUM", a, b)

    def prelu(self, x: int, alpha: int) -> int:
        return self.op("PRELU", (x, alpha), self.shape(x))

    # unary ops
    def _unary(self, opcode: str, x: int, options=None) -> int:
        return self.op(opcode, (x,), self.shape(x), options)

    def exp(self, x: int) -> int:
        return self._unary("EXP", x)

    def log(self, x: int) -> int:
        return self._unary("LOG", x)

    def sqrt(self, x: int) -> int:
        return self._unary("SQRT", x)

    def rsqrt(self, x: int) -> int:
        return self._unary("RSQRT", x)

    def square(self, x: int) -> int:
        return self._unary("SQUARE", x)

    def abs(self, x: int) -> int:
        return self._unary("ABS", x)

    def neg(self, x: int) -> int:
        return self._unary("NEG", x)

    def logistic(self, x: int) -> int:
        return self._unary("LOGISTIC", x)

    def tanh(self, x: int) -> int:
        return self._unary("TANH", x)

    def gelu(self, x: int, approximate: bool = False) -> int:
        return self._unary("GELU", x, {"approximate": approximate})

    def l2_normalization(self, x: int) -> int:
        return self._unary("L2_NORMALIZATION", x)

    # reductions
    def _reduce(self, opcode: str, x: int, axes, keep_dims: bool) -> int:
        shape = self.shape(x)
        axes_set = {a % len(shape) for a in axes}
        out = tuple(1 if i in axes_set else d for i, d in enumerate(shape) if keep_dims or i not in axes_set)
        return self.op(opcode, (x, self.int32_const(list(axes))), out, {"keep_dims": keep_dims})

    def sum(self, x: int, axes, keep_dims: bool = False) -> int:
        return self._reduce("SUM", x, axes, keep_dims)

    def reduce_max(self, x: int, axes, keep_dims: bool = False) -> int:
        return self._reduce("REDUCE_MAX", x, axes, keep_dims)

    def reduce_min(self, x: int, axes, keep_dims: bool = False) -> int:
        return self._reduce("REDUCE_MIN", x, axes, keep_dims)

    # matrices and rearrangements
    def batch_matmul(self, a: int, b: int, adj_x: bool = False, adj_y: bool = False) -> int:
        sa, sb = self.shape(a), self.shape(b)
        rows = sa[-1] if adj_x else sa[-2]
        cols = sb[-2] if adj_y else sb[-1]
        out = tuple(np.broadcast_shapes(sa[:-2], sb[:-2])) + (rows, cols)
        return self.op("BATCH_MATMUL", (a, b), out, {"adj_x": adj_x, "adj_y": adj_y})

    def space_to_depth(self, x: int, block: int) -> int:
        n, h, w, c = self.shape(x)
        return self.op("SPACE_TO_DEPTH", (x,), (n, h // block, w // block, c * block * block), {"block_size": block})

    def depth_to_space(self, x: int, block: int) -> int:
        n, h, w, c = self.shape(x)
        return self.op("DEPTH_TO_SPACE", (x,), (n, h * block, w * block, c // (block * block)), {"block_size": block})

    def reverse_v2(self, x: int, axes) -> int:
        return self.op("REVERSE_V2", (x, self.int32_const(list(axes))), self.shape(x))


def single_op_model(
    layer: str,
    *input_shapes: Sequence[int],
    seed: int = 0,
    input_ranges: Sequence[tuple[float, float]] | None = None,
    activations: str = "int8",
    **kwargs,
) -> bytes:
    """A model of one Int8Net layer, e.g. single_op_model("conv2d", (1, 8, 8, 3),
    filters=4, strides=(2, 2)); each input is a graph input of the
    `activations` type ("int8", or "int16" for the 16x8 scheme)."""
    net = (Int16x8Net if activations == "int16" else Int8Net)(seed, description=f"single {layer}")
    ranges = input_ranges or [(-1.0, 1.0)] * len(input_shapes)
    xs = [net.input(shape, low, high) for shape, (low, high) in zip(input_shapes, ranges, strict=True)]
    return net.build(getattr(net, layer)(*xs, **kwargs))


def tiny_kws_int8(seed: int = 0) -> bytes:
    """The bundled example: a keyword-spotting-like int8 net on a 49x10 feature
    map with a residual ADD and a pooled CONCATENATION branch."""
    net = Int8Net(seed, description="tiny_kws_int8: mcu-planner example keyword spotter")
    x = net.input((1, 49, 10, 1), -1.0, 1.0, name="features")
    x = net.conv2d(x, 16, kernel=(10, 4), strides=(2, 2), activation="RELU")  # 25x5x16
    x = net.depthwise_conv2d(x, activation="RELU")
    block = net.conv2d(x, 16, kernel=(1, 1), activation="RELU")
    y = net.depthwise_conv2d(block, activation="RELU")
    y = net.conv2d(y, 16, kernel=(1, 1))
    x = net.add(block, y, activation="RELU")  # residual
    avg = net.average_pool2d(x, pool=(5, 5), strides=(5, 5))  # 5x1x16
    peak = net.max_pool2d(x, pool=(5, 5), strides=(5, 5))
    x = net.concatenation(avg, peak, axis=3)  # 5x1x32
    x = net.reshape(x, (1, 160))
    x = net.fully_connected(x, 12)
    return net.build(net.softmax(x))


def streaming_int8_model(seed: int = 0) -> bytes:
    """A small streaming model in microWakeWord's pattern: CALL_ONCE runs
    subgraph 1, which gives two resource variables random initial values;
    each invocation reads the ring buffer, appends the new input slice,
    convolves the window, writes the newest slices back, adds the result
    into an accumulator variable, and reads the ring buffer again (through
    a second VAR_HANDLE of the same name) after writing it.  Outputs: the
    dense layer's result, the ring buffer as read after the write, and the
    accumulator."""
    net = Int8Net(seed, description="streaming int8 model built by mcu_planner.builder")
    mb = net.mb
    x = net.input((1, 1, 1, 8), name="slice")
    ring_shape, ring_quant = (1, 3, 1, 8), net.quant(x)
    init = mb.add_subgraph("init")
    ring_init = init.add_tensor(ring_shape, "int8", ring_quant, data=net.rng.integers(-128, 128, ring_shape))
    init.assign_variable(init.var_handle("stream/ring"), ring_init)

    mb.call_once(init)
    ring = mb.var_handle("stream/ring")
    acc = mb.var_handle("stream/acc")
    window = net.concatenation(mb.read_variable(ring, ring_shape, "int8", ring_quant, name="ring_read"), x, axis=1)
    mb.assign_variable(ring, net.strided_slice(window, (0, 1, 0, 0), (1, 4, 1, 8), (1, 1, 1, 1)))
    y = net.conv2d(window, 6, kernel=(4, 1), padding="VALID")  # 1x1x1x6
    acc_quant = net.quant(y)
    acc_init = init.add_tensor((1, 1, 1, 6), "int8", acc_quant, data=net.rng.integers(-20, 20, (1, 1, 1, 6)))
    init.assign_variable(init.var_handle("stream/acc"), acc_init)
    total = net.add(mb.read_variable(acc, (1, 1, 1, 6), "int8", acc_quant, name="acc_read"), y)
    mb.assign_variable(acc, total)
    ring_again = mb.read_variable(mb.var_handle("stream/ring"), ring_shape, "int8", ring_quant, name="ring_after")
    dense = net.fully_connected(net.reshape(window, (1, 32)), 4)
    return net.build(dense, ring_again, total)


# -- control flow ------------------------------------------------------------------------

# int8 quantization of the control-flow models' values: (scale, zero point).
_CF_A, _CF_B, _CF_OUT = (0.05, 3), (0.04, -5), (0.1, -2)


def if_model(dtype: str = "int8", shape: Sequence[int] = (2, 3), constant: bool | None = None) -> bytes:
    """IF on a bool input choosing between two branches of (a, b):
    then -> (relu(a + b), a), else -> (relu(a * b), b).  The sum and the
    product are values of the branches (they share the IF's sub-arena); the
    second output is an input passed through, which the IF copies into its
    output.  With `constant`,
    the condition is that constant instead of an input."""
    quant = {name: (q if dtype == "int8" else None) for name, q in (("a", _CF_A), ("b", _CF_B), ("out", _CF_OUT))}
    mb = ModelBuilder(f"IF {dtype} model built by mcu_planner.builder")
    data = None if constant is None else np.array([constant])
    cond = mb.add_tensor((1,), "bool", data=data, name="cond")
    a = mb.add_tensor(shape, dtype, quant["a"], name="a")
    b = mb.add_tensor(shape, dtype, quant["b"], name="b")
    y = mb.add_tensor(shape, dtype, quant["out"], name="y")
    z = mb.add_tensor(shape, dtype, quant["a"], name="z")
    branches = []
    for opcode in ("ADD", "MUL"):
        sub = mb.add_subgraph(opcode.lower())
        sa = sub.add_tensor(shape, dtype, quant["a"], name="a")
        sb = sub.add_tensor(shape, dtype, quant["b"], name="b")
        value = sub.add_tensor(shape, dtype, quant["out"], name=opcode.lower())
        sub.add_op(opcode, (sa, sb), (value,))
        out = sub.add_tensor(shape, dtype, quant["out"], name=f"relu_{opcode.lower()}")
        sub.add_op("RELU", (value,), (out,))
        if opcode == "ADD":
            sub.set_io([sa, sb], [out, sa])
        else:
            passed = sub.add_tensor(shape, dtype, quant["a"], name="b_as_a")
            sub.add_op("MUL", (sb, sub.add_tensor((1,), dtype, quant["a"], data=_one(dtype, quant["a"]))), (passed,))
            sub.set_io([sa, sb], [out, passed])
        branches.append(sub)
    mb.if_op(cond, (a, b), (y, z), branches[0], branches[1])
    mb.set_io([cond, a, b] if constant is None else [a, b], [y, z])
    return mb.build()


def _one(dtype: str, quant: tuple[float, int] | None) -> np.ndarray:
    """The value 1 (or the int8 value nearest it) as a [1] tensor of `dtype`."""
    if dtype == "int8" and quant is not None:
        scale, zero_point = quant
        return np.array([min(127, round(1.0 / scale) + zero_point)], dtype=np.int8)
    return np.array([1], dtype=dtype)


def while_model(dtype: str = "int8", shape: Sequence[int] = (2, 3)) -> bytes:
    """WHILE counting i from 0 while i < n (n an int32 input) over the loop
    variables (i, n, acc, x, p, q): each turn acc += x, and (p, q) becomes
    (q, p + q) -- a loop variable passed on as another one.  Outputs: the
    final i, acc and q.  `dtype` is acc's, x's, p's and q's type ("int8":
    quantized ADDs; "float32"; "int32")."""
    quant = _CF_OUT if dtype == "int8" else None
    mb = ModelBuilder(f"WHILE {dtype} model built by mcu_planner.builder")
    n = mb.add_tensor((1,), "int32", name="n")
    x = mb.add_tensor(shape, dtype, quant, name="x")
    p = mb.add_tensor(shape, dtype, quant, name="p")
    q = mb.add_tensor(shape, dtype, quant, name="q")
    zero = np.zeros(shape, dtype=dtype) if dtype != "int8" else np.full(shape, _CF_OUT[1], dtype=np.int8)
    acc0 = mb.add_tensor(shape, dtype, quant, data=zero, name="acc0")
    i0 = mb.add_tensor((1,), "int32", data=np.array([0], dtype=np.int32), name="i0")
    layouts = [((1,), "int32", None), ((1,), "int32", None)] + [(shape, dtype, quant)] * 4
    names = ("i", "n", "acc", "x", "p", "q")
    outs = [mb.add_tensor(s, d, qq, name=f"{name}_out") for (s, d, qq), name in zip(layouts, names, strict=True)]

    cond = mb.add_subgraph("cond")
    cv = [cond.add_tensor(s, d, qq, name=name) for (s, d, qq), name in zip(layouts, names, strict=True)]
    less = cond.add_tensor((1,), "bool", name="i_less_n")
    cond.add_op("LESS", (cv[0], cv[1]), (less,))
    cond.set_io(cv, [less])

    body = mb.add_subgraph("body")
    bv = [body.add_tensor(s, d, qq, name=name) for (s, d, qq), name in zip(layouts, names, strict=True)]
    one = body.add_tensor((1,), "int32", data=np.array([1], dtype=np.int32), name="one")
    i_next = body.add_tensor((1,), "int32", name="i_next")
    body.add_op("ADD", (bv[0], one), (i_next,))
    acc_next = body.add_tensor(shape, dtype, quant, name="acc_next")
    body.add_op("ADD", (bv[2], bv[3]), (acc_next,))
    q_next = body.add_tensor(shape, dtype, quant, name="q_next")
    body.add_op("ADD", (bv[4], bv[5]), (q_next,))
    body.set_io(bv, [i_next, bv[1], acc_next, bv[3], bv[5], q_next])

    mb.while_op((i0, n, acc0, x, p, q), outs, cond, body)
    mb.set_io([n, x, p, q], [outs[0], outs[2], outs[5]])
    return mb.build()


# -- the reference interpreter -------------------------------------------------------


def run_reference(model_bytes: bytes, inputs: Sequence[np.ndarray] | None = None, seed: int = 0) -> list[np.ndarray]:
    """Outputs of TFLite's reference kernels (BUILTIN_REF) for `inputs`
    (default: one set from `mcu-plan check`'s random_inputs, seeded with `seed`)."""
    from mcu_planner.frontend.reader import read_model
    from mcu_planner.targets.check import random_inputs
    from mcu_planner.targets.reference import ReferenceModel

    if inputs is None:
        inputs = random_inputs(read_model(model_bytes), np.random.default_rng(seed))
    return ReferenceModel(model_bytes).run(list(inputs))


def check_runs(model_bytes: bytes, seed: int = 0) -> list[np.ndarray]:
    """Load and invoke the model in the reference interpreter; raises if TFLite
    rejects it.  Returns the outputs for a seeded random input."""
    return run_reference(model_bytes, None, seed)


# -- sequence models -------------------------------------------------------------------

# UNIDIRECTIONAL_SEQUENCE_LSTM input slots (TFLite's lstm_shared.h), by the name
# `lstm_model` gives each tensor it writes.
LSTM_INPUT_SLOTS = (
    "input",
    "input_to_input_weights",
    "input_to_forget_weights",
    "input_to_cell_weights",
    "input_to_output_weights",
    "recurrent_to_input_weights",
    "recurrent_to_forget_weights",
    "recurrent_to_cell_weights",
    "recurrent_to_output_weights",
    "cell_to_input_weights",
    "cell_to_forget_weights",
    "cell_to_output_weights",
    "input_gate_bias",
    "forget_gate_bias",
    "cell_gate_bias",
    "output_gate_bias",
    "projection_weights",
    "projection_bias",
    "output_state",
    "cell_state",
    "input_layer_norm_coefficients",
    "forget_layer_norm_coefficients",
    "cell_layer_norm_coefficients",
    "output_layer_norm_coefficients",
)
_LSTM_GATES = ("input", "forget", "cell", "output")


def lstm_model(
    dtype: str = "int8",
    *,
    batch: int = 1,
    time: int = 3,
    n_input: int = 4,
    n_cell: int = 5,
    n_output: int | None = None,
    time_major: bool = False,
    cifg: bool = False,
    peephole: bool = False,
    layer_norm: bool = False,
    projection: bool = False,
    projection_bias: bool = False,
    cell_clip: float = 0.0,
    proj_clip: float = 0.0,
    cell_scale_exponent: int = -11,
    input_range: tuple[float, float] = (-1.0, 1.0),
    output_range: tuple[float, float] = (-1.0, 1.0),
    weight_std: float = 0.5,
    seed: int = 0,
) -> bytes:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM as a model: float32, or int8 with an
    int16 cell state (TFLite's integer 8x8->16 LSTM, with its five
    intermediate tensors).  The input is [batch, time, n_input] (or time
    first); output and cell state are variable tensors starting at zero.
    `n_output` differs from `n_cell` only with a projection."""
    if n_output is None:
        n_output = n_cell
    if n_output != n_cell and not projection:
        raise ValueError("n_output differs from n_cell only with a projection")
    if dtype not in ("int8", "float32"):
        raise ValueError(f"lstm_model builds float32 or int8 LSTMs, not {dtype}")
    rng = np.random.default_rng(seed)
    mb = ModelBuilder(f"{dtype} UNIDIRECTIONAL_SEQUENCE_LSTM")
    quantized = dtype == "int8"
    slots: dict[str, int] = {}
    in_shape = (time, batch, n_input) if time_major else (batch, time, n_input)
    out_shape = in_shape[:2] + (n_output,)
    in_q = int8_quant(*input_range) if quantized else None
    out_q = int8_quant(*output_range) if quantized else None
    slots["input"] = mb.add_tensor(in_shape, dtype, in_q, name="input")
    # Pre-activations of the integer gates are Q3.12; the cell state is 2^exponent.
    gate_scale = 2.0**-12
    cell_scale = 2.0**cell_scale_exponent

    def weights(name: str, shape, fan_in: int) -> None:
        real = rng.normal(0.0, weight_std / math.sqrt(fan_in), size=shape).astype(np.float32)
        if not quantized:
            slots[name] = mb.add_tensor(shape, "float32", data=real, name=name)
            return
        scale = float32(max(float(np.max(np.abs(real))), 1e-6) / 127.0)
        values = np.clip(np.round(real / scale), -127, 127).astype(np.int8)
        slots[name] = mb.add_tensor(shape, "int8", (scale, 0), data=values, name=name)

    def vector(name: str, size: int, std: float, data_scale: float, int_dtype: str = "int32") -> None:
        real = rng.normal(0.0, std, size=size).astype(np.float32)
        if not quantized:
            slots[name] = mb.add_tensor((size,), "float32", data=real, name=name)
            return
        info = np.iinfo(int_dtype)
        values = np.clip(np.round(real / data_scale), info.min, info.max).astype(int_dtype)
        slots[name] = mb.add_tensor((size,), int_dtype, (data_scale, 0), data=values, name=name)

    gates = _LSTM_GATES[1:] if cifg else _LSTM_GATES
    for gate in gates:
        weights(f"input_to_{gate}_weights", (n_cell, n_input), n_input)
        weights(f"recurrent_to_{gate}_weights", (n_cell, n_output), n_output)
    # Integer biases add to the input product, so they share its scale; under
    # layer norm they add to the normalised value (scale ln * 2^-10).
    for gate in gates:
        if peephole:
            vector(f"cell_to_{gate}_weights", n_cell, 0.3, 0.3 / 2000, "int16")
        ln_scale = 1.0 / 4096
        if layer_norm:
            vector(f"{gate}_layer_norm_coefficients", n_cell, 0.5, ln_scale, "int16")
            slots[f"{gate}_layer_norm_coefficients"] = slots[f"{gate}_layer_norm_coefficients"]
        bias_scale = (
            ln_scale * 2.0**-10
            if layer_norm
            else (in_q.scales[0] * mb.tensors[slots[f"input_to_{gate}_weights"]].quant.scales[0] if quantized else 1.0)
        )
        vector(f"{gate}_gate_bias", n_cell, 0.2, bias_scale)
    if peephole and cifg:
        slots.pop("cell_to_input_weights", None)
    hidden_q = out_q
    if projection:
        weights("projection_weights", (n_output, n_cell), n_cell)
        if projection_bias:
            scale = (hidden_q.scales[0] * mb.tensors[slots["projection_weights"]].quant.scales[0]) if quantized else 1.0
            vector("projection_bias", n_output, 0.1, scale)
    if quantized and projection:
        hidden_q = int8_quant(-1.0, 1.0)
    slots["output_state"] = mb.add_tensor((batch, n_output), dtype, out_q, name="output_state", is_variable=True)
    cell_q = (cell_scale, 0) if quantized else None
    slots["cell_state"] = mb.add_tensor(
        (batch, n_cell), "int16" if quantized else "float32", cell_q, name="cell_state", is_variable=True
    )
    output = mb.add_tensor(out_shape, dtype, out_q, name="output")
    intermediates: list[int] = []
    if quantized:
        for gate in _LSTM_GATES:
            # The matmul result before layer norm; its scale sets the effective scales.
            intermediates.append(
                mb.add_tensor(
                    (0,), "int16", (gate_scale / 8 if layer_norm else gate_scale, 0), name=f"{gate}_intermediate"
                )
            )
        intermediates.append(mb.add_tensor((0,), "int8", hidden_q, name="effective_hidden_scale_intermediate"))
    inputs = tuple(slots.get(name, -1) for name in LSTM_INPUT_SLOTS)
    options = {
        "fused_activation_function": "TANH",
        "cell_clip": cell_clip,
        "proj_clip": proj_clip,
        "time_major": time_major,
    }
    mb.add_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, (output,), options, intermediates=intermediates)
    mb.set_io([slots["input"]], [output])
    return mb.build()
