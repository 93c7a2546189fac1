"""SPLIT, SPLIT_V, UNPACK, PACK, SLICE and GATHER on activations against the
TFLite reference interpreter, and the aliasing of contiguous pieces."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.emit.codegen import ACTIVATION_DTYPES
from mcu_planner.frontend.folding import fold_constants
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Quantization
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.targets.check import check_model, generate_for_model
from mcu_planner_testing.builder import Int8Net, python_slice


def _input(net: Int8Net, shape, dtype: str) -> int:
    if dtype == "int8":
        return net.input(shape, -1.5, 2.5)
    if dtype == "int16":
        return net.typed_input(shape, "int16", Quantization((1 / 4096,), (0,)))
    return net.typed_input(shape, dtype)


DTYPES = [
    "int8",
    "float32",
    pytest.param(
        "int16",
        marks=pytest.mark.skipif(
            "int16" not in ACTIVATION_DTYPES, reason="int16 activations arrive with the int16 kernels"
        ),
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_split_v_unpack(dtype):
    net = Int8Net(10)
    outputs = []
    for shape, num, axis in [
        ((1, 4, 6, 2), 2, 3),
        ((1, 4, 6, 2), 3, -2),
        ((1, 4, 6, 2), 4, 1),
        ((3, 4), 3, 0),
        ((2, 6), 2, -1),
        ((2, 3, 2, 2, 2), 2, 3),
    ]:
        outputs += net.split(_input(net, shape, dtype), num, axis=axis)
    for shape, sizes, axis in [
        ((1, 10, 3), [2, -1, 5], 1),
        ((4, 7), [3, 4], -1),
        ((2, 3, 4), [1, 1, 2], 2),
        ((5,), [5], 0),
    ]:
        outputs += net.split_v(_input(net, shape, dtype), sizes, axis=axis)
    for shape, axis in [((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((1, 4, 2), 1), ((17, 2), 1)]:
        outputs += net.unpack(_input(net, shape, dtype), axis=axis)
    assert_matches_reference(net.build(*outputs))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pack_slice_gather(dtype):
    net = Int8Net(11)
    outputs = []
    for shape, count, axis in [((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 4, -1), ((4,), 2, 0), ((1, 17), 2, 2)]:
        xs = [_input(net, shape, dtype) for _ in range(count)]
        if dtype == "int8":  # TFLite packs int8 only with one quantization
            xs = [xs[0]] + [net.mb.add_tensor(shape, "int8", net.quant(xs[0])) for _ in xs[1:]]
            for t in xs[1:]:
                net.inputs.append(t)
        outputs.append(net.pack(*xs, axis=axis))
    for shape, begin, size in [
        ((1, 6, 5, 3), [0, 1, 0, 0], [1, 3, -1, -1]),
        ((4, 5), [1, 2], [2, -1]),
        ((2, 3, 4, 5, 2), [1, 0, 2, 1, 0], [1, 2, 2, -1, 1]),
        ((7,), [6], [1]),
    ]:
        outputs.append(net.slice(_input(net, shape, dtype), begin, size))
    for shape, indices, axis, batch_dims in [
        ((5, 4), [4, 0, 2, 2], 0, 0),
        ((2, 5, 3), [[1, 0], [4, 4]], 1, 0),
        ((2, 5, 3), [2, 0], -1, 0),
        ((2, 5, 3), [[1, 4, 0], [3, 3, 2]], 1, 1),
        ((3, 2, 4), [[0, 3], [1, 1], [2, 0]], -1, -1),
        ((6,), 3, 0, 0),
    ]:
        outputs.append(net.gather(_input(net, shape, dtype), net.const(indices), axis=axis, batch_dims=batch_dims))
    assert_matches_reference(net.build(*outputs))


def test_gather_int64_indices_and_int32_params():
    net = Int8Net(12)
    params = net.typed_input((4, 3), "int32")
    indices = net.const([[3, 1], [0, 0]], "int64")
    assert_matches_reference(net.build(net.gather(params, indices, axis=0)))


def test_contiguous_pieces_share_the_input_bytes():
    """SPLIT / UNPACK / SLICE along the outermost axis longer than 1, and a
    PACK whose inputs are produced in place: no kernel runs, the outputs are
    byte ranges of one buffer, and the result is still exact."""
    net = Int8Net(13)
    x = net.input((1, 8, 4))
    y = net.relu(x)  # produced by an op, so its bytes can be shared
    pieces = net.split(y, 4, axis=1)  # 4 pieces of 1x2x4 = 8 bytes each
    rows = net.unpack(net.relu(net.input((3, 5))), axis=0)
    window = net.slice(net.relu(net.input((1, 6, 5))), [0, 2, 0], [1, 3, -1])
    stacked = net.pack(*[net.relu(r) for r in rows], axis=0)
    outputs = [net.relu(p) for p in pieces] + [net.relu(window), stacked]
    model = net.build(*outputs)
    assert_matches_reference(model)

    graph = fold_constants(read_model(model))
    lifetimes = compute_lifetimes(graph)
    by_opcode = {op.opcode: op for op in graph.operators if op.opcode in ("SPLIT", "UNPACK", "SLICE", "PACK")}
    assert {by_opcode[name].index for name in by_opcode} <= lifetimes.elided_ops
    assert len(by_opcode) == 4
    split = by_opcode["SPLIT"]
    source = lifetimes.placements[split.inputs[1]]
    for k, piece in enumerate(split.outputs):
        assert lifetimes.placements[piece].buffer == source.buffer
        assert lifetimes.placements[piece].offset == source.offset + 8 * k
    slice_op = by_opcode["SLICE"]
    assert lifetimes.placements[slice_op.outputs[0]].offset == lifetimes.placements[slice_op.inputs[0]].offset + 10
    _, _, files = generate_for_model(model, name="pieces")
    source_code = files["pieces.c"].decode()
    for kernel in ("mcu_split(", "mcu_strided_slice(", "mcu_concatenation("):
        assert kernel not in source_code

    # With aliasing off the same ops run as kernels, and stay exact.
    assert not compute_lifetimes(graph, alias=False).elided_ops
    assert check_model(model, alias=False, inputs=2).passed


def _random_strided_specs(rng: np.random.Generator, count: int):
    """Seeded STRIDED_SLICE specs over every mask, each with its input shape:
    begin/end anywhere from past-the-start to past-the-end (negative
    indices and clamping), strides of both signs, and at most one ellipsis."""
    specs = []
    while len(specs) < count:
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rng.integers(1, 5)))
        n = int(rng.integers(1, len(shape) + 2))
        begin, end, strides = [], [], []
        masks = dict.fromkeys(("begin_mask", "end_mask", "shrink_axis_mask", "ellipsis_mask", "new_axis_mask"), 0)
        ellipsis_at = int(rng.integers(0, n)) if rng.random() < 0.4 else -1
        for i in range(n):
            d = shape[min(i, len(shape) - 1)]
            begin.append(int(rng.integers(-d - 1, d + 2)))
            end.append(int(rng.integers(-d - 1, d + 2)))
            strides.append(int(rng.choice([-2, -1, 1, 1, 2, 3])))
            for mask, p in (("begin_mask", 0.3), ("end_mask", 0.3), ("new_axis_mask", 0.15), ("shrink_axis_mask", 0.2)):
                if rng.random() < p:
                    masks[mask] |= 1 << i
        if ellipsis_at >= 0:
            masks["ellipsis_mask"] = 1 << ellipsis_at
            new_axes = bin(masks["new_axis_mask"] & ~masks["ellipsis_mask"]).count("1")
            if len(shape) - (n - 1 - new_axes) < 1:
                continue  # an ellipsis standing for no axis: TFLite still gives it one, numpy none
        # A shrunk axis walked backwards copies nothing in TFLite (its output
        # is left unwritten); converters always give shrunk axes stride 1.
        strides = [1 if masks["shrink_axis_mask"] >> i & 1 else s for i, s in enumerate(strides)]
        try:
            out = np.arange(int(np.prod(shape))).reshape(shape)[python_slice(begin, end, strides, **masks)]
        except IndexError:
            continue  # a shrunk index outside its axis: TensorFlow refuses it too
        if out.size == 0 or out.ndim > 5 or out.ndim + sum(out.shape) == 0:
            continue
        if len(shape) + bin(masks["new_axis_mask"] & ~masks["ellipsis_mask"]).count("1") > 5:
            continue  # TFLite slices at most 5 dimensions
        specs.append((shape, begin, end, strides, masks))
    return specs


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_strided_slice_random_specs_on_activations_and_constants(dtype):
    """The same specs run as a kernel on graph inputs and folded on
    constants; both agree with the reference."""
    net = Int8Net(14)
    rng = np.random.default_rng(15 if dtype == "int8" else 16)
    outputs = []
    for shape, begin, end, strides, masks in _random_strided_specs(rng, 24):
        x = _input(net, shape, dtype)
        outputs.append(net.strided_slice(x, begin, end, strides, **masks))
        values = np.arange(int(np.prod(shape))).reshape(shape) - 5
        c = net.const(values, dtype, net.quant(x) if dtype == "int8" else None)
        sliced = net.strided_slice(c, begin, end, strides, **masks)
        outputs.append(
            net.add(sliced, _input_like(net, sliced, dtype))
            if dtype == "int8"
            else net.op(
                "ADD",
                (sliced, _input_like(net, sliced, dtype)),
                net.shape(sliced),
                "float32",
                {"fused_activation_function": "NONE"},
            )
        )
    model = net.build(*outputs)
    graph = fold_constants(read_model(model))
    assert sum(op.opcode == "STRIDED_SLICE" for op in graph.operators) == 24  # the constant ones are folded
    assert_matches_reference(model, inputs=2)


def _input_like(net: Int8Net, t: int, dtype: str) -> int:
    return _input(net, net.shape(t), dtype)
