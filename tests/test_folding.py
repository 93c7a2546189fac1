"""Generation-time folding (mcu_planner/frontend/folding.py): ops on constants and
shapes become constants, bit-exact with the reference, with no run-time call,
no arena bytes and no flash of their own."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import SHARED
from kernel_models import assert_matches_reference

from mcu_planner.cli import main
from mcu_planner.emit.codegen import ACTIVATION_DTYPES
from mcu_planner.frontend.folding import fold_constants
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph, Operator, Quantization, Tensor
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.problem import peak_live, sharing_lower_bound
from mcu_planner.targets.check import generate_for_model
from mcu_planner_testing.builder import Int8Net, int8_quant

Q = int8_quant(-2.0, 2.0)


def _probe(net: Int8Net, value: int, dtype: str, quant=None) -> int:
    """`value` (a folded result of any shape) flattened and appended to a
    one-element graph input: the reference computes the op, the generated C
    only copies the folded constant, and the output compares both."""
    n = int(np.prod(net.shape(value), dtype=np.int64))
    flat = net.op("RESHAPE", (value, net.const([n])), (n,), dtype, {"new_shape": (n,)}, quant)
    x = net.typed_input((1,), dtype, quant)
    return net.op("CONCATENATION", (x, flat), (n + 1,), dtype, {"axis": 0, "fused_activation_function": "NONE"}, quant)


def _assert_folded_exactly(net: Int8Net, outputs: list[int]) -> None:
    model = net.build(*outputs)
    graph = fold_constants(read_model(model))
    # Everything but the probes' concatenations is gone before lowering.
    assert {op.opcode for op in graph.operators} == {"CONCATENATION"}, [op.opcode for op in graph.operators]
    assert_matches_reference(model, inputs=2)


def _strided(net, x, begin, end, strides, **masks):
    return net.strided_slice(x, begin, end, strides, **masks)


@pytest.mark.parametrize("dtype", ["int32", "float32", "int8"])
def test_strided_slice_masks_fold_exactly(dtype):
    net = Int8Net(0)
    quant = Q if dtype == "int8" else None
    rng = np.random.default_rng(1)
    data = rng.integers(-100, 100, size=(3, 4, 5)).astype(dtype)
    c = net.const(data, dtype, quant)
    cases = [
        ([0, 1, 2], [3, 3, 5], [1, 1, 2], {}),
        ([-1, -3, 0], [-4, 4, -1], [-1, 1, 1], {}),  # negative begin/end/stride
        ([1, 0, 0], [2, 0, 0], [1, 1, 1], {"end_mask": 6, "shrink_axis_mask": 1}),
        ([0, 2, 1], [0, 0, 4], [1, 1, 3], {"begin_mask": 1, "end_mask": 3}),
        ([0, 1], [0, 3], [1, 1], {"ellipsis_mask": 1}),  # x[..., 1:3]
        ([0, 0, 2], [0, 0, 3], [1, 1, 1], {"ellipsis_mask": 2, "shrink_axis_mask": 4}),  # x[0:0, ..., 2]
        ([1, 0, 0, 0], [2, 0, 0, 0], [1, 1, 1, 1], {"new_axis_mask": 2, "end_mask": 12, "shrink_axis_mask": 1}),
        ([0, 0, -1], [0, 0, -6], [1, 1, -2], {"begin_mask": 3, "end_mask": 3, "new_axis_mask": 2}),
        ([-1], [0], [1], {"shrink_axis_mask": 1}),
        ([5, -9, 1], [9, 9, 0], [1, 1, -1], {}),  # clamped beyond the bounds
    ]
    outputs = []
    for begin, end, strides, masks in cases:
        outputs.append(_probe(net, _strided(net, c, begin, end, strides, **masks), dtype, quant))
    _assert_folded_exactly(net, outputs)


def test_shape_arithmetic_folds_exactly():
    net = Int8Net(2)
    big = net.const([2**31 - 1, -(2**31), 7, -7, 7, -7, 0, 13])
    small = net.const([1, 3, 2, 2, -2, -2, 5, -4])  # no INT32_MIN / -1: the reference traps on it
    outputs = []
    for opcode in ("ADD", "SUB", "MUL", "FLOOR_DIV", "FLOOR_MOD", "DIV", "MAXIMUM", "MINIMUM"):
        outputs.append(_probe(net, net.op(opcode, (big, small), (8,), options=_fused(opcode)), "int32"))
    relu = net.op("ADD", (big, small), (8,), options={"fused_activation_function": "RELU6"})
    outputs.append(_probe(net, relu, "int32"))
    shape = net.shape_of(net.typed_input((2, 3, 7), "float32"))
    prod = net.op("REDUCE_PROD", (shape, net.const([0])), (), options={"keep_dims": False})
    total = net.op("SUM", (shape, net.const([-1])), (1,), options={"keep_dims": True})
    outputs += [_probe(net, prod, "int32"), _probe(net, total, "int32")]
    rank = net.op("RANK", (shape,), ())
    outputs.append(_probe(net, rank, "int32"))
    _assert_folded_exactly(net, outputs)


def _fused(opcode: str) -> dict:
    return {"fused_activation_function": "NONE"} if opcode in ("ADD", "SUB", "MUL", "DIV") else {}


def test_float_arithmetic_folds_exactly():
    net = Int8Net(3)
    a = net.const(np.array([7.5, -7.5, 1e30, -0.0, 3.0, 1.0 / 3.0], np.float32), "float32")
    b = net.const(np.array([2.0, 2.0, 1e-10, 4.0, -0.7, 3.0], np.float32), "float32")
    outputs = [
        _probe(net, net.op(opcode, (a, b), (6,), "float32", _fused(opcode)), "float32")
        for opcode in ("ADD", "SUB", "MUL", "DIV", "FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM")
    ]
    _assert_folded_exactly(net, outputs)


def test_cast_range_fill_fold_exactly():
    net = Int8Net(4)
    floats = net.const(np.array([2.5, -2.5, -0.5, 0.99, -1e9, 1e9, 126.7], np.float32), "float32")
    ints = net.const([300, -129, 16777217, -1, 2**31 - 1, 255, 0])
    outputs = [
        _probe(net, net.op("CAST", (floats,), (7,), "int32"), "int32"),  # truncation toward zero
        _probe(net, net.op("CAST", (ints,), (7,), "int8"), "int8"),  # modulo 256
        _probe(net, net.op("CAST", (ints,), (7,), "uint8"), "uint8"),
        _probe(net, net.op("CAST", (ints,), (7,), "float32"), "float32"),  # round to nearest
        _probe(net, net.op("RANGE", (net.const(3), net.const(-8), net.const(-2)), (6,)), "int32"),
        _probe(
            net,
            net.op(
                "RANGE",
                (net.const(0.1, "float32"), net.const(1.0, "float32"), net.const(0.3, "float32")),
                (3,),
                "float32",
            ),
            "float32",
        ),
        _probe(net, net.op("FILL", (net.const([2, 3]), net.const(-5)), (2, 3)), "int32"),
        _probe(net, net.op("FILL", (net.const([4]), net.const(0.25, "float32")), (4,), "float32"), "float32"),
    ]
    _assert_folded_exactly(net, outputs)


@pytest.mark.parametrize(
    "dtype",
    [
        "int8",
        "float32",
        "int32",
        pytest.param(
            "int16",
            marks=pytest.mark.skipif(
                "int16" not in ACTIVATION_DTYPES,
                reason="the probe's CONCATENATION needs int16 activations (int16 kernels)",
            ),
        ),
    ],
)
def test_data_movement_on_constants_folds_exactly(dtype):
    net = Int8Net(5)
    quant = {"int8": Q, "int16": Quantization((1 / 4096,), (0,))}.get(dtype)
    data = np.arange(2 * 3 * 4).reshape(2, 3, 4).astype(dtype) - 7
    c = net.const(data, dtype, quant)
    pieces = net.split(c, 2, axis=-1) + net.split_v(c, [1, -1], axis=1) + net.unpack(c, axis=-2)
    outputs = [_probe(net, p, dtype, quant) for p in pieces]
    outputs.append(_probe(net, net.pack(*net.unpack(c, axis=0), axis=-1), dtype, quant))
    outputs.append(_probe(net, net.slice(c, [1, 0, 1], [-1, 2, 3]), dtype, quant))
    outputs.append(_probe(net, net.gather(c, [[2, 0], [1, 1]], axis=-2), dtype, quant))
    outputs.append(_probe(net, net.gather(c, [[3, 0], [1, 2]], axis=2, batch_dims=1), dtype, quant))
    outputs.append(_probe(net, net.gather(c, [1, 0, 1], axis=0), dtype, quant))
    outputs.append(_probe(net, net.transpose(c, [2, 0, 1]), dtype, quant))
    outputs.append(
        _probe(
            net,
            net.op("CONCATENATION", (c, c), (2, 6, 4), dtype, {"axis": 1, "fused_activation_function": "NONE"}, quant),
            dtype,
            quant,
        )
    )
    _assert_folded_exactly(net, outputs)


# ---------------------------------------------------------------- the Keras flatten chain


def _flatten_model(computed_shape: bool) -> bytes:
    """conv -> RESHAPE to (batch, -1) -> FULLY_CONNECTED, the new shape either
    a constant or computed as Keras exports it: SHAPE -> STRIDED_SLICE ->
    PACK (with REDUCE_PROD of the rest) -> RESHAPE."""
    net = Int8Net(6)
    x = net.input((1, 6, 5, 3))
    y = net.conv2d(x, 4, activation="RELU")
    if computed_shape:
        shape = net.shape_of(y)
        batch = net.strided_slice(shape, [0], [1], [1], shrink_axis_mask=1)
        rest = net.strided_slice(shape, [1], [0], [1], end_mask=1)
        flat = net.op("REDUCE_PROD", (rest, net.const([0])), (), options={"keep_dims": False})
        new_shape = net.pack(batch, flat, axis=0)
        flat_y = net.mb.add_tensor((1, 120), "int8", net.quant(y), name="flat")
        net.mb.add_op("RESHAPE", (y, new_shape), (flat_y,), {})
    else:
        flat_y = net.reshape(y, (1, 120))
    return net.build(net.fully_connected(flat_y, 5))


def test_shape_chain_folds_to_nothing_at_run_time(tmp_path):
    model = _flatten_model(computed_shape=True)
    assert_matches_reference(model, inputs=3)

    graph, plan, files = generate_for_model(model, name="chain")
    assert [op.opcode for op in graph.operators] == ["CONV_2D", "RESHAPE", "FULLY_CONNECTED"]
    source = files["chain.c"].decode()
    for folded in ("SHAPE", "STRIDED_SLICE", "PACK", "REDUCE_PROD"):
        assert f": {folded} " not in source and f": {folded}*" not in source
    assert "mcu_strided_slice" not in source and "mcu_concatenation" not in source
    # No flash for the folded tensors: the only constants are the weights of
    # the conv and the fully connected layer.
    original = read_model(model)
    folded_tensors = {
        t
        for op in original.operators
        if op.opcode in ("SHAPE", "STRIDED_SLICE", "PACK", "REDUCE_PROD")
        for t in op.outputs
    }
    for t in folded_tensors:
        assert f"const_t{t}[" not in source
    # No arena either: the same network with a constant shape plans the same
    # arena, and that equals the live peak of the conv's and FC's activations.
    plain_graph, plain_plan, _ = generate_for_model(_flatten_model(computed_shape=False), name="plain")
    assert plan.arena_bytes == plain_plan.arena_bytes

    # Nor flash beyond the result: the folded shape (two int32) stands where
    # the plain model has its constant shape (two int32); the SHAPE, slice
    # bounds and REDUCE_PROD axes are gone.
    def weight_bytes(g):
        return sum(t.nbytes for t in g.tensors if t.is_constant)

    assert weight_bytes(graph) == weight_bytes(plain_graph)
    assert weight_bytes(graph) < weight_bytes(original)
    lifetimes = compute_lifetimes(graph)
    # At most the live peak of the conv's and FC's activations (less only
    # where the FC's output overlaps its dying input).
    assert sharing_lower_bound(lifetimes.problem) <= plan.arena_bytes <= peak_live(lifetimes.problem).bytes
    assert set(lifetimes.placements) == {t for t in lifetimes.placements if not graph.tensors[t].is_constant}
    assert not folded_tensors & set(lifetimes.placements)


def test_folding_is_reported(tmp_path, capsys):
    path = tmp_path / "chain_model.tflite"
    path.write_bytes(_flatten_model(computed_shape=True))
    assert main([str(path), "--ram", "64K"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ops: 3 \(", out)
    assert (
        "note: 5 ops computed at generation time, now constants (PACK x1, REDUCE_PROD x1, SHAPE x1, STRIDED_SLICE x2)"
        in out
    )


def test_unfoldable_variants_are_left_for_lowering(tmp_path, capsys):
    """What TFLite refuses at invoke (an index out of range, an integer
    division by zero) is not folded: the ops stay, lowered to the kernels,
    and the generated invoke fails as TFLite's does."""
    net = Int8Net(7)
    c = net.const([1, 2, 3])
    bad = net.gather(c, [5])
    zero = net.op("FLOOR_DIV", (c, net.const([0, 1, 1])), (3,))
    x = net.typed_input((1,), "int32")
    out = net.op("CONCATENATION", (x, bad, zero), (5,), "int32", {"axis": 0, "fused_activation_function": "NONE"})
    model = net.build(out)
    graph = fold_constants(read_model(model))
    assert sorted(op.opcode for op in graph.operators) == ["CONCATENATION", "FLOOR_DIV", "GATHER"]
    # Generation refuses the GATHER as bad input (validate's gather-index-range)...
    path = tmp_path / "unfoldable.tflite"
    path.write_bytes(model)
    assert main([str(path), "--ram", "64K", "-o", str(tmp_path / "out")]) == 2
    assert "rule gather-index-range" in capsys.readouterr().err


@pytest.mark.skipif(
    not (SHARED / "peer-tests/coral/split_concat.tflite").exists(), reason="../shared/peer-tests/coral absent"
)
def test_coral_split_concat_is_bit_exact(capsys):
    assert main(["check", str(SHARED / "peer-tests/coral/split_concat.tflite"), "--inputs", "5"]) == 0
    assert "bit-exact 5/5" in capsys.readouterr().out


def test_folded_graph_outputs_are_copied_into_the_arena():
    """A graph output computed from shapes alone (SHAPE of the input, a FILL
    sized by it) is folded too; the application still reads it from the
    arena, where one copy from flash puts it."""
    net = Int8Net(8)
    x = net.input((1, 3, 5, 2))
    shape = net.shape_of(x)
    dims = net.strided_slice(shape, [1], [3], [1])
    filled = net.op("FILL", (dims, net.const(7)), (3, 5))
    y = net.relu(x)
    model = net.build(shape, filled, y)
    assert_matches_reference(model)
    graph = fold_constants(read_model(model))
    assert sorted(op.opcode for op in graph.operators) == ["RELU", "RESHAPE", "RESHAPE"]
    for op in graph.operators:
        if op.opcode == "RESHAPE":
            assert graph.tensors[op.inputs[0]].is_constant and op.outputs[0] in graph.outputs


def test_op_missing_a_required_input_is_left_for_lowering():
    """An ADD whose first input is left out (-1) beside a constant is not
    folded: it once reached the folder as None and raised AttributeError;
    now the op stays in the graph for lowering to judge."""
    constant = Tensor(0, "c", (2,), "int32", data=np.array([1, 2], np.int32).tobytes())
    graph = Graph(
        tensors=(
            constant,
            Tensor(1, "sum", (2,), "int32"),
            Tensor(2, "x", (2,), "int32"),
            Tensor(3, "y", (2,), "int32"),
        ),
        operators=(
            Operator(index=0, opcode="ADD", version=1, inputs=(-1, 0), outputs=(1,)),
            Operator(index=1, opcode="ADD", version=1, inputs=(1, 2), outputs=(3,)),
        ),
        inputs=(2,),
        outputs=(3,),
    )
    folded = fold_constants(graph)
    assert folded is graph
    assert not folded.tensors[1].is_constant
