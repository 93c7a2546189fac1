"""Semantic validation: does a model that parsed also make sense?

The reader checks how a model is encoded; this module checks what it means,
between the reader and lifetimes, so that no later stage meets a graph that
cannot run, a quantization that divides by zero or a shape that makes a kernel
read past a buffer.  Every rule has a name; a violation is one InputError line
(exit 2) naming the op (index and opcode), the tensor and the rule:

    model.tflite: op 3 (CONV_2D), tensor 7 'bias': rule bias-length: 8 elements for 16 output channels

Four tables of rules, each easy to extend:

* GRAPH_RULES: the graph as a whole (op order, who writes what).
* TENSOR_RULES: every tensor an op or the graph uses (quantization).
* OPTION_RULES: every op's options, whatever its opcode.
* OP_RULES: per opcode, the input/output counts, ranks and shapes TFLite's
  Prepare insists on.  An opcode without an entry is never refused here:
  lowering decides whether it is supported (exit 4).

Derived constants (multipliers, shifts, offsets) are checked after lowering,
with the rest of each kernel call, by runtime_contract.check_kernel_call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from ..errors import InvalidModel, unsupported_model_error
from ..graph import Graph, Operator, Quantization, Tensor, operator_dtype_key
from ..quant import INT_RANGES
from .reader import options_table_for

# Quantized integer dtypes and their value ranges (zero points must lie inside).
ZERO_POINT_RANGES = {**INT_RANGES, "int4": (-8, 7), "int64": (-(2**63), 2**63 - 1)}
FLOAT_DTYPES = ("float32", "float16")
# TFLite stores strides, dilations and pool sizes in int32 fields but its
# kernels keep them in int16 (ConvParams, PoolParams).
INT16_MAX = 2**15 - 1


def printable(text: str, limit: int = 60) -> str:
    """A tensor name safe to put on one line of stderr."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


@dataclass(frozen=True)
class Context:
    graph: Graph
    label: str

    def fail(self, rule: str, detail: str, op: Operator | None = None, tensor: int | None = None) -> NoReturn:
        where = []
        if op is not None:
            where.append(f"op {op.index} ({op.opcode})")
        if tensor is not None and 0 <= tensor < len(self.graph.tensors):
            name = self.graph.tensors[tensor].name
            where.append(f"tensor {tensor}" + (f" '{printable(name)}'" if name else ""))
        prefix = (f"{self.label}: " if self.label else "") + (", ".join(where) + ": " if where else "")
        raise InvalidModel(f"{prefix}rule {rule}: {detail}")


# ---------------------------------------------------------------- graph rules


def _is_source(tensor: Tensor) -> bool:
    """Tensors that hold values before any op runs: constants, variables,
    and empty tensors (a zero-element constant has no buffer to mark it)."""
    return tensor.is_constant or tensor.is_variable or tensor.num_elements == 0


def rule_dag_in_order(ctx: Context) -> None:
    """The ops run in the given order: every tensor an op reads is a graph
    input, a constant, a variable or the output of an earlier op; no op
    writes its own input, a graph input, a constant or a tensor already
    written (which also rules out cycles)."""
    graph = ctx.graph
    writer: dict[int, int] = {}  # tensor -> the op writing it
    for op in graph.operators:
        for t in op.outputs:
            if t in writer:
                ctx.fail("written-once", f"already written by op {writer[t]}", op, t)
            writer[t] = op.index
    available = set(graph.inputs)
    for op in graph.operators:
        for t in op.inputs:
            if t < 0 or t in available or _is_source(graph.tensors[t]):
                continue
            if t in writer:
                ctx.fail(
                    "written-before-read",
                    f"read before op {writer[t]} writes it (ops out of order or in a cycle)",
                    op,
                    t,
                )
            ctx.fail("written-before-read", "read but never written (not a graph input, constant or variable)", op, t)
        for t in op.outputs:
            if t in op.inputs:
                ctx.fail("no-self-write", "the op writes its own input", op, t)
            if t in graph.inputs:
                ctx.fail("no-input-write", "the op writes a graph input", op, t)
            if graph.tensors[t].is_constant:
                ctx.fail("no-constant-write", "the op writes a constant", op, t)
            available.add(t)
    for t in graph.outputs:
        if t not in available and not _is_source(graph.tensors[t]):
            ctx.fail("output-written", "graph output that no op writes", tensor=t)


def rule_inputs_once(ctx: Context) -> None:
    """No tensor is listed twice as a graph input: the generated interface
    would have two input slots for one buffer, and a caller filling both with
    different data gets the last one only (as LiteRT does), so refuse it
    rather than run on half its input."""
    first: dict[int, int] = {}
    for position, t in enumerate(ctx.graph.inputs):
        if t in first:
            ctx.fail(
                "graph-input-once",
                f"listed as graph inputs {first[t]} and {position}: give each input its own tensor",
                tensor=t,
            )
        first[t] = position


GRAPH_RULES: list[Callable[[Context], None]] = [rule_dag_in_order, rule_inputs_once]


# ---------------------------------------------------------------- tensor rules


def rule_scales(ctx: Context, tensor: Tensor, q: Quantization) -> None:
    """Quantization scales are finite and > 0 (TFLite divides by them)."""
    for s in q.scales:
        if not (math.isfinite(s) and s > 0.0):
            ctx.fail("scale-positive", f"quantization scale {s!r} is not a finite positive number", tensor=tensor.index)


def rule_zero_points(ctx: Context, tensor: Tensor, q: Quantization) -> None:
    """Zero points lie in the range of the tensor's integer type."""
    if tensor.dtype not in ZERO_POINT_RANGES:
        return
    lo, hi = ZERO_POINT_RANGES[tensor.dtype]
    for z in q.zero_points:
        if not lo <= z <= hi:
            ctx.fail("zero-point-range", f"zero point {z} outside {tensor.dtype} [{lo}, {hi}]", tensor=tensor.index)


def rule_per_channel(ctx: Context, tensor: Tensor, q: Quantization) -> None:
    """Per-channel vectors have one entry per element of their axis, and the
    axis is one of the tensor's dimensions."""
    if len(q.scales) <= 1:
        return
    if not 0 <= q.axis < len(tensor.shape):
        ctx.fail(
            "quantized-dimension", f"quantized_dimension {q.axis} outside rank {len(tensor.shape)}", tensor=tensor.index
        )
    if tensor.shape[q.axis] != len(q.scales) or len(q.zero_points) != len(q.scales):
        ctx.fail(
            "per-channel-length",
            f"{len(q.scales)} scales / {len(q.zero_points)} zero points for dimension {q.axis} of {list(tensor.shape)}",
            tensor=tensor.index,
        )


# Each rule sees a quantized tensor and its quantization.
TENSOR_RULES: list[Callable[[Context, Tensor, Quantization], None]] = [rule_scales, rule_zero_points, rule_per_channel]


# ---------------------------------------------------------------- option rules


def rule_options_table(ctx: Context, op: Operator) -> None:
    """The options table is the one TFLite reads for the opcode (the
    interpreter reinterprets any other table's bytes)."""
    if op.opcode == "CUSTOM" or not op.options_tables:
        return
    expected = options_table_for(op.opcode)
    if expected is None:
        return  # an opcode whose table we do not know: lowering decides
    wrong = [t for t in op.options_tables if t != expected]
    if wrong:
        ctx.fail("options-table", f"carries {wrong[0]} but {op.opcode} takes {expected}", op)


# Option fields that are window sizes, strides or dilations: >= 1, within int16.
_WINDOW_OPTIONS = (
    "stride_h",
    "stride_w",
    "stride_d",
    "dilation_h_factor",
    "dilation_w_factor",
    "dilation_d_factor",
    "filter_height",
    "filter_width",
)


def rule_window_options(ctx: Context, op: Operator) -> None:
    """Strides, dilations and pool sizes are at least 1 and fit in int16."""
    if op.opcode == "CUSTOM":
        return
    for name in _WINDOW_OPTIONS:
        if name in op.options and not 1 <= op.options[name] <= INT16_MAX:
            ctx.fail("window-option-range", f"{name} = {op.options[name]} outside [1, {INT16_MAX}]", op)


def rule_finite_options(ctx: Context, op: Operator) -> None:
    """Float options (alpha, beta, ...) are finite numbers."""
    for name, value in op.options.items():
        if isinstance(value, float) and not math.isfinite(value):
            ctx.fail("finite-option", f"option {name} = {value!r}", op)


OPTION_RULES: list[Callable[[Context, Operator], None]] = [rule_options_table, rule_window_options, rule_finite_options]


# ---------------------------------------------------------------- per-op rules


class OpView:
    """An op's tensors, for the per-op rules."""

    def __init__(self, ctx: Context, op: Operator):
        self.ctx, self.op = ctx, op

    def fail(self, rule: str, detail: str, tensor: int | None = None) -> NoReturn:
        self.ctx.fail(rule, detail, self.op, tensor)

    def counts(self, inputs: tuple[int, int], outputs: tuple[int, int] = (1, 1)) -> None:
        n_in, n_out = len(self.op.inputs), len(self.op.outputs)
        if not inputs[0] <= n_in <= inputs[1]:
            want = inputs[0] if inputs[0] == inputs[1] else f"{inputs[0]} to {inputs[1]}"
            self.fail("input-count", f"{n_in} inputs, takes {want}")
        if not outputs[0] <= n_out <= outputs[1]:
            want = outputs[0] if outputs[0] == outputs[1] else f"{outputs[0]} to {outputs[1]}"
            self.fail("output-count", f"{n_out} outputs, takes {want}")
        for position in range(inputs[0]):
            if self.op.inputs[position] < 0:
                self.fail("input-count", f"required input {position} is absent")

    def input(self, position: int) -> Tensor | None:
        if position >= len(self.op.inputs) or self.op.inputs[position] < 0:
            return None
        return self.ctx.graph.tensors[self.op.inputs[position]]

    def required(self, position: int) -> Tensor:
        """An input the op cannot run without (counts() has refused its absence)."""
        tensor = self.input(position)
        if tensor is None:
            self.fail("input-count", f"required input {position} is absent")
        return tensor

    def output(self, position: int = 0) -> Tensor:
        return self.ctx.graph.tensors[self.op.outputs[position]]

    def rank(self, tensor: Tensor, *ranks: int) -> None:
        if len(tensor.shape) not in ranks:
            self.fail(
                "rank",
                f"rank {len(tensor.shape)} ({list(tensor.shape)}), takes {' or '.join(map(str, ranks))}",
                tensor.index,
            )

    def same_shape(self, a: Tensor, b: Tensor) -> None:
        if a.shape != b.shape:
            self.fail("same-shape", f"shape {list(b.shape)} differs from input shape {list(a.shape)}", b.index)

    def same_elements(self, a: Tensor, b: Tensor) -> None:
        if a.num_elements != b.num_elements:
            self.fail("element-count", f"{b.num_elements} elements, input has {a.num_elements}", b.index)

    def quantized(self, *tensors: Tensor | None) -> None:
        """Integer activations of an arithmetic op carry a scale."""
        for t in tensors:
            if (
                t is not None
                and t.dtype in ("int8", "uint8", "int16")
                and not (t.quantization and t.quantization.scales)
            ):
                self.fail("quantized-tensor", f"{t.dtype} tensor without quantization parameters", t.index)

    def constant_ints(self, tensor: Tensor | None) -> list[int] | None:
        if tensor is None or tensor.data is None or not tensor.is_constant or tensor.dtype not in ("int32", "int64"):
            return None
        return [int(v) for v in np.frombuffer(tensor.data, dtype="<i4" if tensor.dtype == "int32" else "<i8")]


def _window_output_size(padding: str, size: int, window: int, stride: int, dilation: int) -> int | None:
    from ..lowering.common import compute_out_size

    if padding not in ("SAME", "VALID"):
        return None
    return compute_out_size(padding, size, window, stride, dilation)


def _check_window_output(v: OpView, inp: Tensor, out: Tensor, window_h: int, window_w: int) -> None:
    o = v.op.options
    padding = o.get("padding", "SAME")
    sizes: list[int] = []
    for axis, window, stride, dilation in (
        (1, window_h, o.get("stride_h", 1), o.get("dilation_h_factor", 1)),
        (2, window_w, o.get("stride_w", 1), o.get("dilation_w_factor", 1)),
    ):
        size = _window_output_size(padding, inp.shape[axis], window, stride, dilation)
        if size is None:  # a padding TFLite does not know: lowering refuses it
            return
        # TFLite keeps each side's padding, with the odd unit of the
        # total, in int16 (PaddingValues); Prepare refuses a window whose
        # padding does not fit (a dilation of 32767 on a 4-wide filter).
        total = max(0, (size - 1) * stride + (window - 1) * dilation + 1 - inp.shape[axis])
        if total // 2 + total % 2 > INT16_MAX:
            v.fail(
                "window-padding",
                f"{padding} padding of {total} along {'height' if axis == 1 else 'width'} (dilation {dilation}, "
                f"stride {stride}): more than TFLite's int16 padding holds",
                inp.index,
            )
        sizes.append(size)
    if min(sizes) < 0 or (out.shape[0], out.shape[1], out.shape[2]) != (inp.shape[0], *sizes):
        v.fail(
            "window-output-shape",
            f"shape {list(out.shape)}, but {padding} padding of {list(inp.shape)} gives "
            f"{[inp.shape[0], *sizes, out.shape[3]]}",
            out.index,
        )


def _check_bias(v: OpView, bias: Tensor | None, channels: int) -> None:
    if bias is not None and bias.num_elements != channels:
        v.fail("bias-length", f"{bias.num_elements} elements for {channels} output channels", bias.index)


def _check_filter_channels(v: OpView, filt: Tensor, channels: int, axis: int) -> None:
    q = filt.quantization
    if q is not None and len(q.scales) > 1 and (len(q.scales) != channels or q.axis != axis):
        v.fail(
            "filter-per-channel",
            f"{len(q.scales)} scales along dimension {q.axis}, needs {channels} along {axis}",
            filt.index,
        )


def _window_weighted_tensors(v: OpView) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
    """Input, filter, optional bias and output of CONV_2D / DEPTHWISE_CONV_2D, all 4-D."""
    v.counts((2, 3))
    inp, filt, bias, out = v.required(0), v.required(1), v.input(2), v.output()
    for t in (inp, filt, out):
        v.rank(t, 4)
    if filt.shape[1] < 1 or filt.shape[2] < 1:
        v.fail("filter-shape", f"filter {list(filt.shape)} has an empty window", filt.index)
    return inp, filt, bias, out


def _window_weighted_outputs(
    v: OpView, inp: Tensor, filt: Tensor, bias: Tensor | None, out: Tensor, channels: int, filter_axis: int
) -> None:
    """What both convolutions require of their output side: `channels`
    output channels, one bias and one filter scale per channel (the filter's
    channels along `filter_axis`), the window's output size."""
    if out.shape[3] != channels:
        v.fail("output-channels", f"{out.shape[3]} channels, the filter makes {channels}", out.index)
    _check_bias(v, bias, channels)
    _check_filter_channels(v, filt, channels, filter_axis)
    _check_window_output(v, inp, out, filt.shape[1], filt.shape[2])
    v.quantized(inp, filt, out)


def _require_bias_slot(v: OpView, required: bool) -> None:
    """LiteRT's convolution Prepare: CONV_2D cannot run without a bias tensor
    (conv.cc's `has_bias` check, whatever the dtype), and neither convolution
    takes a bias slot marked absent (index -1), which GetInputSafe refuses as
    "optional but was expected"; DEPTHWISE_CONV_2D may leave the slot out."""
    if len(v.op.inputs) > 2 and v.op.inputs[2] < 0:
        v.fail("conv-bias", "its bias input is marked absent (-1); LiteRT requires a bias tensor there")
    if required and len(v.op.inputs) < 3:
        v.fail("conv-bias", "it has no bias input; LiteRT's CONV_2D requires one")


def op_conv_2d(v: OpView) -> None:
    inp, filt, bias, out = _window_weighted_tensors(v)
    _require_bias_slot(v, required=True)
    in_c, filter_c, out_c = inp.shape[3], filt.shape[3], filt.shape[0]
    if filter_c == 0 or in_c == 0 or in_c % filter_c:
        v.fail("filter-depth", f"filter depth {filter_c} does not divide input depth {in_c} into groups", filt.index)
    groups = in_c // filter_c
    if out_c % groups:
        v.fail("filter-depth", f"{out_c} filters do not split into {groups} groups", filt.index)
    _window_weighted_outputs(v, inp, filt, bias, out, out_c, 0)


def op_depthwise_conv_2d(v: OpView) -> None:
    inp, filt, bias, out = _window_weighted_tensors(v)
    _require_bias_slot(v, required=False)
    in_c, out_c = inp.shape[3], filt.shape[3]
    if filt.shape[0] != 1:
        v.fail("filter-shape", f"depthwise filter {list(filt.shape)} must have 1 as its first dimension", filt.index)
    if in_c == 0 or out_c % in_c:
        v.fail("filter-depth", f"filter depth {out_c} is not a multiple of input depth {in_c}", filt.index)
    multiplier = v.op.options.get("depth_multiplier", 0)
    if multiplier and in_c * multiplier != out_c:
        # TFLite derives the multiplier from the shapes; a disagreeing option
        # means the model was edited by hand.
        v.fail(
            "depth-multiplier",
            f"depth_multiplier {multiplier} x input depth {in_c} != filter depth {out_c}",
            filt.index,
        )
    _window_weighted_outputs(v, inp, filt, bias, out, out_c, 3)


def op_fully_connected(v: OpView) -> None:
    v.counts((2, 3), (1, 2))
    inp, filt, bias, out = v.required(0), v.required(1), v.input(2), v.output()
    v.rank(filt, 2)
    units, depth = filt.shape
    if depth == 0 or inp.num_elements % depth:
        v.fail(
            "weights-input-size", f"{inp.num_elements} input elements are not rows of the filter's {depth}", inp.index
        )
    batches = inp.num_elements // depth
    if out.num_elements != batches * units:
        v.fail(
            "output-size",
            f"{out.num_elements} elements, {batches} rows x {units} units make {batches * units}",
            out.index,
        )
    _check_bias(v, bias, units)
    _check_filter_channels(v, filt, units, 0)
    v.quantized(inp, filt, out)


def op_pool_2d(v: OpView) -> None:
    v.counts((1, 1))
    inp, out = v.required(0), v.output()
    v.rank(inp, 4)
    v.rank(out, 4)
    if out.shape[3] != inp.shape[3]:
        v.fail("output-channels", f"{out.shape[3]} channels, input has {inp.shape[3]}", out.index)
    _check_window_output(v, inp, out, v.op.options.get("filter_height", 1), v.op.options.get("filter_width", 1))
    v.quantized(inp, out)


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy / TFLite broadcasting of two shapes, None when they do not broadcast."""
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):  # both padded to `rank`
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def op_binary(v: OpView) -> None:
    v.counts((2, 2))
    a, b, out = v.required(0), v.required(1), v.output()
    shape = broadcast_shape(a.shape, b.shape)
    if shape is None:
        v.fail("broadcast", f"input shapes {list(a.shape)} and {list(b.shape)} do not broadcast", b.index)
    if shape != out.shape:
        v.fail("broadcast", f"shape {list(out.shape)}, the inputs broadcast to {list(shape)}", out.index)
    v.quantized(a, b, out)


def op_unary_same_shape(v: OpView) -> None:
    v.counts((1, 1))
    v.same_shape(v.required(0), v.output())
    v.quantized(v.required(0), v.output())


def op_same_elements(v: OpView) -> None:
    """RESHAPE, SQUEEZE, EXPAND_DIMS: the bytes are reinterpreted."""
    v.counts((1, 2))
    v.same_elements(v.required(0), v.output())


def op_reshape(v: OpView) -> None:
    """The new shape TFLite's RESHAPE computes with (the constant 1-D int32
    shape input, else the new_shape option) holds at most one -1, no other
    negative size, as many elements as the input, and is the output
    tensor's shape; the output is not a variable (TFLite's RESHAPE leaves
    such an output without data)."""
    op_same_elements(v)
    inp, out, shape_input = v.required(0), v.output(), v.input(1)
    if out.is_variable:
        v.fail("reshape-variable-output", "RESHAPE into a variable tensor", out.index)
    if shape_input is not None and len(shape_input.shape) == 1 and shape_input.dtype == "int32":
        # An empty shape vector has no buffer to mark it constant: a scalar.
        new_shape = [] if shape_input.num_elements == 0 else v.constant_ints(shape_input)
        if new_shape is None:
            return  # computed at run time: the output tensor's shape is what lowering plans
        where = shape_input.index
    elif "new_shape" in v.op.options:
        new_shape, where = list(v.op.options["new_shape"]), out.index
        if new_shape == [0]:
            new_shape = []  # old converters' way of writing a scalar in the option
    else:
        return
    stretched = [d for d in new_shape if d == -1]
    if len(stretched) > 1 or any(d < -1 for d in new_shape):
        v.fail("reshape-shape", f"new shape {new_shape} has a negative size other than one -1", where)
    known = math.prod(d for d in new_shape if d != -1)
    fits = inp.num_elements % known == 0 if stretched and known else known == inp.num_elements
    if not fits:
        v.fail("reshape-shape", f"new shape {new_shape} does not hold the input's {inp.num_elements} elements", where)
    # TFLite gives the output the new shape, whatever the output tensor says;
    # the ops after it would then see another shape than the one planned.
    resolved = [inp.num_elements // known if d == -1 else d for d in new_shape]
    if tuple(resolved) != out.shape:
        v.fail(
            "reshape-shape", f"new shape {new_shape} makes {resolved}, the output tensor says {list(out.shape)}", where
        )


# Element types whose TFLite CONCATENATION copies bytes: every input must be
# quantized exactly as the output (uint8 inputs are requantized instead).
_CONCAT_SAME_QUANTIZATION = ("int8",)


def op_concatenation(v: OpView) -> None:
    v.counts((1, 1 << 30))
    inputs = [v.input(i) for i in range(len(v.op.inputs))]
    out = v.output()
    rank = len(out.shape)
    axis = v.op.options.get("axis", 0)
    if not -rank <= axis < max(rank, 1):
        v.fail("axis-range", f"axis {axis} outside rank {rank}", out.index)
    axis %= max(rank, 1)
    total = 0
    for t in inputs:
        if t is None:
            v.fail("input-count", "an input is absent")
        if len(t.shape) != rank or any(t.shape[d] != out.shape[d] for d in range(rank) if d != axis):
            v.fail(
                "concat-shape",
                f"shape {list(t.shape)} does not match output {list(out.shape)} off axis {axis}",
                t.index,
            )
        total += t.shape[axis] if rank else 1
    if rank and total != out.shape[axis]:
        v.fail("concat-shape", f"axis {axis} is {out.shape[axis]}, the inputs add up to {total}", out.index)
    if out.dtype in _CONCAT_SAME_QUANTIZATION and out.quantization is not None:
        for t in inputs:
            if t is not None and t.quantization is not None and t.quantization != out.quantization:
                v.fail(
                    "concat-quantization",
                    f"scale {t.quantization.scales[0]!r} / zero point {t.quantization.zero_points[0]} differ from the "
                    f"output's {out.quantization.scales[0]!r} / {out.quantization.zero_points[0]}; "
                    f"TFLite's {out.dtype} CONCATENATION copies bytes",
                    t.index,
                )


def op_pad(v: OpView) -> None:
    v.counts((2, 3))
    inp, out = v.required(0), v.output()
    paddings = v.constant_ints(v.input(1))
    if paddings is None:
        return
    rank = len(inp.shape)
    if len(paddings) != 2 * rank:
        v.fail("paddings-shape", f"{len(paddings)} padding values for rank {rank}", v.op.inputs[1])
    if min(paddings, default=0) < 0:
        v.fail("paddings-range", f"negative padding {min(paddings)}", v.op.inputs[1])
    expected = tuple(d + paddings[2 * i] + paddings[2 * i + 1] for i, d in enumerate(inp.shape))
    if out.shape != expected:
        v.fail("pad-output-shape", f"shape {list(out.shape)}, padding gives {list(expected)}", out.index)


def op_transpose(v: OpView) -> None:
    v.counts((2, 2))
    inp, out = v.required(0), v.output()
    perm = v.constant_ints(v.input(1))
    if perm is None:
        return
    if sorted(perm) != list(range(len(inp.shape))):
        v.fail("permutation", f"{perm} is not a permutation of {len(inp.shape)} axes", v.op.inputs[1])
    if out.shape != tuple(inp.shape[p] for p in perm):
        v.fail(
            "transpose-output-shape",
            f"shape {list(out.shape)}, permuting gives {[inp.shape[p] for p in perm]}",
            out.index,
        )


def op_mean(v: OpView) -> None:
    v.counts((2, 2))
    inp = v.required(0)
    axes = v.constant_ints(v.input(1))
    rank = len(inp.shape)
    for a in axes or ():
        if not -rank <= a < rank:
            v.fail("axis-range", f"axis {a} outside rank {rank}", v.op.inputs[1])


def op_strided_slice(v: OpView) -> None:
    v.counts((3, 4))
    strides = v.constant_ints(v.input(3))
    if strides and 0 in strides:
        v.fail("stride-nonzero", f"strides {strides} contain 0", v.op.inputs[3])


# The output quantization TFLite's quantized SOFTMAX insists on, per
# (input, output) dtype: zero point and scale, within a thousandth of a step
# (TF_LITE_ENSURE_NEAR in its Prepare).  int8 -> int16 leaves the scale free.
_SOFTMAX_OUTPUT_QUANTIZATION = {
    ("int8", "int8"): (-128, 1 / 256, 0.001 / 256),
    ("uint8", "uint8"): (0, 1 / 256, 0.001 / 256),
    ("int16", "int16"): (0, 1 / 32768, 0.001 / 65536),
}


def op_softmax(v: OpView) -> None:
    op_unary_same_shape(v)
    if not len(v.required(0).shape) >= 1:
        v.fail("rank", "softmax of a scalar", v.op.inputs[0])
    out = v.output()
    fixed = _SOFTMAX_OUTPUT_QUANTIZATION.get((v.required(0).dtype, out.dtype))
    if fixed is None or out.quantization is None:
        return
    zero_point, scale, tolerance = fixed
    q = out.quantization
    if q.zero_points[0] != zero_point or not abs(q.scales[0] - scale) <= tolerance:
        v.fail(
            "softmax-output-quantization",
            f"scale {q.scales[0]!r}, zero point {q.zero_points[0]}; TFLite's {out.dtype} SOFTMAX output takes "
            f"scale {scale!r}, zero point {zero_point}",
            out.index,
        )


def declared(v: OpView, option: str) -> int:
    """An integer option as TFLite's kernel sees it: the schema default 0
    when the op carries no options table (or one of an unknown type)."""
    value = v.op.options.get(option, 0)
    return value if isinstance(value, int) else 0


def _declared_count(v: OpView, option: str, actual: int, what: str) -> None:
    """`option` (num_splits, num, values_count) states the op's `actual` count
    of `what`; TFLite's Prepare refuses the op when they disagree."""
    count = declared(v, option)
    if count != actual:
        table = options_table_for(v.op.opcode)
        absent = f" (no {table} table, so the default 0)" if option not in v.op.options else ""
        v.fail("declared-count", f"{option} = {count}{absent} but the op has {actual} {what}")


def op_split(v: OpView) -> None:
    _declared_count(v, "num_splits", len(v.op.outputs), "outputs")
    if v.op.opcode != "SPLIT":
        return
    axes, inp = v.constant_ints(v.input(0)), v.input(1)
    if axes is None or len(axes) != 1 or inp is None:
        return
    rank, count = len(inp.shape), len(v.op.outputs)
    if not -rank <= axes[0] < rank:
        v.fail("axis-range", f"axis {axes[0]} outside rank {rank}", v.op.inputs[0])
    axis = axes[0] % rank
    if count == 0 or inp.shape[axis] % count:
        v.fail(
            "split-shape", f"dimension {axis} of {list(inp.shape)} does not split into {count} equal parts", inp.index
        )
    # TFLite gives every output this shape, whatever the output tensors say.
    expected = inp.shape[:axis] + (inp.shape[axis] // count,) + inp.shape[axis + 1 :]
    for t in v.op.outputs:
        if v.ctx.graph.tensors[t].shape != expected:
            v.fail("split-shape", f"shape {list(v.ctx.graph.tensors[t].shape)}, the split makes {list(expected)}", t)


def op_unpack(v: OpView) -> None:
    v.counts((1, 1), (0, 1 << 30))
    _declared_count(v, "num", len(v.op.outputs), "outputs")
    inp = v.required(0)
    rank = len(inp.shape)
    axis = declared(v, "axis")
    if not -rank <= axis < rank:
        v.fail("axis-range", f"axis {axis} outside rank {rank}", inp.index)
    if inp.shape[axis % rank] != len(v.op.outputs):
        v.fail(
            "declared-count",
            f"dimension {axis % rank} of {list(inp.shape)} unpacks into {inp.shape[axis % rank]}, "
            f"not {len(v.op.outputs)} outputs",
            inp.index,
        )


def op_pack(v: OpView) -> None:
    _declared_count(v, "values_count", len(v.op.inputs), "inputs")


# Index element types GATHER takes, as numpy dtypes (little-endian).
_GATHER_INDEX_DTYPES = {"int16": "<i2", "int32": "<i4", "int64": "<i8"}


def op_gather(v: OpView) -> None:
    """Constant indices lie inside the gathered axis: TFLite's GATHER fails
    every invoke otherwise (its Prepare does not look at the values)."""
    v.counts((2, 2))
    params, indices = v.required(0), v.required(1)
    if indices.data is None or not indices.is_constant or indices.dtype not in _GATHER_INDEX_DTYPES:
        return
    rank = len(params.shape)
    axis = declared(v, "axis")
    if not -rank <= axis < rank:
        v.fail("axis-range", f"axis {axis} outside rank {rank}", params.index)
    size = params.shape[axis % rank]
    values = np.frombuffer(indices.data, dtype=_GATHER_INDEX_DTYPES[indices.dtype])
    outside = values[(values < 0) | (values >= size)]
    if outside.size:
        v.fail(
            "gather-index-range",
            f"index {int(outside[0])} outside [0, {size}) of axis {axis % rank} of {list(params.shape)}",
            indices.index,
        )


# TFLite writes the index type of ARG_MAX / ARG_MIN in output_type (default
# FLOAT32, which its Prepare refuses: an op without its options table fails).
_ARG_OUTPUT_TYPES = {"INT32": "int32", "INT64": "int64"}


def op_arg_min_max(v: OpView) -> None:
    v.counts((2, 2))
    out = v.output()
    output_type = v.op.options.get("output_type", "FLOAT32")
    if _ARG_OUTPUT_TYPES.get(output_type) != out.dtype:
        absent = "" if "output_type" in v.op.options else " (no options table, so the default FLOAT32)"
        v.fail("arg-output-type", f"output_type {output_type}{absent} for a {out.dtype} output", out.index)


# Opcodes whose TFLite int16 kernels take symmetric quantization only: their
# Prepare refuses an int16 input or output whose zero point is not 0 (each
# measured against LiteRT's BUILTIN_REF kernels in tests/test_validate.py).
# MUL, the pools and the data-movement ops (RESHAPE, PAD, GATHER, ...) take
# any zero point.
INT16_SYMMETRIC_OPCODES = frozenset(
    {
        "ABS",
        "ADD",
        "BATCH_MATMUL",
        "BATCH_TO_SPACE_ND",
        "CONCATENATION",
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "DEQUANTIZE",
        "EXP",
        "EXPAND_DIMS",
        "FILL",
        "FULLY_CONNECTED",
        "LEAKY_RELU",
        "LOG",
        "LOGISTIC",
        "MEAN",
        "MIRROR_PAD",
        "QUANTIZE",  # int16 -> int16 only
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_PROD",
        "RELU",
        "RELU6",
        "RELU_0_TO_1",
        "RELU_N1_TO_1",
        "RSQRT",
        "SOFTMAX",
        "SPACE_TO_BATCH_ND",
        "SQRT",
        "SUB",
        "SUM",
        "TANH",
        "TRANSPOSE_CONV",
    }
)


# Where the data an op computes on comes in, when not input 0.
_DATA_INPUT = {"FILL": 1, "TRANSPOSE_CONV": 2}


def op_int16_zero_points(v: OpView) -> None:
    """The op's int16 kernel (int16 data in) sees zero point 0 on every int16
    input and output.  Kernels from int8 data to an int16 output (SOFTMAX's
    -32768) and float -> int16 QUANTIZE are not this kernel."""
    data = v.input(_DATA_INPUT.get(v.op.opcode, 0))
    if data is None or data.dtype != "int16":
        return
    tensors = [v.ctx.graph.tensors[t] for t in v.op.inputs + v.op.outputs if t >= 0]
    if v.op.opcode == "QUANTIZE" and v.output().dtype != "int16":
        return  # int16 -> int8 requantizes with any zero points
    for t in tensors:
        if t.dtype == "int16" and t.quantization is not None and any(t.quantization.zero_points):
            v.fail(
                "int16-zero-point",
                f"int16 zero point {next(z for z in t.quantization.zero_points if z)}: "
                f"TFLite's int16 {v.op.opcode} takes symmetric quantization (zero point 0)",
                t.index,
            )


# Per opcode, the rules TFLite's Prepare applies.  Opcodes absent here are
# not refused by the validator (lowering reports what it cannot generate).
OP_RULES: dict[str, list[Callable[[OpView], None]]] = {
    "CONV_2D": [op_conv_2d],
    "DEPTHWISE_CONV_2D": [op_depthwise_conv_2d],
    "FULLY_CONNECTED": [op_fully_connected],
    "AVERAGE_POOL_2D": [op_pool_2d],
    "MAX_POOL_2D": [op_pool_2d],
    "ADD": [op_binary],
    "SUB": [op_binary],
    "MUL": [op_binary],
    "SOFTMAX": [op_softmax],
    "LOGISTIC": [op_unary_same_shape],
    "TANH": [op_unary_same_shape],
    "RELU": [op_unary_same_shape],
    "RELU6": [op_unary_same_shape],
    "RELU_N1_TO_1": [op_unary_same_shape],
    "LEAKY_RELU": [op_unary_same_shape],
    "HARD_SWISH": [op_unary_same_shape],
    "QUANTIZE": [op_unary_same_shape],
    "DEQUANTIZE": [op_unary_same_shape],
    "RESHAPE": [op_reshape],
    "SQUEEZE": [op_same_elements],
    "EXPAND_DIMS": [op_same_elements],
    "CONCATENATION": [op_concatenation],
    "PAD": [op_pad],
    "PADV2": [op_pad],
    "TRANSPOSE": [op_transpose],
    "MEAN": [op_mean],
    "STRIDED_SLICE": [op_strided_slice],
    "SPLIT": [op_split],
    "SPLIT_V": [op_split],
    "UNPACK": [op_unpack],
    "PACK": [op_pack],
    "GATHER": [op_gather],
    "ARG_MAX": [op_arg_min_max],
    "ARG_MIN": [op_arg_min_max],
}
for _opcode in INT16_SYMMETRIC_OPCODES:
    OP_RULES.setdefault(_opcode, []).append(op_int16_zero_points)


# ---------------------------------------------------------------- entry points


def used_tensors(graph: Graph) -> list[int]:
    used = set(graph.inputs) | set(graph.outputs)
    for op in graph.operators:
        used.update(t for t in op.inputs + op.outputs if t >= 0)
    return sorted(used)


# Custom ops that hold a program compiled for an accelerator, and why no
# microcontroller kernel can run them.  Their other inputs (an NPU's scratch
# areas) are written by the accelerator, not by any op, so a model holding
# one is refused as unsupported before the graph rules see those tensors.
ACCELERATOR_CUSTOM_OPS = {
    "ethos-u": "Vela command stream for an Arm Ethos-U NPU: needs the NPU; use the model from before Vela",
    "edgetpu-custom-op": "compiled for a Coral Edge TPU: needs the TPU; use the model from before edgetpu_compiler",
}


def refuse_accelerator_ops(graph: Graph, label: str) -> None:
    """UnsupportedModel (exit 4) naming each accelerator-only custom op."""
    combinations: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for op in graph.operators:
        if op.opcode == "CUSTOM" and op.custom_code in ACCELERATOR_CUSTOM_OPS:
            key = operator_dtype_key(op, graph.tensors)
            combinations[key] = combinations.get(key, 0) + 1
            reasons[key] = ACCELERATOR_CUSTOM_OPS[op.custom_code]
    if combinations:
        raise unsupported_model_error(combinations, reasons, {}, label=label)


def validate(graph: Graph, label: str = "model") -> Graph:
    """Raise InvalidModel (exit 2) at the first broken rule; return the graph.
    A model compiled for an accelerator is UnsupportedModel (exit 4)."""
    refuse_accelerator_ops(graph, label)
    ctx = Context(graph, label)
    for rule in GRAPH_RULES:
        rule(ctx)
    for t in used_tensors(graph):
        tensor = graph.tensors[t]
        if tensor.quantization is not None:
            for tensor_rule in TENSOR_RULES:
                tensor_rule(ctx, tensor, tensor.quantization)
    for op in graph.operators:
        for option_rule in OPTION_RULES:
            option_rule(ctx, op)
        for op_rule in OP_RULES.get(op.opcode, ()):
            op_rule(OpView(ctx, op))
    validate_bodies(graph, label)
    return graph


def validate_bodies(graph: Graph, label: str) -> None:
    """The subgraphs an IF or WHILE runs (control_flow.py), each by the same rules."""
    from .control_flow import bodies

    for op in graph.operators:
        for body in bodies(op):
            validate(body.graph, f"{label} ({op.opcode} op {op.index}, {body.role} subgraph {body.subgraph})")


def load_model(source: str | os.PathLike[str] | bytes | bytearray | memoryview, label: str | None = None) -> Graph:
    """read_model, then validate: what every command reads a model with."""
    from .reader import read_model

    if label is None and isinstance(source, (str, os.PathLike)):
        label = str(source)
    graph = read_model(source, label=label)
    return validate(graph, label or "model")
