"""MEAN -> mcu_mean_{s8,u8,f32}."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Operator
from ..quant import mean_multiplier
from . import KernelCall, NotLowerable, lowers
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


@lowers("MEAN")
def lower_mean(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    rank = len(inp.shape)
    if rank == 0 or rank > MAX_RANK:
        raise NotLowerable(f"MEAN of rank {rank}")
    if inp.num_elements == 0:
        raise NotLowerable("MEAN of an empty tensor")
    raw_axes = constant_ints(op, input_tensor(op, graph, 1), "axis")
    if any(not -rank <= a < rank for a in raw_axes):
        raise NotLowerable(f"MEAN over axes {raw_axes} of a rank-{rank} tensor")
    axes = sorted({a % rank for a in raw_axes})
    if not axes:
        # TFLite copies the input unchanged (ReduceIsCopy), even across a
        # change of quantization.
        if inp.nbytes != out.nbytes:
            raise NotLowerable(f"MEAN over no axes from {inp.shape} to {out.shape}")
        return KernelCall("mcu_copy", "mcu_copy_params", {"bytes": inp.nbytes}, (op.inputs[0], op.outputs[0]), ("mcu_copy",))
    kept = [1 if i in axes else d for i, d in enumerate(inp.shape)]
    reduced = [d if i in axes else 1 for i, d in enumerate(inp.shape)]
    count = int(np.prod(reduced))
    if out.num_elements != int(np.prod(kept)):
        raise NotLowerable(f"MEAN output {out.shape} does not match input {inp.shape} over axes {axes}")
    shape = {
        "kept_dims": int32_array(padded(kept)),
        "reduced_dims": int32_array(padded(reduced)),
        "input_strides": int32_array(padded(strides(list(inp.shape)), fill=0)),
        "count": count,
    }
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
