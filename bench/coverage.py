"""Operator coverage: mcu-planner against TensorFlow Lite Micro, per dtype, measured.

TFLM's builtin operators are read from the installed `tflite-micro` package:
the `tflite::micro::Register_<OP>()` symbols its Python interpreter
(`_runtime.so`) exports (`nm -DC`), kept where <OP> is a name of the schema's
BuiltinOperator enum (the rest are custom or signal ops).

For every builtin that we or TFLM have, a one-operator model is built per dtype
variant (float32; int8; uint8; int16 = 16x8, int16 activations with int8
weights; hybrid = float activations with int8 weights, only for the ops that
have such a kernel; int32/bool for ops whose data is only that) with
mcu_planner_testing.builder, and then

* ours: the model goes through the pipeline to C (`generate_for_model`); exit 4
  (UnsupportedModel) is "-".
* TFLM: `tflite_micro`'s Python interpreter loads it and invokes on zero inputs.
* LiteRT: the reference interpreter (BUILTIN_REF) does the same; a variant it
  refuses is marked, and "n/a" when no tool runs it.

TFLM and LiteRT run in a child process (a kernel that aborts takes the child
with it and is recorded as "crash").  Writes bench/results/coverage.md;
`--docs` also rewrites docs/operators.md's operator table (between
<!-- operators:begin --> and <!-- operators:end -->) from the same run.

    python bench/coverage.py [--docs] [--ops ADD,CONV_2D] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcu_planner.errors import McuPlanError  # noqa: E402
from mcu_planner.frontend.reader import BUILTIN_CODES  # noqa: E402
from mcu_planner_testing.builder import (  # noqa: E402
    NUMPY_DTYPES,
    ModelBuilder,
    if_model,
    int32_bias,
    lstm_model,
    per_channel_int8_weights,
    while_model,
)
from mcu_planner_testing.shared import provenance_lines  # noqa: E402

DTYPES = ("float32", "int8", "uint8", "int16", "hybrid", "int32/bool")
README_BEGIN, README_END = "<!-- operators:begin -->", "<!-- operators:end -->"

# Activation quantization per dtype: about [-4, 4).
ACTIVATION_QUANT = {"int8": (1 / 32, 0), "uint8": (1 / 32, 128), "int16": (1 / 8192, 0)}
# Ops whose quantized output TFLite fixes (scale, zero point) per dtype.
FIXED_OUTPUT_QUANT = {
    "LOGISTIC": {"int8": (1 / 256, -128), "uint8": (1 / 256, 0), "int16": (1 / 32768, 0)},
    "SOFTMAX": {"int8": (1 / 256, -128), "uint8": (1 / 256, 0), "int16": (1 / 32768, 0)},
    "TANH": {"int8": (1 / 128, 0), "uint8": (1 / 128, 128), "int16": (1 / 32768, 0)},
    "LOG_SOFTMAX": {"int8": (16 / 256, 127), "uint8": (16 / 256, 255), "int16": (16 / 32768, 32767)},
    "L2_NORMALIZATION": {"int8": (1 / 128, 0), "uint8": (1 / 128, 128), "int16": (1 / 32768, 0)},
}


class NoSuchVariant(Exception):
    """The op has no kernel of this dtype in TFLite's schema of things (not measured)."""


class OneOp:
    """A model of one operator (sometimes with a helper op, named in `note`)
    in dtype variant `variant`: graph inputs are activations of that dtype."""

    def __init__(self, opcode: str, variant: str, constant_inputs: bool = False):
        self.opcode, self.variant = opcode, variant
        # Every would-be graph input a constant: the op can be computed at generation time.
        self.constant_inputs = constant_inputs
        self.mb = ModelBuilder(f"coverage: {opcode} {variant}")
        self.rng = np.random.default_rng(0)
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        if variant == "hybrid":
            self.dtype = "float32"
        elif variant == "int32/bool":
            self.dtype = "int32"
        else:
            self.dtype = variant

    @property
    def quantized(self) -> bool:
        return self.dtype in ACTIVATION_QUANT

    def act_quant(self, dtype: str | None = None, opcode: str | None = None):
        dtype = dtype or self.dtype
        if dtype not in ACTIVATION_QUANT:
            return None
        fixed = FIXED_OUTPUT_QUANT.get(opcode or "", {})
        return fixed.get(dtype, ACTIVATION_QUANT[dtype])

    def input(self, shape, dtype: str | None = None) -> int:
        dtype = dtype or self.dtype
        if self.constant_inputs:
            # Ones (as real values): valid indices, divisors and logarithms alike.
            if dtype in ACTIVATION_QUANT:
                scale, zero = self.act_quant(dtype)
                return self.const(np.full(shape, round(1 / scale) + zero, dtype), dtype, (scale, zero))
            return self.const(np.ones(shape, NUMPY_DTYPES[dtype]), dtype)
        t = self.mb.add_tensor(shape, dtype, self.act_quant(dtype))
        self.inputs.append(t)
        return t

    def const(self, values, dtype: str, quant=None) -> int:
        values = np.asarray(values)
        return self.mb.add_tensor(values.shape, dtype, quant, data=values)

    def ints(self, values) -> int:
        return self.const(np.asarray(values, dtype=np.int32), "int32")

    def data_const(self, shape, low: float = -2.0, high: float = 2.0) -> int:
        """A constant of the activation dtype (second operand of a binary op)."""
        values = self.rng.uniform(low, high, size=shape)
        if not self.quantized:
            return self.const(values.astype(np.float32), self.dtype)
        scale, zero = self.act_quant()
        info = np.iinfo(self.dtype)
        q = np.clip(np.round(values / scale) + zero, info.min, info.max).astype(self.dtype)
        return self.const(q, self.dtype, (scale, zero))

    def tensor(self, shape, dtype: str | None = None, opcode: str | None = None) -> int:
        dtype = dtype or self.dtype
        return self.mb.add_tensor(shape, dtype, self.act_quant(dtype, opcode or self.opcode))

    def op(
        self,
        inputs,
        out_shape,
        options=None,
        out_dtype: str | None = None,
        *,
        output: int | None = None,
        opcode: str | None = None,
        final: bool = True,
    ) -> int:
        y = output if output is not None else self.tensor(out_shape, out_dtype, opcode)
        self.mb.add_op(opcode or self.opcode, inputs, (y,), options)
        if final:
            self.outputs.append(y)
        return y

    def weights(self, shape, axis: int):
        """int8 symmetric per-channel weights (uint8 models: uint8 per-tensor,
        zero point 128, as the TF1 converter wrote them)."""
        w, wq = per_channel_int8_weights(self.rng, shape, axis, 0.5)
        if self.dtype == "uint8":
            scale = float(np.float32(max(wq.scales) * 2))
            q = np.clip(np.round(w * np.asarray(wq.scales).max() / scale) + 128, 0, 255).astype(np.uint8)
            return self.const(q, "uint8", (scale, 128)), (scale,)
        if self.dtype == "float32" and self.variant != "hybrid":
            real = (w.astype(np.float32) * np.float32(wq.scales[0])).astype(np.float32)
            return self.const(real, "float32"), None
        quant = {"scales": wq.scales, "zero_points": wq.zero_points, "axis": wq.axis}
        return self.const(w, "int8", quant), wq.scales

    def bias(self, channels: int, weight_scales) -> int:
        if weight_scales is None or self.variant == "hybrid":
            return self.const(self.rng.normal(0, 0.1, channels).astype(np.float32), "float32")
        scales = list(weight_scales) * (channels if len(weight_scales) == 1 else 1)
        dtype = "int64" if self.dtype == "int16" else "int32"
        values, q = int32_bias(self.rng, self.act_quant()[0], scales, 0.1, dtype=dtype)
        return self.const(values, dtype, {"scales": q.scales, "zero_points": q.zero_points})

    def build(self) -> bytes:
        self.mb.set_io(self.inputs, self.outputs)
        return self.mb.build()


# -- recipes: one function per opcode, building its model in OneOp --------------------------------

Recipe = Callable[[OneOp], None]
RECIPES: dict[str, Recipe] = {}
# Variants each recipe covers (default: float32, int8, uint8, int16).
VARIANTS: dict[str, tuple[str, ...]] = {}
QUANTIZED_AND_FLOAT = ("float32", "int8", "uint8", "int16")
WEIGHTED_HYBRID = QUANTIZED_AND_FLOAT + ("hybrid",)
X = (1, 4, 4, 2)


def recipe(*opcodes: str, variants: tuple[str, ...] = QUANTIZED_AND_FLOAT):
    def wrap(fn: Recipe) -> Recipe:
        for opcode in opcodes:
            RECIPES[opcode] = fn
            VARIANTS[opcode] = variants
        return fn

    return wrap


UNARY_OPTIONS = {"LEAKY_RELU": {"alpha": 0.2}, "SOFTMAX": {"beta": 1.0}, "GELU": {"approximate": False}}


@recipe(
    "ABS",
    "CEIL",
    "COS",
    "ELU",
    "EXP",
    "FLOOR",
    "GELU",
    "HARD_SWISH",
    "LEAKY_RELU",
    "LOG",
    "LOGISTIC",
    "LOG_SOFTMAX",
    "NEG",
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "ROUND",
    "RSQRT",
    "SIN",
    "SQRT",
    "SQUARE",
    "TANH",
    "SOFTMAX",
    "L2_NORMALIZATION",
    "ZEROS_LIKE",
    "SIGN",
    "LOCAL_RESPONSE_NORMALIZATION",
)
def _unary(m: OneOp) -> None:
    m.op((m.input(X),), X, UNARY_OPTIONS.get(m.opcode))


@recipe("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW", "ATAN2")
def _binary(m: OneOp) -> None:
    m.op((m.input(X), m.input(X)), X)


@recipe("DIV", "FLOOR_DIV", "FLOOR_MOD")
def _divide(m: OneOp) -> None:
    """By a constant away from zero (the kernels refuse a zero divisor, and the inputs are zeros)."""
    m.op((m.input(X), m.data_const(X, low=1.0, high=2.0)), X)


@recipe("ADD_N")
def _add_n(m: OneOp) -> None:
    m.op((m.input(X), m.input(X), m.input(X)), X)


@recipe("PRELU")
def _prelu(m: OneOp) -> None:
    m.op((m.input(X), m.data_const((1, 1, 2))), X)


@recipe("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL")
def _compare(m: OneOp) -> None:
    m.op((m.input(X), m.input(X)), X, out_dtype="bool")


@recipe("LOGICAL_AND", "LOGICAL_OR", variants=("int32/bool",))
def _logical_binary(m: OneOp) -> None:
    m.op((m.input(X, "bool"), m.input(X, "bool")), X, out_dtype="bool")


@recipe("LOGICAL_NOT", variants=("int32/bool",))
def _logical_not(m: OneOp) -> None:
    m.op((m.input(X, "bool"),), X, out_dtype="bool")


@recipe("SELECT", "SELECT_V2")
def _select(m: OneOp) -> None:
    m.op((m.input(X, "bool"), m.input(X), m.input(X)), X)


@recipe("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD")
def _reduce(m: OneOp) -> None:
    m.op((m.input(X), m.ints([1, 2])), (1, 1, 1, 2), {"keep_dims": True})


@recipe("REDUCE_ANY", "REDUCE_ALL", variants=("int32/bool",))
def _reduce_bool(m: OneOp) -> None:
    m.op((m.input(X, "bool"), m.ints([1, 2])), (1, 1, 1, 2), {"keep_dims": True}, out_dtype="bool")


@recipe("ARG_MAX", "ARG_MIN")
def _arg(m: OneOp) -> None:
    m.op((m.input(X), m.ints([3])), (1, 4, 4), {"output_type": "INT32"}, out_dtype="int32")


@recipe("CUMSUM")
def _cumsum(m: OneOp) -> None:
    m.op((m.input(X), m.ints(2)), X)


@recipe("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
def _pool(m: OneOp) -> None:
    options = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}
    m.op((m.input(X),), (1, 2, 2, 2), options)


@recipe("CONV_2D", variants=WEIGHTED_HYBRID)
def _conv(m: OneOp) -> None:
    w, scales = m.weights((3, 3, 3, 2), 0)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    m.op((m.input(X), w, m.bias(3, scales)), (1, 4, 4, 3), options)


@recipe("DEPTHWISE_CONV_2D", variants=WEIGHTED_HYBRID)
def _depthwise(m: OneOp) -> None:
    w, scales = m.weights((1, 3, 3, 2), 3)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}
    m.op((m.input(X), w, m.bias(2, scales)), X, options)


@recipe("FULLY_CONNECTED", variants=WEIGHTED_HYBRID)
def _fully_connected(m: OneOp) -> None:
    w, scales = m.weights((3, 8), 0)
    m.op((m.input((2, 8)), w, m.bias(3, scales)), (2, 3))


@recipe("TRANSPOSE_CONV")
def _transpose_conv(m: OneOp) -> None:
    w, scales = m.weights((3, 3, 3, 2), 0)
    options = {"padding": "SAME", "stride_h": 2, "stride_w": 2}
    m.op((m.ints([1, 8, 8, 3]), w, m.input(X), m.bias(3, scales)), (1, 8, 8, 3), options)


@recipe("BATCH_MATMUL")
def _batch_matmul(m: OneOp) -> None:
    m.op((m.input((1, 2, 3)), m.input((1, 3, 4))), (1, 2, 4))


@recipe("SVDF", variants=WEIGHTED_HYBRID)
def _svdf(m: OneOp) -> None:
    batch, size, units, rank, memory = 1, 8, 4, 1, 3
    filters = units * rank
    x = m.input((batch, size))
    if m.dtype == "float32":
        wf = m.weights((filters, size), 0)[0] if m.variant == "hybrid" else m.data_const((filters, size))
        wt = m.weights((filters, memory), 0)[0] if m.variant == "hybrid" else m.data_const((filters, memory))
        bias = m.const(np.zeros(units, np.float32), "float32")
        state = m.mb.add_tensor((batch, filters * memory), "float32", is_variable=True)
    elif m.dtype == "int8":
        wf = m.const(m.rng.integers(-127, 128, (filters, size)).astype(np.int8), "int8", (0.01, 0))
        wt = m.const(m.rng.integers(-2000, 2001, (filters, memory)).astype(np.int16), "int16", (0.001, 0))
        bias = m.const(np.zeros(units, np.int32), "int32", (1e-5, 0))
        state = m.mb.add_tensor((batch, filters * memory), "int16", (0.01, 0), is_variable=True)
    else:
        raise NoSuchVariant(f"SVDF {m.variant}")
    # TFLite's integer SVDF takes a fused RELU only.
    activation = "RELU" if m.dtype == "int8" else "NONE"
    m.op((x, wf, wt, bias, state), (batch, units), {"rank": rank, "fused_activation_function": activation})


@recipe("UNIDIRECTIONAL_SEQUENCE_LSTM", variants=("float32", "int8"))
def _lstm(m: OneOp) -> None:
    m.built = lstm_model(m.dtype)


@recipe("RESHAPE")
def _reshape(m: OneOp) -> None:
    m.op((m.input(X), m.ints([1, 32])), (1, 32), {"new_shape": [1, 32]})


@recipe("SQUEEZE")
def _squeeze(m: OneOp) -> None:
    m.op((m.input((1, 4, 1, 2)),), (1, 4, 2), {"squeeze_dims": [2]})


@recipe("EXPAND_DIMS")
def _expand_dims(m: OneOp) -> None:
    m.op((m.input(X), m.ints([1])), (1, 1, 4, 4, 2))


@recipe("TRANSPOSE")
def _transpose(m: OneOp) -> None:
    m.op((m.input(X), m.ints([0, 3, 1, 2])), (1, 2, 4, 4))


@recipe("PAD", "PADV2", "MIRROR_PAD")
def _pad(m: OneOp) -> None:
    inputs = [m.input(X), m.ints([[0, 0], [1, 1], [1, 1], [0, 0]])]
    options = {"mode": "REFLECT"} if m.opcode == "MIRROR_PAD" else None
    if m.opcode == "PADV2":
        inputs.append(m.data_const(()))
    m.op(inputs, (1, 6, 6, 2), options)


@recipe("CONCATENATION")
def _concat(m: OneOp) -> None:
    m.op((m.input(X), m.input(X)), (1, 4, 4, 4), {"axis": 3})


@recipe("PACK")
def _pack(m: OneOp) -> None:
    m.op((m.input((4, 2)), m.input((4, 2))), (2, 4, 2), {"values_count": 2, "axis": 0})


@recipe("UNPACK")
def _unpack(m: OneOp) -> None:
    x = m.input((2, 4, 2))
    a, b = m.tensor((4, 2)), m.tensor((4, 2))
    m.mb.add_op("UNPACK", (x,), (a, b), {"num": 2, "axis": 0})
    m.outputs += [a, b]


@recipe("SPLIT", "SPLIT_V")
def _split(m: OneOp) -> None:
    x = m.input(X)
    a, b = m.tensor((1, 4, 4, 1)), m.tensor((1, 4, 4, 1))
    if m.opcode == "SPLIT":
        m.mb.add_op("SPLIT", (m.ints(3), x), (a, b), {"num_splits": 2})
    else:
        m.mb.add_op("SPLIT_V", (x, m.ints([1, 1]), m.ints(3)), (a, b), {"num_splits": 2})
    m.outputs += [a, b]


@recipe("SLICE")
def _slice(m: OneOp) -> None:
    m.op((m.input(X), m.ints([0, 1, 1, 0]), m.ints([1, 2, 2, 2])), (1, 2, 2, 2))


@recipe("STRIDED_SLICE")
def _strided_slice(m: OneOp) -> None:
    m.op((m.input(X), m.ints([0, 0, 0, 0]), m.ints([1, 4, 4, 2]), m.ints([1, 2, 2, 1])), (1, 2, 2, 2))


@recipe("GATHER")
def _gather(m: OneOp) -> None:
    m.op((m.input((4, 3)), m.ints([2, 0])), (2, 3), {"axis": 0})


@recipe("GATHER_ND")
def _gather_nd(m: OneOp) -> None:
    m.op((m.input((4, 3)), m.ints([[2], [0]])), (2, 3))


@recipe("EMBEDDING_LOOKUP")
def _embedding_lookup(m: OneOp) -> None:
    m.op((m.input((2,), "int32"), m.data_const((4, 3))), (2, 3))


@recipe("BROADCAST_TO")
def _broadcast_to(m: OneOp) -> None:
    m.op((m.input((1, 1, 4, 2)), m.ints([1, 3, 4, 2])), (1, 3, 4, 2))


@recipe("TILE")
def _tile(m: OneOp) -> None:
    m.op((m.input(X), m.ints([1, 2, 1, 1])), (1, 8, 4, 2))


@recipe("REVERSE_V2")
def _reverse(m: OneOp) -> None:
    m.op((m.input(X), m.ints([1])), X)


@recipe("DEPTH_TO_SPACE")
def _depth_to_space(m: OneOp) -> None:
    m.op((m.input((1, 2, 2, 4)),), (1, 4, 4, 1), {"block_size": 2})


@recipe("SPACE_TO_DEPTH")
def _space_to_depth(m: OneOp) -> None:
    m.op((m.input(X),), (1, 2, 2, 8), {"block_size": 2})


@recipe("BATCH_TO_SPACE_ND")
def _batch_to_space(m: OneOp) -> None:
    m.op((m.input((4, 2, 2, 1)), m.ints([2, 2]), m.ints([[0, 0], [0, 0]])), (1, 4, 4, 1))


@recipe("SPACE_TO_BATCH_ND")
def _space_to_batch(m: OneOp) -> None:
    m.op((m.input((1, 4, 4, 1)), m.ints([2, 2]), m.ints([[0, 0], [0, 0]])), (4, 2, 2, 1))


@recipe("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR")
def _resize(m: OneOp) -> None:
    m.op((m.input(X), m.ints([8, 8])), (1, 8, 8, 2))


@recipe("SHAPE")
def _shape(m: OneOp) -> None:
    """SHAPE feeding a RESHAPE, as converters emit it (a SHAPE graph output has no use)."""
    x = m.input(X)
    s = m.op((x,), (4,), {"out_type": "INT32"}, out_dtype="int32", final=False)
    m.op((x, s), X, opcode="RESHAPE")


@recipe("RANK")
def _rank(m: OneOp) -> None:
    m.op((m.input(X),), (), out_dtype="int32")


@recipe("RANGE", variants=("int32/bool",))
def _range(m: OneOp) -> None:
    """0 .. limit (the input; 1 when it is a constant)."""
    m.op((m.ints(0), m.input((), "int32"), m.ints(1)), (1,), out_dtype="int32")


@recipe("FILL")
def _fill(m: OneOp) -> None:
    m.op((m.ints([1, 4, 4, 2]), m.input(())), X)


@recipe("CAST")
def _cast(m: OneOp) -> None:
    if m.quantized:
        raise NoSuchVariant("CAST converts raw values, it has no quantized variant")
    m.op((m.input(X),), X, out_dtype="int32")


@recipe("QUANTIZE", variants=("int8", "uint8", "int16"))
def _quantize(m: OneOp) -> None:
    """float32 -> the variant's dtype (the converter's input QUANTIZE)."""
    m.op((m.input(X, "float32"),), X)


@recipe("DEQUANTIZE", variants=("int8", "uint8", "int16"))
def _dequantize(m: OneOp) -> None:
    m.op((m.input(X),), X, out_dtype="float32")


@recipe("DYNAMIC_UPDATE_SLICE")
def _dynamic_update_slice(m: OneOp) -> None:
    m.op((m.input(X), m.input((1, 2, 2, 2)), m.ints([0, 1, 1, 0])), X)


@recipe("BROADCAST_ARGS", variants=("int32/bool",))
def _broadcast_args(m: OneOp) -> None:
    m.op((m.input((2,), "int32"), m.input((2,), "int32")), (2,), out_dtype="int32")


@recipe("IF", variants=("float32", "int8"))
def _if(m: OneOp) -> None:
    """The builder's IF model: ADD or MUL of two inputs (tests/test_control_flow.py)."""
    m.built = if_model(m.variant)


@recipe("WHILE", variants=("float32", "int8", "int32/bool"))
def _while(m: OneOp) -> None:
    """The builder's WHILE model: a counter, an accumulator and a Fibonacci pair."""
    m.built = while_model("int32" if m.variant == "int32/bool" else m.variant)


# Builtins that need subgraphs, resource variables or a custom encoding: not
# measured by a one-op model.
NOT_MEASURED = {
    "CALL_ONCE": "control flow (subgraphs)",
    "VAR_HANDLE": "resource variables",
    "READ_VARIABLE": "resource variables",
    "ASSIGN_VARIABLE": "resource variables",
}

# Variants TFLite has that no recipe builds yet: "not measured" in their cell.
NOT_MEASURED_VARIANTS = {
    ("UNIDIRECTIONAL_SEQUENCE_LSTM", "int16"): "lstm_model builds float32 and int8 LSTMs only",
    ("UNIDIRECTIONAL_SEQUENCE_LSTM", "hybrid"): "lstm_model builds float32 and int8 LSTMs only",
}


# -- TFLM's builtins ------------------------------------------------------------------------


def ours_opcodes() -> set[str]:
    """Every opcode we lower, or compute at generation time (folding)."""
    from mcu_planner.lowering import load_all

    try:
        from mcu_planner.frontend.folding import FOLDERS
    except ImportError:  # before generation-time folding
        FOLDERS = {}
    return (set(load_all()) | set(FOLDERS)) - {"CUSTOM"}


def tflm_runtime_library() -> Path:
    import tflite_micro

    return Path(tflite_micro.__file__).parent / "python" / "tflite_micro" / "_runtime.so"


def tflm_builtins() -> tuple[list[str], list[str], str]:
    """(builtins TFLM registers, its other Register_ names, how they were read)."""
    library = tflm_runtime_library()
    symbols = subprocess.run(["nm", "-DC", str(library)], check=True, capture_output=True, text=True).stdout
    registered = sorted(set(re.findall(r"tflite::micro::Register_([A-Z0-9_]+)\(\)", symbols)))
    builtins = [name for name in registered if name in BUILTIN_CODES]
    others = [name for name in registered if name not in BUILTIN_CODES]
    how = (
        f"`nm -DC {library.relative_to(library.parents[3])}`: {len(registered)} `tflite::micro::Register_<OP>()` "
        f"symbols, {len(builtins)} of them BuiltinOperator names (not builtins: {', '.join(others)})"
    )
    return builtins, others, how


# -- measuring ------------------------------------------------------------------------------


def build_variant(opcode: str, variant: str, constant_inputs: bool = False) -> bytes | None:
    """The model of `opcode` in `variant`, or None when the op has no such
    variant (with constant_inputs: every input a constant)."""
    if variant not in VARIANTS.get(opcode, ()):
        return None
    m = OneOp(opcode, variant, constant_inputs)
    try:
        RECIPES[opcode](m)
    except NoSuchVariant:
        return None
    return getattr(m, "built", None) or m.build()


def ours_runs(model: bytes) -> tuple[bool, str]:
    """Whether mcu-planner generates C for `model` (False: exit 4, with why)."""
    from mcu_planner.pipeline import generate_for_model

    try:
        generate_for_model(model, name="coverage", time_limit=1.0)
    except McuPlanError as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def _run_tflm(model: bytes) -> None:
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    index = 0
    while True:
        try:
            detail = interpreter.get_input_details(index)
        except Exception:  # noqa: BLE001 - no more inputs
            break
        interpreter.set_input(np.zeros(detail["shape"], detail["dtype"]), index)
        index += 1
    interpreter.invoke()


def _run_reference(model: bytes) -> None:
    from mcu_planner.targets.reference import ReferenceModel

    reference = ReferenceModel(model)
    reference.run([np.zeros(d["shape"], d["dtype"]) for d in reference.input_details])


def worker(tool: str, directory: Path, start: int) -> None:
    """Runs every model in `directory` (sorted) from `start` in `tool`,
    printing `index<TAB>yes|-<TAB>why` per model as soon as it is known."""
    run = _run_tflm if tool == "tflm" else _run_reference
    files = sorted(directory.glob("*.tflite"))
    for index in range(start, len(files)):
        try:
            run(files[index].read_bytes())
            result, why = "yes", ""
        except Exception as exc:  # noqa: BLE001 - any refusal is the measurement
            result, why = "-", " ".join(str(exc).split())[:200]
        print(f"{index}\t{result}\t{why}", flush=True)


def run_in_children(tool: str, directory: Path, count: int) -> list[tuple[str, str]]:
    """(result, why) per model, from worker processes restarted past any crash."""
    results: list[tuple[str, str] | None] = [None] * count
    start = 0
    while start < count:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", tool, str(directory), str(start)],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        for line in proc.stdout.splitlines():
            index, result, why = (line.split("\t") + ["", ""])[:3]
            results[int(index)] = (result, why)
        done = [i for i in range(count) if results[i] is not None]
        next_start = (max(done) + 1) if done else 0
        if next_start < count and proc.returncode != 0 or next_start == start:
            crash = " ".join(proc.stderr.split()[-12:])
            results[next_start] = ("-", f"crash (exit {proc.returncode}): {crash}"[:200])
            next_start += 1
        start = next_start
    return [r or ("-", "not run") for r in results]


def ours_bit_exact(model: bytes, inputs: int) -> tuple[bool | None, str]:
    """Whether the generated C, built on the host, matches the reference
    (`mcu-plan check --inputs N`: bit-exact; float outputs within its
    tolerance); None when the reference refuses the model."""
    from mcu_planner.targets.check import check_model
    from mcu_planner.targets.reference import ReferenceModel, ReferenceRefused

    try:
        ReferenceModel(model)
    except Exception as exc:  # noqa: BLE001 - the reference has no kernel for it
        return None, f"reference refuses: {' '.join(str(exc).split())[:200]}"
    try:
        report = check_model(model, inputs=inputs, raise_on_mismatch=False, time_limit=1.0)
    except (RuntimeError, ReferenceRefused) as exc:  # the reference refuses the random inputs (a negative SQRT, ...)
        return None, f"reference refuses the random inputs: {' '.join(str(exc).split())[:200]}"
    except Exception as exc:  # noqa: BLE001 - a build failure is a finding, not the end of the run
        return False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return report.passed, report.summary() + (f"; {report.mismatch_message()}" if not report.passed else "")


def measure(
    opcodes: list[str], with_tflm: bool = True, check_inputs: int = 0
) -> dict[tuple[str, str], dict[str, object]]:
    """{(opcode, variant): {"ours": bool, "tflm": bool|None, "reference": bool|None, "why": ...}}
    for every variant a recipe builds; with check_inputs, each variant we
    generate is also built and compared with the reference on that many
    random input sets ("exact": bool)."""
    cells: dict[tuple[str, str], dict[str, object]] = {}
    models: list[tuple[tuple[str, str], bytes]] = []
    for opcode in opcodes:
        for variant in DTYPES:
            model = build_variant(opcode, variant) if opcode in RECIPES else None
            if model is None:
                continue
            ours, why = ours_runs(model)
            cells[(opcode, variant)] = {"ours": ours, "ours_why": why, "tflm": None, "reference": None}
            if not ours and opcode != "UNIDIRECTIONAL_SEQUENCE_LSTM":
                # Computed at generation time when its inputs are constants (or shapes)?
                folded_model = build_variant(opcode, variant, constant_inputs=True)
                cells[(opcode, variant)]["folded"] = folded_model is not None and ours_runs(folded_model)[0]
            if ours and check_inputs:
                cells[(opcode, variant)]["exact"], cells[(opcode, variant)]["exact_why"] = ours_bit_exact(
                    model, check_inputs
                )
            models.append(((opcode, variant), model))
    if with_tflm and models:
        with tempfile.TemporaryDirectory() as tmp:
            for i, (_, model) in enumerate(models):
                (Path(tmp) / f"{i:05d}.tflite").write_bytes(model)
            for tool in ("tflm", "reference"):
                for (key, _), (result, why) in zip(models, run_in_children(tool, Path(tmp), len(models)), strict=True):
                    cells[key][tool] = result == "yes"
                    cells[key][f"{tool}_why"] = why
    return cells


# -- writing --------------------------------------------------------------------------------


def supported(cell: dict) -> bool:
    """Ours runs the variant: as a kernel, or computed at generation time from constant inputs."""
    return bool(cell["ours"] or cell.get("folded"))


def cell_text(cell: dict | None) -> str:
    if cell is None:
        return ""
    ours, tflm, reference = supported(cell), cell["tflm"], cell["reference"]
    if reference is False and not ours and not tflm:
        return "n/a"
    ours_text = "yes" if cell["ours"] else "folded" if cell.get("folded") else "-"
    if cell["ours"] and cell.get("exact") is False:
        ours_text = "differs"
    text = f"{ours_text} / {'yes' if tflm else '-'}"
    return text + (" (no ref)" if reference is False else "")


def totals(cells: dict, opcodes: list[str]) -> list[str]:
    rows = ["| | ops | op-dtype pairs |", "|---|---:|---:|"]

    def count(predicate) -> tuple[int, int]:
        pairs = [key for key, c in cells.items() if predicate(c)]
        return len({op for op, _ in pairs}), len(pairs)

    for label, predicate in (
        ("ours", supported),
        ("ours, only folded (constant inputs)", lambda c: supported(c) and not c["ours"]),
        ("TFLM", lambda c: c["tflm"]),
        ("both", lambda c: supported(c) and c["tflm"]),
        ("ours only", lambda c: supported(c) and not c["tflm"]),
        ("TFLM only", lambda c: c["tflm"] and not supported(c)),
    ):
        ops, pairs = count(predicate)
        rows.append(f"| {label} | {ops} | {pairs} |")
    rows += ["", "| dtype | ours | TFLM | both | ours only | TFLM only |", "|---|---:|---:|---:|---:|---:|"]
    for variant in DTYPES:
        of = [c for (op, v), c in cells.items() if v == variant]
        ours = [supported(c) for c in of]
        tflm = [bool(c["tflm"]) for c in of]
        rows.append(
            f"| {variant} | {sum(ours)} | {sum(tflm)} | {sum(o and t for o, t in zip(ours, tflm, strict=True))} | "
            f"{sum(o and not t for o, t in zip(ours, tflm, strict=True))} | {sum(t and not o for o, t in zip(ours, tflm, strict=True))} |"
        )
    return rows


def coverage_markdown(
    cells: dict, opcodes: list[str], tflm: list[str], how: str, command: str, check_inputs: int = 0
) -> str:
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Operator coverage: mcu-planner vs TFLM, per dtype (measured)",
        "",
        f"`{command}`, {date}.",
        "",
        *provenance_lines([]),
        f"TFLM's builtins: {how}.",
        "",
        "Each cell is **ours / TFLM** for a one-operator model of that dtype built with `mcu_planner_testing.builder`: "
        "ours = `mcu-plan` generates C for it (else exit 4); TFLM = `tflite_micro`'s interpreter loads it and invokes "
        'on zero inputs. "(no ref)": LiteRT\'s reference kernels (BUILTIN_REF) refuse the model; "n/a": no tool runs '
        "it; empty: no such variant. int16 = the 16x8 scheme (int16 activations, int8 weights); hybrid = float "
        "activations with int8 weights; int32/bool for ops whose data is only that. "
        + (
            f'Every "yes" of ours was also built on the host and matched LiteRT\'s reference on {check_inputs} random '
            'input sets (`mcu-plan check`: bit-exact; float outputs within its tolerance); "differs": it generates '
            "but does not match."
            if check_inputs
            else 'A "yes" of ours says the op lowers (run with `--bit-exact N` to also build and compare each one).'
        ),
        "",
        "| operator | TFLM registers | " + " | ".join(DTYPES) + " |",
        "|---|---|" + "---|" * len(DTYPES),
    ]
    for opcode in opcodes:
        registered = "yes" if opcode in tflm else "-"
        if opcode not in RECIPES:
            lines.append(
                f"| {opcode} | {registered} | not measured: {NOT_MEASURED.get(opcode, 'no recipe')} |"
                + " |" * (len(DTYPES) - 1)
            )
            continue
        texts = [
            "not measured" if (opcode, v) in NOT_MEASURED_VARIANTS else cell_text(cells.get((opcode, v)))
            for v in DTYPES
        ]
        lines.append(f"| {opcode} | {registered} | " + " | ".join(texts) + " |")
    lines += ["", "## Totals", ""] + totals(cells, opcodes)
    lines += [
        "",
        '"folded": we exit 4 when the op reads a real activation but compute it at generation time when '
        "its inputs are constants (a model with every input made a constant generates).",
    ]
    missing = sorted({op for (op, _), c in cells.items() if c["tflm"] and not supported(c)})
    lines += ["", "## Where TFLM runs a variant and we exit 4", ""]
    for op in missing:
        variants = [v for v in DTYPES if (c := cells.get((op, v))) and c["tflm"] and not supported(c)]
        lines.append(f"- {op}: {', '.join(variants)}")
    differs = [(key, c) for key, c in cells.items() if c["ours"] and c.get("exact") is False]
    if differs:
        lines += ["", "## Generated but not matching the reference", ""]
        lines += [f"- {op} {variant}: {c['exact_why']}" for (op, variant), c in differs]
    unmeasured = [op for op in opcodes if op not in RECIPES]
    if unmeasured:
        lines += ["", f"Not measured (no one-op recipe): {', '.join(unmeasured)}."]
    for (op, variant), why in NOT_MEASURED_VARIANTS.items():
        lines.append(f"Not measured: {op} {variant} ({why}).")
    return "\n".join(lines) + "\n"


def readme_cell(cell: dict | None) -> str:
    if cell is None:
        return ""
    return "yes" if cell["ours"] else "folded" if cell.get("folded") else ""


def readme_table(cells: dict, opcodes: list[str]) -> str:
    """README's operator x dtype table: "yes" where we run the variant as a
    kernel, "folded" where only its constant-input form generates."""
    columns = DTYPES
    lines = [README_BEGIN, "", "| operator | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for opcode in opcodes:
        texts = [readme_cell(cells.get((opcode, v))) for v in columns]
        if any(texts):
            lines.append(f"| {opcode} | " + " | ".join(texts) + " |")
    lines += [
        "",
        "(Generated by `bench/coverage.py --docs` from one-operator models; TFLM alongside: "
        "[bench/results/coverage.md](../bench/results/coverage.md).)",
        "",
        README_END,
    ]
    return "\n".join(lines)


# The generated operator table's page.
OPERATORS_PAGE = REPO / "docs" / "operators.md"


def rewrite_readme(table: str, readme: Path = OPERATORS_PAGE) -> None:
    text = readme.read_text()
    start, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    readme.write_text(text[:start] + table + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated opcodes (default: all ours and TFLM's)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "coverage.md"))
    parser.add_argument(
        "--docs", "--readme", dest="docs", action="store_true", help="also rewrite docs/operators.md's operator table"
    )
    parser.add_argument(
        "--bit-exact",
        type=int,
        default=0,
        metavar="N",
        help="build each variant we generate and compare it with the reference on N input sets",
    )
    parser.add_argument("--worker", nargs=3, metavar=("TOOL", "DIR", "START"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), int(args.worker[2]))
        return 0

    tflm, _, how = tflm_builtins()
    ours_registered = ours_opcodes()
    opcodes = args.ops.split(",") if args.ops else sorted((set(tflm) | ours_registered) - {"CUSTOM"})
    cells = measure(opcodes, check_inputs=args.bit_exact)
    command = "python bench/coverage.py" + (" --docs" if args.docs else "") + (f" --ops {args.ops}" if args.ops else "")
    command += f" --bit-exact {args.bit_exact}" if args.bit_exact else ""
    Path(args.out).write_text(coverage_markdown(cells, opcodes, tflm, how, command, args.bit_exact))
    print(f"wrote {args.out}")
    if args.docs:
        rewrite_readme(readme_table(cells, opcodes))
        print(f"rewrote {OPERATORS_PAGE.relative_to(REPO)}'s operator table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
