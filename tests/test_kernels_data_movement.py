"""CONCATENATION, STRIDED_SLICE, RESIZE_NEAREST_NEIGHBOR (int8 and float32)
against TFLite's reference kernels."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from kernel_models import Branches, assert_matches_reference, random_int8_quant

from mcu_planner.emit.output_dir import write_output
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph, Operator, Tensor
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.targets.check import HostTarget, generate_for_model


def _quant(dtype: str, q):
    return q if dtype == "int8" else None


# ---------------------------------------------------------------- CONCATENATION


def concat_model(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"concatenation seed {seed}")
    for dtype in ("int8", "float32", "int8"):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 6, size=rank)]
        axis = int(rng.integers(-rank, rank))
        q = random_int8_quant(rng)
        inputs, total = [], 0
        for _ in range(int(rng.integers(1, 6))):
            part = list(shape)
            part[axis] = int(rng.integers(1, 5))
            total += part[axis]
            inputs.append(model.input(part, dtype, _quant(dtype, q)))
        out_shape = list(shape)
        out_shape[axis] = total
        model.op("CONCATENATION", inputs, out_shape, dtype, _quant(dtype, q), {"axis": axis})
    return model.build()


@pytest.mark.parametrize("seed", range(3))
def test_concatenation_matches_reference(seed):
    assert_matches_reference(concat_model(seed), inputs=2, seed=seed)


def test_concatenation_of_computed_tensors_aliased_or_copied():
    """Inputs produced by ops: along an axis with only leading ones before it
    the planner has the producers write into the output (the op is elided);
    along an inner axis the kernel copies.  Both must give the same bytes."""
    model = Branches("concat of computed tensors")
    q = (0.05, 0)
    parts = []
    for width in (3, 5, 2):
        x = model.input((1, 4, width, 8), "int8", q)
        y = model.mb.add_tensor((1, 4, width, 8), "int8", q)
        model.mb.add_op("RELU", (x,), (y,))
        parts.append(y)
    model.op("CONCATENATION", parts, (1, 4, 10, 8), "int8", q, {"axis": 2})
    leading = []
    for rows in (2, 3):
        x = model.input((1, rows, 6), "int8", q)
        y = model.mb.add_tensor((1, rows, 6), "int8", q)
        model.mb.add_op("RELU", (x,), (y,))
        leading.append(y)
    joined = model.mb.add_tensor((1, 5, 6), "int8", q)
    model.mb.add_op("CONCATENATION", leading, (joined,), {"axis": 1})
    # A graph output keeps its own buffer; aliasing needs an inner tensor.
    model.op("RELU", (joined,), (1, 5, 6), "int8", q)
    built = model.build()

    graph = read_model(built)
    elided = compute_lifetimes(graph).elided_ops
    concat_ops = [op.index for op in graph.operators if op.opcode == "CONCATENATION"]
    assert concat_ops[1] in elided and concat_ops[0] not in elided
    assert_matches_reference(built, inputs=2)


def run_on_host(model: bytes, input_sets: list[list[np.ndarray]]) -> list[list[bytes]]:
    graph, _, files = generate_for_model(model, name="model")
    with tempfile.TemporaryDirectory() as work:
        generated = write_output(files, Path(work) / "generated")
        run = HostTarget().run(
            generated,
            "model",
            [[np.ascontiguousarray(a).tobytes() for a in arrays] for arrays in input_sets],
            input_bytes=[graph.tensors[t].nbytes for t in graph.inputs],
            output_bytes=[graph.tensors[t].nbytes for t in graph.outputs],
            check_build=True,
            workdir=Path(work) / "build",
        )
    return run.outputs


def test_concatenation_with_too_many_inputs_is_not_lowerable():
    tensors = tuple(Tensor(i, f"x{i}", (1, 2), "int8") for i in range(9)) + (Tensor(9, "y", (1, 18), "int8"),)
    op = Operator(0, "CONCATENATION", 1, tuple(range(9)), (9,), options={"axis": 1})
    with pytest.raises(NotLowerable):
        lower(op, Graph(tensors, (op,), tuple(range(9)), (9,)))


# ---------------------------------------------------------------- STRIDED_SLICE


def random_slice(rng: np.random.Generator, shape: list[int]):
    """begin/end/strides/masks for `shape` and the output shape numpy gives
    the equivalent Python slice (TensorFlow's slicing semantics)."""
    count = int(rng.integers(1, len(shape) + 1))  # trailing axes left out are taken whole
    begin, end, strides = [], [], []
    begin_mask = end_mask = shrink_mask = 0
    index = []
    for axis in range(count):
        size = shape[axis]
        if rng.random() < 0.15:
            b = int(rng.integers(-size, size))
            begin.append(b)
            end.append(b + 1)
            strides.append(1)
            shrink_mask |= 1 << axis
            index.append(b)
            continue
        stride = int(rng.choice([1, 1, 2, 3, -1, -2]))
        b = int(rng.integers(-size - 2, size + 2))
        e = int(rng.integers(-size - 2, size + 2))
        begin.append(b)
        end.append(e)
        strides.append(stride)
        use_b, use_e = rng.random() < 0.2, rng.random() < 0.2
        begin_mask |= use_b << axis
        end_mask |= use_e << axis
        index.append(slice(None if use_b else b, None if use_e else e, stride))
    out_shape = np.empty(shape, dtype=np.int8)[tuple(index)].shape
    options = {"begin_mask": begin_mask, "end_mask": end_mask, "shrink_axis_mask": shrink_mask}
    return begin, end, strides, options, out_shape


def strided_slice_model(seed: int, branches: int = 8) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"strided slice seed {seed}")
    made = 0
    while made < branches:
        shape = [int(d) for d in rng.integers(1, 7, size=int(rng.integers(1, 6)))]
        begin, end, strides, options, out_shape = random_slice(rng, shape)
        if 0 in out_shape:
            continue
        dtype = "float32" if made % 4 == 3 else "int8"
        q = _quant(dtype, random_int8_quant(rng))
        x = model.input(shape, dtype, q)
        consts = [model.constant(np.array(v, dtype=np.int32), "int32") for v in (begin, end, strides)]
        model.op("STRIDED_SLICE", (x, *consts), out_shape, dtype, q, options)
        made += 1
    return model.build()


@pytest.mark.parametrize("seed", range(3))
def test_strided_slice_matches_reference(seed):
    assert_matches_reference(strided_slice_model(seed), inputs=2, seed=seed)


def test_strided_slice_with_offset_ends():
    """offset=True: each end is a length added to its begin."""
    model = Branches("strided slice offset")
    x = model.input((3, 8, 5), "int8", (0.1, 0))
    consts = [model.constant(np.array(v, dtype=np.int32), "int32") for v in ([1, -7, 0], [2, 4, 5], [1, 2, 2])]
    model.op("STRIDED_SLICE", (x, *consts), (2, 2, 3), "int8", (0.1, 0), {"offset": True})
    assert_matches_reference(model.build(), inputs=2)


def test_strided_slice_with_ellipsis_is_not_lowerable():
    model = Branches("ellipsis")
    x = model.input((2, 3), "int8", (0.1, 0))
    consts = [model.constant(np.array(v, dtype=np.int32), "int32") for v in ([0], [1], [1])]
    model.op("STRIDED_SLICE", (x, *consts), (2, 1), "int8", (0.1, 0), {"ellipsis_mask": 1})
    graph = read_model(model.build())
    with pytest.raises(NotLowerable):
        lower(graph.operators[0], graph)


# ---------------------------------------------------------------- RESIZE_NEAREST_NEIGHBOR


def resize_model(seed: int, branches: int = 6) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"resize seed {seed}")
    modes = [(False, False), (True, False), (False, True)]
    for i in range(branches):
        n, h, w, c = (int(v) for v in (rng.integers(1, 3), rng.integers(1, 9), rng.integers(1, 9), rng.integers(1, 5)))
        out_h, out_w = (int(v) for v in rng.integers(1, 17, size=2))
        align, half = modes[i % 3]
        dtype = "float32" if i % 4 == 3 else "int8"
        q = _quant(dtype, random_int8_quant(rng))
        x = model.input((n, h, w, c), dtype, q)
        size = model.constant(np.array([out_h, out_w], dtype=np.int32), "int32")
        options = {"align_corners": align, "half_pixel_centers": half}
        model.op("RESIZE_NEAREST_NEIGHBOR", (x, size), (n, out_h, out_w, c), dtype, q, options)
    return model.build()


@pytest.mark.parametrize("seed", range(3))
def test_resize_nearest_neighbor_matches_reference(seed):
    assert_matches_reference(resize_model(seed), inputs=2, seed=seed)
