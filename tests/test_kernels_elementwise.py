"""ADD, SUB, MUL (int8 and float32, broadcasting, fused activations) against
TFLite's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS_DIR, needs_shared
from kernel_models import ACTIVATIONS, Branches, assert_matches_reference, random_int8_quant

from mcu_planner.graph import Graph, Operator, Tensor
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.lowering.elementwise import broadcast_walk


def random_shape_pair(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes numpy can broadcast: equal, one with some dimensions 1, or
    one of lower rank."""
    rank = int(rng.integers(1, 6))
    full = tuple(int(d) for d in rng.integers(1, 6, size=rank))
    kind = rng.integers(0, 4)
    if kind == 0:
        other = full
    elif kind == 1:
        other = tuple(1 if rng.random() < 0.5 else d for d in full)
    elif kind == 2:
        other = full[int(rng.integers(0, rank)) :]
    else:
        other = (1,) * int(rng.integers(1, rank + 1))
    return (full, other) if rng.random() < 0.5 else (other, full)


def int8_binary_model(seed: int, branches: int = 6) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"int8 elementwise seed {seed}")
    for _ in range(branches):
        opcode = str(rng.choice(["ADD", "SUB", "MUL"]))
        shape1, shape2 = random_shape_pair(rng)
        q1 = random_int8_quant(rng)
        # Equal input scales are the common case in real models.
        q2 = (q1[0], int(rng.integers(-128, 128))) if rng.random() < 0.3 else random_int8_quant(rng)
        if opcode == "MUL":
            out_scale = q1[0] * q2[0] * 128 * float(rng.uniform(0.3, 3.0))
        else:
            out_scale = max(q1[0], q2[0]) * float(rng.uniform(0.5, 3.0))
        out_q = (float(np.float32(out_scale)), int(rng.integers(-128, 128)))
        a = model.input(shape1, "int8", q1)
        if rng.random() < 0.2:
            values = rng.integers(-128, 128, size=shape2, dtype=np.int8)
            b = model.constant(values, "int8", q2)
        else:
            b = model.input(shape2, "int8", q2)
        out_shape = np.broadcast_shapes(shape1, shape2)
        options = {"fused_activation_function": str(rng.choice(ACTIVATIONS))}
        model.op(opcode, (a, b), out_shape, "int8", out_q, options)
    return model.build()


@pytest.mark.parametrize("seed", range(6))
def test_int8_add_sub_mul_match_reference(seed):
    assert_matches_reference(int8_binary_model(seed), inputs=3, seed=seed)


def test_int8_add_of_a_tensor_with_itself():
    model = Branches("x + x")
    x = model.input((3, 17), "int8", (0.02, 5))
    model.op("ADD", (x, x), (3, 17), "int8", (0.05, -3), {"fused_activation_function": "NONE"})
    model.op("MUL", (x, x), (3, 17), "int8", (0.2, -128), {"fused_activation_function": "RELU"})
    assert_matches_reference(model.build(), inputs=2)


def float_binary_model(seed: int, branches: int = 6) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"float elementwise seed {seed}")
    for _ in range(branches):
        opcode = str(rng.choice(["ADD", "SUB", "MUL"]))
        shape1, shape2 = random_shape_pair(rng)
        a = model.input(shape1, "float32")
        b = model.input(shape2, "float32")
        options = {"fused_activation_function": str(rng.choice(ACTIVATIONS))}
        model.op(opcode, (a, b), np.broadcast_shapes(shape1, shape2), "float32", None, options)
    return model.build()


@pytest.mark.parametrize("seed", range(2))
def test_float_add_sub_mul_are_bit_exact(seed):
    assert_matches_reference(float_binary_model(100 + seed), inputs=3, seed=seed)


def test_chain_of_adds_runs_in_place():
    """Each ADD's output may take the bytes of an input that dies there; the
    check build verifies the plan at run time and the values stay exact."""
    model = Branches("residual chain")
    x = model.input((1, 8, 8, 4), "int8", (0.05, 0))
    y = model.input((1, 8, 8, 4), "int8", (0.05, 0))
    h = model.mb.add_tensor((1, 8, 8, 4), "int8", (0.08, 2))
    model.mb.add_op("ADD", (x, y), (h,), {"fused_activation_function": "RELU"})
    h2 = model.mb.add_tensor((1, 8, 8, 4), "int8", (0.1, -1))
    model.mb.add_op("SUB", (h, y), (h2,), {"fused_activation_function": "NONE"})
    model.op("MUL", (h2, h2), (1, 8, 8, 4), "int8", (0.05, -20), {"fused_activation_function": "NONE"})
    assert_matches_reference(model.build(), inputs=2)


@needs_shared
def test_shared_simple_add_model():
    assert_matches_reference(MODELS_DIR / "tflite-micro" / "simple_add_model.tflite", inputs=2)


def _graph_for(shape1, shape2, out_shape, dtype="int8") -> tuple[Operator, Graph]:
    tensors = (Tensor(0, "a", shape1, dtype), Tensor(1, "b", shape2, dtype), Tensor(2, "y", out_shape, dtype))
    op = Operator(0, "ADD", 1, (0, 1), (2,), options={"fused_activation_function": "NONE"})
    return op, Graph(tensors, (op,), (0, 1), (2,))


def test_broadcast_walk_merges_dimensions():
    op, _ = _graph_for((2, 3, 4), (2, 3, 4), (2, 3, 4))
    dims, s1, s2, rank = broadcast_walk(op, (2, 3, 4), (2, 3, 4), (2, 3, 4))
    assert (rank, dims.values, s1.values, s2.values) == (1, (24,), (1,), (1,))
    dims, s1, s2, rank = broadcast_walk(op, (2, 3, 4), (4,), (2, 3, 4))
    assert (dims.values, s1.values, s2.values) == ((6, 4), (4, 1), (0, 1))
    # Every output element is visited once: strides and dims address all of a.
    dims, s1, s2, rank = broadcast_walk(op, (5, 1, 3), (1, 4, 1), (5, 4, 3))
    assert int(np.prod(dims.values)) == 60 and rank == 3


def test_incompatible_shapes_are_not_lowerable():
    op, graph = _graph_for((2, 3), (4, 3), (4, 3), "float32")
    with pytest.raises(NotLowerable):
        lower(op, graph)


def test_int16_add_is_not_lowerable():
    tensors = tuple(Tensor(i, n, (4,), "int16", None) for i, n in enumerate("aby"))
    op = Operator(0, "ADD", 1, (0, 1), (2,), options={"fused_activation_function": "NONE"})
    with pytest.raises(NotLowerable):
        lower(op, Graph(tensors, (op,), (0, 1), (2,)))
