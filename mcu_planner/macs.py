"""Multiply-accumulates per operator: the work an op does, to rank the
buffers it reads (memory regions put the most-read buffers in the fastest
memory) and to report per layer.

Ops with a filter count one MAC per filter element per output element;
every other op counts one per output element (elementwise work, copies)."""

from __future__ import annotations

import math

from .graph import Graph, Operator


def _elements(graph: Graph, tensor: int) -> int:
    return graph.tensors[tensor].num_elements if tensor >= 0 else 0


def op_macs(op: Operator, graph: Graph) -> int:
    """The multiply-accumulates `op` performs once."""
    outputs = sum(_elements(graph, t) for t in op.outputs)
    if op.opcode in ("CONV_2D", "FULLY_CONNECTED") and len(op.inputs) > 1 and op.inputs[1] >= 0:
        # Filter [out_channels, ..., in_channels / groups]: one row per output channel.
        filter_shape = graph.tensors[op.inputs[1]].shape
        per_output = math.prod(filter_shape[1:]) if len(filter_shape) > 1 else 1
        return outputs * per_output
    if op.opcode == "DEPTHWISE_CONV_2D" and len(op.inputs) > 1 and op.inputs[1] >= 0:
        filter_shape = graph.tensors[op.inputs[1]].shape  # [1, kh, kw, out_channels]
        return outputs * math.prod(filter_shape[1:3])
    if op.opcode == "TRANSPOSE_CONV" and len(op.inputs) > 2 and op.inputs[1] >= 0:
        filter_shape = graph.tensors[op.inputs[1]].shape  # [out_channels, kh, kw, in_channels]
        return _elements(graph, op.inputs[2]) * math.prod(filter_shape[:3])
    if op.opcode == "BATCH_MATMUL" and len(op.inputs) > 1:
        lhs = graph.tensors[op.inputs[0]].shape
        adj_x = bool(op.options.get("adj_x"))
        depth = lhs[-2] if adj_x and len(lhs) > 1 else (lhs[-1] if lhs else 1)
        return outputs * depth
    return outputs
