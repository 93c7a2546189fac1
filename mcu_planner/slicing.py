"""TFLite's index rules for the slicing ops (STRIDED_SLICE, SLICE, SPLIT_V),
shared by generation-time folding and the runtime kernels' lowering: which
input elements each op takes.  Each function raises SliceRefused for specs
TFLite's own Prepare refuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .graph import DTYPE_BITS, Graph, Operator, Tensor


class SliceRefused(ValueError):
    """TFLite refuses this slice spec."""


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if v > hi else lo if v < lo else v


def slice_start(begin: int, stride: int, masked: bool, axis_size: int) -> int:
    """strided_slice::StridedSliceStartForAxis."""
    start = begin + axis_size if begin < 0 else begin
    start = _clamp(start, 0, axis_size) if stride > 0 else _clamp(start, -1, axis_size - 1)
    if masked:
        start = 0 if stride > 0 else axis_size - 1
    return start


def slice_end(end: int, stride: int, masked: bool, shrink: bool, offset: bool, start: int, axis_size: int) -> int:
    """strided_slice::StridedSliceEndForAxis."""
    if shrink:
        return start if start >= axis_size else start + 1
    if offset:
        end += start
    if end < 0:
        end += axis_size
    end = _clamp(end, 0, axis_size) if stride > 0 else _clamp(end, -1, axis_size - 1)
    if masked:
        end = axis_size if stride > 0 else -1
    return end


def slice_count(start: int, end: int, stride: int) -> int:
    """How many of start, start + stride, ... lie before end (TFLite's loop condition)."""
    if stride > 0:
        return max(0, -(-(end - start) // stride))
    return max(0, -(-(start - end) // -stride))


@dataclass(frozen=True)
class SliceAxis:
    """One axis of a strided slice, over the input with its new axes inserted."""

    start: int  # first index taken
    count: int  # how many indices are taken
    stride: int  # step between them (negative: backwards)
    shrink: bool  # the axis is dropped from the output


def strided_slice_axes(
    shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int], options: dict[str, Any]
) -> tuple[list[SliceAxis], tuple[int, ...]]:
    """What a STRIDED_SLICE takes along each axis, and the input shape it
    slices (the input's, with a 1 for every new axis): TFLite's strided_slice.cc
    BuildStridedSliceParams, which turns ellipsis_mask and new_axis_mask into
    plain per-axis begin/end/stride, then strided_slice_logic.h's start, end
    and count.  SliceRefused for specs TFLite refuses."""
    if not (len(begin) == len(end) == len(strides)):
        raise SliceRefused("begin, end and strides differ in length")
    if any(s == 0 for s in strides):
        raise SliceRefused("stride 0")
    begin_mask, end_mask = options.get("begin_mask", 0), options.get("end_mask", 0)
    ellipsis_mask, new_axis_mask = options.get("ellipsis_mask", 0), options.get("new_axis_mask", 0)
    shrink_mask, offset = options.get("shrink_axis_mask", 0), bool(options.get("offset", False))
    count = len(begin)
    dims = len(shape)
    # A new axis at the ellipsis's own index has no effect.
    added = sum(1 for i in range(count) if not ellipsis_mask >> i & 1 and new_axis_mask >> i & 1)
    effective = dims + added
    ellipsis_axes = new_axes = 0
    ellipsis_start, expanded = effective, 0
    i = 0
    while i < effective:
        if ellipsis_mask >> i & 1:
            ellipsis_start = i
            ellipsis_end = max(i + 1, min(i + 1 + added + dims - count, effective))
            expanded = ellipsis_end - ellipsis_start - 1
            while i < ellipsis_end:
                ellipsis_axes |= 1 << i
                i += 1
            continue
        if i - expanded >= 0 and new_axis_mask >> (i - expanded) & 1:
            new_axes |= 1 << i
        i += 1

    axes: list[SliceAxis] = []
    effective_shape: list[int] = []
    added_ellipsis = added_axes = 0
    for i in range(effective):
        if ellipsis_axes >> i & 1:
            added_ellipsis = max(0, i - ellipsis_start)
            spec = (0, 0, 1, True, True, False)
        elif new_axes >> i & 1:
            effective_shape.append(1)
            added_axes += 1
            axes.append(SliceAxis(0, 1, 1, False))
            continue
        elif i >= count + expanded:
            spec = (0, 0, 1, True, True, False)
        else:
            k = i - added_ellipsis
            spec = (
                begin[k],
                end[k],
                strides[k],
                bool(begin_mask >> k & 1),
                bool(end_mask >> k & 1),
                bool(shrink_mask >> k & 1),
            )
        if i - added_axes >= dims:
            raise SliceRefused(f"slice spec longer than the rank-{dims} input")
        size = shape[i - added_axes]
        effective_shape.append(size)
        b, e, stride, b_masked, e_masked, shrink = spec
        start = slice_start(b, stride, b_masked, size)
        stop = start + 1 if shrink else slice_end(e, stride, e_masked, False, offset, start, size)
        taken = slice_count(start, stop, stride)
        if shrink and taken != 1:
            raise SliceRefused(f"shrinking axis {i} at index {b} of length {size}")
        axes.append(SliceAxis(start, taken, stride, shrink))
    return axes, tuple(effective_shape)


def resolve_split_sizes(sizes: list[int], axis_size: int, outputs: int) -> list[int]:
    """SPLIT_V's size_splits with its one allowed -1 resolved (TFLite's
    split_v.cc ResizeOutputTensors)."""
    if len(sizes) != outputs or sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise SliceRefused(f"SPLIT_V sizes {sizes}")
    if -1 in sizes:
        rest = axis_size - sum(s for s in sizes if s != -1)
        if rest < 0:
            raise SliceRefused(f"SPLIT_V sizes {sizes} exceed axis length {axis_size}")
        sizes = [rest if s == -1 else s for s in sizes]
    if sum(sizes) != axis_size:
        raise SliceRefused(f"SPLIT_V sizes {sizes} do not add up to {axis_size}")
    return sizes


def resolve_slice(begin: list[int], size: list[int], shape: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """SLICE's begin and size per axis, size -1 meaning "to the end" (TFLite's
    slice.cc CalculateOutputShapeVector)."""
    if len(begin) != len(shape) or len(size) != len(shape):
        raise SliceRefused("SLICE begin/size length differs from the input rank")
    counts = []
    for b, n, d in zip(begin, size, shape, strict=True):  # lengths checked above
        n = d - b if n == -1 else n
        if b < 0 or n < 0 or b + n > d:
            raise SliceRefused(f"SLICE begin {b} size {n} of axis length {d}")
        counts.append(n)
    return list(begin), counts


# ------------------------------------------------------------------ pieces of one input


def _constant_ints(tensor: Tensor | None) -> list[int] | None:
    if tensor is None or tensor.data is None or not tensor.is_constant or tensor.dtype not in ("int32", "int64"):
        return None
    return [int(v) for v in np.frombuffer(tensor.data, dtype="<i4" if tensor.dtype == "int32" else "<i8")]


def split_layout(op: Operator, graph: Graph) -> tuple[int, int, list[int]]:
    """(input position of the data, axis, length of each output along it) of
    a SPLIT, SPLIT_V or UNPACK, as TFLite's Prepare resolves them."""

    def tensor(position: int) -> Tensor | None:
        t = op.inputs[position] if position < len(op.inputs) else -1
        return graph.tensors[t] if t >= 0 else None

    if op.opcode == "UNPACK":
        data = tensor(0)
        if data is None:
            raise SliceRefused("UNPACK without an input")
        axis = op.options.get("axis", 0)
        count = len(op.outputs)
        rank = len(data.shape)
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or data.shape[axis] != count:
            raise SliceRefused(f"UNPACK of {count} along axis {op.options.get('axis', 0)} of {data.shape}")
        return 0, axis, [1] * count
    position, axis_position = (1, 0) if op.opcode == "SPLIT" else (0, 2)
    data, axis_values = tensor(position), _constant_ints(tensor(axis_position))
    if data is None or axis_values is None or len(axis_values) != 1:
        raise SliceRefused(f"{op.opcode} whose axis is not a constant")
    rank = len(data.shape)
    axis = axis_values[0] + rank if axis_values[0] < 0 else axis_values[0]
    if not 0 <= axis < rank:
        raise SliceRefused(f"{op.opcode} axis {axis_values[0]} of a rank-{rank} input")
    count = len(op.outputs)
    if op.opcode == "SPLIT":
        if count == 0 or data.shape[axis] % count:
            raise SliceRefused(f"SPLIT of length {data.shape[axis]} into {count}")
        return position, axis, [data.shape[axis] // count] * count
    sizes = _constant_ints(tensor(1))
    if sizes is None:
        raise SliceRefused("SPLIT_V whose size_splits are not a constant")
    return position, axis, resolve_split_sizes(sizes, data.shape[axis], count)


def contiguous_pieces(op: Operator, graph: Graph) -> list[int] | None:
    """Byte offset, inside the input, of each output of a SPLIT, SPLIT_V,
    UNPACK or SLICE when every output is one contiguous run of the input's
    bytes (cut along the outermost axis longer than 1), else None: then an
    output may share the input's bytes instead of being copied."""
    if any(DTYPE_BITS[graph.tensors[t].dtype] % 8 for t in (*op.inputs, *op.outputs) if t >= 0):
        return None  # packed int4: pieces need not start on a byte
    try:
        if op.opcode == "SLICE":
            data = graph.tensors[op.inputs[0]]
            begin, size = _constant_ints(graph.tensors[op.inputs[1]]), _constant_ints(graph.tensors[op.inputs[2]])
            if begin is None or size is None:
                return None
            starts, counts = resolve_slice(begin, size, data.shape)
            # Contiguous: unit counts, then one axis cut anywhere, then whole axes.
            cut = next((k for k, n in enumerate(counts) if n != 1), len(counts))
            if any(counts[k] != data.shape[k] for k in range(cut + 1, len(counts))):
                return None
            element = data.nbytes // max(data.num_elements, 1)
            offset, stride = 0, element
            for k in range(len(starts) - 1, -1, -1):
                offset += starts[k] * stride
                stride *= data.shape[k]
            return [offset]
        if op.opcode not in ("SPLIT", "SPLIT_V", "UNPACK"):
            return None
        position, axis, sizes = split_layout(op, graph)
    except SliceRefused:
        return None
    data = graph.tensors[op.inputs[position]]
    if any(d != 1 for d in data.shape[:axis]):
        return None
    piece_bytes = data.nbytes // data.shape[axis] if data.shape[axis] else 0
    offsets, offset = [], 0
    for length in sizes:
        offsets.append(offset)
        offset += length * piece_bytes
    return offsets
