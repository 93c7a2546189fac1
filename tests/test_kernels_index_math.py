"""CAST, GATHER_ND and plain-integer arithmetic on activations (int32 ADD /
SUB / MUL, FLOOR_DIV, FLOOR_MOD): the index arithmetic of pose models such as
Coral's MoveNet, against TFLite's reference kernels.  One model per family,
many branches, inputs chosen to reach the edges (wrapping, ties, signs)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import ACTIVATIONS, FedBranches, assert_matches_reference

from mcu_planner.graph import Graph, Operator, Tensor
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner_testing.builder import Int8Net, run_reference


def full_int32(rng, shape):
    return rng.integers(-(2**31), 2**31, size=shape, dtype=np.int64)


def small_int32(rng, shape):
    return rng.integers(-20, 21, size=shape)


def nonzero_int32(rng, shape):
    values = rng.integers(-9, 10, size=shape)
    return np.where(values == 0, 7, values)


def integers_of(dtype: str):
    info = np.iinfo(dtype)
    return lambda rng, shape: rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64)


def halves(rng, shape, low=-100, high=100):
    """Floats on multiples of 0.5 (the truncation ties) and some in between."""
    values = rng.integers(2 * low, 2 * high + 1, size=shape) / 2
    return np.where(rng.random(shape) < 0.3, rng.uniform(low, high, size=shape), values)


def cast_model() -> FedBranches:
    model = FedBranches("CAST")
    shape = (3, 7)
    to_float = {
        "uint8": integers_of("uint8"),
        "int8": integers_of("int8"),
        "int16": integers_of("int16"),
        "int32": full_int32,  # beyond 2^24: float32 rounds to nearest even
        "int64": lambda rng, s: rng.integers(-(2**62), 2**62, size=s),
        "bool": lambda rng, s: rng.random(s) < 0.5,
    }
    for dtype, draw in to_float.items():
        model.op("CAST", (model.fed(shape, dtype, draw),), shape, "float32")
    # Integers to integers: narrowing wraps, widening sign- or zero-extends.
    for source, target in [("int32", "int8"), ("int32", "uint8"), ("int32", "int16"), ("int8", "int32"),
                           ("uint8", "int32"), ("int16", "int8"), ("int8", "uint8"), ("int32", "int64"),
                           ("int64", "int32"), ("int32", "bool"), ("uint8", "bool")]:  # fmt: skip
        draw = full_int32 if source in ("int32", "int64") else integers_of(source)
        model.op("CAST", (model.fed(shape, source, draw),), shape, target)
    # float32 to integers truncates toward zero (ties included); to bool: x != 0.
    for target, draw in [
        ("int32", lambda rng, s: halves(rng, s, -1e6, 1e6)),
        ("int16", halves),
        ("int8", halves),
        ("uint8", lambda rng, s: halves(rng, s, 0, 255)),
        ("int64", lambda rng, s: halves(rng, s, -1e9, 1e9)),
        ("bool", lambda rng, s: np.where(rng.random(s) < 0.3, 0.0, rng.uniform(-1, 1, s))),
    ]:
        model.op("CAST", (model.fed(shape, "float32", draw),), shape, target)
    return model


def test_cast_between_every_type_matches_reference():
    model = cast_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(2))


BROADCAST_SHAPES = [((4, 5), (4, 5)), ((2, 3, 4), (4,)), ((3, 1), (1, 6)), ((5,), (1,))]


def int32_arithmetic_model() -> FedBranches:
    model = FedBranches("int32 arithmetic")
    for k, (shape1, shape2) in enumerate(BROADCAST_SHAPES):
        out_shape = np.broadcast_shapes(shape1, shape2)
        for opcode in ("ADD", "SUB", "MUL"):
            # Full-range values wrap modulo 2^32; small ones meet RELU6 and RELU_N1_TO_1's bounds.
            draw = full_int32 if k % 2 == 0 else small_int32
            for activation in ACTIVATIONS if k < 2 else ("NONE",):
                a, b = model.fed(shape1, "int32", draw), model.fed(shape2, "int32", draw)
                model.op(opcode, (a, b), out_shape, "int32", None, {"fused_activation_function": activation})
        for opcode in ("FLOOR_DIV", "FLOOR_MOD"):
            a = model.fed(shape1, "int32", full_int32 if k == 0 else small_int32)
            b = model.fed(shape2, "int32", nonzero_int32)
            model.op(opcode, (a, b), out_shape, "int32")
            fa = model.fed(shape1, "float32", lambda rng, s: halves(rng, s, -50, 50))
            fb = model.fed(shape2, "float32", lambda rng, s: np.where(rng.random(s) < 0.5, -2.5, halves(rng, s, 1, 9)))
            model.op(opcode, (fa, fb), out_shape, "float32")
    return model


def test_int32_arithmetic_and_floor_div_mod_match_reference():
    model = int32_arithmetic_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(3))


def test_int32_arithmetic_wraps_as_the_reference():
    # Each of these overflows int32; the reference wraps (two's complement) and so must the kernel.
    model = FedBranches("int32 overflow")
    edges = np.array([2**31 - 1, -(2**31), 65536, -1, 2**30, 46341], dtype=np.int64)
    others = np.array([1, -1, 65536, -(2**31), 2, 46341], dtype=np.int64)
    for opcode in ("ADD", "SUB", "MUL"):
        a = model.fed(edges.shape, "int32", lambda rng, s: edges)
        b = model.fed(others.shape, "int32", lambda rng, s: others)
        model.op(opcode, (a, b), edges.shape, "int32", None, {"fused_activation_function": "NONE"})
    want = run_reference(model.build(), model.input_sets(1)[0])
    assert int(want[2][2]) == 0 and int(want[0][1]) == 2**31 - 1  # 65536 * 65536, -2^31 + -1: wrapped
    assert_matches_reference(model.build(), input_sets=model.input_sets(1))


@needs_cortex_m
def test_cast_and_int32_arithmetic_bit_exact_on_cortex_m4():
    """Under QEMU mps2-an386 (newlib, soft double): integer arithmetic,
    conversions and FLOOR_DIV's double quotient are exact there too."""
    for model in (cast_model(), int32_arithmetic_model()):
        assert_matches_reference(model.build(), target="mps2-an386", input_sets=model.input_sets(1))


def gather_nd_model() -> tuple[bytes, list[list[np.ndarray]]]:
    net = Int8Net(seed=3, description="GATHER_ND")
    x = net.input((4, 5, 3))
    # Whole rows (indices_nd 1), vectors (2) and single elements (3), from
    # constant and run-time indices; both ends of every dimension.
    rows = net.gather_nd(x, [[3], [0], [3]])
    vectors = net.gather_nd(x, [[[0, 0], [3, 4]], [[1, 2], [2, 0]]])
    run_time = net.typed_input((6, 3), "int32")
    elements = net.gather_nd(x, run_time)
    floats = net.float_input((2, 3))
    wide = net.typed_input((2, 1), "int64")
    float_rows = net.mb.add_tensor((2, 3), "float32")
    net.mb.add_op("GATHER_ND", (floats, wide), (float_rows,), None)
    model = net.build(rows, vectors, elements, float_rows)
    rng = np.random.default_rng(0)
    sets = []
    for _ in range(2):
        picks = np.stack([rng.integers(0, n, size=6) for n in (4, 5, 3)], axis=1).astype(np.int32)
        picks[0] = (3, 4, 2)
        sets.append(
            [
                rng.integers(-128, 128, size=(4, 5, 3)).astype(np.int8),
                picks,
                rng.uniform(-1, 1, size=(2, 3)).astype(np.float32),
                np.array([[1], [0]], np.int64),
            ]
        )
    return model, sets


def test_gather_nd_matches_reference():
    model, sets = gather_nd_model()
    assert_matches_reference(model, input_sets=sets)


def _op_graph(opcode: str, dtypes: tuple[str, ...]) -> tuple[Operator, Graph]:
    tensors = tuple(Tensor(index=i, name=f"t{i}", shape=(4,), dtype=d) for i, d in enumerate(dtypes))
    inputs, output = tuple(range(len(dtypes) - 1)), len(dtypes) - 1
    op = Operator(index=0, opcode=opcode, version=1, inputs=inputs, outputs=(output,))
    return op, Graph(tensors=tensors, operators=(op,), inputs=inputs, outputs=(output,))


@pytest.mark.parametrize(
    "opcode, dtypes, why",
    [
        ("CAST", ("float16", "float32"), "CAST float16->float32"),
        ("FLOOR_DIV", ("int8", "int8", "int8"), "FLOOR_DIV with int8"),
        ("ADD", ("int32", "int32", "int64"), "mixing"),
    ],
)
def test_variants_without_a_kernel_are_not_lowerable(opcode, dtypes, why):
    op, graph = _op_graph(opcode, dtypes)
    with pytest.raises(NotLowerable, match=why):
        lower(op, graph)
