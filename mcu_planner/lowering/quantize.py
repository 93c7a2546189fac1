"""QUANTIZE, DEQUANTIZE -> firmware/runtime/mcu_quantize.c.

As TFLite's quantize.cc and dequantize.cc with the reference resolver:
float32 input is divided by the output scale in float and rounded half away
from zero (AffineQuantize); an integer input is requantized with
QuantizeMultiplier(input_scale / output_scale) computed in double; DEQUANTIZE
multiplies by the scale (mcu_quantize.c explains why a float multiply gives
the reference's double-then-narrowed result).
"""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from ..quant import INT_RANGES, quantize_multiplier
from ..shown import shown
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, facts_for, lowers
from .common import TYPE_SUFFIX, elementwise_operands, kernel_call, scale, zero_point
from .walks import values_walk

SOURCES = ("mcu_quantize",)

# (input dtype, output dtype) pairs of integer requantization TFLite's QUANTIZE takes.
REQUANTIZE_PAIRS = {
    ("int8", "int8"),
    ("int8", "uint8"),
    ("int8", "int16"),
    ("uint8", "int8"),
    ("uint8", "uint8"),
    ("uint8", "int16"),
    ("int16", "int8"),
    ("int16", "int16"),
    ("int16", "int32"),
    ("int32", "int8"),
    ("int32", "int16"),
}


# DEQUANTIZE's float multiply equals the reference's double one while every
# |q - zero_point| stays within 2^24 (the integers a float holds exactly);
# real zero points lie in the type's range, far inside this.
FLOAT_EXACT_INTEGER = 1 << 24


def _float_exact_zero_point(op: Operator, t: Tensor) -> int:
    zp = zero_point(t)
    q_min, q_max = INT_RANGES[t.dtype]
    if max(abs(q_min - zp), abs(q_max - zp)) > FLOAT_EXACT_INTEGER:
        raise NotLowerable(f"{op.opcode} with zero point {zp} far outside the {t.dtype} range")
    return zp


def _operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor]:
    inp, out = elementwise_operands(op, graph)
    for t in (inp, out):
        if t.quantization is not None and t.quantization.per_channel:
            raise NotLowerable(f"{op.opcode} with per-channel quantized tensor '{shown(t.name)}'")
    return inp, out


@lowers("QUANTIZE")
def lower_quantize(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    if inp.dtype == "float32":
        if out.dtype not in ("int8", "uint8", "int16"):
            raise NotLowerable(f"QUANTIZE from float32 to {out.dtype}")
        q_min, q_max = INT_RANGES[out.dtype]
        params = {
            "size": inp.num_elements,
            "scale": scale(out),
            "zero_point": zero_point(out),
            "q_min": q_min,
            "q_max": q_max,
        }
        return kernel_call(op, f"mcu_quantize_f32_{TYPE_SUFFIX[out.dtype]}", "mcu_quantize_f32_params", params, SOURCES)
    if (inp.dtype, out.dtype) not in REQUANTIZE_PAIRS:
        raise NotLowerable(f"QUANTIZE from {inp.dtype} to {out.dtype}")
    multiplier, shift = quantize_multiplier(scale(inp) / scale(out))
    function = f"mcu_requantize_{TYPE_SUFFIX[inp.dtype]}_{TYPE_SUFFIX[out.dtype]}"
    params = {
        "size": inp.num_elements,
        "input_zero_point": zero_point(inp),
        "output_zero_point": zero_point(out),
        "multiplier": multiplier,
        "shift": shift,
    }
    return kernel_call(op, function, "mcu_requantize_params", params, SOURCES)


@lowers("DEQUANTIZE")
def lower_dequantize(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    if out.dtype != "float32" or inp.dtype not in ("int8", "uint8", "int16"):
        raise NotLowerable(f"DEQUANTIZE from {inp.dtype} to {out.dtype}")
    if inp.is_constant:
        raise NotLowerable("DEQUANTIZE of a constant tensor")
    params = {"size": inp.num_elements, "scale": scale(inp), "zero_point": _float_exact_zero_point(op, inp)}
    return kernel_call(op, f"mcu_dequantize_{TYPE_SUFFIX[inp.dtype]}_f32", "mcu_dequantize_params", params, SOURCES)


# mcu_quantize.c's loops walk the values in ascending order, one at a time
# (scalar) or four at a time (Helium: four loaded, then four stored).
QUANTIZE_VALUES_PER_GROUP = 4


@facts_for("QUANTIZE")
def quantize_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """Elementwise (a same-size output may take the input's bytes), and the
    walk that lets the output start just before the input it reads
    (overlap.py): so that a QUANTIZE of a graph input shares its bytes in
    plans that also overlap other ops (greedy and the exact planner place
    overlaps, not in-place pairs), and a narrowing or widening one at all."""
    return KernelFacts(elementwise=True, access=values_walk(op, graph, call, QUANTIZE_VALUES_PER_GROUP))


# A DEQUANTIZE widens the values, so its output cannot take the input's bytes.
declare_facts(KernelFacts(), "DEQUANTIZE")
