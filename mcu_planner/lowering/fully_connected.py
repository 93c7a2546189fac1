"""FULLY_CONNECTED -> mcu_fully_connected_{s8,f32}."""

from __future__ import annotations

from ..graph import Graph, Operator
from ..quant import conv_output_multipliers
from . import KernelCall, NotLowerable, lowers
from .common import (
    activation_params,
    input_tensor,
    int32_array,
    is_float_weighted_op,
    kernel_call,
    output_tensor,
    scale,
    zero_point,
)

SOURCES = ("mcu_fully_connected",)


@lowers("FULLY_CONNECTED")
def lower_fully_connected(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    filt = input_tensor(op, graph, 1)
    bias = input_tensor(op, graph, 2, optional=True)
    out = output_tensor(op, graph)
    if op.options.get("weights_format", "DEFAULT") not in ("DEFAULT", 0):
        raise NotLowerable(f"FULLY_CONNECTED with {op.options['weights_format']} weights")
    if len(filt.shape) != 2:
        raise NotLowerable(f"FULLY_CONNECTED with a rank-{len(filt.shape)} filter")
    output_depth, accum_depth = filt.shape
    if accum_depth == 0 or inp.num_elements % accum_depth:
        raise NotLowerable(f"FULLY_CONNECTED input of {inp.num_elements} elements is not a multiple of {accum_depth}")
    batches = inp.num_elements // accum_depth
    if out.num_elements != batches * output_depth:
        raise NotLowerable(f"FULLY_CONNECTED output shape {out.shape} does not match {batches}x{output_depth}")
    sizes = {"batches": batches, "output_depth": output_depth, "accum_depth": accum_depth}
    if is_float_weighted_op(op, inp, filt, bias, out):
        params = {**sizes, **activation_params(op, out)}
        return kernel_call(op, "mcu_fully_connected_f32", "mcu_fully_connected_f32_params", params, SOURCES, inputs=3)

    filter_scales = filt.quantization.scales
    per_channel = len(filter_scales) > 1
    multipliers, shifts = conv_output_multipliers(
        scale(inp), filter_scales, scale(out), output_depth if per_channel else 1
    )
    params = {
        **sizes,
        "input_offset": -zero_point(inp),
        "filter_offset": 0 if per_channel else -zero_point(filt),
        "output_offset": zero_point(out),
        "per_channel": int(per_channel),
        "output_multiplier": int32_array(multipliers),
        "output_shift": int32_array(shifts),
        **activation_params(op, out),
    }
    return kernel_call(op, "mcu_fully_connected_s8", "mcu_fully_connected_s8_params", params, SOURCES, inputs=3)
