"""MEAN kernels against the TFLite reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, int8_quant

AXES = [((1, 2), True), ((2, 1), False), ((3,), False), ((0, 3), True), ((-1, 1), True), ((0, 1, 2, 3), False)]


def test_int8_mean_same_quantization():
    net = Int8Net(0)
    x = net.input((2, 5, 7, 3), -1.0, 2.0)
    assert_matches_reference(net.build(*[net.mean(x, axes, keep_dims) for axes, keep_dims in AXES]))


@pytest.mark.parametrize("output_range", [(-0.3, 0.4), (-5.0, 9.0)])
def test_int8_mean_rescaled(output_range):
    # Output quantization differs from the input's: the 1/count rescale is
    # folded into the multiplier, with 49 (not a power of two) elements per mean.
    mb = ModelBuilder()
    x = mb.add_tensor((1, 7, 7, 4), "int8", int8_quant(-1.0, 1.5))
    outputs = []
    for axes, keep_dims in [((1, 2), True), ((2,), False), ((1, 2, 3), False)]:
        a = mb.add_tensor((len(axes),), "int32", data=np.array(axes, np.int32))
        shape = [1 if i in axes else d for i, d in enumerate((1, 7, 7, 4)) if keep_dims or i not in axes]
        y = mb.add_tensor(shape, "int8", int8_quant(*output_range))
        mb.add_op("MEAN", (x, a), (y,), {"keep_dims": keep_dims})
        outputs.append(y)
    mb.set_io([x], outputs)
    assert_matches_reference(mb.build(), inputs=4)


def test_float_mean():
    net = FloatNet(seed=4)
    x = net.input((2, 5, 7, 3))
    outputs = []
    for axes, keep_dims in AXES:
        resolved = {a % 4 for a in axes}
        shape = [1 if i in resolved else d for i, d in enumerate((2, 5, 7, 3)) if keep_dims or i not in resolved]
        outputs.append(net.op("MEAN", (x, net.int32_const(list(axes))), shape, {"keep_dims": keep_dims}))
    assert_matches_reference(net.build(*outputs))
