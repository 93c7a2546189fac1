"""UNIDIRECTIONAL_SEQUENCE_LSTM -> mcu_lstm_{s8,f32}.

The int8 variant is TensorFlow Lite's integer LSTM (8x8->16: int8 input,
weights and output state, int16 cell state, gates in 16-bit fixed point).
Everything its Prepare computes -- the effective scales of every product,
decomposed into multiplier and shift, the quantized clips, and the
"effective biases" (bias plus zero point times each weight row's sum) -- is
computed here with the same float32 / double steps
(unidirectional_sequence_lstm.cc: PopulateQuantizedLstmParams8x8_16,
PopulatePrecomputedZPTimesWeightsWithBias).

Not lowered (exit 4, each with its reason): hybrid LSTMs (float input, int8
weights), int16 input (16x8: LiteRT has no kernel for it), diagonal recurrent
weights, per-channel weight scales, an integer peephole with more outputs than
cells (LiteRT's kernel reads past the peephole weights there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..gemmlowp16 import ReciprocalTable, reciprocal_table
from ..graph import Graph, Operator, Tensor
from ..quant import checked_log2, f32, quantize_multiplier, quantized_clip
from . import CArray, KernelCall, KernelFacts, NotLowerable, ParamValue, ScratchNeed, facts_for, lowers, scratch_for
from .common import input_tensor, int32_array, output_tensor, require_dtype, scale, zero_point, zero_point_row_sums

SOURCES_F32 = ("mcu_lstm_f32",)
SOURCES_S8 = ("mcu_lstm_s8",)

GATES = ("input", "forget", "cell", "output")
# Input slots of the op (TFLite's lstm_shared.h).
INPUT = 0
INPUT_WEIGHTS = {"input": 1, "forget": 2, "cell": 3, "output": 4}
RECURRENT_WEIGHTS = {"input": 5, "forget": 6, "cell": 7, "output": 8}
CELL_WEIGHTS = {"input": 9, "forget": 10, "output": 11}
GATE_BIAS = {"input": 12, "forget": 13, "cell": 14, "output": 15}
PROJECTION_WEIGHTS = 16
PROJECTION_BIAS = 17
OUTPUT_STATE = 18
CELL_STATE = 19
LAYER_NORM = {"input": 20, "forget": 21, "cell": 22, "output": 23}
NUM_INPUTS = 24

# The integer gates' pre-activation format without layer norm: Q3.12.
GATE_SCALE = 2.0**-12
GATE_INTEGER_BITS = 3
HIDDEN_INTERMEDIATE = 4

FLOAT_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}


class LstmShape:
    """Sizes and optional parts of one LSTM op, checked as TFLite's Prepare does."""

    def __init__(self, op: Operator, graph: Graph) -> None:
        if len(op.inputs) not in (20, NUM_INPUTS):
            raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM with {len(op.inputs)} inputs (TFLite takes 20 or 24)")
        self.op, self.graph = op, graph
        inp = self.tensor(INPUT)
        self.time_major = bool(op.options.get("time_major", False))
        if op.options.get("diagonal_recurrent_tensors", False):
            raise NotLowerable("UNIDIRECTIONAL_SEQUENCE_LSTM with diagonal recurrent weights")
        if len(inp.shape) == 3:
            self.n_time, self.n_batch = (
                (inp.shape[0], inp.shape[1]) if self.time_major else (inp.shape[1], inp.shape[0])
            )
        elif len(inp.shape) == 2 and not self.time_major:
            self.n_time, self.n_batch = 1, inp.shape[0]
        else:
            raise NotLowerable(
                f"UNIDIRECTIONAL_SEQUENCE_LSTM with a {'time-major ' if self.time_major else ''}"
                f"rank-{len(inp.shape)} input"
            )
        self.n_input = inp.shape[-1]
        to_output = self.tensor(INPUT_WEIGHTS["output"])
        recurrent = self.tensor(RECURRENT_WEIGHTS["output"])
        if len(to_output.shape) != 2 or len(recurrent.shape) != 2:
            raise NotLowerable("UNIDIRECTIONAL_SEQUENCE_LSTM with diagonal (rank-1) recurrent weights")
        self.n_cell, self.n_output = to_output.shape[0], recurrent.shape[1]
        self.cifg = self.optional_tensor(INPUT_WEIGHTS["input"]) is None
        self.peephole = self.optional_tensor(CELL_WEIGHTS["output"]) is not None
        self.projection = self.optional_tensor(PROJECTION_WEIGHTS) is not None
        self.layer_norm = len(op.inputs) == NUM_INPUTS and self.optional_tensor(LAYER_NORM["forget"]) is not None
        self.gates = GATES[1:] if self.cifg else GATES
        expected = ((INPUT_WEIGHTS, (self.n_cell, self.n_input)), (RECURRENT_WEIGHTS, (self.n_cell, self.n_output)))
        for slots, shape in expected:
            for gate in self.gates:
                if self.tensor(slots[gate]).shape != shape:
                    raise NotLowerable(
                        f"UNIDIRECTIONAL_SEQUENCE_LSTM {gate} weights of shape "
                        f"{self.tensor(slots[gate]).shape}, expected {shape}"
                    )
        if self.cifg and self.optional_tensor(RECURRENT_WEIGHTS["input"]) is not None:
            raise NotLowerable("UNIDIRECTIONAL_SEQUENCE_LSTM with recurrent but no input weights for the input gate")
        out = output_tensor(op, graph)
        if out.shape != inp.shape[:-1] + (self.n_output,):
            raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM output shape {out.shape} for input {inp.shape}")
        for slot, size, what in (
            (OUTPUT_STATE, self.n_output, "output state"),
            (CELL_STATE, self.n_cell, "cell state"),
        ):
            state = self.tensor(slot)
            if not state.is_variable:
                raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM whose {what} is not a variable tensor")
            if state.num_elements != self.n_batch * size:
                raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM {what} of shape {state.shape}")

    def tensor(self, slot: int) -> Tensor:
        return input_tensor(self.op, self.graph, slot)

    def optional_tensor(self, slot: int) -> Tensor | None:
        return input_tensor(self.op, self.graph, slot, optional=True)

    @property
    def rows(self) -> int:
        """Batch rows one time step computes: all of them time-major, one batch-major."""
        return self.n_batch if self.time_major else 1

    def sizes(self) -> dict[str, int]:
        return {
            "n_batch": self.n_batch,
            "n_time": self.n_time,
            "n_input": self.n_input,
            "n_cell": self.n_cell,
            "n_output": self.n_output,
            "time_major": int(self.time_major),
        }


@scratch_for("UNIDIRECTIONAL_SEQUENCE_LSTM")
def lstm_scratch(op: Operator, graph: Graph) -> tuple[ScratchNeed, ...]:
    """One time step's gates (TFLite's scratch0-3) and, integer with a
    projection, the hidden values it projects (scratch4); float: the
    accumulation buffer of the gate products."""
    shape = LstmShape(op, graph)
    gates = 4 * shape.rows * shape.n_cell
    if shape.tensor(INPUT).dtype == "float32":
        accumulator = shape.rows * max(shape.n_cell, shape.n_output)
        return (ScratchNeed("gates", "float32", gates), ScratchNeed("accumulator", "float32", accumulator))
    needs: tuple[ScratchNeed, ...] = (ScratchNeed("gates", "int16", gates),)
    if shape.projection:
        needs += (ScratchNeed("hidden", "int8", shape.rows * shape.n_cell),)
    return needs


@lowers("UNIDIRECTIONAL_SEQUENCE_LSTM")
def lower_lstm(op: Operator, graph: Graph) -> KernelCall:
    shape = LstmShape(op, graph)
    inp = shape.tensor(INPUT)
    weights = shape.tensor(INPUT_WEIGHTS["output"])
    if len(op.scratch) != len(lstm_scratch(op, graph)):
        raise NotLowerable("UNIDIRECTIONAL_SEQUENCE_LSTM without its scratch buffers (graph not read by read_model)")
    # The hidden scratch is NULL without a projection.
    scratch = op.scratch + (-1,) * (2 - len(op.scratch))
    args = tuple(op.inputs[i] if i < len(op.inputs) else -1 for i in range(NUM_INPUTS)) + (op.outputs[0],) + scratch
    if inp.dtype == "float32" and weights.dtype == "float32":
        return _lower_float(op, graph, shape, args)
    if inp.dtype == "float32":
        raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM hybrid (float32 input, {weights.dtype} weights)")
    if inp.dtype == "int16":
        raise NotLowerable("UNIDIRECTIONAL_SEQUENCE_LSTM with int16 input (16x8: no LiteRT reference kernel)")
    if inp.dtype == "int8" and weights.dtype == "int8":
        return _lower_integer(op, graph, shape, args)
    raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM with {inp.dtype} input and {weights.dtype} weights")


def _lower_float(op: Operator, graph: Graph, shape: LstmShape, args: tuple[int, ...]) -> KernelCall:
    for slot in range(NUM_INPUTS):
        tensor = shape.optional_tensor(slot) if slot < len(op.inputs) else None
        if tensor is not None:
            require_dtype(op, tensor, "float32")
    require_dtype(op, output_tensor(op, graph), "float32")
    activation = op.options.get("fused_activation_function", "TANH") or "NONE"
    if activation not in FLOAT_ACTIVATIONS:
        raise NotLowerable(f"float32 UNIDIRECTIONAL_SEQUENCE_LSTM with activation {activation}")
    params: dict[str, ParamValue] = {
        **shape.sizes(),
        "activation": FLOAT_ACTIVATIONS[activation],
        "cell_clip": f32(op.options.get("cell_clip", 0.0)),
        "proj_clip": f32(op.options.get("proj_clip", 0.0)),
    }
    return KernelCall("mcu_lstm_f32", "mcu_lstm_f32_params", params, args, SOURCES_F32)


def _weight_scale(op: Operator, tensor: Tensor | None) -> float:
    """TfLiteTensor.params.scale: the one per-tensor scale (1.0 where TFLite's
    Prepare keeps its default for an absent tensor)."""
    if tensor is None:
        return 1.0
    q = tensor.quantization
    if q is None or not q.scales:
        raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM with unquantized {tensor.dtype} tensor {tensor.name!r}")
    if len(q.scales) != 1:
        raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM with per-channel scales on {tensor.name!r}")
    return q.scales[0]


def _row_sums_times(tensor: Tensor, zero_point: int, bias: Tensor | None) -> list[int]:
    """PrecomputeZeroPointTimesWeightWithBias for a weight matrix of the op."""
    _constant(tensor, "i1")  # refuses a non-constant matrix, naming the op
    return zero_point_row_sums(tensor, zero_point, [int(v) for v in _constant(bias, "<i4")] if bias else None)


def _constant(tensor: Tensor, dtype: str) -> npt.NDArray[np.signedinteger[Any]]:
    if not tensor.is_constant or tensor.data is None:
        raise NotLowerable(f"UNIDIRECTIONAL_SEQUENCE_LSTM with non-constant {tensor.name!r}")
    return np.frombuffer(tensor.data, dtype=dtype, count=tensor.num_elements)


def _intermediate(op: Operator, graph: Graph, index: int) -> tuple[float, int]:
    if index >= len(op.intermediates) or op.intermediates[index] < 0:
        raise NotLowerable("int8 UNIDIRECTIONAL_SEQUENCE_LSTM without its 5 intermediate tensors")
    tensor = graph.tensors[op.intermediates[index]]
    if tensor.quantization is None or not tensor.quantization.scales:
        raise NotLowerable(f"int8 UNIDIRECTIONAL_SEQUENCE_LSTM intermediate {tensor.name!r} is not quantized")
    return tensor.quantization.scales[0], tensor.quantization.zero_points[0]


def _activation_table(name: str, table: ReciprocalTable | None, first: bool = False) -> dict[str, ParamValue]:
    """The params of one of the kernel's exact tables of gemmlowp's int16
    1 / (1 + exp(-m)) (None: none, NULL); `first` for a table that reads
    another below its first magnitude."""
    params: dict[str, ParamValue] = {
        f"{name}_knots": CArray("int16_t", table.knots) if table else "NULL",
        f"{name}_residuals": CArray("uint8_t", table.residuals) if table else "NULL",
        f"{name}_last": table.last if table else 0,
    }
    if first:
        params[f"{name}_first"] = table.first if table else 0
    return params


def _lower_integer(op: Operator, graph: Graph, shape: LstmShape, args: tuple[int, ...]) -> KernelCall:
    if len(op.intermediates) != 5:
        raise NotLowerable("int8 UNIDIRECTIONAL_SEQUENCE_LSTM without its 5 intermediate tensors")
    inp, out = shape.tensor(INPUT), output_tensor(op, graph)
    output_state, cell_state = shape.tensor(OUTPUT_STATE), shape.tensor(CELL_STATE)
    require_dtype(op, out, "int8")
    require_dtype(op, output_state, "int8")
    require_dtype(op, cell_state, "int16")
    for gate in shape.gates:
        require_dtype(op, shape.tensor(INPUT_WEIGHTS[gate]), "int8")
        require_dtype(op, shape.tensor(RECURRENT_WEIGHTS[gate]), "int8")
        require_dtype(op, shape.tensor(GATE_BIAS[gate]), "int32")
        if shape.layer_norm:
            require_dtype(op, shape.tensor(LAYER_NORM[gate]), "int16")
        if shape.peephole and gate != "cell":
            require_dtype(op, shape.tensor(CELL_WEIGHTS[gate]), "int16")
    if shape.peephole and shape.n_output > shape.n_cell:
        raise NotLowerable("int8 UNIDIRECTIONAL_SEQUENCE_LSTM with a peephole and more outputs than cells")
    projection = shape.optional_tensor(PROJECTION_WEIGHTS)
    projection_bias = shape.optional_tensor(PROJECTION_BIAS)
    if projection is not None:
        require_dtype(op, projection, "int8")
    if projection_bias is not None:
        require_dtype(op, projection_bias, "int32")

    cell_exponent = checked_log2(scale(cell_state))
    if cell_exponent is None:
        raise NotLowerable("int8 UNIDIRECTIONAL_SEQUENCE_LSTM whose cell state scale is not a power of two")
    if not 0 <= 15 + cell_exponent <= 6:
        # LiteRT's ApplyTanh takes 0..6 integer bits and leaves its output unwritten otherwise.
        raise NotLowerable(f"int8 UNIDIRECTIONAL_SEQUENCE_LSTM with cell state scale 2^{cell_exponent}")

    # Gate pre-activation scales: Q3.12, or the layer norm inputs' own.
    intermediate = [_intermediate(op, graph, i) if shape.layer_norm else (f32(GATE_SCALE), 0) for i in range(4)]
    hidden_scale, hidden_zp = _intermediate(op, graph, HIDDEN_INTERMEDIATE)
    input_scale, state_scale = np.float32(scale(inp)), np.float32(scale(output_state))

    multipliers: dict[str, list[int]] = {k: [] for k in ("input", "recurrent", "cell", "layer_norm")}
    shifts: dict[str, list[int]] = {k: [] for k in multipliers}
    guards: list[int] = []
    input_biases: list[int] = []
    recurrent_biases: list[int] = []
    for g, gate in enumerate(GATES):
        used = gate in shape.gates
        gate_scale = np.float32(intermediate[g][0])
        w_in = _weight_scale(op, shape.tensor(INPUT_WEIGHTS[gate]) if used else None)
        w_rec = _weight_scale(op, shape.tensor(RECURRENT_WEIGHTS[gate]) if used else None)
        effective = {
            "input": float(np.float32(w_in) * input_scale / gate_scale) if used else 1.0,
            "recurrent": float(np.float32(w_rec) * state_scale / gate_scale) if used else 1.0,
            "cell": 1.0,
            "layer_norm": 1.0,
        }
        if shape.peephole and used and gate != "cell":
            w_cell = _weight_scale(op, shape.tensor(CELL_WEIGHTS[gate]))
            effective["cell"] = f32(2.0**cell_exponent * w_cell / float(gate_scale))
        if shape.layer_norm and used:
            effective["layer_norm"] = _weight_scale(op, shape.tensor(LAYER_NORM[gate]))
        for kind, value in effective.items():
            m, s = quantize_multiplier(value)
            multipliers[kind].append(m)
            shifts[kind].append(s)
        # 10000 * scale in float32, truncated: keeps the kernel's variance from 0.
        guards.append(max(1, int(np.float32(10000) * np.float32(effective["layer_norm"]))))
        if used:
            bias = None if shape.layer_norm else shape.tensor(GATE_BIAS[gate])
            input_biases += _row_sums_times(shape.tensor(INPUT_WEIGHTS[gate]), -zero_point(inp), bias)
            recurrent_biases += _row_sums_times(shape.tensor(RECURRENT_WEIGHTS[gate]), -zero_point(output_state), None)
        else:
            input_biases += [0] * shape.n_cell
            recurrent_biases += [0] * shape.n_cell

    sigmoid = reciprocal_table(GATE_INTEGER_BITS)
    hidden = f32(2.0**-15 / float(np.float32(hidden_scale)) * 2.0**-15)
    hidden_multiplier, hidden_shift = quantize_multiplier(hidden)
    projection_scale = np.float32(_weight_scale(op, projection))
    proj_multiplier, proj_shift = quantize_multiplier(float(projection_scale * np.float32(hidden_scale) / state_scale))
    params: dict[str, ParamValue] = {
        **shape.sizes(),
        "input_multiplier": int32_array(multipliers["input"]),
        "input_shift": int32_array(shifts["input"]),
        "recurrent_multiplier": int32_array(multipliers["recurrent"]),
        "recurrent_shift": int32_array(shifts["recurrent"]),
        "cell_multiplier": int32_array(multipliers["cell"]),
        "cell_shift": int32_array(shifts["cell"]),
        "input_effective_bias": int32_array(input_biases),
        "recurrent_effective_bias": int32_array(recurrent_biases),
        "layer_norm_multiplier": int32_array(multipliers["layer_norm"]),
        "layer_norm_shift": int32_array(shifts["layer_norm"]),
        "layer_norm_variance_guard": int32_array(guards),
        "hidden_multiplier": hidden_multiplier,
        "hidden_shift": hidden_shift,
        "hidden_zero_point": hidden_zp,
        "projection_multiplier": proj_multiplier,
        "projection_shift": proj_shift,
        "projection_effective_bias": (
            int32_array(_row_sums_times(projection, hidden_zp, projection_bias)) if projection is not None else "NULL"
        ),
        "output_state_zero_point": zero_point(output_state),
        "cell_product_shift": 30 + cell_exponent,
        "quantized_cell_clip": quantized_clip(op.options.get("cell_clip", 0.0), scale(cell_state), 32767),
        "quantized_proj_clip": quantized_clip(op.options.get("proj_clip", 0.0), scale(out), 127),
        **_activation_table("sigmoid", sigmoid),
        # The cell gate's tanh reads the sigmoid's table at 2m below its first magnitude.
        **_activation_table("gate_tanh", reciprocal_table(GATE_INTEGER_BITS + 1, halved=sigmoid), first=True),
        # tanh(cell) reads the cell gate's table when the cell state is Q3.12 too.
        **_activation_table("cell_tanh", None if cell_exponent == -12 else reciprocal_table(16 + cell_exponent)),
    }
    return KernelCall("mcu_lstm_s8", "mcu_lstm_s8_params", params, args, SOURCES_S8)


# UNIDIRECTIONAL_SEQUENCE_LSTM inputs that are weight matrices: the input (1-4)
# and recurrent (5-8) weights of the four gates, and the projection (16).
_WEIGHTS = (1, 2, 3, 4, 5, 6, 7, 8, 16)


@facts_for("UNIDIRECTIONAL_SEQUENCE_LSTM")
def lstm_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    """Per time step and batch row, every weight matrix times its vector."""
    input_shape = graph.tensors[op.inputs[0]].shape
    if not input_shape or input_shape[-1] == 0:
        return KernelFacts()
    steps = graph.tensors[op.inputs[0]].num_elements // input_shape[-1]  # time steps x batch rows
    weights = sum(
        graph.tensors[op.inputs[k]].num_elements for k in _WEIGHTS if k < len(op.inputs) and op.inputs[k] >= 0
    )
    return KernelFacts(macs=steps * weights)
