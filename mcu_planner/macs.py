"""Multiply-accumulates per operator: the products its dot products sum.

Counted for the ops built on dot products (convolutions, fully connected,
matrix products, SVDF, LSTM); every other op (elementwise, pooling,
activations, data movement) is counted as 0.  Shapes are the ones the plan
uses (a dynamic batch planned as 1)."""

from __future__ import annotations

from .graph import Graph, Operator


def _shape(graph: Graph, t: int) -> tuple[int, ...]:
    return graph.tensors[t].shape if t >= 0 else ()


def _elements(graph: Graph, t: int) -> int:
    return graph.tensors[t].num_elements if t >= 0 else 0


def _product(values: tuple[int, ...]) -> int:
    n = 1
    for v in values:
        n *= v
    return n


# UNIDIRECTIONAL_SEQUENCE_LSTM inputs that are weight matrices: the input (1-4)
# and recurrent (5-8) weights of the four gates, and the projection (16).
_LSTM_WEIGHTS = (1, 2, 3, 4, 5, 6, 7, 8, 16)


def op_macs(graph: Graph, op: Operator) -> int:
    """Multiply-accumulates one run of `op` performs."""
    code = op.opcode
    if code == "CONV_2D":
        # Every output element sums KH x KW x (input channels per group) products.
        filter_shape = _shape(graph, op.inputs[1])
        return _elements(graph, op.outputs[0]) * _product(filter_shape[1:])
    if code == "DEPTHWISE_CONV_2D":
        filter_shape = _shape(graph, op.inputs[1])
        return _elements(graph, op.outputs[0]) * _product(filter_shape[1:3])
    if code == "FULLY_CONNECTED":
        filter_shape = _shape(graph, op.inputs[1])
        return _elements(graph, op.outputs[0]) * (filter_shape[-1] if filter_shape else 0)
    if code == "TRANSPOSE_CONV":
        # Every input element is scattered through the whole filter of each output channel.
        filter_shape = _shape(graph, op.inputs[1])
        return _elements(graph, op.inputs[2]) * _product(filter_shape[:3])
    if code == "BATCH_MATMUL":
        lhs = _shape(graph, op.inputs[0])
        if len(lhs) < 2:
            return 0
        depth = lhs[-2] if op.options.get("adj_x") else lhs[-1]
        return _elements(graph, op.outputs[0]) * depth
    if code == "SVDF":
        # Per batch row: the feature weights over the input, the time weights over the memory.
        batch = _shape(graph, op.inputs[0])[0] if _shape(graph, op.inputs[0]) else 1
        return batch * (_elements(graph, op.inputs[1]) + _elements(graph, op.inputs[2]))
    if code == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        input_shape = _shape(graph, op.inputs[0])
        if not input_shape or input_shape[-1] == 0:
            return 0
        steps = _product(input_shape) // input_shape[-1]  # time steps x batch rows
        weights = sum(_elements(graph, op.inputs[k]) for k in _LSTM_WEIGHTS if k < len(op.inputs))
        return steps * weights
    return 0
