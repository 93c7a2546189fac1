"""SOFTMAX kernels against the TFLite reference interpreter."""

from __future__ import annotations

import pytest

from mcu_planner.builder import Int8Net

from kernel_models import FloatNet, assert_matches_reference


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
