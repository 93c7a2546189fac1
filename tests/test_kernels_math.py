"""Float math operators (mcu_math.c) against TFLite's reference kernels:
binary ops over broadcast shape pairs, unary ops, PRELU's alpha layouts,
L2_NORMALIZATION and GELU; int8 MAXIMUM / MINIMUM."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import ACTIVATIONS, Branches, assert_matches_reference, random_int8_quant
from test_kernels_elementwise import random_shape_pair

from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import FloatNet

BINARY = ("div", "pow", "squared_difference", "maximum", "minimum")
UNARY = ("exp", "log", "sqrt", "rsqrt", "square", "abs", "neg", "logistic", "tanh")


def binary_model(seed: int, branches: int = 10) -> bytes:
    """Every binary op over random broadcastable shape pairs; the second
    operand sometimes a constant.  POW gets a positive base (|x| + 0.5) so
    that most results are numbers, and DIV a fused activation."""
    rng = np.random.default_rng(seed)
    net = FloatNet(seed)
    outputs = []
    for k in range(branches):
        name = BINARY[k % len(BINARY)]
        shape1, shape2 = random_shape_pair(rng)
        a = net.input(shape1)
        b = net.const(shape2, 2.0) if rng.random() < 0.3 else net.input(shape2)
        if name == "pow":
            a = net.op("ADD", (net.abs(a), net.scalar(0.5)), shape1)
        if name == "div":
            outputs.append(net.div(a, b, str(rng.choice(ACTIVATIONS))))
        else:
            outputs.append(getattr(net, name)(a, b))
    return net.build(*outputs)


@pytest.mark.parametrize("seed", range(4))
def test_float_binary_math_matches_reference(seed):
    assert_matches_reference(binary_model(seed), inputs=3, seed=seed)


def test_float_binary_math_on_equal_values_and_ties():
    """MAXIMUM / MINIMUM of a tensor with itself, x / x, (x - x)^2: the
    comparison and NaN-free cases where operand order decides."""
    net = FloatNet(1)
    x = net.input((4, 7))
    outputs = [net.maximum(x, x), net.minimum(x, x), net.div(x, x), net.squared_difference(x, x), net.pow(x, x)]
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_float_unary_math_matches_reference():
    """Each unary op on raw inputs in [-1, 1] (NaN where the domain ends: the
    check compares NaN with NaN) and on a wider, positive range."""
    net = FloatNet(2)
    outputs = []
    for k, name in enumerate(UNARY):
        shape = [(1, 9), (2, 3, 5), (1, 4, 4, 3), (17,)][k % 4]
        x = net.input(shape)
        outputs.append(getattr(net, name)(x))
        scaled = net.op("MUL", (net.abs(x), net.scalar(30.0)), shape)  # wider, positive
        scaled = net.op("ADD", (scaled, net.scalar(0.25)), shape)
        outputs.append(getattr(net, name)(scaled))
    assert_matches_reference(net.build(*outputs), inputs=4)


def test_logistic_and_tanh_tails():
    """Inputs scaled to [-40, 40] reach LOGISTIC's cut-offs (-9 and 16.6)."""
    net = FloatNet(3)
    x = net.input((64,))
    wide = net.op("MUL", (x, net.scalar(40.0)), (64,))
    assert_matches_reference(net.build(net.logistic(wide), net.tanh(wide), net.exp(wide)), inputs=4)


@pytest.mark.parametrize("alpha_shape", [(1,), (5,), (1, 1, 5), (3, 4, 5), (1, 4, 1)])
def test_prelu_matches_reference(alpha_shape):
    net = FloatNet(4)
    x = net.input((1, 3, 4, 5))
    assert_matches_reference(net.build(net.prelu(x, net.const(alpha_shape, 0.5))), inputs=3)


@pytest.mark.parametrize("shape", [(1, 10), (2, 3, 8), (1, 4, 4, 3), (5,)])
def test_l2_normalization_matches_reference(shape):
    net = FloatNet(5)
    x = net.input(shape)
    tiny = net.op("MUL", (x, net.scalar(1e-8)), shape)
    assert_matches_reference(net.build(net.l2_normalization(x), net.l2_normalization(tiny)), inputs=3)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_within_tolerance(approximate):
    """GELU's reference evaluates erfc / tanh with Eigen's own approximations
    (gelu.h), not the C library's: the outputs agree within check's float
    tolerance, not bit for bit."""
    net = FloatNet(6)
    x = net.input((3, 50))
    wide = net.op("MUL", (x, net.scalar(6.0)), (3, 50))
    report = check_model(net.build(net.gelu(wide, approximate)), inputs=4, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def test_int8_maximum_minimum_match_reference():
    rng = np.random.default_rng(7)
    model = Branches("int8 maximum / minimum")
    for k in range(6):
        shape1, shape2 = random_shape_pair(rng)
        q = random_int8_quant(rng)
        a = model.input(shape1, "int8", q)
        b = model.input(shape2, "int8", q)
        model.op("MAXIMUM" if k % 2 == 0 else "MINIMUM", (a, b), np.broadcast_shapes(shape1, shape2), "int8", q)
    assert_matches_reference(model.build(), inputs=3)


REDUCTION_CASES = [
    ((2, 3, 4, 5), (1, 2), True),
    ((2, 3, 4, 5), (3,), False),
    ((2, 3, 4, 5), (0, 2), False),
    ((2, 3, 4, 5), (-1, 0, 1, 2), False),
    ((6, 7), (0,), True),
    ((1, 9, 2), (1,), False),
    ((4,), (0,), False),
]


def test_float_sum_reduce_max_and_min_match_reference():
    net = FloatNet(8)
    outputs = []
    for shape, axes, keep_dims in REDUCTION_CASES:
        x = net.input(shape)
        wide = net.op("MUL", (x, net.scalar(100.0)), shape)  # sums of larger magnitudes round
        outputs += [
            net.sum(wide, axes, keep_dims),
            net.reduce_max(x, axes, keep_dims),
            net.reduce_min(x, axes, keep_dims),
        ]
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_int8_reduce_max_and_min_match_reference():
    rng = np.random.default_rng(9)
    model = Branches("int8 reduce_max / reduce_min")
    for shape, axes, keep_dims in REDUCTION_CASES:
        q = random_int8_quant(rng)
        x = model.input(shape, "int8", q)
        axes_set = {a % len(shape) for a in axes}
        out = tuple(1 if i in axes_set else d for i, d in enumerate(shape) if keep_dims or i not in axes_set)
        axis = model.constant(np.array(axes, np.int32), "int32")
        model.op("REDUCE_MAX", (x, axis), out, "int8", q, {"keep_dims": keep_dims})
        model.op("REDUCE_MIN", (x, axis), out, "int8", q, {"keep_dims": keep_dims})
    assert_matches_reference(model.build(), inputs=3)


@pytest.mark.parametrize(
    "lhs, rhs, adj_x, adj_y",
    [
        ((3, 4), (4, 5), False, False),
        ((2, 3, 4), (2, 4, 5), False, False),
        ((2, 3, 4), (4, 5), False, False),
        ((1, 3, 4), (6, 4, 2), False, False),
        ((2, 1, 4, 3), (1, 3, 5, 4), True, True),
        ((2, 6, 3), (2, 6, 7), True, False),
        ((5, 8), (2, 7, 8), False, True),
    ],
)
def test_float_batch_matmul_matches_reference(lhs, rhs, adj_x, adj_y):
    net = FloatNet(10)
    a = net.input(lhs)
    b = net.input(rhs) if len(rhs) != 2 else net.const(rhs)
    assert_matches_reference(net.build(net.batch_matmul(a, b, adj_x, adj_y)), inputs=3)


def test_space_depth_and_reverse_match_reference():
    """float32 and int8 (same quantization in and out): SPACE_TO_DEPTH and
    DEPTH_TO_SPACE with blocks 2 and 3, REVERSE_V2 over single axes, several
    contiguous axes (TFLite refuses others) given in any order and negative."""
    net = FloatNet(11)
    x = net.input((2, 6, 6, 3))
    y = net.input((1, 2, 3, 18))
    z = net.input((2, 3, 4, 5, 2))
    outputs = [
        net.space_to_depth(x, 2),
        net.space_to_depth(x, 3),
        net.depth_to_space(y, 3),
        net.reverse_v2(z, [1]),
        net.reverse_v2(z, [3, 2, -1]),
        net.reverse_v2(z, [0, 1]),
        net.reverse_v2(x, [3]),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)

    model = Branches("int8 rearrangements")
    q = (0.05, -7)
    a = model.input((1, 4, 6, 2), "int8", q)
    model.op("SPACE_TO_DEPTH", (a,), (1, 2, 3, 8), "int8", q, {"block_size": 2})
    b = model.input((1, 2, 2, 8), "int8", q)
    model.op("DEPTH_TO_SPACE", (b,), (1, 4, 4, 2), "int8", q, {"block_size": 2})
    c = model.input((3, 5), "int8", q)
    model.op("REVERSE_V2", (c, model.constant(np.array([1], np.int32), "int32")), (3, 5), "int8", q)
    assert_matches_reference(model.build(), inputs=2)


def every_math_op_model() -> bytes:
    """One float model chaining every operator of mcu_math.c and the
    reductions and rearrangements beside it, as a converter would emit a
    small normalisation / attention block."""
    net = FloatNet(12)
    x = net.input((1, 4, 4, 8))
    gate = net.input((8,))
    h = net.prelu(x, net.const((8,), 0.3))
    h = net.maximum(net.minimum(h, net.scalar(2.0)), net.scalar(-2.0))
    h = net.div(h, net.op("ADD", (net.abs(gate), net.scalar(0.5)), (8,)), "RELU6")
    h = net.squared_difference(h, net.neg(x))
    h = net.pow(net.op("ADD", (h, net.scalar(1.0)), (1, 4, 4, 8)), net.scalar(0.5))
    h = net.sqrt(net.square(net.log(net.exp(h))))
    h = net.rsqrt(net.op("ADD", (h, net.scalar(1.0)), (1, 4, 4, 8)))
    h = net.gelu(net.tanh(net.logistic(h)), approximate=True)
    h = net.l2_normalization(h)
    h = net.space_to_depth(h, 2)  # (1, 2, 2, 32)
    h = net.depth_to_space(net.reverse_v2(h, [2]), 2)  # (1, 4, 4, 8)
    rows = net.op("RESHAPE", (h, net.int32_const([1, 16, 8])), (1, 16, 8), {"new_shape": [1, 16, 8]})
    scores = net.batch_matmul(rows, rows, adj_y=True)  # (1, 16, 16)
    return net.build(net.sum(scores, [2]), net.reduce_max(scores, [1], keep_dims=True), net.reduce_min(scores, [0]))


def test_a_float_model_using_every_math_op():
    report = check_model(every_math_op_model(), inputs=5, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()
    # Only GELU's Eigen tanh may differ from the C library's.
    assert report.max_float_error < 1e-6


@needs_cortex_m
def test_float_math_on_cortex_m4_within_tolerance():
    """Under QEMU mps2-an386: newlib's expf, logf, tanhf, powf, erfcf are not
    glibc's, so results agree within check's float tolerance; the
    arithmetic-only ops stay bit-exact there too (checked in the model's
    other outputs by the same tolerance)."""
    report = check_model(every_math_op_model(), target="mps2-an386", inputs=2, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()
    report = check_model(binary_model(0), target="mps2-an386", inputs=2, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


@pytest.mark.parametrize(
    "opcode, options", [("EXP", None), ("GELU", {"approximate": False}), ("GELU", {"approximate": True})]
)
def test_int8_table_ops_match_reference(opcode, options):
    """int8 EXP and GELU: TFLite fills a 256-entry table in float32 with the
    C library's expf / erfcf / tanhf at Prepare; every input byte is hit
    (check draws int8 inputs over the whole range)."""
    rng = np.random.default_rng(13)
    model = Branches(f"int8 {opcode}")
    for _ in range(3):
        in_q = (float(np.float32(rng.uniform(0.01, 0.05))), int(rng.integers(-128, 128)))
        out_q = (float(np.float32(rng.uniform(0.02, 0.3))), int(rng.integers(-128, 0)))
        x = model.input((16, 16), "int8", in_q)
        model.op(opcode, (x,), (16, 16), "int8", out_q, options)
    assert_matches_reference(model.build(), inputs=3)


@pytest.mark.parametrize("alpha_shape", [(1,), (6,), (1, 1, 6), (4, 5, 6), (3, 4, 5, 6)])
def test_int8_prelu_matches_reference(alpha_shape):
    """Inputs on both sides of the input zero point, alpha of either sign
    (a constant, as converters write it) broadcast over the input."""
    rng = np.random.default_rng(14)
    model = Branches("int8 prelu")
    for _ in range(3):
        in_q, alpha_q = random_int8_quant(rng), random_int8_quant(rng, 0.001, 0.02)
        out_q = (float(np.float32(in_q[0] * rng.uniform(0.5, 2.0))), int(rng.integers(-128, 128)))
        x = model.input((3, 4, 5, 6), "int8", in_q)
        alpha = model.constant(rng.integers(-128, 128, size=alpha_shape, dtype=np.int8), "int8", alpha_q)
        model.op("PRELU", (x, alpha), (3, 4, 5, 6), "int8", out_q)
    assert_matches_reference(model.build(), inputs=3)


def test_int8_squared_difference_matches_reference():
    """Random broadcast shape pairs and quantizations, equal input scales
    (the common case) included; output scales large enough that TFLite's
    output rescale stays below one, as it requires."""
    rng = np.random.default_rng(15)
    model = Branches("int8 squared difference")
    for k in range(8):
        shape1, shape2 = random_shape_pair(rng)
        q1 = random_int8_quant(rng, 0.005, 0.1)
        q2 = (q1[0], int(rng.integers(-128, 128))) if k % 3 == 0 else random_int8_quant(rng, 0.005, 0.1)
        largest = 255 * max(q1[0], q2[0])
        out_q = (float(np.float32(largest * largest / 255 * rng.uniform(0.05, 1.0))), int(rng.integers(-128, 0)))
        a = model.input(shape1, "int8", q1)
        b = model.input(shape2, "int8", q2)
        model.op("SQUARED_DIFFERENCE", (a, b), np.broadcast_shapes(shape1, shape2), "int8", out_q)
    assert_matches_reference(model.build(), inputs=3)


@pytest.mark.parametrize("opcode", ["ABS", "LOG", "SQRT", "RSQRT", "NEG"])
def test_int8_elementwise_tables_match_reference(opcode):
    """int8 ABS, LOG, SQRT, RSQRT, NEG: every input byte at several quantizations
    (equal and different scales for ABS).  SQRT and RSQRT are only defined
    from the zero point up (TFLite fails below it), so their inputs start
    there."""
    rng = np.random.default_rng(16)
    model = Branches(f"int8 {opcode}")
    arrays = []
    for k in range(4):
        in_scale = float(np.float32(rng.uniform(0.01, 0.1)))
        in_zp = -128 if opcode in ("SQRT", "RSQRT") and k % 2 == 0 else int(rng.integers(-128, 0))
        out_scale = in_scale if (opcode == "ABS" and k == 0) else float(np.float32(rng.uniform(0.005, 0.1)))
        x = model.input((256,), "int8", (in_scale, in_zp))
        model.op(opcode, (x,), (256,), "int8", (out_scale, int(rng.integers(-128, 128))))
        low = in_zp if opcode in ("SQRT", "RSQRT") else -128
        arrays.append(np.resize(np.arange(low, 128), 256).astype(np.int8))
    assert_matches_reference(model.build(), input_sets=[arrays])


@pytest.mark.parametrize(
    "lhs, rhs, adj_x, adj_y",
    [
        ((3, 4), (4, 5), False, False),
        ((2, 3, 16), (2, 16, 5), False, False),
        ((1, 3, 4), (6, 4, 2), False, False),
        ((2, 1, 4, 3), (1, 3, 5, 4), True, True),
        ((5, 8), (2, 7, 8), False, True),
    ],
)
def test_int8_batch_matmul_matches_reference(lhs, rhs, adj_x, adj_y):
    rng = np.random.default_rng(17)
    model = Branches("int8 batch_matmul")
    qa, qb = random_int8_quant(rng, 0.01, 0.05), random_int8_quant(rng, 0.01, 0.05)
    depth = lhs[-2] if adj_x else lhs[-1]
    rows, cols = (lhs[-1] if adj_x else lhs[-2]), (rhs[-2] if adj_y else rhs[-1])
    out_q = (float(np.float32(qa[0] * qb[0] * 40 * np.sqrt(depth))), int(rng.integers(-20, 20)))
    a = model.input(lhs, "int8", qa)
    b = model.input(rhs, "int8", qb)
    out_shape = tuple(np.broadcast_shapes(lhs[:-2], rhs[:-2])) + (rows, cols)
    model.op("BATCH_MATMUL", (a, b), out_shape, "int8", out_q, {"adj_x": adj_x, "adj_y": adj_y})
    assert_matches_reference(model.build(), inputs=3)


def test_int8_batch_matmul_rounds_twice_as_the_reference():
    """Enough outputs at assorted output scales that rounding once (as ruy,
    behind the optimized kernel, does) instead of twice (the reference's
    MultiplyByQuantizedMultiplier) changes some byte."""
    rng = np.random.default_rng(5)
    model = Branches("int8 batch_matmul rounding")
    for _ in range(6):
        qa, qb = random_int8_quant(rng, 0.01, 0.05), random_int8_quant(rng, 0.01, 0.05)
        out_q = (float(np.float32(qa[0] * qb[0] * rng.uniform(2, 200))), int(rng.integers(-20, 20)))
        a = model.input((4, 32, 8), "int8", qa)
        b = model.input((4, 8, 32), "int8", qb)
        model.op("BATCH_MATMUL", (a, b), (4, 32, 32), "int8", out_q)
    assert_matches_reference(model.build(), inputs=2)


@pytest.mark.parametrize("same_quantization", [False, True])
def test_int8_sum_matches_reference(same_quantization):
    """LiteRT's reference int8 SUM reads and writes the bytes as uint8 (see
    mcu_sum_s8); random int8 inputs cover both halves of the byte range."""
    rng = np.random.default_rng(18)
    model = Branches("int8 sum")
    for shape, axes, keep_dims in REDUCTION_CASES:
        q = random_int8_quant(rng)
        count = int(np.prod([shape[a % len(shape)] for a in set(axes)]))
        out_q = (
            q
            if same_quantization
            else (float(np.float32(q[0] * np.sqrt(count) * rng.uniform(1, 4))), int(rng.integers(-128, 128)))
        )
        x = model.input(shape, "int8", q)
        axes_set = {a % len(shape) for a in axes}
        out = tuple(1 if i in axes_set else d for i, d in enumerate(shape) if keep_dims or i not in axes_set)
        axis = model.constant(np.array(axes, np.int32), "int32")
        model.op("SUM", (x, axis), out, "int8", out_q, {"keep_dims": keep_dims})
    assert_matches_reference(model.build(), inputs=3)


def test_int8_l2_normalization_matches_reference():
    """Rows of several lengths (sums of squares from a few to past 2^21, where
    the inverse square root shifts its input down), zero points at both ends."""
    rng = np.random.default_rng(19)
    model = Branches("int8 l2 normalization")
    for shape, zp in [((1, 10), 0), ((2, 3, 40), -128), ((1, 4, 4, 300), 127), ((5,), 3), ((3, 1), -7)]:
        x = model.input(shape, "int8", (float(np.float32(rng.uniform(0.01, 0.1))), zp))
        model.op("L2_NORMALIZATION", (x,), shape, "int8", (1 / 128, 0))
    assert_matches_reference(model.build(), inputs=3)


def test_int8_div_matches_reference():
    """Random broadcast shapes, quantizations and fused activations; divisors
    of both signs but never at their zero point (TFLite refuses a zero
    divisor)."""
    rng = np.random.default_rng(20)
    model = Branches("int8 div")
    input_sets: list[list[np.ndarray]] = [[], []]
    for _ in range(8):
        shape1, shape2 = random_shape_pair(rng)
        q1 = random_int8_quant(rng, 0.01, 0.1)
        q2 = random_int8_quant(rng, 0.01, 0.1)
        out_q = (float(np.float32(q1[0] / q2[0] * rng.uniform(0.02, 0.5))), int(rng.integers(-128, 128)))
        a = model.input(shape1, "int8", q1)
        b = model.input(shape2, "int8", q2)
        options = {"fused_activation_function": str(rng.choice(ACTIVATIONS))}
        model.op("DIV", (a, b), np.broadcast_shapes(shape1, shape2), "int8", out_q, options)
        for arrays in input_sets:
            divisor = rng.integers(-128, 128, size=shape2)
            divisor = np.where(divisor == q2[1], q2[1] + (1 if q2[1] < 127 else -1), divisor)
            arrays += [rng.integers(-128, 128, size=shape1, dtype=np.int8), divisor.astype(np.int8)]
    assert_matches_reference(model.build(), input_sets=input_sets)


TARGET = "mps2-an386"


@needs_cortex_m
def test_int8_math_on_cortex_m4_bit_exact():
    """The int8 kernels of mcu_math.c and mcu_mean.c (fixed-point reciprocal
    and inverse square root, rescales, the uint8-read SUM) on QEMU mps2-an386."""
    rng = np.random.default_rng(21)
    model = Branches("int8 math on the M4")
    q, qy = (0.05, 3), (0.04, -100)
    x = model.input((2, 4, 4, 6), "int8", q)
    y = model.input((2, 4, 4, 6), "int8", qy)
    model.op("DIV", (x, y), (2, 4, 4, 6), "int8", (0.3, 1), {"fused_activation_function": "NONE"})
    model.op("SQUARED_DIFFERENCE", (x, y), (2, 4, 4, 6), "int8", (0.5, -128))
    alpha = model.constant(rng.integers(-128, 128, size=(6,), dtype=np.int8), "int8", (0.01, 0))
    model.op("PRELU", (x, alpha), (2, 4, 4, 6), "int8", (0.04, -5))
    model.op("L2_NORMALIZATION", (x,), (2, 4, 4, 6), "int8", (1 / 128, 0))
    model.op("BATCH_MATMUL", (x, y), (2, 4, 4, 4), "int8", (0.1, 0), {"adj_x": False, "adj_y": True})
    axes = model.constant(np.array([1, 2], np.int32), "int32")
    model.op("SUM", (x, axes), (2, 6), "int8", (0.4, 7), {"keep_dims": False})
    divisor = rng.integers(-99, 128, size=(2, 4, 4, 6)).astype(np.int8)  # never the zero point -100
    input_sets = [[rng.integers(-128, 128, size=(2, 4, 4, 6), dtype=np.int8), divisor] for _ in range(2)]
    assert_matches_reference(model.build(), input_sets=input_sets, target=TARGET)
