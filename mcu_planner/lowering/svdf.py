"""SVDF -> mcu_svdf_{s8,f32} (firmware/runtime/mcu_svdf.c).

As TFLite's svdf.cc and reference/svdf.h (EvalFloatSVDF, EvalIntegerSVDF):
the op keeps, per batch and filter, the last `memory_size` feature
activations in its state (a variable tensor, [batch, num_filters *
memory_size], oldest first).  Each invocation shifts that history left by
one, puts the new feature activation (weights_feature . input) last, takes
the dot product of each filter's history with its time weights, and sums
each group of `rank` filters into one unit, plus bias.

int8: the feature activations are requantized to the int16 state with
effective_scale_1 = input * weights_feature / state; the unit sums (int32,
with the int32 bias) to the int8 output with effective_scale_2 = state *
weights_time / output; both scales are float32 products widened to double
before QuantizeMultiplier, as svdf.cc computes them.  The reference insists
on a RELU activation for the integer kernel but does not apply it (the output
is clamped to the int8 range only); so does this kernel.

Scratch (scratch.py): each filter's time-weighted sum [batch * num_filters],
float32 or int32, as TFLite's first temporary.  TFLite's second int8
temporary (the int32 unit sums before rescaling) is not needed: integer sums
come out the same when each unit is rescaled as soon as it is summed.
"""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from ..quant import f32, quantize_multiplier
from . import KernelCall, KernelFacts, NotLowerable, ParamValue, ScratchNeed, facts_for, lowers, scratch_for
from .common import (
    fused_activation,
    input_tensor,
    int32_array,
    output_tensor,
    require_dtype,
    scale,
    zero_point,
    zero_point_row_sums,
)

SOURCES = ("mcu_svdf",)

# Fused activations the float kernel applies (ApplyActivationToVector), by
# the number its params carry.
FLOAT_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}


def _geometry(op: Operator, graph: Graph) -> dict[str, int]:
    """Sizes of the op, checked as svdf.cc's Prepare checks them."""
    inp = input_tensor(op, graph, 0)
    weights_feature = input_tensor(op, graph, 1)
    weights_time = input_tensor(op, graph, 2)
    bias = input_tensor(op, graph, 3, optional=True)
    state = input_tensor(op, graph, 4)
    out = output_tensor(op, graph)
    rank = int(op.options.get("rank", 0))
    if len(inp.shape) != 2 or len(weights_feature.shape) != 2 or len(weights_time.shape) != 2:
        raise NotLowerable("SVDF whose input or weights are not 2-D")
    batch, input_size = inp.shape
    num_filters = weights_feature.shape[0]
    memory_size = weights_time.shape[1]
    if rank < 1 or num_filters % rank or weights_feature.shape[1] != input_size:
        raise NotLowerable(f"SVDF with rank {rank} and weights_feature {weights_feature.shape}")
    num_units = num_filters // rank
    if weights_time.shape[0] != num_filters or memory_size < 1:
        raise NotLowerable(f"SVDF with weights_time {weights_time.shape} for {num_filters} filters")
    if bias is not None and bias.shape != (num_units,):
        raise NotLowerable(f"SVDF with bias {bias.shape} for {num_units} units")
    if state.shape != (batch, memory_size * num_filters) or not state.is_variable:
        raise NotLowerable(f"SVDF state {state.shape} is not a variable [{batch}, {memory_size * num_filters}]")
    if out.num_elements != batch * num_units:
        raise NotLowerable(f"SVDF output {out.shape} for {batch}x{num_units}")
    return {
        "batches": batch,
        "input_size": input_size,
        "num_filters": num_filters,
        "num_units": num_units,
        "rank": rank,
        "memory_size": memory_size,
    }


def _is_float(op: Operator, graph: Graph) -> bool:
    """Whether the op takes the float kernel (after checking its dtypes fit
    the float or the int8 one); hybrid SVDF (float input, int8 weights) is
    not implemented."""
    inp, weights_feature, weights_time = (input_tensor(op, graph, i) for i in range(3))
    bias = input_tensor(op, graph, 3, optional=True)
    state, out = input_tensor(op, graph, 4), output_tensor(op, graph)
    if inp.dtype == "float32" and weights_feature.dtype == "float32":
        for t in (weights_time, state, out) + ((bias,) if bias is not None else ()):
            require_dtype(op, t, "float32")
        return True
    if inp.dtype == "int8" and state.dtype != "int16":
        # TFLM also runs int8 state (its keyword_scrambled_8bit); TFLite does not.
        raise NotLowerable(f"SVDF state tensor is {state.dtype}; TFLite's integer SVDF keeps int16 state")
    for t, dtype in (
        (inp, "int8"),
        (weights_feature, "int8"),
        (weights_time, "int16"),
        (state, "int16"),
        (out, "int8"),
    ):
        require_dtype(op, t, dtype)
    if bias is not None:
        require_dtype(op, bias, "int32")
    return False


@scratch_for("SVDF")
def svdf_scratch(op: Operator, graph: Graph) -> tuple[ScratchNeed, ...]:
    sizes = _geometry(op, graph)
    filters = sizes["batches"] * sizes["num_filters"]
    if _is_float(op, graph):
        return (ScratchNeed("filter_sums", "float32", filters),)
    return (ScratchNeed("filter_sums", "int32", filters),)


def _product_scale(a: Tensor, b: Tensor, c: Tensor) -> float:
    """a * b / c in float32 (svdf.cc multiplies the float fields), widened."""
    return f32(f32(scale(a) * scale(b)) / scale(c))


@lowers("SVDF")
def lower_svdf(op: Operator, graph: Graph) -> KernelCall:
    sizes = _geometry(op, graph)
    if len(op.scratch) != len(svdf_scratch(op, graph)):
        raise NotLowerable("SVDF without its scratch buffers (graph not read by read_model)")
    args = tuple(op.inputs[i] if i < len(op.inputs) else -1 for i in range(5)) + (op.outputs[0],) + op.scratch
    activation = fused_activation(op)
    if _is_float(op, graph):
        if activation not in FLOAT_ACTIVATIONS:
            raise NotLowerable(f"float32 SVDF with fused {activation}")
        params: dict[str, ParamValue] = {**sizes, "activation": FLOAT_ACTIVATIONS[activation]}
        return KernelCall("mcu_svdf_f32", "mcu_svdf_f32_params", params, args, SOURCES)

    inp, weights_feature, weights_time = (input_tensor(op, graph, i) for i in range(3))
    state, out = input_tensor(op, graph, 4), output_tensor(op, graph)
    if activation != "RELU":
        raise NotLowerable(f"int8 SVDF with fused {activation} (TFLite's integer SVDF takes RELU only)")
    if zero_point(state) != 0:
        raise NotLowerable("int8 SVDF with an asymmetric int16 state")
    feature_multiplier, feature_shift = quantize_multiplier(_product_scale(inp, weights_feature, state))
    output_multiplier, output_shift = quantize_multiplier(_product_scale(state, weights_time, out))
    params = {
        **sizes,
        "input_zero_point": zero_point(inp),
        "output_zero_point": zero_point(out),
        "feature_multiplier": feature_multiplier,
        "feature_shift": feature_shift,
        "output_multiplier": output_multiplier,
        "output_shift": output_shift,
        # The input zero point folded into one term per filter, so that the
        # kernel takes raw int8 inner products (mcu_dot4_s8).
        "feature_offsets": (
            int32_array(zero_point_row_sums(weights_feature, -zero_point(inp)))
            if weights_feature.is_constant
            else "NULL"
        ),
    }
    return KernelCall("mcu_svdf_s8", "mcu_svdf_s8_params", params, args, SOURCES)


@facts_for("SVDF")
def svdf_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """Per batch row: the feature weights over the input, the time weights over the memory."""
    input_shape = graph.tensors[op.inputs[0]].shape
    batch = input_shape[0] if input_shape else 1
    return KernelFacts(
        macs=batch * (graph.tensors[op.inputs[1]].num_elements + graph.tensors[op.inputs[2]].num_elements)
    )
