"""Data-movement kernels (RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, PAD, PADV2)
against the TFLite reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, int8_quant


def test_int8_reshape_squeeze_expand_dims():
    net = Int8Net(0)
    x = net.input((1, 4, 1, 6), -1.0, 3.0)
    r = net.reshape(x, (2, 12))
    s = net.squeeze(x, (0, 2))
    e = net.expand_dims(s, 1)
    # A consumer after the reshapes keeps their outputs from being graph
    # outputs only, so the plan may alias them to their inputs.
    y = net.fully_connected(net.reshape(e, (4, 6)), 3)
    assert_matches_reference(net.build(r, y))


@pytest.mark.parametrize(
    "shape, perms",
    [
        ((3, 5), [(1, 0)]),
        ((1, 3, 4, 5), [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0)]),
        ((2, 3, 1, 2, 3, 2), [(5, 0, 4, 1, 3, 2), (1, 0, 2, 3, 5, 4)]),
    ],
)
def test_int8_transpose(shape, perms):
    net = Int8Net(1)
    x = net.input(shape, -2.0, 2.0)
    assert_matches_reference(net.build(*[net.transpose(x, p) for p in perms]))


def test_float_transpose():
    net = FloatNet(seed=0)
    x = net.input((2, 3, 4))
    perm = net.int32_const([2, 0, 1])
    assert_matches_reference(net.build(net.op("TRANSPOSE", (x, perm), (4, 2, 3))))


def test_int8_pad():
    # A zero point far from 0 makes padding with the zero point distinguishable.
    net = Int8Net(2)
    x = net.input((1, 3, 4, 2), 0.5, 4.0)
    v = net.input((5,), -3.0, -1.0)
    outputs = [
        net.pad(x, [(0, 0), (1, 1), (2, 0), (0, 0)]),
        net.pad(x, [(1, 0), (0, 3), (1, 1), (2, 1)]),
        net.pad(v, [(3, 2)]),
    ]
    assert_matches_reference(net.build(*outputs))


def test_padv2_with_constant_value():
    mb = ModelBuilder()
    q = int8_quant(-1.0, 1.0)
    x = mb.add_tensor((2, 3), "int8", q)
    paddings = mb.add_tensor((2, 2), "int32", data=np.array([[1, 0], [2, 1]], np.int32))
    value = mb.add_tensor((), "int8", q, data=np.array([77], np.int8))
    y = mb.add_tensor((3, 6), "int8", q)
    mb.add_op("PADV2", (x, paddings, value), (y,))

    f = mb.add_tensor((1, 2, 2), "float32")
    fvalue = mb.add_tensor((), "float32", data=np.array([-2.5], np.float32))
    fpaddings = mb.add_tensor((3, 2), "int32", data=np.array([[0, 1], [1, 1], [0, 2]], np.int32))
    g = mb.add_tensor((2, 4, 4), "float32")
    mb.add_op("PADV2", (f, fpaddings, fvalue), (g,))
    mb.set_io([x, f], [y, g])
    assert_matches_reference(mb.build())
