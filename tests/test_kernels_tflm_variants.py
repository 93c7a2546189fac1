"""TFLM builtin variants we lacked (issue 21, bench/results/coverage.md's
"Where TFLM runs a variant and we exit 4"): DYNAMIC_UPDATE_SLICE, against
LiteRT's reference kernels (BUILTIN_REF), bit for bit, each family in one
multi-branch model."""

from __future__ import annotations

import numpy as np
from kernel_models import FedBranches, assert_matches_reference, few


def dynamic_update_slice_model() -> FedBranches:
    model = FedBranches("dynamic_update_slice")
    values = lambda rng, s: rng.integers(-100, 100, size=s)  # noqa: E731
    # Start indices drawn below 0, inside, and past dim - update dim (clamped), run-time int32 and int64.
    starts = few([-(2**31), -3, -1, 0, 1, 2, 3, 5, 2**31 - 1])
    cases = [
        ("float32", (4, 5), (2, 3), "int32", None),
        ("int8", (1, 4, 4, 2), (1, 2, 3, 2), "int32", (0.1, -3)),
        ("int16", (3, 2, 5), (2, 2, 1), "int64", (0.01, 0)),
        ("uint8", (6,), (4,), "int64", (0.2, 128)),
        ("int32", (2, 3, 2, 2, 3, 2), (1, 2, 1, 2, 2, 1), "int32", None),
        ("float32", (3, 3), (3, 3), "int32", None),  # the whole operand
        ("int8", (2, 4), (0, 2), "int32", (0.1, 0)),  # an empty update: the operand unchanged
    ]
    for dtype, shape, update_shape, index_dtype, quant in cases:
        operand = model.fed(shape, dtype, values, quant)
        update = model.fed(update_shape, dtype, values, quant)
        index_draw = starts if index_dtype == "int32" else few([-(2**40), -2, 0, 1, 4, 2**40])
        indices = model.fed((len(shape),), index_dtype, index_draw)
        model.op("DYNAMIC_UPDATE_SLICE", (operand, update, indices), shape, dtype, quant)
    # Constant start indices, one past the end (clamped back).
    operand = model.fed((3, 4), "int16", values)
    update = model.fed((2, 2), "int16", values)
    indices = model.constant(np.array([2, 3], np.int32), "int32")
    model.op("DYNAMIC_UPDATE_SLICE", (operand, update, indices), (3, 4), "int16")
    return model


def test_dynamic_update_slice_matches_reference():
    model = dynamic_update_slice_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(4))


INT16_EDGES = [-32768, -32767, -1, 0, 1, 7, 32766, 32767]


def int16_edges_and_spread(rng, shape):
    """int16 extremes (|-32768| does not fit) and ties, among spread values."""
    return np.where(rng.random(shape) < 0.5, rng.choice(INT16_EDGES, size=shape), rng.integers(-32768, 32768, shape))


def int16_model() -> FedBranches:
    model = FedBranches("int16 maximum, minimum, abs")
    # MAXIMUM / MINIMUM compare stored values, broadcasting; equal inputs tie.
    for opcode in ("MAXIMUM", "MINIMUM"):
        for s1, s2 in (((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((5,), ())):
            a = model.fed(s1, "int16", int16_edges_and_spread, (0.001, 0))
            b = model.fed(s2, "int16", int16_edges_and_spread, (0.001, 0))
            model.op(opcode, (a, b), np.broadcast_shapes(s1, s2), "int16", (0.001, 0))
    # ABS: equal scales (|-32768| saturates), a rescale up (saturating) and down, no quantization at all.
    for in_quant, out_quant in (((0.01, 0), (0.01, 0)), ((0.01, 0), (0.004, 0)), ((0.003, 0), (0.02, 0)), (None, None)):
        x = model.fed((4, 6), "int16", int16_edges_and_spread, in_quant)
        model.op("ABS", (x,), (4, 6), "int16", out_quant)
    return model


def test_int16_maximum_minimum_abs_match_reference():
    model = int16_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(3))


def test_int8_zeros_like_matches_tflm():
    """LiteRT has no int8 ZEROS_LIKE; TFLM's writes stored zeros (not the
    zero point), as the generated C does."""
    from tflite_micro.python.tflite_micro import runtime

    from mcu_planner.pipeline import generate_for_model
    from mcu_planner.targets.check import run_generated

    model = FedBranches("int8 zeros_like")
    x = model.fed((3, 5), "int8", few([-128, -3, 0, 9, 127]), (0.1, -7))
    model.op("ZEROS_LIKE", (x,), (3, 5), "int8", (0.1, -7))
    model_bytes = model.build()
    sets = model.input_sets(2)
    graph, _plan, files = generate_for_model(model_bytes, name="model")
    (run,) = run_generated(graph, files, "model", sets, check_build=False)
    assert len(run.outputs) == len(sets)
    for (got,), (values,) in zip(run.outputs, sets, strict=True):
        tflm = runtime.Interpreter.from_bytes(model_bytes, arena_size=1 << 16)
        tflm.set_input(values, 0)
        tflm.invoke()
        want = tflm.get_output(0)
        assert want.dtype == np.int8 and not want.any()
        assert got == want.tobytes()


def broadcast_args_model() -> FedBranches:
    model = FedBranches("broadcast_args")
    # Dimensions drawn so every pair broadcasts (LiteRT aborts the process on
    # any that does not): 1 against anything, 5 against 5, 0 against 1;
    # 2^32 + 5 narrows to 5 as the reference compares ints.
    for dtype, (n1, n2), draw1, draw2 in (
        ("int32", (3, 3), few([1, 5]), few([1, 5])),
        ("int32", (4, 2), few([0, 1, 7]), few([1])),
        ("int64", (2, 5), few([1, 5, 2**32 + 5]), few([1, 5])),
        ("int64", (1, 1), few([1, 3]), few([1])),
    ):
        a, b = model.fed((n1,), dtype, draw1), model.fed((n2,), dtype, draw2)
        model.op("BROADCAST_ARGS", (a, b), (max(n1, n2),), dtype)
    # Constant shapes: computed at generation time (folding.py), added to a graph input.
    shape = model.op(
        "BROADCAST_ARGS",
        (model.constant(np.array([2, 1, 4], np.int32), "int32"), model.constant(np.array([3, 1], np.int32), "int32")),
        (3,),
        "int32",
    )
    model.outputs.remove(shape)
    x = model.fed((3,), "int32", few([-1, 0, 10]))
    model.op("ADD", (x, shape), (3,), "int32", None, {"fused_activation_function": "NONE"})
    return model


def test_broadcast_args_matches_reference_and_folds_constant_shapes():
    from mcu_planner.frontend.folding import fold_constants
    from mcu_planner.frontend.reader import read_model

    model = broadcast_args_model()
    model_bytes = model.build()
    folded = fold_constants(read_model(model_bytes))
    assert [op.opcode for op in folded.operators].count("BROADCAST_ARGS") == 4  # the constant one is gone
    assert_matches_reference(model_bytes, input_sets=model.input_sets(4))
