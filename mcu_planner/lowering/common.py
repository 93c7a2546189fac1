"""Small helpers every lowering module uses: fetching an op's tensors with the
dtype checks that turn unsupported variants into NotLowerable."""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from ..quant import activation_range_float, activation_range_quantized
from . import CArray, NotLowerable


def input_tensor(op: Operator, graph: Graph, position: int, optional: bool = False) -> Tensor | None:
    if position >= len(op.inputs) or op.inputs[position] < 0:
        if optional:
            return None
        raise NotLowerable(f"{op.opcode} without input {position}")
    return graph.tensors[op.inputs[position]]


def output_tensor(op: Operator, graph: Graph, position: int = 0) -> Tensor:
    return graph.tensors[op.outputs[position]]


def require_dtype(op: Operator, tensor: Tensor, *dtypes: str) -> None:
    if tensor.dtype not in dtypes:
        raise NotLowerable(f"{op.opcode} with {tensor.dtype} tensor {tensor.name!r}")


def fused_activation(op: Operator) -> str:
    return op.options.get("fused_activation_function", "NONE") or "NONE"


def activation_params(op: Operator, output: Tensor) -> dict[str, int | float]:
    """act_min / act_max fields for the op's fused activation, in the output's domain."""
    activation = fused_activation(op)
    if output.dtype == "float32":
        lo, hi = activation_range_float(activation)
    else:
        lo, hi = activation_range_quantized(activation, output)
    return {"act_min": lo, "act_max": hi}


def zero_point(tensor: Tensor) -> int:
    q = tensor.quantization
    if q is None or not q.zero_points:
        return 0
    if len(set(q.zero_points)) != 1:
        raise NotLowerable(f"tensor {tensor.name!r} has per-channel zero points")
    return q.zero_points[0]


def scale(tensor: Tensor) -> float:
    q = tensor.quantization
    if q is None or not q.scales:
        raise NotLowerable(f"tensor {tensor.name!r} has no quantization scale")
    if q.per_channel:
        raise NotLowerable(f"tensor {tensor.name!r} is quantized per channel where one scale is needed")
    return q.scales[0]


def int32_array(values) -> CArray:
    return CArray("int32_t", tuple(int(v) for v in values))


def shape4(shape: tuple[int, ...], op: Operator) -> tuple[int, int, int, int]:
    """A rank <= 4 shape padded with leading ones, as TFLite's 4-D kernels view it."""
    if len(shape) > 4:
        raise NotLowerable(f"{op.opcode} on a rank-{len(shape)} tensor")
    return tuple([1] * (4 - len(shape)) + list(shape))  # type: ignore[return-value]
