"""AVERAGE_POOL_2D and MAX_POOL_2D kernels against the TFLite reference interpreter."""

from __future__ import annotations

import pytest
from kernel_models import assert_matches_reference

from mcu_planner_testing.builder import FloatNet, Int8Net

# (pool, strides, padding, activation)
POOL_VARIANTS = [
    ((2, 2), (2, 2), "VALID", "NONE"),
    ((3, 3), (1, 1), "SAME", "RELU"),
    ((3, 2), (2, 3), "SAME", "RELU6"),
    ((5, 1), (1, 1), "VALID", "RELU_N1_TO_1"),
    ((7, 9), (7, 9), "VALID", "NONE"),  # global pooling
]


@pytest.mark.parametrize("seed", [0, 1])
def test_int8_pools(seed):
    net = Int8Net(seed)
    x = net.input((2, 7, 9, 3), -4.0 + 3 * seed, 3.0)
    outputs = []
    for pool, strides, padding, activation in POOL_VARIANTS:
        outputs.append(net.average_pool2d(x, pool, strides, padding, activation))
        outputs.append(net.max_pool2d(x, pool, strides, padding, activation))
    assert_matches_reference(net.build(*outputs), seed=seed)


def test_float_pools():
    net = FloatNet(seed=2)
    x = net.input((1, 7, 9, 3))
    outputs = []
    for (ph, pw), (sh, sw), padding, activation in POOL_VARIANTS:

        def out_size(n, k, s, padding=padding):
            return (n + s - 1) // s if padding == "SAME" else (n - k + s) // s

        shape = (1, out_size(7, ph, sh), out_size(9, pw, sw), 3)
        options = {
            "padding": padding,
            "stride_h": sh,
            "stride_w": sw,
            "filter_height": ph,
            "filter_width": pw,
            "fused_activation_function": activation,
        }
        outputs.append(net.op("AVERAGE_POOL_2D", (x,), shape, options))
        outputs.append(net.op("MAX_POOL_2D", (x,), shape, options))
    assert_matches_reference(net.build(*outputs))
