"""Generation-time folding: ops whose every input is known before the model
runs are evaluated here, once, and their outputs become constant tensors.

Converters emit shape arithmetic (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE,
FILL, RANGE, CAST, integer ADD/MUL/FLOOR_DIV on shapes ...) that TFLite
evaluates at every invoke.  Shapes are static here, so a SHAPE (or RANK) of
any tensor is a constant, and so is any op of the list below whose inputs are
all constants.  The pass sits between the reader and lifetimes:

    reader -> fold_constants -> lifetimes -> planners -> codegen

and hands on a graph in which folded ops are gone and their outputs are
constants.  A folded tensor therefore takes no arena bytes and no run time;
it takes flash only when an op that still runs passes it to its kernel (a
RESHAPE's shape input, read by nobody at run time, takes none).

Each op is evaluated with numpy following TFLite's reference kernel exactly
(index rules, C++ integer division and casts, int32 wrap-around).  An op
variant whose semantics are not implemented here, or whose evaluation TFLite
would refuse (an index out of range, a division by zero, a float too large
for its integer cast), is left in the graph: lowering then runs it or names
it in exit 4.  A folded graph output is copied from flash into the arena,
where the application reads it, by a RESHAPE of the constant; ops writing a
variable are never folded.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from ..graph import Graph, Operator, Tensor
from ..quant import UnsupportedQuantization, activation_range_float
from ..slicing import SliceRefused, resolve_slice, resolve_split_sizes, strided_slice_axes

_NUMPY_DTYPES = {
    "bool": np.dtype("bool"),
    "int8": np.dtype("<i1"),
    "uint8": np.dtype("<u1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float16": np.dtype("<f2"),
    "float32": np.dtype("<f4"),
}
_INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64")
# Enum names of TensorType (SHAPE's out_type, CAST's, ARG_MAX's ...) -> dtype.
_TENSOR_TYPE_NAMES = {name.upper(): name for name in _NUMPY_DTYPES}


class NotFoldable(Exception):
    """This op is left for lowering (it then runs, or is named in exit 4)."""


# Any dtype: an op's values have its tensors' dtypes.
Array = npt.NDArray[Any]
Values = list[Array]
FoldFn = Callable[[Operator, Graph, Values], Values]
FOLDERS: dict[str, FoldFn] = {}


def folds(*opcodes: str) -> Callable[[FoldFn], FoldFn]:
    def wrap(fn: FoldFn) -> FoldFn:
        for opcode in opcodes:
            FOLDERS[opcode] = fn
        return fn

    return wrap


# Ops that read only their input's shape, never its values.
SHAPE_READERS = frozenset({"SHAPE", "RANK"})


# ------------------------------------------------------------------ the pass


def constant_value(tensor: Tensor) -> Array:
    """A constant tensor's values as a numpy array of its shape."""
    if tensor.dtype not in _NUMPY_DTYPES:
        raise NotFoldable(f"{tensor.dtype} constant")
    if tensor.data is None:
        raise NotFoldable("not a constant")
    values = np.frombuffer(tensor.data, dtype=_NUMPY_DTYPES[tensor.dtype], count=tensor.num_elements)
    return values.reshape(tensor.shape)


def fold_constants(graph: Graph) -> Graph:
    """`graph` with every foldable op evaluated: those ops removed, their
    outputs constant tensors, the remaining ops renumbered in order."""
    tensors = list(graph.tensors)
    protected = set(graph.inputs)
    kept: list[Operator] = []
    folded: Counter[str] = Counter()
    in_flash: dict[int, int] = {}  # folded graph output -> the constant holding its value
    for op in graph.operators:
        if any(t in in_flash for t in op.inputs):  # later ops read the value from flash
            op = dataclasses.replace(op, inputs=tuple(in_flash.get(t, t) for t in op.inputs))
        values = _try_fold(op, graph, tensors, protected)
        if values is None:
            kept.append(op)
            continue
        for t, value in zip(op.outputs, values, strict=True):
            data = np.ascontiguousarray(value).tobytes()
            if t not in graph.outputs:
                tensors[t] = dataclasses.replace(tensors[t], data=data)
                continue
            # The application reads graph outputs from the arena: the folded
            # value is copied there from flash, as a RESHAPE of a constant.
            result = dataclasses.replace(tensors[t], index=len(tensors), name=f"{tensors[t].name}/folded", data=data)
            tensors.append(result)
            in_flash[t] = result.index
            kept.append(Operator(index=-1, opcode="RESHAPE", version=1, inputs=(result.index,), outputs=(t,)))
        folded[op.opcode] += 1
    if not folded:
        return graph
    # Constants only folded ops read (their inputs and intermediate results)
    # never reach flash: drop their bytes so no later stage counts them.
    still_read = {t for op in kept for t in op.inputs} | set(graph.inputs) | set(graph.outputs)
    touched = {t for op in graph.operators for t in (*op.inputs, *op.outputs) if t >= 0}
    for t in touched - still_read:
        if tensors[t].is_constant:
            tensors[t] = dataclasses.replace(tensors[t], data=None)
    operators = tuple(dataclasses.replace(op, index=i) for i, op in enumerate(kept))
    summary = ", ".join(f"{name} x{n}" for name, n in sorted(folded.items()))
    note = f"{sum(folded.values())} ops computed at generation time, now constants ({summary})"
    return dataclasses.replace(graph, tensors=tuple(tensors), operators=operators, notes=graph.notes + (note,))


def _try_fold(op: Operator, graph: Graph, tensors: list[Tensor], protected: set[int]) -> Values | None:
    fn = FOLDERS.get(op.opcode)
    if fn is None or not op.outputs:
        return None
    if any(t < 0 for t in op.outputs):
        return None
    outputs = [tensors[t] for t in op.outputs]
    if any(t.index in protected or t.is_variable or t.dtype not in _NUMPY_DTYPES for t in outputs):
        return None
    if op.opcode in SHAPE_READERS:
        if not op.inputs or op.inputs[0] < 0:
            return None
        inputs = [np.broadcast_to(np.int8(0), tensors[op.inputs[0]].shape)]  # only its shape is read
    else:
        # No folded op has optional inputs: one left out is the lowering's to refuse.
        if any(t < 0 or not tensors[t].is_constant for t in op.inputs):
            return None
        try:
            inputs = [constant_value(tensors[t]) for t in op.inputs]
        except NotFoldable:
            return None
    view = dataclasses.replace(graph, tensors=tuple(tensors))
    try:
        with np.errstate(all="ignore"):
            values = fn(op, view, inputs)
    except (NotFoldable, SliceRefused):
        return None
    for tensor, value in zip(outputs, values, strict=True):
        if tuple(value.shape) != tuple(tensor.shape) or value.dtype != _NUMPY_DTYPES[tensor.dtype]:
            return None  # the model's shapes or types disagree with TFLite's rule: let lowering say so
    return values


# ------------------------------------------------------------------ helpers


def _output(op: Operator, graph: Graph, position: int = 0) -> Tensor:
    return graph.tensors[op.outputs[position]]


def _dtype_of(op: Operator, graph: Graph, position: int = 0) -> np.dtype[Any]:
    return _NUMPY_DTYPES[_output(op, graph, position).dtype]


def _ints(value: Array, what: str) -> list[int]:
    if value.dtype.kind not in "iu":
        raise NotFoldable(f"{what} is not an integer constant")
    return [int(v) for v in value.reshape(-1)]


def _scalar_int(value: Array, what: str) -> int:
    values = _ints(value, what)
    if len(values) != 1:
        raise NotFoldable(f"{what} has {len(values)} values")
    return values[0]


def _axis(axis: int, rank: int) -> int:
    resolved = axis + rank if axis < 0 else axis
    if not 0 <= resolved < rank:
        raise NotFoldable(f"axis {axis} of rank {rank}")
    return resolved


def _unquantized(op: Operator, graph: Graph) -> None:
    """Arithmetic is folded only on plain numbers: quantized values need the
    requantizing kernels."""
    for t in list(op.inputs) + list(op.outputs):
        if t >= 0 and graph.tensors[t].quantization is not None:
            raise NotFoldable("quantized arithmetic")


def _wrap(values: Array, dtype: np.dtype[Any]) -> Array:
    """Two's-complement wrap-around of exact integer results (what int32
    arithmetic does on every target TFLite runs on)."""
    return values.astype(np.int64).astype(dtype) if dtype.itemsize < 8 else values.astype(dtype)


def _same_quantization(op: Operator, graph: Graph) -> None:
    """Data-movement ops copy stored values; with quantization that differs
    between input and output TFLite either refuses or requantizes."""
    out = _output(op, graph)
    for t in op.inputs[:1]:
        if t >= 0 and not graph.tensors[t].same_quantization(out) and out.quantization is not None:
            raise NotFoldable("output quantization differs from the input's")


# ------------------------------------------------------------------ shapes


@folds("SHAPE")
def _shape(op: Operator, graph: Graph, inputs: Values) -> Values:
    out_type = _TENSOR_TYPE_NAMES.get(str(op.options.get("out_type", "INT32")), "int32")
    return [np.array(inputs[0].shape, dtype=_NUMPY_DTYPES[out_type])]


@folds("BROADCAST_ARGS")
def _broadcast_args(op: Operator, graph: Graph, inputs: Values) -> Values:
    """reference_ops::BroadcastArgs of two constant 1-D shapes; incompatible
    ones are left for the kernel (LiteRT aborts on them)."""
    a, b = inputs
    if a.ndim != 1 or b.ndim != 1 or a.dtype != b.dtype or a.dtype.kind != "i":
        raise NotFoldable("BROADCAST_ARGS of other than two 1-D integer shapes")
    # Each dimension compared as an int, as the reference narrows it.
    dims1, dims2 = (v.astype(np.int64).astype(np.int32) for v in (a, b))
    out = []
    for i in range(1, max(len(dims1), len(dims2)) + 1):
        d1 = int(dims1[-i]) if i <= len(dims1) else 1
        d2 = int(dims2[-i]) if i <= len(dims2) else 1
        if d1 != 1 and d2 != 1 and d1 != d2:
            raise NotFoldable(f"BROADCAST_ARGS of incompatible dimensions {d1} and {d2}")
        out.append(d2 if d1 == 1 else d1)
    return [np.array(out[::-1], dtype=a.dtype)]


@folds("RANK")
def _rank(op: Operator, graph: Graph, inputs: Values) -> Values:
    return [np.array(inputs[0].ndim, dtype=np.int32)]


# ------------------------------------------------------------------ data movement


@folds("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def _reshape(op: Operator, graph: Graph, inputs: Values) -> Values:
    # The output shape is the model's (TFLite copies the bytes whatever the
    # quantization says, as the RESHAPE kernel does).
    out = _output(op, graph)
    if inputs[0].size != out.num_elements or inputs[0].dtype != _dtype_of(op, graph):
        raise NotFoldable("reshape to a different size or type")
    return [inputs[0].reshape(out.shape)]


@folds("PACK")
def _pack(op: Operator, graph: Graph, inputs: Values) -> Values:
    _same_quantization(op, graph)
    axis = _axis(op.options.get("axis", 0), inputs[0].ndim + 1)
    return [np.stack(inputs, axis=axis).astype(_dtype_of(op, graph))]


@folds("UNPACK")
def _unpack(op: Operator, graph: Graph, inputs: Values) -> Values:
    value = inputs[0]
    axis = _axis(op.options.get("axis", 0), value.ndim)
    if value.shape[axis] != len(op.outputs):
        raise NotFoldable("UNPACK count differs from the axis length")
    return [np.take(value, i, axis=axis) for i in range(len(op.outputs))]


@folds("CONCATENATION")
def _concatenation(op: Operator, graph: Graph, inputs: Values) -> Values:
    out = _output(op, graph)
    if any(not graph.tensors[t].same_quantization(out) for t in op.inputs):
        raise NotFoldable("CONCATENATION requantizing its inputs")
    if (op.options.get("fused_activation_function") or "NONE") != "NONE":
        raise NotFoldable("CONCATENATION with a fused activation")
    axis = _axis(op.options.get("axis", 0), inputs[0].ndim)
    return [np.concatenate(inputs, axis=axis)]


def _split_pieces(value: Array, axis: int, sizes: list[int]) -> Values:
    bounds = np.cumsum([0] + sizes)
    index = [slice(None)] * value.ndim
    pieces = []
    for start, stop in pairwise(bounds):
        index[axis] = slice(int(start), int(stop))
        pieces.append(value[tuple(index)])
    return pieces


@folds("SPLIT")
def _split(op: Operator, graph: Graph, inputs: Values) -> Values:
    axis_value, value = inputs[0], inputs[1]
    axis = _axis(_scalar_int(axis_value, "SPLIT axis"), value.ndim)
    count = len(op.outputs)
    if count == 0 or value.shape[axis] % count:
        raise NotFoldable("SPLIT into unequal parts")
    return _split_pieces(value, axis, [value.shape[axis] // count] * count)


@folds("SPLIT_V")
def _split_v(op: Operator, graph: Graph, inputs: Values) -> Values:
    value = inputs[0]
    sizes = _ints(inputs[1], "SPLIT_V size_splits")
    axis = _axis(_scalar_int(inputs[2], "SPLIT_V axis"), value.ndim)
    return _split_pieces(value, axis, resolve_split_sizes(sizes, value.shape[axis], len(op.outputs)))


@folds("SLICE")
def _slice(op: Operator, graph: Graph, inputs: Values) -> Values:
    value = inputs[0]
    begin, size = _ints(inputs[1], "SLICE begin"), _ints(inputs[2], "SLICE size")
    starts, counts = resolve_slice(begin, size, value.shape)
    return [value[tuple(slice(b, b + n) for b, n in zip(starts, counts, strict=True))]]


@folds("STRIDED_SLICE")
def _strided_slice(op: Operator, graph: Graph, inputs: Values) -> Values:
    value = inputs[0]
    begin = _ints(inputs[1], "begin")
    end = _ints(inputs[2], "end")
    strides = _ints(inputs[3], "strides")
    axes, effective_shape = strided_slice_axes(value.shape, begin, end, strides, op.options)
    value = value.reshape(effective_shape)
    picks = tuple(np.arange(a.count, dtype=np.int64) * a.stride + a.start for a in axes)
    result = value[np.ix_(*picks)] if picks else value
    return [result.reshape(tuple(a.count for a in axes if not a.shrink))]


@folds("GATHER")
def _gather(op: Operator, graph: Graph, inputs: Values) -> Values:
    params, indices = inputs[0], inputs[1]
    index_values = np.asarray(_ints(indices, "GATHER indices"), dtype=np.int64).reshape(indices.shape)
    axis = _axis(op.options.get("axis", 0), params.ndim)
    batch_dims = op.options.get("batch_dims", 0)
    batch_dims = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    if not 0 <= batch_dims <= min(axis, indices.ndim) or params.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise NotFoldable(f"GATHER batch_dims {op.options.get('batch_dims')}")
    if ((index_values < 0) | (index_values >= params.shape[axis])).any():
        raise NotFoldable("GATHER index out of range (TFLite fails the invoke)")
    batches = int(np.prod(params.shape[:batch_dims], dtype=np.int64))
    flat_params = params.reshape((batches,) + params.shape[batch_dims:])
    flat_indices = index_values.reshape((batches,) + indices.shape[batch_dims:])
    taken = [np.take(flat_params[b], flat_indices[b], axis=axis - batch_dims) for b in range(batches)]
    shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1 :]
    return [np.stack(taken).reshape(shape) if taken else np.zeros(shape, params.dtype)]


@folds("TRANSPOSE")
def _transpose(op: Operator, graph: Graph, inputs: Values) -> Values:
    rank = inputs[0].ndim
    perm = [_axis(p, rank) for p in _ints(inputs[1], "TRANSPOSE permutation")]
    if sorted(perm) != list(range(rank)):
        raise NotFoldable(f"TRANSPOSE permutation {perm}")
    return [np.transpose(inputs[0], perm)]


@folds("FILL")
def _fill(op: Operator, graph: Graph, inputs: Values) -> Values:
    dims = _ints(inputs[0], "FILL dims")
    if any(d < 0 for d in dims) or inputs[1].size != 1:
        raise NotFoldable("FILL with negative dims or a non-scalar value")
    return [np.full(dims, inputs[1].reshape(-1)[0], dtype=inputs[1].dtype)]


@folds("RANGE")
def _range(op: Operator, graph: Graph, inputs: Values) -> Values:
    start, limit, delta = (v.reshape(-1)[0] for v in inputs[:3])
    dtype = _dtype_of(op, graph)
    if delta == 0 or (start < limit and delta < 0) or (start > limit and delta > 0):
        raise NotFoldable("RANGE that TFLite refuses")
    if dtype.kind in "iu":
        # range.cc GetSize: (|limit - start| + |delta| - 1) / |delta| in the type.
        start, limit, delta = int(start), int(limit), int(delta)
        count = (abs(limit - start) + abs(delta) - 1) // abs(delta)
        return [_wrap(np.arange(count, dtype=np.int64) * delta + start, dtype)]
    if dtype != np.float32:
        raise NotFoldable(f"RANGE of {dtype}")
    # float: ceil(|(limit - start) / delta|) in float, then values by repeated
    # addition, both in float32 as the kernel computes them.
    start, limit, delta = np.float32(start), np.float32(limit), np.float32(delta)
    count = int(np.ceil(np.abs((limit - start) / delta)))
    values = np.empty(count, np.float32)
    current = start
    for i in range(count):
        values[i] = current
        current = np.float32(current + delta)
    return [values]


@folds("CAST")
def _cast(op: Operator, graph: Graph, inputs: Values) -> Values:
    value, target = inputs[0], _dtype_of(op, graph)
    if target == np.bool_:
        return [value != 0]
    if value.dtype.kind == "f" and target.kind in "iu":
        # static_cast<int>(float) truncates toward zero; out of range it is
        # undefined behaviour, so such values are not folded.
        info = np.iinfo(target)
        if not np.isfinite(value).all() or (np.trunc(value) < info.min).any() or (np.trunc(value) > info.max).any():
            raise NotFoldable("CAST of a float outside the integer type")
        return [np.trunc(value).astype(target)]
    if value.dtype.kind in "iub" and target.kind in "iu":
        return [_wrap(value.astype(np.int64), target)]  # integer conversion: modulo 2^bits
    return [value.astype(target)]  # to float: round to nearest, as C does


@folds("DEQUANTIZE")
def _dequantize(op: Operator, graph: Graph, inputs: Values) -> Values:
    # Only float16 -> float32 is folded: exact in any arithmetic.  Quantized
    # integers go through the scale in the runtime's own exact kernel.
    if inputs[0].dtype != np.float16 or _dtype_of(op, graph) != np.float32:
        raise NotFoldable("DEQUANTIZE of quantized integers")
    return [inputs[0].astype(np.float32)]


# ------------------------------------------------------------------ arithmetic on plain numbers


def _activation(op: Operator, value: Array) -> Array:
    """The fused activation as CalculateActivationRange gives it: for float
    even NONE clamps to +-FLT_MAX (so an infinite sum becomes FLT_MAX); NaN
    passes through std::min/std::max as through numpy's.  Ops without a fused
    activation (FLOOR_DIV, FLOOR_MOD, MAXIMUM, MINIMUM) clamp nothing: their
    infinities stay infinite."""
    if "fused_activation_function" not in op.options:
        return value
    name = op.options.get("fused_activation_function", "NONE") or "NONE"
    try:
        low, high = activation_range_float(name)
    except UnsupportedQuantization:
        raise NotFoldable(f"fused activation {name}") from None
    if value.dtype.kind in "iu":
        info = np.iinfo(value.dtype)
        low, high = max(low, info.min), min(high, info.max)
    clamped: Array = np.minimum(np.maximum(value, value.dtype.type(low)), value.dtype.type(high))
    return clamped


def _binary_operands(op: Operator, graph: Graph, inputs: Values) -> tuple[Array, Array, np.dtype[Any]]:
    _unquantized(op, graph)
    a, b = inputs[0], inputs[1]
    dtype = _dtype_of(op, graph)
    if a.dtype != dtype or b.dtype != dtype or dtype.name not in ("int32", "int64", "float32"):
        raise NotFoldable(f"{op.opcode} of {a.dtype}, {b.dtype} into {dtype}")
    return a, b, dtype


# An integer op is applied to int64 arrays and, for int64 results, to Python ints.
IntegerFn = Callable[[Any, Any], Any]
FloatFn = Callable[[Array, Array], Array]


def _integer_or_float(op: Operator, graph: Graph, inputs: Values, integer: IntegerFn, floating: FloatFn) -> Values:
    a, b, dtype = _binary_operands(op, graph, inputs)
    result: Array
    if dtype.kind == "f":
        result = floating(a, b).astype(np.float32)
    elif dtype.itemsize < 8:
        result = _wrap(integer(a.astype(np.int64), b.astype(np.int64)), dtype)
    else:  # int64: Python integers, wrapped to 64 bits
        exact = np.vectorize(lambda x, y: integer(int(x), int(y)), otypes=[object])(a, b)
        wrapped = np.array([(v + (1 << 63)) % (1 << 64) - (1 << 63) for v in exact.reshape(-1)], np.int64)
        result = wrapped.reshape(exact.shape)
    return [_activation(op, result)]


@folds("ADD")
def _add(op: Operator, graph: Graph, inputs: Values) -> Values:
    return _integer_or_float(op, graph, inputs, lambda a, b: a + b, np.add)


@folds("SUB")
def _sub(op: Operator, graph: Graph, inputs: Values) -> Values:
    return _integer_or_float(op, graph, inputs, lambda a, b: a - b, np.subtract)


@folds("MUL")
def _mul(op: Operator, graph: Graph, inputs: Values) -> Values:
    return _integer_or_float(op, graph, inputs, lambda a, b: a * b, np.multiply)


@folds("MAXIMUM", "MINIMUM")
def _maximum_minimum(op: Operator, graph: Graph, inputs: Values) -> Values:
    _, _, _ = _binary_operands(op, graph, inputs)
    fn = np.maximum if op.opcode == "MAXIMUM" else np.minimum
    if inputs[0].dtype.kind == "f" and (np.isnan(inputs[0]).any() or np.isnan(inputs[1]).any()):
        raise NotFoldable("MAXIMUM/MINIMUM of NaN")  # std::max's NaN order is not numpy's
    return [fn(inputs[0], inputs[1])]


def _nonzero_divisor(b: Array) -> None:
    if b.dtype.kind in "iu" and (b == 0).any():
        raise NotFoldable("integer division by zero (TFLite fails the invoke)")


@folds("DIV")
def _div(op: Operator, graph: Graph, inputs: Values) -> Values:
    _nonzero_divisor(inputs[1])

    # C++ integer division truncates toward zero.
    def truncating(a: Any, b: Any) -> Any:  # arrays or Python ints, as IntegerFn says
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q)

    return _integer_or_float(op, graph, inputs, truncating, np.divide)


@folds("FLOOR_DIV")
def _floor_div(op: Operator, graph: Graph, inputs: Values) -> Values:
    _nonzero_divisor(inputs[1])
    # floor_div.cc: std::floor(a / b) (for ints via double, exact for int32).
    return _integer_or_float(op, graph, inputs, lambda a, b: a // b, lambda a, b: np.floor(np.divide(a, b)))


@folds("FLOOR_MOD")
def _floor_mod(op: Operator, graph: Graph, inputs: Values) -> Values:
    _nonzero_divisor(inputs[1])

    def floating(a: Array, b: Array) -> Array:
        # floor_mod.cc: std::fmod, then moved to the divisor's sign.
        trunc = np.fmod(a, b)
        return np.where((trunc != 0) & ((b < 0) != (trunc < 0)), trunc + b, trunc)

    return _integer_or_float(op, graph, inputs, lambda a, b: a % b, floating)


@folds("REDUCE_PROD", "SUM")
def _reduce(op: Operator, graph: Graph, inputs: Values) -> Values:
    _unquantized(op, graph)
    value, dtype = inputs[0], _dtype_of(op, graph)
    if value.dtype != dtype or dtype.name not in ("int32", "int64"):
        raise NotFoldable(f"{op.opcode} of {value.dtype}")  # float sums depend on the order of additions
    axes = sorted({_axis(a, value.ndim) for a in _ints(inputs[1], "axes")})
    if dtype.itemsize == 8:
        raise NotFoldable(f"{op.opcode} of int64")
    fn = np.prod if op.opcode == "REDUCE_PROD" else np.sum
    # int64 accumulation then wrap equals wrapping at every step (arithmetic mod 2^32).
    result = _wrap(
        fn(value.astype(np.int64), axis=tuple(axes), keepdims=bool(op.options.get("keep_dims", False))), dtype
    )
    return [result]
