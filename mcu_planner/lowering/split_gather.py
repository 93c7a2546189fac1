"""SPLIT, SPLIT_V, UNPACK, PACK, SLICE, GATHER, GATHER_ND, EMBEDDING_LOOKUP and
DYNAMIC_UPDATE_SLICE on activations -> firmware/runtime mcu_split.c,
mcu_concat.c, mcu_slice.c, mcu_gather.c.

Like the other data-movement ops these only move bytes, so one kernel per op
family serves every element type.  Where every output of a SPLIT / UNPACK /
SLICE is a contiguous run of the input (lifetimes.py aliases it there), or
every PACK input a contiguous slice of the output, the plan shares the bytes
and codegen emits no call at all; the kernels below run otherwise.  With
constant inputs these ops never get here: folding.py evaluates them.
"""

from __future__ import annotations

import math

from ..graph import Graph, Operator
from ..slicing import SliceAxis, SliceRefused, resolve_slice, split_layout
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import MAX_RANK, constant_ints, element_bytes, input_tensor, int32_array, output_tensor
from .data_movement import CONCAT_MAX_INPUTS, SLICE_RANK, concatenated_operands, strided_copy

SPLIT_MAX_OUTPUTS = 16  # MCU_SPLIT_MAX_OUTPUTS in firmware/runtime/mcu_split.h


@lowers("SPLIT", "SPLIT_V", "UNPACK")
def lower_split(op: Operator, graph: Graph) -> KernelCall:
    try:
        position, axis, sizes = split_layout(op, graph)
    except SliceRefused as exc:
        raise NotLowerable(str(exc)) from None
    inp = input_tensor(op, graph, position)
    if not 1 <= len(op.outputs) <= SPLIT_MAX_OUTPUTS:
        raise NotLowerable(f"{op.opcode} into {len(op.outputs)} outputs (at most {SPLIT_MAX_OUTPUTS})")
    for k, size in enumerate(sizes):
        out = output_tensor(op, graph, k)
        expected = list(inp.shape)
        if op.opcode == "UNPACK":
            del expected[axis]
        else:
            expected[axis] = size
        if out.dtype != inp.dtype or tuple(out.shape) != tuple(expected):
            raise NotLowerable(f"{op.opcode} output {k} is {out.dtype}{list(out.shape)}, not {inp.dtype}{expected}")
    inner = math.prod(inp.shape[axis + 1 :]) * element_bytes(op, inp)
    outputs = tuple(op.outputs) + (-1,) * (SPLIT_MAX_OUTPUTS - len(op.outputs))
    return KernelCall(
        function="mcu_split",
        params_type="mcu_split_params",
        params={
            "num_outputs": len(op.outputs),
            "outer_size": math.prod(inp.shape[:axis]),
            "input_block_bytes": inp.shape[axis] * inner,
            "copy_bytes": int32_array(size * inner for size in sizes),
        },
        args=(op.inputs[position],) + outputs,
        sources=("mcu_split",),
    )


@lowers("PACK")
def lower_pack(op: Operator, graph: Graph) -> KernelCall:
    """A concatenation along a new axis: the same blocks as CONCATENATION."""
    out, inputs = concatenated_operands(op, graph)
    rank = len(out.shape)
    axis = op.options.get("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or out.shape[axis] != len(inputs):
        raise NotLowerable(f"PACK of {len(inputs)} along axis {op.options.get('axis', 0)} into {out.shape}")
    expected = out.shape[:axis] + out.shape[axis + 1 :]
    for t in inputs:
        if t.dtype != out.dtype or tuple(t.shape) != tuple(expected):
            raise NotLowerable(f"PACK of {t.dtype}{list(t.shape)} into {out.dtype}{list(out.shape)}")
        # TFLite's Prepare requires quantized inputs to share the output's parameters.
        if t.quantization is not None and out.quantization is not None and not t.same_quantization(out):
            raise NotLowerable("PACK of inputs quantized unlike the output")
    block = math.prod(expected[axis:]) * element_bytes(op, out)
    padding = (-1,) * (CONCAT_MAX_INPUTS - len(inputs))
    return KernelCall(
        function="mcu_concatenation",
        params_type="mcu_concatenation_params",
        params={
            "num_inputs": len(inputs),
            "outer_size": math.prod(out.shape[:axis]),
            "copy_bytes": int32_array([block] * len(inputs)),
        },
        args=tuple(op.inputs) + padding + (op.outputs[0],),
        sources=("mcu_concat",),
    )


@lowers("SLICE")
def lower_slice(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    begin, size = input_tensor(op, graph, 1), input_tensor(op, graph, 2)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"SLICE from {inp.dtype} to {out.dtype}")
    if not (begin.is_constant and size.is_constant):
        raise NotLowerable("SLICE whose begin or size is computed at run time")
    try:
        starts, counts = resolve_slice(constant_ints(op, begin, "begin"), constant_ints(op, size, "size"), inp.shape)
    except SliceRefused as exc:
        raise NotLowerable(f"SLICE: {exc}") from None
    if len(inp.shape) > SLICE_RANK:
        raise NotLowerable(f"SLICE of rank {len(inp.shape)} (at most {SLICE_RANK})")
    if tuple(counts) != tuple(out.shape):
        raise NotLowerable(f"SLICE computes shape {tuple(counts)} but the model says {out.shape}")
    if math.prod(counts) == 0:
        raise NotLowerable("SLICE with an empty result")
    axes = [SliceAxis(b, n, 1, False) for b, n in zip(starts, counts, strict=True)]
    return strided_copy(op, element_bytes(op, inp), tuple(inp.shape), axes)


_INDEX_BYTES = {"int16": 2, "int32": 4, "int64": 8}


@lowers("GATHER")
def lower_gather(op: Operator, graph: Graph) -> KernelCall:
    params, indices, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if indices.dtype not in _INDEX_BYTES:
        raise NotLowerable(f"GATHER with {indices.dtype} indices")
    if params.dtype != out.dtype:
        raise NotLowerable(f"GATHER from {params.dtype} to {out.dtype}")
    rank = len(params.shape)
    axis = op.options.get("axis", 0)
    axis = axis + rank if axis < 0 else axis
    batch_dims = op.options.get("batch_dims", 0)
    batch_dims = batch_dims + len(indices.shape) if batch_dims < 0 else batch_dims
    if not 0 <= axis < rank or not 0 <= batch_dims <= min(axis, len(indices.shape)):
        raise NotLowerable(f"GATHER axis {op.options.get('axis', 0)} batch_dims {op.options.get('batch_dims', 0)}")
    if params.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise NotLowerable("GATHER whose batch dimensions differ between params and indices")
    expected = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1 :]
    if tuple(out.shape) != tuple(expected):
        raise NotLowerable(f"GATHER output {out.shape} is not {expected}")
    return KernelCall(
        function="mcu_gather",
        params_type="mcu_gather_params",
        params={
            "batch_size": math.prod(params.shape[:batch_dims]),
            "outer_size": math.prod(params.shape[batch_dims:axis]),
            "axis_size": params.shape[axis],
            "coord_size": math.prod(indices.shape[batch_dims:]),
            "inner_bytes": math.prod(params.shape[axis + 1 :]) * element_bytes(op, params),
            "index_bytes": _INDEX_BYTES[indices.dtype],
        },
        args=(op.inputs[0], op.inputs[1], op.outputs[0]),
        sources=("mcu_gather",),
    )


@lowers("EMBEDDING_LOOKUP")
def lower_embedding_lookup(op: Operator, graph: Graph) -> KernelCall:
    """Rows of the value table by int32 ids: a GATHER along axis 0
    (embedding_lookup.cc, same-type tables; an id outside the table fails
    the invoke as TFLite's does)."""
    ids, table, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if ids.dtype != "int32" or len(ids.shape) != 1:
        raise NotLowerable(f"EMBEDDING_LOOKUP with {ids.dtype}{list(ids.shape)} ids")
    if table.dtype != out.dtype:
        # int8 / uint8 tables with float32 output are dequantized row by row (hybrid): not here.
        raise NotLowerable(f"EMBEDDING_LOOKUP from {table.dtype} to {out.dtype}")
    if len(table.shape) < 2 or tuple(out.shape) != (ids.shape[0],) + tuple(table.shape[1:]):
        raise NotLowerable(f"EMBEDDING_LOOKUP of {list(table.shape)} by {list(ids.shape)} into {list(out.shape)}")
    return KernelCall(
        function="mcu_gather",
        params_type="mcu_gather_params",
        params={
            "batch_size": 1,
            "outer_size": 1,
            "axis_size": table.shape[0],
            "coord_size": ids.shape[0],
            "inner_bytes": math.prod(table.shape[1:]) * element_bytes(op, table),
            "index_bytes": _INDEX_BYTES["int32"],
        },
        args=(op.inputs[1], op.inputs[0], op.outputs[0]),
        sources=("mcu_gather",),
    )


@lowers("GATHER_ND")
def lower_gather_nd(op: Operator, graph: Graph) -> KernelCall:
    params, indices, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if indices.dtype not in _INDEX_BYTES:
        raise NotLowerable(f"GATHER_ND with {indices.dtype} indices")
    if params.dtype != out.dtype:
        raise NotLowerable(f"GATHER_ND from {params.dtype} to {out.dtype}")
    if not indices.shape or not params.shape:
        raise NotLowerable("GATHER_ND of a scalar")
    indices_nd = indices.shape[-1]
    if not 1 <= indices_nd <= len(params.shape):
        raise NotLowerable(f"GATHER_ND with index tuples of {indices_nd} into rank {len(params.shape)}")
    expected = tuple(indices.shape[:-1]) + tuple(params.shape[indices_nd:])
    if tuple(out.shape) != expected:
        raise NotLowerable(f"GATHER_ND output {out.shape} is not {expected}")
    # GatherNdHelper: one step along indexed dimension j skips the elements of all dimensions after it.
    dims_to_count = [math.prod(params.shape[j + 1 :]) for j in range(indices_nd)]
    return KernelCall(
        function="mcu_gather_nd",
        params_type="mcu_gather_nd_params",
        params={
            "n_slices": math.prod(indices.shape[:-1]),
            "indices_nd": indices_nd,
            "dims": int32_array(params.shape[:indices_nd]),
            "dims_to_count": int32_array(dims_to_count),
            "slice_size": math.prod(params.shape[indices_nd:]),
            "element_bytes": element_bytes(op, params),
            "index_bytes": _INDEX_BYTES[indices.dtype],
        },
        args=(op.inputs[0], op.inputs[1], op.outputs[0]),
        sources=("mcu_gather",),
    )


@lowers("DYNAMIC_UPDATE_SLICE")
def lower_dynamic_update_slice(op: Operator, graph: Graph) -> KernelCall:
    """The operand with the update written over it at start indices read at
    run time (dynamic_update_slice.cc: any element type, the bytes copied
    whatever the quantization, each start clamped so the update fits)."""
    if len(op.inputs) != 3 or len(op.outputs) != 1:
        raise NotLowerable(f"DYNAMIC_UPDATE_SLICE with {len(op.inputs)} inputs")
    operand, update = input_tensor(op, graph, 0), input_tensor(op, graph, 1)
    starts, out = input_tensor(op, graph, 2), output_tensor(op, graph)
    if not operand.dtype == update.dtype == out.dtype:
        raise NotLowerable(f"DYNAMIC_UPDATE_SLICE of {update.dtype} into {operand.dtype} to {out.dtype}")
    if starts.dtype not in ("int32", "int64"):
        raise NotLowerable(f"DYNAMIC_UPDATE_SLICE with {starts.dtype} start indices")
    rank = len(operand.shape)
    if rank > MAX_RANK:
        raise NotLowerable(f"DYNAMIC_UPDATE_SLICE of rank {rank} (at most {MAX_RANK})")
    # Prepare's checks: one start per operand dimension, an update no larger than the operand.
    if tuple(starts.shape) != (rank,) or len(update.shape) != rank or tuple(out.shape) != tuple(operand.shape):
        raise NotLowerable(
            f"DYNAMIC_UPDATE_SLICE of {list(update.shape)} into {list(operand.shape)} "
            f"from {list(starts.shape)} start indices to {list(out.shape)}"
        )
    if any(u > d for u, d in zip(update.shape, operand.shape, strict=True)):
        raise NotLowerable(f"DYNAMIC_UPDATE_SLICE of {list(update.shape)}, larger than {list(operand.shape)}")
    padding = (1,) * (MAX_RANK - rank)
    return KernelCall(
        function="mcu_dynamic_update_slice",
        params_type="mcu_dynamic_update_slice_params",
        params={
            "operand_dims": int32_array(padding + tuple(operand.shape)),
            "update_dims": int32_array(padding + tuple(update.shape)),
            "index_count": rank,
            "element_bytes": element_bytes(op, operand),
            "index_bytes": _INDEX_BYTES[starts.dtype],
        },
        args=(op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]),
        sources=("mcu_gather",),
    )


# mcu_concat.c along a new axis; mcu_split.c, mcu_slice.c: each piece a copy of its run of the input.
declare_facts(KernelFacts(concatenates_inputs=True), "PACK")
declare_facts(KernelFacts(cuts_input_into_pieces=True), "SPLIT", "SPLIT_V", "UNPACK", "SLICE")
# DYNAMIC_UPDATE_SLICE copies the whole operand before writing the update: no input may share the output's bytes.
declare_facts(KernelFacts(), "GATHER", "GATHER_ND", "EMBEDDING_LOOKUP", "DYNAMIC_UPDATE_SLICE")
