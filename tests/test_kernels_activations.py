"""LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH (int8 and
float32) against TFLite's reference kernels.

Inputs of 1024 int8 values per branch and three input sets hit nearly every
one of the 256 codes, so each branch checks (almost) the whole function."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import Branches, assert_matches_reference, random_int8_quant, random_scale

from mcu_planner.graph import Graph, Operator, Quantization, Tensor
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.quant import lut_int8
from mcu_planner_testing.builder import int8_quant

SHAPE = (4, 16, 16)


def _real_range(q: tuple[float, int]) -> tuple[float, float]:
    return q[0] * (-128 - q[1]), q[0] * (127 - q[1])


def _covering(rng, low: float, high: float) -> tuple[float, int]:
    """int8 parameters whose range covers [low, high] with some slack."""
    slack = float(rng.uniform(1.0, 1.5))
    q = int8_quant(min(low, 0.0) * slack, max(high, 0.0, 1e-3) * slack)
    return q.scales[0], q.zero_points[0]


def int8_activation_model(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"int8 activations seed {seed}")

    def branch(opcode, in_q, out_q, options=None):
        x = model.input(SHAPE, "int8", in_q)
        model.op(opcode, (x,), SHAPE, "int8", out_q, options)

    in_q = random_int8_quant(rng, 0.005, 0.1)
    branch("LOGISTIC", in_q, (1 / 256, -128))
    in_q = random_int8_quant(rng, 0.005, 0.1)
    branch("TANH", in_q, (1 / 128, 0))
    in_q = random_int8_quant(rng, 0.005, 0.1)
    branch("TANH", in_q, _covering(rng, -1.0, 1.0))
    for opcode, (lo, hi) in (("RELU", (0, None)), ("RELU6", (0, 6)), ("RELU_N1_TO_1", (-1, 1))):
        in_q = random_int8_quant(rng, 0.005, 0.1)
        in_lo, in_hi = _real_range(in_q)
        out_q = _covering(rng, lo, in_hi if hi is None else min(hi, in_hi) * float(rng.uniform(0.7, 1.3)))
        branch(opcode, in_q, out_q)
    alpha = float(rng.choice([0.01, 0.2, 0.5, 1.7]))
    in_q = random_int8_quant(rng, 0.005, 0.1)
    in_lo, in_hi = _real_range(in_q)
    branch(
        "LEAKY_RELU",
        in_q,
        _covering(rng, min(alpha * in_lo, alpha * in_hi), max(in_hi, alpha * in_hi)),
        {"alpha": alpha},
    )
    in_q = random_int8_quant(rng, 0.005, 0.1)
    in_lo, in_hi = _real_range(in_q)
    branch("HARD_SWISH", in_q, _covering(rng, -0.375, max(in_hi, 0.5)))
    return model.build()


@pytest.mark.parametrize("seed", range(5))
def test_int8_activations_match_reference(seed):
    assert_matches_reference(int8_activation_model(seed), inputs=3, seed=seed)


def test_int8_hard_swish_with_coarse_input_scale():
    """A wide input range (scale ~ 0.5) drives HARD_SWISH's reluish multiplier
    to a left shift, the saturating path."""
    model = Branches("hard swish coarse")
    for in_q, out_q in (((0.5, 3), (0.3, -100)), ((0.05, -20), (0.02, -128)), ((0.2, 100), (0.25, -30))):
        x = model.input(SHAPE, "int8", in_q)
        model.op("HARD_SWISH", (x,), SHAPE, "int8", out_q)
    assert_matches_reference(model.build(), inputs=3)


def test_float_activations_are_bit_exact():
    model = Branches("float activations")
    for opcode, options in (
        ("RELU", None),
        ("RELU6", None),
        ("RELU_N1_TO_1", None),
        ("LEAKY_RELU", {"alpha": 0.1}),
        ("LEAKY_RELU", {"alpha": 1.5}),
        ("HARD_SWISH", None),
    ):
        x = model.input((3, 50), "float32")
        model.op(opcode, (x,), (3, 50), "float32", None, options)
    assert_matches_reference(model.build(), inputs=3)


def test_float_activations_cover_their_breakpoints():
    """[-1, 1] inputs never reach RELU6's or HARD_SWISH's +-3 / 6 knees: scale
    them up with a MUL by a constant first."""
    model = Branches("float activations, wide inputs")
    for opcode in ("RELU6", "HARD_SWISH", "RELU_N1_TO_1"):
        x = model.input((2, 64), "float32")
        k = model.constant(np.full((1,), 8.0, dtype=np.float32), "float32")
        wide = model.mb.add_tensor((2, 64), "float32")
        model.mb.add_op("MUL", (x, k), (wide,), {"fused_activation_function": "NONE"})
        model.op(opcode, (wide,), (2, 64), "float32")
    assert_matches_reference(model.build(), inputs=2)


def _unary(opcode: str, in_q, out_q, dtype="int8", options=None) -> tuple[Operator, Graph]:
    tensors = (
        Tensor(0, "x", (8,), dtype, Quantization((in_q[0],), (in_q[1],)) if in_q else None),
        Tensor(1, "y", (8,), dtype, Quantization((out_q[0],), (out_q[1],)) if out_q else None),
    )
    op = Operator(0, opcode, 1, (0,), (1,), options=options or {})
    return op, Graph(tensors, (op,), (0,), (1,))


def test_logistic_with_an_output_scale_tflite_rejects_is_not_lowerable():
    op, graph = _unary("LOGISTIC", (0.05, 0), (1 / 128, 0))
    with pytest.raises(NotLowerable):
        lower(op, graph)


def test_float_and_int16_logistic_take_their_own_kernels():
    """float32 LOGISTIC runs in mcu_math.c (tests/test_kernels_math.py checks
    its values), int16 in mcu_activations_s16.c (tests/test_kernels_s16.py);
    an int16 output scale other than 1/32768 is refused, as TFLite does."""
    op, graph = _unary("LOGISTIC", None, None, "float32")
    assert lower(op, graph).function == "mcu_logistic_f32"
    op, graph = _unary("LOGISTIC", (0.001, 0), (1 / 32768, 0), "int16")
    assert lower(op, graph).function == "mcu_logistic_s16"
    op, graph = _unary("LOGISTIC", (0.001, 0), (1 / 16384, 0), "int16")
    with pytest.raises(NotLowerable):
        lower(op, graph)


def test_lookup_table_is_monotonic_and_spans_the_output():
    """A table the kernel indexes by the input's bit pattern: entry (uint8)q is
    f(dequantized q), so sorted by q the logistic table never decreases and
    runs from the bottom to the top of the output range."""
    rng = np.random.default_rng(7)
    from mcu_planner.lowering.activations import _logistic_f32

    table = lut_int8((random_scale(rng, 0.05, 0.1), 0), (1 / 256, -128), _logistic_f32)
    by_value = [table[q & 0xFF] for q in range(-128, 128)]
    assert by_value == sorted(by_value)
    assert by_value[0] == -128 and by_value[-1] == 127
