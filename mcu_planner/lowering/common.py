"""Small helpers every lowering module uses: fetching an op's tensors with the
dtype checks that turn unsupported variants into NotLowerable, constant
integer inputs, element sizes and window geometry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, overload

import numpy as np

from ..graph import DTYPE_BITS, Graph, Operator, Quantization, Tensor
from ..quant import activation_range_float, activation_range_quantized, conv_output_multipliers, wrap_int32
from . import CArray, KernelCall, NotLowerable, ParamValue

MAX_RANK = 6  # MCU_MAX_RANK in firmware/runtime/mcu_runtime.h

# How kernel names spell a tensor type: mcu_softmax_u8, mcu_arg_max_f32_s64 ...
TYPE_SUFFIX = {"int8": "s8", "uint8": "u8", "int16": "s16", "int32": "s32", "int64": "s64", "float32": "f32"}


@overload
def input_tensor(op: Operator, graph: Graph, position: int, optional: Literal[False] = False) -> Tensor: ...


@overload
def input_tensor(op: Operator, graph: Graph, position: int, optional: bool) -> Tensor | None: ...


def input_tensor(op: Operator, graph: Graph, position: int, optional: bool = False) -> Tensor | None:
    """Input `position` of the op; an absent one is NotLowerable, or None when `optional`."""
    if position >= len(op.inputs) or op.inputs[position] < 0:
        if optional:
            return None
        raise NotLowerable(f"{op.opcode} without input {position}")
    return graph.tensors[op.inputs[position]]


def output_tensor(op: Operator, graph: Graph, position: int = 0) -> Tensor:
    if position >= len(op.outputs) or op.outputs[position] < 0:
        raise NotLowerable(f"{op.opcode} without output {position}")
    return graph.tensors[op.outputs[position]]


def elementwise_operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor]:
    """Input 0 and the only output of an op that maps each element to one
    element, whatever the shapes say."""
    if len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.outputs)} outputs")
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.num_elements != out.num_elements:
        raise NotLowerable(f"{op.opcode} from shape {inp.shape} to {out.shape}")
    return inp, out


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


def element_bytes(op: Operator, tensor: Tensor) -> int:
    bits = DTYPE_BITS[tensor.dtype]
    if bits % 8:
        raise NotLowerable(f"{op.opcode} on packed {tensor.dtype} tensor {tensor.name!r}")
    return bits // 8


def constant_ints(op: Operator, tensor: Tensor | None, what: str) -> list[int]:
    """The values of a constant int32 / int64 input (axes, paddings, sizes ...)."""
    if tensor is None or not tensor.is_constant or tensor.data is None:
        raise NotLowerable(f"{op.opcode} with a {what} that is not a constant")
    if tensor.dtype not in ("int32", "int64"):
        raise NotLowerable(f"{op.opcode} with {tensor.dtype} {what}")
    return [int(v) for v in np.frombuffer(tensor.data, dtype="<i4" if tensor.dtype == "int32" else "<i8")]


def zero_point_row_sums(weights: Tensor, zero_point: int, bias: list[int] | None = None) -> list[int]:
    """TFLite's PrecomputeZeroPointTimesWeightWithBias: per row of a constant
    int8 matrix, bias (or 0) + zero_point x the sum of the row, in wrapping
    int32 arithmetic.  A kernel adding it to raw products sum(w x) gets
    sum(w (x + zero_point)) + bias mod 2^32, as the per-term loop does."""
    rows = weights.shape[0]
    if bias is not None and len(bias) != rows:
        raise NotLowerable(f"bias of {len(bias)} values for the {rows} rows of {weights.name!r}")
    values = list(bias) if bias is not None else [0] * rows
    if zero_point != 0:
        w = np.frombuffer(weights.data or b"", dtype="i1", count=weights.num_elements).astype(np.int64)
        sums = w.reshape(rows, -1).sum(axis=1)
        values = [wrap_int32(v + wrap_int32(int(s) * zero_point)) for v, s in zip(values, sums, strict=True)]
    return values


def int32_array(values: Iterable[int | np.integer[Any]]) -> CArray:
    return CArray("int32_t", tuple(int(v) for v in values))


def sliding_window(
    op: Operator, in_h: int, in_w: int, filter_h: int, filter_w: int, dilation_h: int = 1, dilation_w: int = 1
) -> dict[str, int]:
    """Output size, stride and leading padding of both axes of a convolution
    or pooling window, from the op's stride and padding options as TFLite's
    ComputePaddingHeightWidth derives them."""
    stride_h, stride_w = op.options.get("stride_h", 1), op.options.get("stride_w", 1)
    padding = op.options.get("padding", "SAME")
    if min(stride_h, stride_w, dilation_h, dilation_w) < 1:
        raise NotLowerable(f"{op.opcode} with stride {stride_h}x{stride_w} dilation {dilation_h}x{dilation_w}")
    out_h = compute_out_size(padding, in_h, filter_h, stride_h, dilation_h)
    out_w = compute_out_size(padding, in_w, filter_w, stride_w, dilation_w)
    same = padding == "SAME"
    return {
        "output_h": out_h,
        "output_w": out_w,
        "stride_h": stride_h,
        "stride_w": stride_w,
        "pad_h": compute_padding(stride_h, dilation_h, in_h, filter_h, out_h) if same else 0,
        "pad_w": compute_padding(stride_w, dilation_w, in_w, filter_w, out_w) if same else 0,
    }


def compute_out_size(padding: str, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int:
    """ComputeOutSize (TFLite's padding.h)."""
    effective = (filter_size - 1) * dilation + 1
    if stride == 0:
        raise NotLowerable("stride 0")
    if padding == "SAME":
        return (in_size + stride - 1) // stride
    if padding == "VALID":
        return (in_size + stride - effective) // stride
    raise NotLowerable(f"padding {padding}")


def compute_padding(stride: int, dilation: int, in_size: int, filter_size: int, out_size: int) -> int:
    """ComputePaddingWithOffset: padding before the first element (the
    reference kernels never read the odd extra padding after the last)."""
    effective = (filter_size - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


def kernel_call(
    op: Operator,
    function: str,
    params_type: str,
    params: Mapping[str, ParamValue],
    sources: tuple[str, ...],
    inputs: int = 1,
) -> KernelCall:
    """The call most kernels take: params, then the op's first `inputs` input
    tensors (-1, NULL in C, for an absent optional one), then its output."""
    args = tuple(op.inputs[i] if i < len(op.inputs) else -1 for i in range(inputs))
    return KernelCall(
        function=function, params_type=params_type, params=params, args=args + (op.outputs[0],), sources=sources
    )


def uint8_weighted_params(
    op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor
) -> dict[str, ParamValue]:
    """The quantization fields of a uint8 op with weights (the legacy TF1 /
    Coral scheme, reference_ops' uint8 Conv / DepthwiseConv / FullyConnected):
    three offsets and one multiplier, which PopulateConvolutionQuantizationParams
    computes from the same double product as the per-channel ones.

    Checks the tensors first: uint8 filter and output, int32 bias, and one
    scale for the whole filter -- TFLite's uint8 kernels take
    filter->params.scale, the first scale, and would silently ignore others."""
    for t in (filt, out):
        require_dtype(op, t, "uint8")
    if bias is not None:
        require_dtype(op, bias, "int32")
    if filt.quantization is None or not filt.quantization.scales:
        raise NotLowerable(f"{op.opcode} with an unquantized uint8 filter")
    if filt.quantization.per_channel:
        raise NotLowerable(f"{op.opcode} with a per-channel quantized uint8 filter")
    (multiplier,), (shift,) = conv_output_multipliers(scale(inp), filt.quantization.scales, scale(out), 1)
    return {
        "input_offset": -zero_point(inp),
        "filter_offset": -zero_point(filt),
        "output_offset": zero_point(out),
        "output_multiplier": multiplier,
        "output_shift": shift,
        **activation_params(op, out),
    }


def is_hybrid_weighted_op(inp: Tensor, filt: Tensor) -> bool:
    """A hybrid (dynamic-range) op: float32 activations with int8 weights,
    which TFLite quantizes the input for when the op runs."""
    return inp.dtype == "float32" and filt.dtype == "int8"


def hybrid_weighted_operands(
    op: Operator, filt: Tensor, bias: Tensor | None, out: Tensor
) -> tuple[Quantization, bytes]:
    """Checks a hybrid op's other tensors: float32 output and bias, and
    constant symmetric int8 weights (the reference ignores a zero point).
    Returns the filter's quantization and its constant bytes."""
    require_dtype(op, out, "float32")
    if bias is not None:
        require_dtype(op, bias, "float32")
    q = filt.quantization
    if q is None or not q.scales:
        raise NotLowerable(f"hybrid {op.opcode} with an unquantized int8 filter")
    if any(q.zero_points):
        raise NotLowerable(f"hybrid {op.opcode} with a non-zero filter zero point")
    if not filt.is_constant or filt.data is None:
        raise NotLowerable(f"hybrid {op.opcode} whose filter is not a constant")
    return q, filt.data


def is_float_weighted_op(op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor) -> bool:
    """Whether an op with weights (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED)
    takes the float32 kernel rather than the int8 one, after checking its
    tensors fit one of them: all float32, or int8 with a quantized filter and
    an int32 bias."""
    if inp.dtype == "float32":
        for t in (filt, out) + ((bias,) if bias is not None else ()):
            require_dtype(op, t, "float32")
        return True
    for t in (inp, filt, out):
        require_dtype(op, t, "int8")
    if bias is not None:
        require_dtype(op, bias, "int32")
    filter_quantization(op, filt)
    return False


def filter_quantization(op: Operator, filt: Tensor) -> Quantization:
    """The quantization of an op's integer filter; none is NotLowerable."""
    if filt.quantization is None:
        raise NotLowerable(f"{op.opcode} with an unquantized {filt.dtype} filter")
    return filt.quantization


def require_16x8_weighted_op(
    op: Operator, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor, bias_dtypes: tuple[str, ...]
) -> Quantization:
    """Checks an op with weights for TFLite's 16x8 scheme: int16 activations
    with zero point 0, symmetric int8 weights, a bias of one of `bias_dtypes`
    (or none).  Returns the filter's quantization."""
    for t, dtype in ((inp, "int16"), (out, "int16"), (filt, "int8")):
        require_dtype(op, t, dtype)
    if bias is not None:
        require_dtype(op, bias, *bias_dtypes)
    quantization = filter_quantization(op, filt)
    if any(quantization.zero_points):
        raise NotLowerable(f"{op.opcode} with a non-zero filter zero point")
    if zero_point(inp) or zero_point(out):
        # TFLite's int16 kernels take symmetric activations only.
        raise NotLowerable(f"16x8 {op.opcode} with a non-zero activation zero point")
    return quantization
