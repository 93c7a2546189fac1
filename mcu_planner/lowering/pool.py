"""AVERAGE_POOL_2D and MAX_POOL_2D -> mcu_{average,max}_pool_2d_{s8,u8,f32} (mcu_pool.c), int16 ->
mcu_{average,max}_pool_2d_s16 (mcu_pool_s16.c); float32 L2_POOL_2D -> mcu_l2_pool_2d_f32."""

from __future__ import annotations

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, facts_for, lowers
from .common import (
    TYPE_SUFFIX,
    activation_params,
    input_tensor,
    kernel_call,
    output_tensor,
    require_dtype,
    scale,
    sliding_window,
    zero_point,
)
from .walks import PIXEL_BY_PIXEL, image_window_facts


def _lower(op: Operator, graph: Graph, stem: str) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    if len(inp.shape) != 4 or len(out.shape) != 4:
        raise NotLowerable(f"{op.opcode} on tensors that are not 4-D")
    batches, in_h, in_w, channels = inp.shape
    filter_h, filter_w = op.options.get("filter_height", 1), op.options.get("filter_width", 1)
    if min(filter_h, filter_w) < 1:
        raise NotLowerable(f"{op.opcode} with filter {filter_h}x{filter_w}")
    window = sliding_window(op, in_h, in_w, filter_h, filter_w)
    if out.shape != (batches, window["output_h"], window["output_w"], channels):
        raise NotLowerable(f"{op.opcode} output shape {out.shape} disagrees with its options")
    params = {
        "batches": batches,
        "input_h": in_h,
        "input_w": in_w,
        "channels": channels,
        "output_h": window["output_h"],
        "output_w": window["output_w"],
        "filter_h": filter_h,
        "filter_w": filter_w,
        "stride_h": window["stride_h"],
        "stride_w": window["stride_w"],
        "pad_h": window["pad_h"],
        "pad_w": window["pad_w"],
    }
    if inp.dtype == "float32":
        require_dtype(op, out, "float32")
        suffix, params_type = "f32", "mcu_pool_f32_params"
    else:
        require_dtype(op, inp, "int8", "uint8", "int16")
        require_dtype(op, out, inp.dtype)
        # The int8 kernels copy quantized values through unchanged, so they
        # are only right when input and output share scale and zero point
        # (TFLite enforces the same in Prepare).
        if scale(inp) != scale(out) or zero_point(inp) != zero_point(out):
            raise NotLowerable(f"{op.opcode} whose output quantization differs from its input's")
        # uint8 and int16 take the int8 kernels' parameter block (the same fields).
        suffix, params_type = TYPE_SUFFIX[inp.dtype], "mcu_pool_s8_params"
    params = {**params, **activation_params(op, out)}
    sources = ("mcu_pool_s16",) if suffix == "s16" else ("mcu_pool",)
    return kernel_call(op, f"{stem}_{suffix}", params_type, params, sources)


@lowers("AVERAGE_POOL_2D")
def lower_average_pool_2d(op: Operator, graph: Graph) -> KernelCall:
    return _lower(op, graph, "mcu_average_pool_2d")


@lowers("MAX_POOL_2D")
def lower_max_pool_2d(op: Operator, graph: Graph) -> KernelCall:
    return _lower(op, graph, "mcu_max_pool_2d")


@lowers("L2_POOL_2D")
def lower_l2_pool_2d(op: Operator, graph: Graph) -> KernelCall:
    require_dtype(op, input_tensor(op, graph, 0), "float32")
    return _lower(op, graph, "mcu_l2_pool_2d")


# Not offered to patches or raster walks: no measurement asked for them.
declare_facts(KernelFacts(), "L2_POOL_2D")


@facts_for("AVERAGE_POOL_2D", "MAX_POOL_2D")
def pool_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """mcu_pool.c, mcu_pool_s16.c: one output pixel at a time, channel by
    channel, every read through the geometry fields."""
    return image_window_facts(op, graph, call, PIXEL_BY_PIXEL, pooling=True)
