"""RESIZE_BILINEAR (float32, int8, uint8) and ARG_MAX / ARG_MIN (float32,
int8, uint8; int32 and int64 indices; int32 and int64 axis) against the
TFLite reference interpreter, on many shapes."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_models import assert_matches_reference

from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.lowering.resize_bilinear import float_samples, integer_samples
from mcu_planner_testing.builder import FloatNet, Int8Net, ModelBuilder, Uint8Net

# (input h, w) -> (output h, w), align_corners, half_pixel_centers: up and
# down sampling, 1-pixel inputs and outputs, odd ratios.
RESIZE_CASES = [
    ((4, 5), (9, 13), False, False),
    ((4, 5), (9, 13), True, False),
    ((4, 5), (9, 13), False, True),
    ((7, 9), (3, 4), False, False),
    ((7, 9), (3, 4), True, False),
    ((7, 9), (3, 4), False, True),
    ((1, 1), (5, 3), True, False),
    ((6, 1), (1, 4), True, False),
    ((3, 8), (5, 8), False, True),
    ((33, 33), (65, 17), True, False),
]


def _resize_outputs(net, x):
    return [net.resize_bilinear(x, size, align_corners=ac, half_pixel_centers=hp) for (_, size, ac, hp) in RESIZE_CASES]


@pytest.mark.parametrize("net_class", [Int8Net, Uint8Net], ids=["int8", "uint8"])
def test_quantized_resize_bilinear(net_class):
    net = net_class(seed=4)
    outputs = []
    for i, (in_hw, _, _, _) in enumerate(RESIZE_CASES):
        x = net.input((2 if i % 3 == 0 else 1, *in_hw, 3), -1.0 - i % 2, 2.0)
        outputs.append(_resize_outputs(net, x)[i])
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_float_resize_bilinear():
    net = FloatNet(seed=6)
    outputs = []
    for i, (in_hw, size, ac, hp) in enumerate(RESIZE_CASES):
        batches = 2 if i % 3 == 0 else 1
        x = net.input((batches, *in_hw, 2))
        s = net.int32_const(size)
        outputs.append(
            net.op("RESIZE_BILINEAR", (x, s), (batches, *size, 2), {"align_corners": ac, "half_pixel_centers": hp})
        )
    assert_matches_reference(net.build(*outputs), inputs=3)


@pytest.mark.parametrize("align_corners, half_pixel_centers", [(False, False), (True, False), (False, True)])
def test_resize_sample_tables_stay_inside_the_input(align_corners, half_pixel_centers):
    # Independent of the reference: every sampled row lies in the input, the
    # upper row is the lower one or the next, and the distance from the lower
    # row is below one step (fractions of 1024 for the integer kernel).
    for in_size in (1, 2, 7, 33):
        for out_size in (1, 3, 8, 65):
            lower_f, upper_f, frac_f = float_samples(out_size, in_size, align_corners, half_pixel_centers)
            lower_i, upper_i, frac_i = integer_samples(out_size, in_size, align_corners, half_pixel_centers)
            for lo, up, frac, one in ((lower_f, upper_f, frac_f, 1.0), (lower_i, upper_i, frac_i, 1024)):
                assert all(0 <= a <= b <= in_size - 1 and b - a <= 1 for a, b in zip(lo, up, strict=True))
                assert all(f < one for f in frac)
            if align_corners and out_size > 1:
                assert upper_f[-1] == in_size - 1 and frac_f[0] == 0.0


def test_resize_bilinear_with_computed_size_is_not_lowerable():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 2, 2, 1), "float32")
    size = mb.add_tensor((2,), "int32")
    y = mb.add_tensor((1, 4, 4, 1), "float32")
    mb.add_op("RESIZE_BILINEAR", (x, size), (y,), {})
    mb.set_io([x, size], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="not a constant"):
        lower(graph.operators[0], graph)


# (input shape, axis): first, middle, last and negative axes; an axis longer
# than 256 values forces ties among int8 / uint8 values (the first index wins).
ARG_CASES = [
    ((2, 5, 7), 0),
    ((2, 5, 7), 1),
    ((2, 5, 7), -1),
    ((3, 300), 1),
    ((300, 2), -2),
    ((1, 4, 4, 21), 3),
    ((6,), 0),
]


@pytest.mark.parametrize("net_class", [Int8Net, Uint8Net], ids=["int8", "uint8"])
def test_quantized_arg_max_and_min(net_class):
    net = net_class(seed=2)
    outputs = []
    for i, (shape, axis) in enumerate(ARG_CASES):
        x = net.input(shape)
        output_type = "int64" if i % 2 else "int32"
        axis_type = "int64" if i % 3 == 0 else "int32"
        outputs.append(net.arg_max(x, axis, output_type, axis_type))
        outputs.append(net.arg_min(x, axis, "int32" if i % 2 else "int64", axis_type))
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_float_arg_max_and_min():
    mb = ModelBuilder("float arg")
    inputs, outputs = [], []
    for i, (shape, axis) in enumerate(ARG_CASES):
        x = mb.add_tensor(shape, "float32")
        inputs.append(x)
        for opcode, output_type in (("ARG_MAX", "int64" if i % 2 else "int32"), ("ARG_MIN", "int32")):
            a = mb.add_tensor((1,), "int32", data=np.array([axis], np.int32))
            out_shape = tuple(d for k, d in enumerate(shape) if k != axis % len(shape))
            y = mb.add_tensor(out_shape, output_type)
            mb.add_op(opcode, (x, a), (y,), {"output_type": output_type.upper()})
            outputs.append(y)
    mb.set_io(inputs, outputs)
    assert_matches_reference(mb.build(), inputs=3)


def test_arg_max_over_a_computed_axis_is_not_lowerable():
    mb = ModelBuilder()
    x = mb.add_tensor((3, 4), "float32")
    a = mb.add_tensor((1,), "int32")
    y = mb.add_tensor((3,), "int32")
    mb.add_op("ARG_MAX", (x, a), (y,), {"output_type": "INT32"})
    mb.set_io([x, a], [y])
    graph = read_model(mb.build())
    with pytest.raises(NotLowerable, match="not a constant"):
        lower(graph.operators[0], graph)


def test_int16_resize_bilinear():
    mb = ModelBuilder("int16 resize")
    inputs, outputs = [], []
    for in_hw, size, ac, hp in RESIZE_CASES[:6]:
        x = mb.add_tensor((1, *in_hw, 2), "int16", (0.001, 0))
        s = mb.add_tensor((2,), "int32", data=np.array(size, np.int32))
        y = mb.add_tensor((1, *size, 2), "int16", (0.001, 0))
        mb.add_op("RESIZE_BILINEAR", (x, s), (y,), {"align_corners": ac, "half_pixel_centers": hp})
        inputs.append(x)
        outputs.append(y)
    mb.set_io(inputs, outputs)
    assert_matches_reference(mb.build(), inputs=3)
