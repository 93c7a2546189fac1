"""EQUAL ... LESS_EQUAL (every dtype TFLite registers, broadcasting) and
SELECT / SELECT_V2 against TFLite's reference kernels.  Inputs are drawn
from few values so that ties (equal values, and for int8 / uint8 equal real
values at different scales and zero points) are common."""

from __future__ import annotations

import numpy as np
from kernel_models import FedBranches, assert_matches_reference, few

COMPARISONS = ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL")
SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((1,), (2, 3))]


# dtype -> (quantization of input1, of input2, values drawn)
DTYPES = {
    "float32": (None, None, few([-1.5, -0.0, 0.0, 0.5, 1.5, np.float32(1e30)])),
    "int16": (None, None, few([-32768, -1, 0, 1, 32767])),
    "int32": (None, None, few([-(2**31), -7, 0, 7, 2**31 - 1])),
    "int64": (None, None, few([-(2**62), -3, 0, 3])),
    # Scale 0.5 zero point 3 and scale 0.25 zero point -5: x = 2k + 3 and
    # y = 4k - 5 hold equal real values k; saturated ends compare unequal.
    "int8": ((0.5, 3), (0.25, -5), few([-128, -5, -1, 1, 3, 5, 7, 11, 127])),
    "uint8": ((0.5, 128), (0.25, 0), few([0, 4, 8, 128, 130, 132, 255])),
}


def comparisons_model() -> FedBranches:
    model = FedBranches("comparisons")
    for k, (dtype, (q1, q2, draw)) in enumerate(DTYPES.items()):
        for opcode in COMPARISONS:
            if (dtype, opcode) == ("int16", "NOT_EQUAL"):
                continue  # not lowered: LiteRT leaves its output unwritten
            shape1, shape2 = SHAPES[(k + len(opcode)) % len(SHAPES)]
            a, b = model.fed(shape1, dtype, draw, q1), model.fed(shape2, dtype, draw, q2)
            model.op(opcode, (a, b), np.broadcast_shapes(shape1, shape2), "bool")
    for opcode in ("EQUAL", "NOT_EQUAL"):
        a, b = (model.fed((2, 3), "bool", few([False, True])) for _ in range(2))
        model.op(opcode, (a, b), (2, 3), "bool")
    return model


def test_comparisons_match_reference():
    model = comparisons_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(3))


def select_model() -> FedBranches:
    model = FedBranches("select")
    coin = few([False, True])
    # condition, x, y shapes (SELECT_V2 broadcasts all three) per dtype.
    cases = [
        ("float32", (2, 3, 4), (2, 3, 4), (2, 3, 4), None),
        ("int8", (3, 1), (1, 4), (3, 4), (0.1, 7)),
        ("int32", (4,), (2, 3, 4), (1,), None),
        ("int16", (1, 3, 1), (2, 1, 5), (2, 3, 5), None),
        ("bool", (2, 2), (2, 1), (1, 2), None),
        ("uint8", (1,), (5,), (5,), (0.2, 128)),
        ("int64", (2, 1), (2, 3), (1, 3), None),
    ]
    for dtype, c_shape, x_shape, y_shape, quant in cases:
        draw = coin if dtype == "bool" else few([-3, 0, 1, 100]) if dtype != "uint8" else few([0, 9, 255])
        c = model.fed(c_shape, "bool", coin)
        x, y = model.fed(x_shape, dtype, draw, quant), model.fed(y_shape, dtype, draw, quant)
        out_shape = np.broadcast_shapes(c_shape, x_shape, y_shape)
        model.op("SELECT_V2", (c, x, y), out_shape, dtype, quant)
    c = model.fed((3, 2), "bool", coin)
    x, y = (model.fed((3, 2), "float32", few([-1.0, 2.0])) for _ in range(2))
    model.op("SELECT", (c, x, y), (3, 2), "float32")
    return model


def test_select_matches_reference():
    model = select_model()
    assert_matches_reference(model.build(), input_sets=model.input_sets(3))
