"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, LOGICAL_AND,
LOGICAL_OR, LOGICAL_NOT, SELECT and SELECT_V2 -> firmware/runtime/mcu_comparisons.c.

The comparisons broadcast through elementwise.broadcast_walk, as ADD does,
and write bool (one byte per element).  int8 and uint8 inputs compare after
comparisons.cc's rescale (offset, 8 bits of headroom, each input's scale as
a multiplier below one); every other dtype compares stored values.
SELECT_V2 broadcasts condition, x and y against the output; SELECT is taken
where its shapes need no broadcasting (the two ops then agree).
"""

from __future__ import annotations

import math

from ..graph import Graph, Operator, Tensor
from ..quant import quantize_multiplier_smaller_than_one_exp
from . import KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import (
    MAX_RANK,
    element_bytes,
    elementwise_operands,
    input_tensor,
    int32_array,
    kernel_call,
    output_tensor,
    scale,
    zero_point,
)
from .elementwise import broadcast_params

SOURCES = ("mcu_comparisons",)

# mcu_comparison in firmware/runtime/mcu_comparisons.h.
COMPARISON_CODES = {
    "EQUAL": 0,
    "NOT_EQUAL": 1,
    "GREATER": 2,
    "GREATER_EQUAL": 3,
    "LESS": 4,
    "LESS_EQUAL": 5,
}
# Stored-value kernels by input dtype; bool only for (in)equality, as TFLite registers it.
PLAIN_FUNCTIONS = {
    "float32": "mcu_compare_f32",
    "int16": "mcu_compare_s16",
    "int32": "mcu_compare_s32",
    "int64": "mcu_compare_s64",
    "bool": "mcu_compare_u8",
}
QUANTIZED_FUNCTIONS = {"int8": "mcu_compare_s8_quantized", "uint8": "mcu_compare_u8_quantized"}
# Headroom comparisons.cc gives int8 / uint8 values before rescaling them.
COMPARISON_LEFT_SHIFT = 8


@lowers(*COMPARISON_CODES)
def lower_comparison(op: Operator, graph: Graph) -> KernelCall:
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.inputs)} inputs")
    a, b, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if a.dtype != b.dtype or out.dtype != "bool":
        raise NotLowerable(f"{op.opcode} of {a.dtype} and {b.dtype} to {out.dtype}")
    if a.dtype == "bool" and op.opcode not in ("EQUAL", "NOT_EQUAL"):
        raise NotLowerable(f"{op.opcode} with bool")
    if a.dtype == "int16" and op.opcode == "NOT_EQUAL":
        # LiteRT's NotEqualEval has no int16 case and leaves the output unwritten; TFLM has none either.
        raise NotLowerable("NOT_EQUAL with int16")
    params = {**broadcast_params(op, a, b, out), "comparison": COMPARISON_CODES[op.opcode]}
    if a.dtype in PLAIN_FUNCTIONS:
        return kernel_call(op, PLAIN_FUNCTIONS[a.dtype], "mcu_comparison_params", params, SOURCES, inputs=2)
    if a.dtype not in QUANTIZED_FUNCTIONS:
        raise NotLowerable(f"{op.opcode} with {a.dtype}")
    # comparisons.cc: each scale (a float field, widened) as a multiplier below one.
    multiplier1, shift1 = quantize_multiplier_smaller_than_one_exp(scale(a))
    multiplier2, shift2 = quantize_multiplier_smaller_than_one_exp(scale(b))
    params.update(
        input1_offset=-zero_point(a),
        input2_offset=-zero_point(b),
        left_shift=COMPARISON_LEFT_SHIFT,
        input1_multiplier=multiplier1,
        input1_shift=shift1,
        input2_multiplier=multiplier2,
        input2_shift=shift2,
    )
    return kernel_call(op, QUANTIZED_FUNCTIONS[a.dtype], "mcu_comparison_q8_params", params, SOURCES, inputs=2)


@lowers("LOGICAL_AND", "LOGICAL_OR")
def lower_logical_binary(op: Operator, graph: Graph) -> KernelCall:
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.inputs)} inputs")
    a, b, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if not (a.dtype == b.dtype == out.dtype == "bool"):
        raise NotLowerable(f"{op.opcode} of {a.dtype} and {b.dtype} to {out.dtype}")
    function = "mcu_logical_and" if op.opcode == "LOGICAL_AND" else "mcu_logical_or"
    return kernel_call(op, function, "mcu_logical_params", broadcast_params(op, a, b, out), SOURCES, inputs=2)


@lowers("LOGICAL_NOT")
def lower_logical_not(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    if not (inp.dtype == out.dtype == "bool"):
        raise NotLowerable(f"LOGICAL_NOT of {inp.dtype} to {out.dtype}")
    return kernel_call(op, "mcu_logical_not", "mcu_logical_not_params", {"size": out.num_elements}, SOURCES)


def _select_strides(op: Operator, shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """Element strides of `shape` walked along `out_shape` (0 where it is broadcast)."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if len(padded) != len(out_shape) or any(d not in (1, o) for d, o in zip(padded, out_shape, strict=True)):
        raise NotLowerable(f"{op.opcode} cannot broadcast {shape} to {out_shape}")
    strides = [0] * len(out_shape)
    step = 1
    for k in reversed(range(len(out_shape))):
        strides[k] = step if padded[k] > 1 else 0
        step *= padded[k]
    return strides


@lowers("SELECT", "SELECT_V2")
def lower_select(op: Operator, graph: Graph) -> KernelCall:
    if len(op.inputs) != 3 or len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.inputs)} inputs")
    condition, x, y = (input_tensor(op, graph, k) for k in range(3))
    out: Tensor = output_tensor(op, graph)
    if condition.dtype != "bool" or not (x.dtype == y.dtype == out.dtype):
        raise NotLowerable(f"{op.opcode} of {condition.dtype}, {x.dtype}, {y.dtype} to {out.dtype}")
    if op.opcode == "SELECT" and not (tuple(condition.shape) == tuple(x.shape) == tuple(y.shape)):
        # SELECT's rank-1 condition picks whole rows, unlike SELECT_V2's broadcasting.
        raise NotLowerable(f"SELECT of shapes {condition.shape}, {x.shape}, {y.shape}")
    out_shape = tuple(out.shape) or (1,)
    if len(out_shape) > MAX_RANK:
        raise NotLowerable(f"{op.opcode} of rank {len(out_shape)}")
    if math.prod(out_shape) == 0:
        raise NotLowerable(f"{op.opcode} on an empty tensor")
    params: dict[str, ParamValue] = {
        "rank": len(out_shape),
        "dims": int32_array(out_shape),
        "condition_strides": int32_array(_select_strides(op, condition.shape, out_shape)),
        "x_strides": int32_array(_select_strides(op, x.shape, out_shape)),
        "y_strides": int32_array(_select_strides(op, y.shape, out_shape)),
        "element_bytes": element_bytes(op, out),
    }
    return kernel_call(op, "mcu_select", "mcu_select_params", params, SOURCES, inputs=3)


# Outputs are not promised to survive sharing an input's bytes: a bool output
# is narrower than most inputs, and SELECT_V2 broadcasts all three.
declare_facts(KernelFacts(), *COMPARISON_CODES, "SELECT", "SELECT_V2")
# bool in, bool out, element i read before element i is written.
declare_facts(KernelFacts(elementwise=True), "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT")
