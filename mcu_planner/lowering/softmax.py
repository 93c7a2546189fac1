"""SOFTMAX -> mcu_softmax_{s8,u8,f32}."""

from __future__ import annotations

from ..graph import Graph, Operator
from ..quant import calculate_input_radius, f32, preprocess_softmax_scaling
from . import KernelCall, NotLowerable, lowers
from .common import TYPE_SUFFIX, input_tensor, kernel_call, output_tensor, require_dtype, scale, zero_point

SOURCES = ("mcu_softmax",)

# gemmlowp fixed point format of the scaled input differences (reference Softmax).
SCALED_DIFF_INTEGER_BITS = 5


@lowers("SOFTMAX")
def lower_softmax(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    if not inp.shape or inp.shape != out.shape:
        raise NotLowerable(f"SOFTMAX from shape {inp.shape} to {out.shape}")
    depth = inp.shape[-1]
    outer_size = inp.num_elements // depth if depth else 0
    # beta is a float32 in the flatbuffer; TFLite widens it to double.
    beta = f32(op.options.get("beta", 1.0))
    if inp.dtype == "float32":
        require_dtype(op, out, "float32")
        params = {"outer_size": outer_size, "depth": depth, "beta": beta}
        return kernel_call(op, "mcu_softmax_f32", "mcu_softmax_f32_params", params, SOURCES)
    require_dtype(op, inp, "int8", "uint8")
    require_dtype(op, out, inp.dtype)
    # The kernels' output is fixed at scale 1/256 and the type's lowest value
    # as zero point, as TFLite requires of quantized SOFTMAX.
    out_zero_point = -128 if out.dtype == "int8" else 0
    if zero_point(out) != out_zero_point or abs(scale(out) - 1.0 / 256) > 0.001 / 256:
        raise NotLowerable(
            f"{out.dtype} SOFTMAX whose output is not quantized with scale 1/256, zero point {out_zero_point}"
        )
    multiplier, left_shift = preprocess_softmax_scaling(beta, scale(inp), SCALED_DIFF_INTEGER_BITS)
    diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
    params = {
        "outer_size": outer_size,
        "depth": depth,
        "input_multiplier": multiplier,
        "input_left_shift": left_shift,
        "diff_min": diff_min,
    }
    return kernel_call(op, f"mcu_softmax_{TYPE_SUFFIX[inp.dtype]}", "mcu_softmax_s8_params", params, SOURCES)
