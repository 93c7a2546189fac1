"""int4 weights: TFLite stores an INT4 filter packed two values to a byte,
the first in the low nibble.  Right after constant folding each filter this
module accepts either stays packed, for the one kernel that reads it so
(FULLY_CONNECTED with int8 input, mcu_fully_connected_s4.c: 4 bits a weight
in flash), or is unpacked into an int8 constant of the same values, which
the int8 (int16, hybrid) kernels run unchanged.  Both are bit-exact: the
product of an int4 filter is the product of the same values in int8, and
LiteRT's reference kernels unpack the same way before they compute.

An unpacked filter costs flash: a byte per weight where the file holds half
a byte.  A note on the graph states what stays packed and what is unpacked,
with the bytes.

Only the combinations LiteRT's reference kernels compute correctly are
accepted (checked against them in tests/test_int4.py): the filter (input 1)
of FULLY_CONNECTED and CONV_2D with int8, int16 or float32 (hybrid) input,
and of DEPTHWISE_CONV_2D with int8 input (with int16 input LiteRT reads the
packed bytes as if they were int8, and with float32 input it refuses int4).
Any other int4 tensor is left as it is, and lowering names it in the usual
exit-4 listing.
"""

from __future__ import annotations

import dataclasses

from ..graph import Graph, Tensor, unpack_int4

FILTER_INPUT = 1
# Opcode -> the dtypes of its data input (input 0) with which an int4 filter is unpacked.
INT4_FILTER_INPUT_DTYPES: dict[str, tuple[str, ...]] = {
    "FULLY_CONNECTED": ("int8", "int16", "float32"),
    "CONV_2D": ("int8", "int16", "float32"),
    "DEPTHWISE_CONV_2D": ("int8",),
}


# (opcode, data input dtype) whose kernel reads the int4 filter packed.
PACKED_KERNELS = frozenset({("FULLY_CONNECTED", "int8")})


def _filter_readers(graph: Graph, tensor: Tensor) -> list[tuple[str, str]] | None:
    """(opcode, data input dtype) of each op reading the int4 constant
    `tensor` as a filter it can take; None when anything else reads or
    writes it (it is then left for lowering to name)."""
    if tensor.dtype != "int4" or not tensor.is_constant:
        return None
    if tensor.index in graph.inputs or tensor.index in graph.outputs:
        return None
    readers: list[tuple[str, str]] = []
    for op in graph.operators:
        if tensor.index in op.outputs or tensor.index in op.intermediates:
            return None
        for position, t in enumerate(op.inputs):
            if t != tensor.index:
                continue
            data = graph.tensors[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
            allowed = INT4_FILTER_INPUT_DTYPES.get(op.opcode, ())
            if position != FILTER_INPUT or data is None or data.dtype not in allowed:
                return None
            readers.append((op.opcode, data.dtype))
    return readers or None


def unpack_int4_weights(graph: Graph) -> Graph:
    """`graph` with each int4 filter its ops can take (see the module note)
    replaced by an int8 constant of the same values and quantization, except
    those only kernels reading them packed read (PACKED_KERNELS)."""
    unpacked: list[Tensor] = []
    packed: list[Tensor] = []
    for t in graph.tensors:
        readers = _filter_readers(graph, t)
        if readers is not None:
            (packed if all(r in PACKED_KERNELS for r in readers) else unpacked).append(t)
    if not unpacked and not packed:
        return graph
    tensors = list(graph.tensors)
    for t in unpacked:
        assert t.data is not None
        values = unpack_int4(t.data, t.num_elements)
        tensors[t.index] = dataclasses.replace(t, dtype="int8", data=values.tobytes())
    notes = []
    if packed:
        notes.append(
            f"int4 weights of {_tensors(packed)} kept packed for the FULLY_CONNECTED kernels: "
            f"{sum(t.nbytes for t in packed)} B of flash, 4 bits a weight"
        )
    if unpacked:
        notes.append(
            f"int4 weights of {_tensors(unpacked)} unpacked to int8 for the kernels: "
            f"{sum(t.num_elements for t in unpacked)} B of flash where the file packs them in "
            f"{sum(t.nbytes for t in unpacked)} B"
        )
    return dataclasses.replace(graph, tensors=tuple(tensors), notes=graph.notes + tuple(notes))


def _tensors(tensors: list[Tensor]) -> str:
    return f"{len(tensors)} tensor{'s' if len(tensors) != 1 else ''}"
