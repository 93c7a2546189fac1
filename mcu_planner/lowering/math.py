"""Float math operators -> firmware/runtime/mcu_math.c.

Binary ops (DIV, POW, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, PRELU) broadcast
through elementwise.broadcast_walk, as ADD does; unary ops (EXP, LOG, SQRT,
RSQRT, SQUARE, ABS, NEG, float LOGISTIC / TANH, GELU) map element to element;
L2_NORMALIZATION normalises rows of the last dimension.  The expressions are
TFLite's reference ones (see mcu_math.c); MAXIMUM and MINIMUM also take int8,
whose reference compares the stored values.
"""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from . import KernelCall, NotLowerable, lowers
from .common import activation_params, elementwise_operands, input_tensor, kernel_call, output_tensor, require_dtype
from .elementwise import broadcast_walk

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
}

# Binary ops without a fused activation -> (function stem, dtypes it takes).
BROADCAST_FUNCTIONS = {
    "POW": ("mcu_pow", ("float32",)),
    "SQUARED_DIFFERENCE": ("mcu_squared_difference", ("float32",)),
    "MAXIMUM": ("mcu_maximum", ("float32", "int8")),
    "MINIMUM": ("mcu_minimum", ("float32", "int8")),
    "PRELU": ("mcu_prelu", ("float32",)),
}
TYPE_SUFFIX = {"float32": "f32", "int8": "s8"}


def _binary_operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor, Tensor]:
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise NotLowerable(f"{op.opcode} with {len(op.inputs)} inputs and {len(op.outputs)} outputs")
    a, b, out = input_tensor(op, graph, 0), input_tensor(op, graph, 1), output_tensor(op, graph)
    if not (a.dtype == b.dtype == out.dtype):
        raise NotLowerable(f"{op.opcode} mixing {a.dtype}, {b.dtype} -> {out.dtype}")
    return a, b, out


def _walk(op: Operator, a: Tensor, b: Tensor, out: Tensor) -> dict:
    dims, strides1, strides2, rank = broadcast_walk(op, a.shape, b.shape, out.shape)
    return {"rank": rank, "dims": dims, "input1_strides": strides1, "input2_strides": strides2}


@lowers("DIV")
def lower_div(op: Operator, graph: Graph) -> KernelCall:
    a, b, out = _binary_operands(op, graph)
    require_dtype(op, out, "float32")
    params = {**_walk(op, a, b, out), **activation_params(op, out)}
    return kernel_call(op, "mcu_div_f32", "mcu_binary_f32_params", params, SOURCES, inputs=2)


@lowers(*BROADCAST_FUNCTIONS)
def lower_broadcast(op: Operator, graph: Graph) -> KernelCall:
    a, b, out = _binary_operands(op, graph)
    stem, dtypes = BROADCAST_FUNCTIONS[op.opcode]
    require_dtype(op, out, *dtypes)
    if op.opcode == "PRELU" and tuple(out.shape) != tuple(a.shape):
        raise NotLowerable(f"PRELU whose alpha {b.shape} broadcasts the input {a.shape} to {out.shape}")
    function = f"{stem}_{TYPE_SUFFIX[out.dtype]}"
    return kernel_call(op, function, "mcu_broadcast_params", _walk(op, a, b, out), SOURCES, inputs=2)


@lowers(*(set(UNARY_FUNCTIONS) - {"LOGISTIC", "TANH"}))
def lower_unary(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    return kernel_call(op, UNARY_FUNCTIONS[op.opcode], "mcu_unary_f32_params", {"size": inp.num_elements}, SOURCES)


def lower_float_logistic_tanh(op: Operator, graph: Graph) -> KernelCall:
    """float32 LOGISTIC / TANH (activations.lower_lut, which owns these
    opcodes, hands the float variants here)."""
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    return kernel_call(op, UNARY_FUNCTIONS[op.opcode], "mcu_unary_f32_params", {"size": inp.num_elements}, SOURCES)


@lowers("GELU")
def lower_gelu(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    function = "mcu_gelu_approximate_f32" if op.options.get("approximate", False) else "mcu_gelu_f32"
    return kernel_call(op, function, "mcu_unary_f32_params", {"size": inp.num_elements}, SOURCES)


@lowers("L2_NORMALIZATION")
def lower_l2_normalization(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    require_dtype(op, inp, "float32")
    require_dtype(op, out, "float32")
    if not inp.shape or inp.shape != out.shape:
        raise NotLowerable(f"L2_NORMALIZATION from shape {inp.shape} to {out.shape}")
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise NotLowerable(f"L2_NORMALIZATION with fused {op.options['fused_activation_function']}")
    depth = inp.shape[-1]
    params = {"outer_size": inp.num_elements // depth if depth else 0, "depth": depth}
    return kernel_call(op, "mcu_l2_normalization_f32", "mcu_l2_normalization_f32_params", params, SOURCES)
