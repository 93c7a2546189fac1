"""SOFTMAX kernels against the TFLite reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import Branches, assert_matches_reference

from mcu_planner_testing.builder import FloatNet, Int8Net


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_softmax(seed):
    # Input scales from narrow to wide move the differences across the whole
    # fixed-point exp range, including those below diff_min that give 0.
    net = Int8Net(seed)
    narrow = net.input((3, 10), -0.5, 0.5)
    wide = net.input((2, 2, 17), -30.0 * (seed + 1), 20.0)
    outputs = [
        net.softmax(narrow),
        net.softmax(wide),
        net.softmax(wide, beta=0.3 + seed),
        net.softmax(narrow, beta=4.0),
    ]
    assert_matches_reference(net.build(*outputs), inputs=4, seed=seed)


def test_float_softmax():
    net = FloatNet(seed=1)
    x = net.input((3, 12))
    y = net.input((1, 2, 5))
    outputs = [
        net.op("SOFTMAX", (x,), (3, 12), {"beta": 1.0}),
        net.op("SOFTMAX", (x,), (3, 12), {"beta": 2.5}),
        net.op("SOFTMAX", (y,), (1, 2, 5), {"beta": 0.7}),
    ]
    assert_matches_reference(net.build(*outputs), inputs=4)


@pytest.mark.parametrize("seed", [0, 1])
def test_int8_to_int16_softmax(seed):
    """int8 in, int16 out (zero point -32768, as keyword_scrambled ends):
    the same fixed point with 16 output bits; the output scale is free."""
    rng = np.random.default_rng(seed)
    model = Branches("int8 -> int16 softmax")
    for shape, low, high, beta in [
        ((1, 2), -4.0, 4.0, 1.0),
        ((3, 10), -0.5, 0.5, 1.0),
        ((2, 2, 17), -30.0 * (seed + 1), 20.0, 0.3 + seed),
        ((1, 40), -8.0, 8.0, 4.0),
    ]:
        in_scale = float(np.float32((high - low) / 255))
        x = model.input(shape, "int8", (in_scale, int(rng.integers(-128, 128))))
        out_scale = float(np.float32(rng.choice([1 / 65536, 1.5259021893143654e-05, 1 / 32768])))
        model.op("SOFTMAX", (x,), shape, "int16", (out_scale, -32768), {"beta": beta})
    assert_matches_reference(model.build(), inputs=4, seed=seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_int16_softmax_lookup_tables(seed):
    """int16 in and out (zero points 0): TFLite's exp and 1 / (1 + x)
    tables, populated in double at generation time.  Input scales from
    narrow (differences within one table segment) to wide (most differences
    beyond exp(-10)), one-element rows and long ones."""
    model = Branches("int16 softmax")
    for shape, real_range, beta in [
        ((1, 1), 4.0, 1.0),
        ((3, 10), 0.01, 1.0),
        ((2, 2, 17), 30.0 * (seed + 1), 0.3 + seed),
        ((1, 300), 8.0, 1.0),
        ((4, 5), 2.0, 4.0),
    ]:
        in_scale = float(np.float32(real_range / 32767))
        x = model.input(shape, "int16", (in_scale, 0))
        model.op("SOFTMAX", (x,), shape, "int16", (1.0 / 32768, 0), {"beta": beta})
    assert_matches_reference(model.build(), inputs=4, seed=seed)
