"""TFLM builtins added for issue 21 beyond the index arithmetic: CEIL,
FLOOR, ROUND, COS, SIN, ELU (float32), LOGICAL_AND /
OR / NOT, ZEROS_LIKE, TILE, BROADCAST_TO, MIRROR_PAD and EMBEDDING_LOOKUP, against TFLite's reference
kernels (CEIL, ROUND, ELU: TFLM's reference expressions, which LiteRT's
BUILTIN_REF resolver lacks), each family in one multi-branch model."""

from __future__ import annotations

import math

import numpy as np
from kernel_models import FedBranches, assert_matches_reference, few

from mcu_planner.lowering.activations import _float32_unary
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.check import run_generated


def ties_and_spread(rng, shape):
    """Halves (ROUND's ties, both parities and signs), integers, and a spread of reals."""
    ties = rng.integers(-12, 13, size=shape) / 2
    return np.where(rng.random(shape) < 0.6, ties, rng.uniform(-7, 7, size=shape))


def float_unary_model(opcodes) -> FedBranches:
    model = FedBranches("float unary")
    for opcode in opcodes:
        x = model.fed((4, 9), "float32", ties_and_spread)
        model.op(opcode, (x,), (4, 9), "float32")
    return model


def test_floor_cos_sin_match_reference():
    model = float_unary_model(("FLOOR", "COS", "SIN"))
    assert_matches_reference(model.build(), input_sets=model.input_sets(2))


def without_reference_kernel_model() -> FedBranches:
    """CEIL, ROUND and ELU, which LiteRT's BUILTIN_REF resolver does not register."""
    return float_unary_model(("CEIL", "ROUND", "ELU"))


def builtin_interpreter_outputs(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """LiteRT's default (BUILTIN) kernels, which (unlike BUILTIN_REF) have
    CEIL, ROUND and ELU: std::ceil exactly as TFLM; ROUND and ELU equal in
    value to TFLM's reference expressions, checked below."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def tflm_round(x: np.ndarray) -> np.ndarray:
    """reference_ops::Round (RoundToNearest), which TFLM runs: halves to
    even, and floor + 1 where it rounds up, so -0.5 gives +0.0 (LiteRT's
    optimized kernel gives -0.0 there)."""
    floor = np.floor(x).astype(np.float32)
    diff = (x - floor).astype(np.float32)
    down = (diff < 0.5) | ((diff == 0.5) & (np.fmod(floor, 2) == 0))
    return np.where(down, floor, floor + np.float32(1)).astype(np.float32)


def tflm_elu_f32(x: np.ndarray) -> np.ndarray:
    expm1f = _float32_unary("expm1f", math.expm1)
    return np.array([expm1f(np.float32(v)) if v < 0 else v for v in x.reshape(-1)], np.float32).reshape(x.shape)


def test_ceil_round_elu_match_litert_builtin_kernels():
    model = without_reference_kernel_model()
    model_bytes = model.build()
    sets = model.input_sets(2)
    graph, _plan, files = generate_for_model(model_bytes, name="model")
    (run,) = run_generated(graph, files, "model", sets, check_build=False)
    assert len(run.outputs) == len(sets)
    for sample, inputs in zip(run.outputs, sets, strict=True):
        want = builtin_interpreter_outputs(model_bytes, inputs)
        assert len(sample) == len(want) == 3
        # ROUND (output 1) follows TFLM's RoundToNearest, equal in value to LiteRT's optimized kernel.
        assert np.array_equal(want[1], np.round(inputs[1])) and np.array_equal(want[1], tflm_round(inputs[1]))
        want[1] = tflm_round(inputs[1])
        # float ELU (output 2): TFLM's reference_ops::Elu, std::expm1 in float; LiteRT's
        # optimized kernel takes Eigen's exp - 1, within one unit in the last place of it.
        tflm_elu = tflm_elu_f32(inputs[2])
        assert np.allclose(want[2], tflm_elu, rtol=2e-7, atol=0)
        want[2] = tflm_elu
        for got_bytes, expected in zip(sample, want, strict=True):
            assert got_bytes == expected.tobytes(), (np.frombuffer(got_bytes, expected.dtype), expected)
    assert tflm_round(np.array([-0.5, 0.5, 1.5, 2.5, -1.5], np.float32)).tolist() == [0.0, 0.0, 2.0, 2.0, -2.0]
    assert not np.signbit(tflm_round(np.array([-0.5], np.float32)))[0]


def rearrangements_model() -> FedBranches:
    model = FedBranches("logical, zeros_like, tile, broadcast_to")
    coin = few([False, True])
    for opcode, (s1, s2) in (("LOGICAL_AND", ((3, 4), (3, 4))), ("LOGICAL_OR", ((2, 1, 4), (3, 1)))):
        a, b = model.fed(s1, "bool", coin), model.fed(s2, "bool", coin)
        model.op(opcode, (a, b), np.broadcast_shapes(s1, s2), "bool")
    model.op("LOGICAL_NOT", (model.fed((5,), "bool", coin),), (5,), "bool")
    # REDUCE_ALL / REDUCE_ANY: mostly-true and mostly-false inputs so both outcomes occur.
    for opcode, draw in (("REDUCE_ALL", few([True, True, True, False])), ("REDUCE_ANY", few([False] * 5 + [True]))):
        for shape, axes, keep in (((3, 4), [1], False), ((2, 3, 4), [0, 2], True), ((6,), [0], False)):
            x = model.fed(shape, "bool", draw)
            a = model.constant(np.array(axes, np.int32), "int32")
            out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
            model.op(opcode, (x, a), out, "bool", None, {"keep_dims": keep})
    for dtype in ("float32", "int32", "int64"):
        x = model.fed((2, 3), dtype, few([1, -2, 3]))
        model.op("ZEROS_LIKE", (x,), (2, 3), dtype)
    # TILE: int8 as ST's SSD models tile anchors, and other element sizes; multiples of 1 merge away.
    tiles = [
        ("int8", (1, 4, 3), (2, 1, 3), (0.1, -4)),
        ("float32", (2, 3), (3, 2), None),
        ("int16", (3,), (4,), (0.01, 0)),
        ("int32", (2, 1, 2, 1), (1, 3, 2, 2), None),
        ("bool", (2, 2), (2, 1), None),
        ("int64", (1, 2), (3, 1), None),
    ]
    for dtype, shape, multiples, quant in tiles:
        draw = few([False, True]) if dtype == "bool" else few([-5, 0, 7, 100])
        x = model.fed(shape, dtype, draw, quant)
        m = model.constant(np.array(multiples, np.int32), "int32")
        model.op("TILE", (x, m), tuple(d * k for d, k in zip(shape, multiples, strict=True)), dtype, quant)
    for dtype, shape, target, quant in (("int8", (3, 1), (2, 3, 4), (0.2, 3)), ("float32", (4,), (3, 4), None)):
        x = model.fed(shape, dtype, few([-5, 0, 7, 100]), quant)
        s = model.constant(np.array(target, np.int32), "int32")
        y = model.mb.add_tensor(target, dtype, quant)
        model.mb.add_op("BROADCAST_TO", (x, s), (y,), None, version=2)  # LiteRT registers versions 2 and 3
        model.outputs.append(y)
    # MIRROR_PAD: both modes, paddings up to their widest (the dimension, less one for REFLECT).
    mirror = [
        ("REFLECT", "float32", (3, 4), [[2, 1], [3, 3]], None),
        ("SYMMETRIC", "int8", (1, 3, 2, 2), [[0, 0], [3, 2], [1, 2], [0, 1]], (0.1, 5)),
        ("REFLECT", "int64", (5,), [[0, 4]], None),
        ("SYMMETRIC", "int16", (2, 1, 3), [[1, 2], [1, 0], [0, 3]], None),
    ]
    for mode, dtype, shape, pads, quant in mirror:
        x = model.fed(shape, dtype, lambda rng, s: rng.integers(-100, 100, size=s), quant)
        p = model.constant(np.array(pads, np.int32), "int32")
        out_shape = tuple(d + b + a for d, (b, a) in zip(shape, pads, strict=True))
        model.op("MIRROR_PAD", (x, p), out_shape, dtype, quant, {"mode": mode})
    # EMBEDDING_LOOKUP: rows by ids, repeated and at both ends of the table.
    for dtype, table_shape in (("float32", (5, 3)), ("int8", (7, 2, 2))):
        ids = model.fed((6,), "int32", lambda rng, s, n=table_shape[0]: np.r_[0, n - 1, rng.integers(0, n, 4)])
        table = model.fed(table_shape, dtype, lambda rng, s: rng.integers(-100, 100, size=s))
        model.op("EMBEDDING_LOOKUP", (ids, table), (6,) + table_shape[1:], dtype)
    return model


def test_logical_zeros_like_tile_broadcast_to_mirror_pad_embedding_lookup_match_reference():
    model = rearrangements_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(2))


def space_batch_model() -> FedBranches:
    model = FedBranches("space_to_batch_nd, batch_to_space_nd")
    values = lambda rng, s: rng.integers(-100, 100, size=s)  # noqa: E731
    # (dtype, input shape, block, paddings, quantization): 4-D and 3-D, padding on every side.
    to_batch = [
        ("float32", (2, 3, 5, 2), [2, 3], [[1, 0], [2, 2]], None),
        ("int8", (1, 4, 4, 3), [2, 2], [[0, 2], [1, 1]], (0.1, -7)),
        ("uint8", (1, 3, 2), [2], [[1, 0]], (0.1, 130)),
        ("int32", (1, 2, 2, 1), [1, 1], [[0, 0], [0, 0]], None),
    ]
    for dtype, shape, block, pads, quant in to_batch:
        x = model.fed(shape, dtype, values if dtype != "uint8" else few([0, 9, 255]), quant)
        b, p = (model.constant(np.array(v, np.int32), "int32") for v in (block, pads))
        spatial = [(d + lo + hi) // k for d, k, (lo, hi) in zip(shape[1:-1], block, pads, strict=True)]
        out_shape = (shape[0] * int(np.prod(block)), *spatial, shape[-1])
        model.op("SPACE_TO_BATCH_ND", (x, b, p), out_shape, dtype, quant)
    to_space = [
        ("float32", (6, 2, 3, 2), [2, 3], [[1, 0], [2, 1]], None),
        ("int8", (4, 3, 3, 1), [2, 2], [[0, 0], [0, 0]], (0.2, 3)),
        ("int16", (4, 3, 2), [2], [[1, 2]], None),
    ]
    for dtype, shape, block, crops, quant in to_space:
        x = model.fed(shape, dtype, values, quant)
        b, c = (model.constant(np.array(v, np.int32), "int32") for v in (block, crops))
        spatial = [d * k - lo - hi for d, k, (lo, hi) in zip(shape[1:-1], block, crops, strict=True)]
        out_shape = (shape[0] // int(np.prod(block)), *spatial, shape[-1])
        model.op("BATCH_TO_SPACE_ND", (x, b, c), out_shape, dtype, quant)
    return model


def test_space_to_batch_and_batch_to_space_match_reference():
    model = space_batch_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(2))


def cumsum_l2_pool_model() -> FedBranches:
    model = FedBranches("cumsum, l2_pool_2d, log_softmax, add_n")
    # CUMSUM: every axis, exclusive and reverse; int32 sums that wrap.
    cases = [
        ("float32", (3, 4, 5), 1, False, False),
        ("float32", (3, 4, 5), -1, True, True),
        ("float32", (6,), 0, False, True),
        ("int32", (2, 7), 1, True, False),
        ("int32", (4, 3), 0, False, False),
        ("int64", (2, 2, 3), 2, False, True),
    ]
    for dtype, shape, axis, exclusive, reverse in cases:
        if dtype == "float32":
            draw = lambda rng, s: rng.uniform(-100, 100, size=s)  # noqa: E731
        else:
            draw = lambda rng, s: rng.integers(-(2**30), 2**30, size=s, dtype=np.int64) * 3  # noqa: E731
        x = model.fed(shape, dtype, draw)
        a = model.constant(np.array(axis, np.int32), "int32")
        model.op("CUMSUM", (x, a), shape, dtype, None, {"exclusive": exclusive, "reverse": reverse})
    # L2_POOL_2D: windows clipped by SAME padding, strides, fused activations.
    for shape, (fh, fw), (sh, sw), padding, act in [
        ((1, 5, 6, 3), (2, 3), (1, 2), "SAME", "NONE"),
        ((2, 4, 4, 2), (2, 2), (2, 2), "VALID", "RELU6"),
        ((1, 7, 3, 1), (3, 3), (2, 1), "SAME", "RELU_N1_TO_1"),
    ]:
        x = model.fed(shape, "float32", lambda rng, s: rng.uniform(-3, 3, size=s))
        out_h = -(-shape[1] // sh) if padding == "SAME" else (shape[1] - fh) // sh + 1
        out_w = -(-shape[2] // sw) if padding == "SAME" else (shape[2] - fw) // sw + 1
        options = {
            "padding": padding,
            "stride_h": sh,
            "stride_w": sw,
            "filter_height": fh,
            "filter_width": fw,
            "fused_activation_function": act,
        }
        model.op("L2_POOL_2D", (x,), (shape[0], out_h, out_w, shape[3]), "float32", None, options)
    # LOG_SOFTMAX over the last dimension, rows with large and tied values.
    for shape in ((3, 5), (2, 2, 7), (1,)):
        x = model.fed(shape, "float32", lambda rng, s: np.where(rng.random(s) < 0.3, 4.0, rng.uniform(-30, 30, s)))
        model.op("LOG_SOFTMAX", (x,), shape, "float32")
    # ADD_N: two (add_n.cc needs at least 2) to eight inputs; -0.0 sums stay -0.0, large terms absorb small ones in order.
    for dtype, count in (("float32", 2), ("float32", 3), ("float32", 8), ("int32", 2), ("int32", 8)):
        if dtype == "float32":
            draw = few([-0.0, 1e8, -1e8, 1.0, 0.5])
        else:
            draw = lambda rng, s: rng.integers(-(2**31), 2**31, size=s, dtype=np.int64)  # noqa: E731
        terms = [model.fed((2, 5), dtype, draw) for _ in range(count)]
        model.op("ADD_N", terms, (2, 5), dtype)
    return model


def test_cumsum_l2_pool_log_softmax_add_n_match_reference():
    model = cumsum_l2_pool_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(2))
