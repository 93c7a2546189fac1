"""Float math operators -> firmware/runtime/mcu_math.c.

Binary ops (DIV, POW, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, PRELU, FLOOR_DIV,
FLOOR_MOD) broadcast
through elementwise.broadcast_walk, as ADD does; unary ops (EXP, LOG, SQRT,
RSQRT, SQUARE, ABS, NEG, CEIL, FLOOR, ROUND, COS, SIN, float LOGISTIC / TANH /
GELU / ELU; those with int8 tables
are registered in activations.py) map element to element;
L2_NORMALIZATION normalises rows of the last dimension; BATCH_MATMUL
multiplies matrices over broadcast batch dimensions; BROADCAST_ARGS computes
a broadcast shape from two shape tensors read at run time (folding.py
computes it when both are constants).  The expressions are
TFLite's reference ones (see mcu_math.c); MAXIMUM and MINIMUM also take int8 and
int16, whose reference compares the stored values, and PRELU and SQUARED_DIFFERENCE
int8 (their Prepare functions' rescales).
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Operator
from ..quant import conv_output_multipliers, quantize_multiplier, quantize_multiplier_smaller_than_one_exp
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, facts_for, lowers
from .common import (
    activation_params,
    elementwise_operands,
    input_tensor,
    kernel_call,
    output_tensor,
    require_dtype,
    scale,
    zero_point,
)
from .elementwise import binary_operands, broadcast_params

SOURCES = ("mcu_math",)

UNARY_FUNCTIONS = {
    "EXP": "mcu_exp_f32",
    "LOG": "mcu_log_f32",
    "SQRT": "mcu_sqrt_f32",
    "RSQRT": "mcu_rsqrt_f32",
    "SQUARE": "mcu_square_f32",
    "ABS": "mcu_abs_f32",
    "NEG": "mcu_neg_f32",
    "LOGISTIC": "mcu_logistic_f32",
    "TANH": "mcu_tanh_f32",
    "CEIL": "mcu_ceil_f32",
    "FLOOR": "mcu_floor_f32",
    "ROUND": "mcu_round_f32",
    "COS": "mcu_cos_f32",
    "SIN": "mcu_sin_f32",
    "ELU": "mcu_elu_f32",
}
# float32 only here.  int8 ELU is left out: LiteRT has no reference kernel for
# it and its optimized one rounds the table's ties to even, which TFLM's
# table (TfLiteRound) is not known to do.
FLOAT_ONLY_UNARY = ("SQUARE", "CEIL", "FLOOR", "ROUND", "COS", "SIN", "ELU")

# Binary ops without a fused activation -> (function stem, dtypes it takes).
BROADCAST_FUNCTIONS = {
    "POW": ("mcu_pow", ("float32",)),
    "MAXIMUM": ("mcu_maximum", ("float32", "int8", "int16")),
    "MINIMUM": ("mcu_minimum", ("float32", "int8", "int16")),
    # floor_div.cc / floor_mod.cc: int32 ones check for a zero divisor.
    "FLOOR_DIV": ("mcu_floor_div", ("float32", "int32")),
    "FLOOR_MOD": ("mcu_floor_mod", ("float32", "int32")),
}
TYPE_SUFFIX = {"float32": "f32", "int8": "s8", "int16": "s16", "int32": "s32"}


# |dividend| <= 255 has at least 23 redundant sign bits: with a rescale shift
# up to this the int8 DIV kernel's final shift always goes right.
DIV_MAX_OUTPUT_SHIFT = 23


@lowers("DIV")
def lower_div(op: Operator, graph: Graph) -> KernelCall:
    a, b, out = binary_operands(op, graph)
    require_dtype(op, out, "float32", "int8")
    walk = broadcast_params(op, a, b, out)
    if out.dtype == "float32":
        params = {**walk, **activation_params(op, out)}
        return kernel_call(op, "mcu_div_f32", "mcu_binary_f32_params", params, SOURCES, inputs=2)
    # Prepare: input1 scale / (input2 scale * output scale) in float32, widened.
    s1, s2, so = (np.float32(scale(t)) for t in (a, b, out))
    multiplier, shift = quantize_multiplier(float(s1 / (s2 * so)))
    if shift > DIV_MAX_OUTPUT_SHIFT:
        raise NotLowerable(f"int8 DIV rescaling by {float(s1 / (s2 * so))!r} (2^{shift - 1} or more)")
    params = {
        **walk,
        "input1_offset": -zero_point(a),
        "input2_offset": -zero_point(b),
        "output_offset": zero_point(out),
        "output_multiplier": multiplier,
        "output_shift": shift,
        **activation_params(op, out),
    }
    return kernel_call(op, "mcu_div_s8", "mcu_div_s8_params", params, SOURCES, inputs=2)


@lowers(*BROADCAST_FUNCTIONS)
def lower_broadcast(op: Operator, graph: Graph) -> KernelCall:
    a, b, out = binary_operands(op, graph)
    stem, dtypes = BROADCAST_FUNCTIONS[op.opcode]
    require_dtype(op, out, *dtypes)
    function = f"{stem}_{TYPE_SUFFIX[out.dtype]}"
    return kernel_call(op, function, "mcu_broadcast_params", broadcast_params(op, a, b, out), SOURCES, inputs=2)


# Headroom bits squared_difference.cc gives int8 operands before subtracting.
SQUARED_DIFFERENCE_LEFT_SHIFT = 7


@lowers("SQUARED_DIFFERENCE")
def lower_squared_difference(op: Operator, graph: Graph) -> KernelCall:
    a, b, out = binary_operands(op, graph)
    require_dtype(op, out, "float32", "int8")
    walk = broadcast_params(op, a, b, out)
    if out.dtype == "float32":
        return kernel_call(op, "mcu_squared_difference_f32", "mcu_broadcast_params", walk, SOURCES, inputs=2)
    for t in (a, b, out):
        if not -128 <= zero_point(t) <= 127:
            raise NotLowerable(f"int8 SQUARED_DIFFERENCE with zero point {zero_point(t)} (TFLite rejects it)")
    # Prepare: 2 * max(float, float) stays float32 (exact), the rest in double.
    twice_max_input_scale = float(2 * max(np.float32(scale(a)), np.float32(scale(b))))
    real_output = (
        twice_max_input_scale
        * twice_max_input_scale
        / float(np.float32(1 << (2 * SQUARED_DIFFERENCE_LEFT_SHIFT)) * np.float32(scale(out)))
    )
    multiplier1, shift1 = quantize_multiplier_smaller_than_one_exp(scale(a) / twice_max_input_scale)
    multiplier2, shift2 = quantize_multiplier_smaller_than_one_exp(scale(b) / twice_max_input_scale)
    output_multiplier, output_shift = quantize_multiplier_smaller_than_one_exp(real_output)
    params = {
        **walk,
        "input1_offset": -zero_point(a),
        "input2_offset": -zero_point(b),
        "output_offset": zero_point(out),
        "left_shift": SQUARED_DIFFERENCE_LEFT_SHIFT,
        "input1_multiplier": multiplier1,
        "input1_shift": shift1,
        "input2_multiplier": multiplier2,
        "input2_shift": shift2,
        "output_multiplier": output_multiplier,
        "output_shift": output_shift,
    }
    return kernel_call(op, "mcu_squared_difference_s8", "mcu_squared_difference_s8_params", params, SOURCES, inputs=2)


@lowers("PRELU")
def lower_prelu(op: Operator, graph: Graph) -> KernelCall:
    x, alpha, out = binary_operands(op, graph)
    require_dtype(op, out, "float32", "int8")
    walk = broadcast_params(op, x, alpha, out)
    if out.dtype == "float32":
        return kernel_call(op, "mcu_prelu_f32", "mcu_broadcast_params", walk, SOURCES, inputs=2)
    # PreluPrepare: both ratios in float32 arithmetic on the float fields, widened after.
    input_scale, alpha_scale, output_scale = (np.float32(scale(t)) for t in (x, alpha, out))
    identity_multiplier, identity_shift = quantize_multiplier(float(input_scale / output_scale))
    alpha_multiplier, alpha_shift = quantize_multiplier(float(input_scale * alpha_scale / output_scale))
    params = {
        **walk,
        "input_offset": -zero_point(x),
        "alpha_offset": -zero_point(alpha),
        "output_offset": zero_point(out),
        "identity_multiplier": identity_multiplier,
        "identity_shift": identity_shift,
        "alpha_multiplier": alpha_multiplier,
        "alpha_shift": alpha_shift,
    }
    return kernel_call(op, "mcu_prelu_s8", "mcu_prelu_s8_params", params, SOURCES, inputs=2)


def _float_unary_call(op: Operator, graph: Graph, function: str) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    return kernel_call(op, function, "mcu_unary_f32_params", {"size": inp.num_elements}, SOURCES)


@lowers(*FLOAT_ONLY_UNARY)
def lower_float_unary(op: Operator, graph: Graph) -> KernelCall:
    """float32 unary ops; also the float variants of LOGISTIC, TANH, EXP, ABS,
    LOG, SQRT, RSQRT, NEG, which activations.lower_lut owns with their int8
    tables."""
    return _float_unary_call(op, graph, UNARY_FUNCTIONS[op.opcode])


def lower_float_gelu(op: Operator, graph: Graph) -> KernelCall:
    """float32 GELU (activations.lower_gelu owns the opcode and its int8 table)."""
    approximate = op.options.get("approximate", False)
    return _float_unary_call(op, graph, "mcu_gelu_approximate_f32" if approximate else "mcu_gelu_f32")


@lowers("L2_NORMALIZATION")
def lower_l2_normalization(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32", "int8")
    require_dtype(op, out, inp.dtype)
    if not inp.shape or inp.shape != out.shape:
        raise NotLowerable(f"L2_NORMALIZATION from shape {inp.shape} to {out.shape}")
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise NotLowerable(f"L2_NORMALIZATION with fused {op.options['fused_activation_function']}")
    depth = inp.shape[-1]
    params = {"outer_size": inp.num_elements // depth if depth else 0, "depth": depth}
    if inp.dtype == "float32":
        return kernel_call(op, "mcu_l2_normalization_f32", "mcu_l2_normalization_f32_params", params, SOURCES)
    if np.float32(scale(out)) != np.float32(1 / 128) or zero_point(out) != 0:
        raise NotLowerable("int8 L2_NORMALIZATION whose output is not scale 1/128, zero point 0 (TFLite requires it)")
    params["input_zero_point"] = zero_point(inp)
    return kernel_call(op, "mcu_l2_normalization_s8", "mcu_l2_normalization_s8_params", params, SOURCES)


# Batch dimensions the kernel walks (TFLite's BATCH_MATMUL takes ranks up to 5).
BATCH_MATMUL_DIMS = 3


def _batch_strides(batch_shape: tuple[int, ...], out_batch: tuple[int, ...], matrix_elements: int) -> list[int]:
    """Per output batch dimension (padded to BATCH_MATMUL_DIMS): how many
    elements the operand's matrix moves per step along it, 0 where the
    operand is broadcast (size 1 or absent)."""
    shape = (1,) * (len(out_batch) - len(batch_shape)) + tuple(batch_shape)
    strides, step = [], matrix_elements
    for size in reversed(shape):
        strides.append(step if size > 1 else 0)
        step *= size
    return [0] * (BATCH_MATMUL_DIMS - len(shape)) + strides[::-1]


@lowers("BATCH_MATMUL")
def lower_batch_matmul(op: Operator, graph: Graph) -> KernelCall:
    lhs, rhs, out = binary_operands(op, graph)
    require_dtype(op, out, "float32", "int8")
    if len(lhs.shape) < 2 or len(rhs.shape) < 2:
        raise NotLowerable(f"BATCH_MATMUL of shapes {lhs.shape} and {rhs.shape}")
    adj_x, adj_y = bool(op.options.get("adj_x", False)), bool(op.options.get("adj_y", False))
    lhs_rows, lhs_cols = lhs.shape[-2:]
    rhs_rows, rhs_cols = rhs.shape[-2:]
    rows, depth = (lhs_cols, lhs_rows) if adj_x else (lhs_rows, lhs_cols)
    rhs_depth, cols = (rhs_cols, rhs_rows) if adj_y else (rhs_rows, rhs_cols)
    if depth != rhs_depth:
        raise NotLowerable(f"BATCH_MATMUL of shapes {lhs.shape} and {rhs.shape} (adj_x {adj_x}, adj_y {adj_y})")
    try:
        out_batch = tuple(np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2]))
    except ValueError:
        raise NotLowerable(f"BATCH_MATMUL cannot broadcast batches {lhs.shape[:-2]} and {rhs.shape[:-2]}") from None
    if tuple(out.shape) != out_batch + (rows, cols):
        raise NotLowerable(f"BATCH_MATMUL output {out.shape}, expected {out_batch + (rows, cols)}")
    if len(out_batch) > BATCH_MATMUL_DIMS:
        raise NotLowerable(f"BATCH_MATMUL with {len(out_batch)} batch dimensions (at most {BATCH_MATMUL_DIMS})")
    padded = (1,) * (BATCH_MATMUL_DIMS - len(out_batch)) + out_batch
    lhs_strides = _batch_strides(lhs.shape[:-2], out_batch, lhs_rows * lhs_cols)
    rhs_strides = _batch_strides(rhs.shape[:-2], out_batch, rhs_rows * rhs_cols)
    params = {
        "batches": int(np.prod(out_batch, dtype=np.int64)),
        "rows": rows,
        "cols": cols,
        "depth": depth,
        **{f"batch_{d}": padded[d] for d in range(BATCH_MATMUL_DIMS)},
        **{f"lhs_batch_stride_{d}": lhs_strides[d] for d in range(BATCH_MATMUL_DIMS)},
        **{f"rhs_batch_stride_{d}": rhs_strides[d] for d in range(BATCH_MATMUL_DIMS)},
        # Stored (rows, depth), or (depth, rows) with adj_x; rhs (depth, cols), or (cols, depth) with adj_y.
        "lhs_row_stride": 1 if adj_x else depth,
        "lhs_depth_stride": rows if adj_x else 1,
        "rhs_depth_stride": 1 if adj_y else cols,
        "rhs_col_stride": depth if adj_y else 1,
    }
    if out.dtype == "float32":
        return kernel_call(op, "mcu_batch_matmul_f32", "mcu_batch_matmul_f32_params", params, SOURCES, inputs=2)
    # Prepare: lhs scale * rhs scale / output scale in double
    # (GetQuantizedConvolutionMultipler, one filter scale).
    (multiplier,), (shift,) = conv_output_multipliers(scale(lhs), (scale(rhs),), scale(out), 1)
    params.update(
        lhs_zero_offset=-zero_point(lhs),
        rhs_zero_offset=-zero_point(rhs),
        output_offset=zero_point(out),
        output_multiplier=multiplier,
        output_shift=shift,
    )
    return kernel_call(op, "mcu_batch_matmul_s8", "mcu_batch_matmul_s8_params", params, SOURCES, inputs=2)


@lowers("BROADCAST_ARGS")
def lower_broadcast_args(op: Operator, graph: Graph) -> KernelCall:
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotLowerable(f"BROADCAST_ARGS with {len(op.inputs)} inputs")
    a, b, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    # broadcast_args.cc Prepare: int32 or int64 throughout, 1-D shapes, the output as long as the longer.
    require_dtype(op, out, "int32", "int64")
    if not a.dtype == b.dtype == out.dtype:
        raise NotLowerable(f"BROADCAST_ARGS of {a.dtype} and {b.dtype} to {out.dtype}")
    if len(a.shape) != 1 or len(b.shape) != 1 or tuple(out.shape) != (max(a.shape[0], b.shape[0]),):
        raise NotLowerable(f"BROADCAST_ARGS of shapes {list(a.shape)} and {list(b.shape)} to {list(out.shape)}")
    params = {
        "input1_size": a.shape[0],
        "input2_size": b.shape[0],
        "output_size": out.shape[0],
        "element_bytes": 8 if out.dtype == "int64" else 4,
    }
    return kernel_call(op, "mcu_broadcast_args", "mcu_broadcast_args_params", params, SOURCES, inputs=2)


# mcu_math.c: broadcasting binary ops through mcu_for_each_broadcast_row,
# unary ops in one pass (element i read before element i is written).
declare_facts(
    KernelFacts(elementwise=True), "DIV", *BROADCAST_FUNCTIONS, "SQUARED_DIFFERENCE", "PRELU", *FLOAT_ONLY_UNARY
)
declare_facts(KernelFacts(), "L2_NORMALIZATION", "BROADCAST_ARGS")


@facts_for("BATCH_MATMUL")
def batch_matmul_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    lhs = graph.tensors[op.inputs[0]].shape
    depth = lhs[-2] if op.options.get("adj_x") else lhs[-1]
    return KernelFacts(macs=graph.tensors[op.outputs[0]].num_elements * depth)
