"""MEAN -> mcu_mean_{s8,u8,f32}."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Operator, Tensor
from ..quant import mean_multiplier, quantize_multiplier
from . import KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import (
    MAX_RANK,
    TYPE_SUFFIX,
    constant_ints,
    input_tensor,
    int32_array,
    output_tensor,
    require_dtype,
    scale,
    zero_point,
)
from .shape_ops import padded, strides


def _reduction(op: Operator, graph: Graph) -> tuple[Tensor, Tensor, dict[str, ParamValue] | None]:
    """(input, output, shape fields) of a reduction over constant axes; the
    shape fields are None when no axis is reduced (TFLite then copies)."""
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    rank = len(inp.shape)
    if rank == 0 or rank > MAX_RANK:
        raise NotLowerable(f"{op.opcode} of rank {rank}")
    if inp.num_elements == 0:
        raise NotLowerable(f"{op.opcode} of an empty tensor")
    raw_axes = constant_ints(op, input_tensor(op, graph, 1), "axis")
    if any(not -rank <= a < rank for a in raw_axes):
        raise NotLowerable(f"{op.opcode} over axes {raw_axes} of a rank-{rank} tensor")
    axes = sorted({a % rank for a in raw_axes})
    if not axes:
        return inp, out, None
    kept = [1 if i in axes else d for i, d in enumerate(inp.shape)]
    reduced = [d if i in axes else 1 for i, d in enumerate(inp.shape)]
    if out.num_elements != int(np.prod(kept)):
        raise NotLowerable(f"{op.opcode} output {out.shape} does not match input {inp.shape} over axes {axes}")
    shape: dict[str, ParamValue] = {
        "kept_dims": int32_array(padded(kept)),
        "reduced_dims": int32_array(padded(reduced)),
        "input_strides": int32_array(padded(strides(list(inp.shape)), fill=0)),
        "count": int(np.prod(reduced)),
    }
    return inp, out, shape


def _copy(op: Operator, inp: Tensor, out: Tensor) -> KernelCall:
    # TFLite copies the input unchanged (ReduceIsCopy), even across a change
    # of quantization.
    if inp.nbytes != out.nbytes:
        raise NotLowerable(f"{op.opcode} over no axes from {inp.shape} to {out.shape}")
    return KernelCall(
        "mcu_copy", "mcu_copy_params", {"bytes": inp.nbytes}, (op.inputs[0], op.outputs[0]), ("mcu_copy",)
    )


@lowers("SUM", "REDUCE_MAX", "REDUCE_MIN")
def lower_sum_reduce_max(op: Operator, graph: Graph) -> KernelCall:
    inp, out, shape = _reduction(op, graph)
    if shape is None:
        return _copy(op, inp, out)
    require_dtype(op, inp, "float32", "int8")
    require_dtype(op, out, inp.dtype)
    if op.opcode == "SUM" and inp.dtype == "int8":
        return _quantized_sum(op, inp, out, shape)
    if inp.dtype == "int8" and not inp.same_quantization(out):
        # EvalType requires it; the max of stored values means nothing otherwise.
        raise NotLowerable(f"int8 {op.opcode} whose output quantization differs from its input's")
    function = f"mcu_{op.opcode.lower()}_{'f32' if inp.dtype == 'float32' else 's8'}"
    return KernelCall(function, "mcu_mean_f32_params", shape, (op.inputs[0], op.outputs[0]), ("mcu_mean",))


def _quantized_sum(op: Operator, inp: Tensor, out: Tensor, shape: dict[str, ParamValue]) -> KernelCall:
    """int8 SUM: QuantizedMeanOrSum with compute_sum (the rescale
    input_scale / output_scale, in double, not divided by the count), on the
    bytes read as uint8 as LiteRT's reference does (mcu_sum_s8)."""
    multiplier, shift = quantize_multiplier(scale(inp) / scale(out))
    params = {
        **shape,
        "input_zero_point": zero_point(inp),
        "output_zero_point": zero_point(out),
        "multiplier": multiplier,
        "shift": shift,
    }
    return KernelCall("mcu_sum_s8", "mcu_mean_s8_params", params, (op.inputs[0], op.outputs[0]), ("mcu_mean",))


@lowers("MEAN")
def lower_mean(op: Operator, graph: Graph) -> KernelCall:
    inp, out, shape = _reduction(op, graph)
    if shape is None:
        return _copy(op, inp, out)
    count = shape["count"]
    assert isinstance(count, int), "_reduction stores the reduced element count there"
    args = (op.inputs[0], op.outputs[0])

    if inp.dtype == "float32":
        require_dtype(op, out, "float32")
        return KernelCall("mcu_mean_f32", "mcu_mean_f32_params", shape, args, ("mcu_mean",))

    require_dtype(op, inp, "int8", "uint8", "int16")
    require_dtype(op, out, inp.dtype)
    multiplier, shift = mean_multiplier(scale(inp), scale(out), count)
    return KernelCall(
        f"mcu_mean_{TYPE_SUFFIX[inp.dtype]}",
        "mcu_mean_s8_params",  # every dtype: the same fields
        {
            **shape,
            "input_zero_point": zero_point(inp),
            "output_zero_point": zero_point(out),
            "multiplier": multiplier,
            "shift": shift,
        },
        args,
        ("mcu_mean_s16",) if inp.dtype == "int16" else ("mcu_mean",),
    )


@lowers("REDUCE_ALL", "REDUCE_ANY")
def lower_reduce_logic(op: Operator, graph: Graph) -> KernelCall:
    inp, out, shape = _reduction(op, graph)
    require_dtype(op, inp, "bool")
    require_dtype(op, out, "bool")
    if shape is None:
        return _copy(op, inp, out)
    function = "mcu_reduce_all_b8" if op.opcode == "REDUCE_ALL" else "mcu_reduce_any_b8"
    return KernelCall(function, "mcu_mean_f32_params", shape, (op.inputs[0], op.outputs[0]), ("mcu_mean",))


@lowers("CUMSUM")
def lower_cumsum(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    # cumsum.cc registers float32, int32 and int64.
    require_dtype(op, inp, "float32", "int32", "int64")
    if out.dtype != inp.dtype or tuple(out.shape) != tuple(inp.shape) or not inp.shape:
        raise NotLowerable(f"CUMSUM from {inp.dtype}{list(inp.shape)} to {out.dtype}{list(out.shape)}")
    axes = constant_ints(op, input_tensor(op, graph, 1), "axis")
    rank = len(inp.shape)
    if len(axes) != 1 or not -rank <= axes[0] < rank:
        raise NotLowerable(f"CUMSUM along axis {axes} of a rank-{rank} tensor")
    axis = axes[0] % rank
    params: dict[str, ParamValue] = {
        "outer_size": int(np.prod(inp.shape[:axis], dtype=np.int64)),
        "axis_size": inp.shape[axis],
        "inner_size": int(np.prod(inp.shape[axis + 1 :], dtype=np.int64)),
        "exclusive": int(bool(op.options.get("exclusive", False))),
        "reverse": int(bool(op.options.get("reverse", False))),
    }
    function = f"mcu_cumsum_{TYPE_SUFFIX[inp.dtype]}"
    return KernelCall(function, "mcu_cumsum_params", params, (op.inputs[0], op.outputs[0]), ("mcu_mean",))


declare_facts(KernelFacts(), "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL", "REDUCE_ANY", "MEAN", "CUMSUM")
