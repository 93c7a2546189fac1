"""ADD, SUB, MUL -> mcu_{add,mul}_s8 and mcu_{add,sub,mul}_{f32,s32} (firmware/runtime/mcu_elementwise.c),
int16 ADD/SUB/MUL -> mcu_add_s16 / mcu_{add,sub}_s16_pot / mcu_mul_s16 (mcu_elementwise_s16.c).

The constants follow TFLite's add.cc / sub.cc / mul.cc Prepare: for int8 ADD
and SUB both inputs are rescaled to twice the larger input scale with 20 bits
of headroom (int16: 15 bits, unless pot_scale_int16 picks the power-of-two path), SUB negating the second input's multiplier; MUL rescales the
product by input1_scale * input2_scale / output_scale, that product computed
in float32 as the C++ expression on float fields is.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Operator, Tensor
from ..quant import checked_log2, quantize_multiplier, quantize_multiplier_smaller_than_one_exp
from . import CArray, KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import (
    MAX_RANK,
    TYPE_SUFFIX,
    activation_params,
    input_tensor,
    int32_array,
    kernel_call,
    output_tensor,
    require_dtype,
    scale,
    zero_point,
)

SOURCES = ("mcu_elementwise",)
SOURCES_S16 = ("mcu_elementwise_s16",)  # the 16x8 kernels

# Headroom bits TFLite gives int8 and uint8 operands of ADD/SUB before adding
# them, and int16 ones on the general (not power-of-two) path.
ADD_LEFT_SHIFT = 20
ADD_LEFT_SHIFT_INT16 = 15


def broadcast_walk(
    op: Operator, shape1: tuple[int, ...], shape2: tuple[int, ...], out_shape: tuple[int, ...]
) -> tuple[CArray, CArray, CArray, int]:
    """(dims, strides1, strides2, rank) walking the output row-major, inputs addressed
    by element strides that are 0 along broadcast dimensions; dimensions that
    can be walked as one are merged, so same-shaped inputs become rank 1."""
    rank = max(len(shape1), len(shape2), len(out_shape), 1)
    s1 = (1,) * (rank - len(shape1)) + tuple(shape1)
    s2 = (1,) * (rank - len(shape2)) + tuple(shape2)
    so = (1,) * (rank - len(out_shape)) + tuple(out_shape)
    for a, b, o in zip(s1, s2, so, strict=True):
        if max(a, b) != o or a not in (1, o) or b not in (1, o):
            raise NotLowerable(f"{op.opcode} cannot broadcast {shape1} and {shape2} to {out_shape}")
    if 0 in so:
        raise NotLowerable(f"{op.opcode} on an empty tensor")

    def strides(shape: tuple[int, ...]) -> list[int]:
        result, step = [], 1
        for dim in reversed(shape):
            result.append(step if dim > 1 else 0)
            step *= dim
        return result[::-1]

    dims, st1, st2 = list(so), strides(s1), strides(s2)
    # Drop size-1 dimensions, then merge a dimension into the next inner one
    # when both inputs step through it contiguously (or not at all).
    kept = [(d, a, b) for d, a, b in zip(dims, st1, st2, strict=True) if d > 1] or [(1, 0, 0)]
    merged = [kept[-1]]
    for d, a, b in reversed(kept[:-1]):
        inner_d, inner_a, inner_b = merged[0]
        if a == inner_a * inner_d and b == inner_b * inner_d:
            merged[0] = (d * inner_d, inner_a, inner_b)
        else:
            merged.insert(0, (d, a, b))
    if len(merged) > MAX_RANK:
        raise NotLowerable(f"{op.opcode} broadcast over {len(merged)} dimensions")
    return (
        int32_array(m[0] for m in merged),
        int32_array(m[1] for m in merged),
        int32_array(m[2] for m in merged),
        len(merged),
    )


def broadcast_params(op: Operator, a: Tensor, b: Tensor, out: Tensor) -> dict[str, ParamValue]:
    """The walk fields every broadcasting params struct starts with."""
    dims, strides1, strides2, rank = broadcast_walk(op, a.shape, b.shape, out.shape)
    return {"rank": rank, "dims": dims, "input1_strides": strides1, "input2_strides": strides2}


def binary_operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor, Tensor]:
    """Both inputs and the output of a two-input op, all of one dtype."""
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.inputs)} inputs and {len(op.outputs)} outputs")
    a, b, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if not (a.dtype == b.dtype == out.dtype):
        raise NotLowerable(f"{op.opcode} mixing {a.dtype}, {b.dtype} -> {out.dtype}")
    return a, b, out


def _call(
    op: Operator, function: str, params_type: str, operands: tuple[Tensor, Tensor, Tensor], **own: ParamValue
) -> KernelCall:
    """Fields in the order every params struct here declares them: the
    broadcast walk, the kernel's own constants, the fused activation."""
    a, b, out = operands
    params = {**broadcast_params(op, a, b, out), **own, **activation_params(op, out)}
    sources = SOURCES_S16 if "_s16" in function else SOURCES
    return kernel_call(op, function, params_type, params, sources, inputs=2)


def _power_of_two_exponents(operands: tuple[Tensor, Tensor, Tensor]) -> tuple[int, int, int] | None:
    """log2 of each operand's scale, or None unless every scale is a power of two."""
    log2_a, log2_b, log2_out = (checked_log2(scale(t)) for t in operands)
    if log2_a is None or log2_b is None or log2_out is None:
        return None
    return log2_a, log2_b, log2_out


def _lower_add_sub_s16_pot(
    op: Operator, operands: tuple[Tensor, Tensor, Tensor], exponents: tuple[int, int, int]
) -> KernelCall:
    """TFLite's int16 ADD/SUB with pot_scale_int16 and power-of-two scales
    (the LSTM-era path): one input is right-shifted to the output's scale."""
    a, b, out = operands
    if a.shape != b.shape or a.shape != out.shape:
        # The reference's power-of-two kernels do not broadcast.
        raise NotLowerable(f"int16 {op.opcode} with power-of-two scales on shapes {a.shape}, {b.shape}")
    if any(zero_point(t) for t in operands):
        raise NotLowerable(f"int16 {op.opcode} with a non-zero zero point")
    log2_a, log2_b, log2_out = exponents
    shift1, shift2 = log2_a - log2_out, log2_b - log2_out
    if (shift1 and shift2) or shift1 > 0 or shift2 > 0:
        # Prepare refuses these.
        raise NotLowerable(f"int16 {op.opcode} with power-of-two input shifts {shift1}, {shift2}")
    function = "mcu_add_s16_pot" if op.opcode == "ADD" else "mcu_sub_s16_pot"
    params = {"size": out.num_elements, "input1_shift": shift1, "input2_shift": shift2, **activation_params(op, out)}
    return kernel_call(op, function, "mcu_add_s16_pot_params", params, SOURCES_S16, inputs=2)


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# CalculateActivationRange<int32_t>: the fused activation on plain integers.
INT32_ACTIVATION_RANGES = {
    "NONE": (INT32_MIN, INT32_MAX),
    "RELU": (0, INT32_MAX),
    "RELU6": (0, 6),
    "RELU_N1_TO_1": (-1, 1),
}


def int32_activation_params(op: Operator) -> dict[str, int]:
    activation = op.options.get("fused_activation_function", "NONE") or "NONE"
    if activation not in INT32_ACTIVATION_RANGES:
        raise NotLowerable(f"int32 {op.opcode} with fused {activation}")
    low, high = INT32_ACTIVATION_RANGES[activation]
    return {"act_min": low, "act_max": high}


def _lower_int32(op: Operator, operands: tuple[Tensor, Tensor, Tensor]) -> KernelCall:
    a, b, out = operands
    params = {**broadcast_params(op, a, b, out), **int32_activation_params(op)}
    return kernel_call(op, f"mcu_{op.opcode.lower()}_s32", "mcu_binary_s32_params", params, SOURCES, inputs=2)


def _int8_offsets(a: Tensor, b: Tensor, out: Tensor) -> dict[str, int]:
    return {"input1_offset": -zero_point(a), "input2_offset": -zero_point(b), "output_offset": zero_point(out)}


@lowers("ADD", "SUB")
def lower_add_sub(op: Operator, graph: Graph) -> KernelCall:
    operands = a, b, out = binary_operands(op, graph)
    if out.dtype == "float32":
        function = "mcu_add_f32" if op.opcode == "ADD" else "mcu_sub_f32"
        return _call(op, function, "mcu_binary_f32_params", operands)
    if out.dtype == "int32":
        return _lower_int32(op, operands)
    require_dtype(op, out, "int8", "uint8", "int16")
    if out.dtype == "int16":
        exponents = _power_of_two_exponents(operands) if op.options.get("pot_scale_int16", False) else None
        if exponents is not None:
            return _lower_add_sub_s16_pot(op, operands, exponents)
        kernel, left_shift = "mcu_add_s16", ADD_LEFT_SHIFT_INT16
    else:
        kernel, left_shift = f"mcu_add_{TYPE_SUFFIX[out.dtype]}", ADD_LEFT_SHIFT
    scale1, scale2, out_scale = scale(a), scale(b), scale(out)
    # 2 * std::max(float, float) stays float32; every division after it is in
    # double, the float operands widened.
    twice_max_input_scale = float(2 * max(np.float32(scale1), np.float32(scale2)))
    real_multiplier1 = scale1 / twice_max_input_scale
    real_multiplier2 = scale2 / twice_max_input_scale
    # (1 << left_shift) * float: float32.
    real_output_multiplier = twice_max_input_scale / float(np.float32(1 << left_shift) * np.float32(out_scale))
    multiplier1, shift1 = quantize_multiplier_smaller_than_one_exp(real_multiplier1)
    multiplier2, shift2 = quantize_multiplier_smaller_than_one_exp(real_multiplier2)
    output_multiplier, output_shift = quantize_multiplier_smaller_than_one_exp(real_output_multiplier)
    if op.opcode == "SUB":
        multiplier2 = -multiplier2
    return _call(
        op,
        kernel,
        "mcu_add_s8_params",  # every dtype: the same fields
        operands,
        **_int8_offsets(a, b, out),
        left_shift=left_shift,
        input1_multiplier=multiplier1,
        input1_shift=shift1,
        input2_multiplier=multiplier2,
        input2_shift=shift2,
        output_multiplier=output_multiplier,
        output_shift=output_shift,
    )


@lowers("MUL")
def lower_mul(op: Operator, graph: Graph) -> KernelCall:
    operands = a, b, out = binary_operands(op, graph)
    if out.dtype == "float32":
        return _call(op, "mcu_mul_f32", "mcu_binary_f32_params", operands)
    if out.dtype == "int32":
        return _lower_int32(op, operands)
    require_dtype(op, out, "int8", "uint8", "int16")
    real_multiplier = float(np.float32(scale(a)) * np.float32(scale(b)) / np.float32(scale(out)))
    output_multiplier, output_shift = quantize_multiplier(real_multiplier)
    return _call(
        op,
        f"mcu_mul_{TYPE_SUFFIX[out.dtype]}",
        "mcu_mul_s8_params",  # every dtype: the same fields
        operands,
        **_int8_offsets(a, b, out),
        output_multiplier=output_multiplier,
        output_shift=output_shift,
    )


ADD_N_MAX_INPUTS = 8  # MCU_ADD_N_MAX_INPUTS in firmware/runtime/mcu_elementwise.h


@lowers("ADD_N")
def lower_add_n(op: Operator, graph: Graph) -> KernelCall:
    out = output_tensor(op, graph)
    inputs = [input_tensor(op, graph, k) for k in range(len(op.inputs))]
    # add_n.cc registers float32 and int32.
    require_dtype(op, out, "float32", "int32")
    if not 2 <= len(inputs) <= ADD_N_MAX_INPUTS:  # add_n.cc Prepare needs two
        raise NotLowerable(f"ADD_N of {len(inputs)} inputs (at most {ADD_N_MAX_INPUTS})")
    for t in inputs:
        if t.dtype != out.dtype or tuple(t.shape) != tuple(out.shape):
            raise NotLowerable(f"ADD_N of {t.dtype}{list(t.shape)} into {out.dtype}{list(out.shape)}")
    padding = (-1,) * (ADD_N_MAX_INPUTS - len(inputs))
    return KernelCall(
        function=f"mcu_add_n_{TYPE_SUFFIX[out.dtype]}",
        params_type="mcu_add_n_params",
        params={"num_inputs": len(inputs), "size": out.num_elements},
        args=tuple(op.inputs) + padding + (op.outputs[0],),
        sources=SOURCES,
    )


# mcu_elementwise.c: broadcasting binary ops through mcu_for_each_broadcast_row,
# element i of each input read before element i of the output is written.
declare_facts(KernelFacts(elementwise=True), "ADD", "SUB", "MUL", "ADD_N")
