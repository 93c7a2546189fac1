"""Multiply-accumulates per operator, from tensor shapes alone.

One multiply-accumulate (MAC) is one product of an activation and a weight
added into a sum: what the matrix-like operators (convolutions, fully
connected, matrix products and the recurrent cells built from them) spend
their time on.  Every other operator counts 0 here: its cost is per element,
not per product.  The per-op profile divides these counts by measured ticks
(MACs per tick, `mcu-plan check --profile`).
"""

from __future__ import annotations

from .graph import Graph, Operator

# UNIDIRECTIONAL_SEQUENCE_LSTM's matrix inputs (input-to-gate, recurrent-to-gate,
# projection), by their position in TFLite's operand list; absent ones are -1.
_LSTM_INPUT_WEIGHTS = (1, 2, 3, 4)
_LSTM_RECURRENT_WEIGHTS = (5, 6, 7, 8)
_LSTM_PROJECTION_WEIGHTS = 16


def _product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def op_macs(graph: Graph, op: Operator) -> int:
    """Multiply-accumulates one run of `op` performs (0 for an operator
    without a weight matrix or a matrix product)."""
    tensors = graph.tensors

    def shape(position: int) -> tuple[int, ...]:
        return tensors[op.inputs[position]].shape

    out_elements = tensors[op.outputs[0]].num_elements if op.outputs and op.outputs[0] >= 0 else 0
    code = op.opcode
    if code == "CONV_2D":
        _, kh, kw, per_group = shape(1)
        return out_elements * kh * kw * per_group
    if code == "DEPTHWISE_CONV_2D":
        _, kh, kw, _ = shape(1)
        return out_elements * kh * kw
    if code == "TRANSPOSE_CONV":
        # Every input element is scattered into kh * kw * out_channels outputs.
        out_channels, kh, kw, _ = shape(1)
        return tensors[op.inputs[2]].num_elements * out_channels * kh * kw
    if code == "FULLY_CONNECTED":
        return out_elements * shape(1)[-1]
    if code == "BATCH_MATMUL":
        lhs = shape(0)
        depth = lhs[-2] if op.options.get("adj_x") else lhs[-1]
        return out_elements * depth
    if code == "SVDF":
        batches = _product(shape(0)) // shape(0)[-1]
        return batches * (_product(shape(1)) + _product(shape(2)))
    if code == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        steps = _product(shape(0)) // shape(0)[-1]  # time steps x batches
        matrices = _LSTM_INPUT_WEIGHTS + _LSTM_RECURRENT_WEIGHTS + (_LSTM_PROJECTION_WEIGHTS,)
        present = [p for p in matrices if p < len(op.inputs) and op.inputs[p] >= 0]
        return steps * sum(_product(shape(p)) for p in present)
    return 0
