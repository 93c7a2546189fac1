"""16x8 kernels (int16 activations, int8 weights, int64 biases) and
TRANSPOSE_CONV in every dtype, against LiteRT's reference kernels.

Each model holds several independent branches so one build checks many
shapes; the builder is mcu_planner_testing.builder.Int16x8Net."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import Branches, assert_matches_reference, random_scale

from mcu_planner.errors import InvalidModel
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph, Operator, Quantization, Tensor
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.targets.check import generate_for_model, random_inputs, run_generated
from mcu_planner.targets.reference import ReferenceModel
from mcu_planner_testing.builder import FloatNet, Int8Net, Int16x8Net, ModelBuilder, int16_quant

# (kernel, strides, padding, dilation, activation)
CONV_VARIANTS = [
    ((3, 3), (1, 1), "SAME", (1, 1), "NONE"),
    ((3, 4), (1, 2), "VALID", (1, 1), "NONE"),
    ((2, 3), (2, 1), "SAME", (2, 1), "RELU"),
    ((1, 1), (2, 2), "VALID", (1, 1), "RELU6"),
    ((4, 2), (3, 3), "SAME", (1, 2), "RELU_N1_TO_1"),
]


def _conv_variants_model(seed: int, bias_dtype: str) -> bytes:
    net = Int16x8Net(seed=seed)
    net.bias_dtype = bias_dtype
    x = net.input((1, 9, 11, 5), -3.0, 2.0)
    outputs = [
        net.conv2d(x, 3 + i, kernel=k, strides=s, padding=p, dilation=d, activation=a)
        for i, (k, s, p, d, a) in enumerate(CONV_VARIANTS)
    ]
    return net.build(*outputs)


def test_16x8_conv_2d():
    assert_matches_reference(_conv_variants_model(1, "int64"), inputs=2)


def assert_matches_reference_of(model: bytes, reference_model: bytes, inputs: int = 2) -> None:
    """The generated C of `model` gives, byte for byte, what LiteRT computes
    for `reference_model` (the same graph written the way LiteRT takes it)."""
    graph, _plan, files = generate_for_model(model, name="model")
    rng = np.random.default_rng(0)
    input_sets = [random_inputs(graph, rng) for _ in range(inputs)]
    runs = run_generated(graph, files, "model", input_sets)
    reference = ReferenceModel(reference_model)
    for s, arrays in enumerate(input_sets):
        for o, want in enumerate(reference.run(arrays)):
            for run in runs:
                got = np.frombuffer(run.outputs[s][o], dtype=want.dtype).reshape(want.shape)
                differing = np.argwhere(got != want)
                assert differing.size == 0, f"input set {s} output {o}: {len(differing)} values differ"


def test_16x8_conv_2d_with_int32_bias():
    # TFLM takes an int32 bias for 16x8 CONV_2D and accumulates in int64 as
    # with an int64 one; LiteRT 2.3's reference misreads an int32 bias as
    # int64 (saturated garbage), so the target is LiteRT on the same values
    # stored as int64.
    assert_matches_reference_of(_conv_variants_model(2, "int32"), _conv_variants_model(2, "int64"))


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_16x8_convolutions_saturating_and_without_bias_as_litert_takes_them(depthwise):
    """Saturating outputs with an all-zero bias; and without one where LiteRT
    runs that (a DEPTHWISE_CONV_2D with no bias slot). LiteRT refuses a bias
    slot marked -1, and a CONV_2D without a bias at all, and so does the
    tool (rule conv-bias, tests/test_validate.py)."""
    with_zero_bias = _conv_16x8(24, (3, 3), depthwise, seed=5, bias="zero")
    assert_matches_reference_of(with_zero_bias, with_zero_bias)
    marked_absent = _conv_16x8(24, (3, 3), depthwise, seed=5, bias="marked absent")
    with pytest.raises(InvalidModel, match="rule conv-bias"):
        generate_for_model(marked_absent, name="model")
    if depthwise:
        left_out = _conv_16x8(24, (3, 3), depthwise, seed=5, bias="left out")
        assert_matches_reference_of(left_out, left_out)


def _conv_16x8(channels_in: int, kernel: tuple[int, int], depthwise: bool, seed: int, bias: str) -> bytes:
    """One 16x8 convolution whose small output scale saturates many outputs
    at +-32767, with an all-zero int64 bias (`bias` "zero") or without one:
    its slot "marked absent" (-1) or "left out"."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder("16x8 without bias")
    x = mb.add_tensor((1, 6, 7, channels_in), "int16", int16_quant(-4.0, 4.0))
    if depthwise:
        shape, out_c = (1, *kernel, channels_in * 2), channels_in * 2
    else:
        shape, out_c = (4, *kernel, channels_in), 4
    weights = rng.integers(-127, 128, size=shape).astype(np.int8)
    scales = tuple(float(np.float32(s)) for s in rng.uniform(0.001, 0.02, size=out_c))
    w = mb.add_tensor(shape, "int8", Quantization(scales, (0,) * out_c, 3 if depthwise else 0), data=weights)
    b = -1
    if bias == "zero":
        bias_scales = tuple(float(np.float32(s * mb.tensors[x].quant.scales[0])) for s in scales)
        b = mb.add_tensor((out_c,), "int64", Quantization(bias_scales, (0,) * out_c, 0), data=np.zeros(out_c, np.int64))
    y = mb.add_tensor((1, 6, 7, out_c), "int16", Quantization((float(np.float32(2e-3)),), (0,)))
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if depthwise:
        options["depth_multiplier"] = 2
    inputs = (x, w) if bias == "left out" else (x, w, b)
    mb.add_op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", inputs, (y,), options)
    mb.set_io([x], [y])
    return mb.build()


def test_16x8_depthwise_conv_2d():
    net = Int16x8Net(seed=3)
    x = net.input((2, 8, 7, 4), -1.0, 1.5)
    outputs = [
        net.depthwise_conv2d(x, kernel=k, strides=s, padding=p, dilation=d, activation=a, depth_multiplier=1 + i % 3)
        for i, (k, s, p, d, a) in enumerate(CONV_VARIANTS)
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)


# (kernel, strides, padding, activation, bias): kernels smaller than, equal
# to and larger than the stride, both paddings.
TRANSPOSE_CONV_VARIANTS = [
    ((3, 3), (2, 2), "SAME", "NONE", True),
    ((3, 4), (1, 2), "VALID", "NONE", True),
    ((2, 2), (2, 2), "VALID", "RELU", False),
    ((1, 3), (3, 1), "SAME", "NONE", False),
    ((4, 4), (2, 3), "SAME", "RELU6", True),
    ((5, 2), (1, 1), "VALID", "NONE", True),
]


@pytest.mark.parametrize("net_class", [Int8Net, Int16x8Net], ids=["int8", "int16x8"])
def test_quantized_transpose_conv(net_class):
    net = net_class(seed=4)
    x = net.input((1, 4, 5, 6), -2.0, 2.0)
    outputs = [
        net.transpose_conv(x, 3 + i, kernel=k, strides=s, padding=p, activation=a, use_bias=bias)
        for i, (k, s, p, a, bias) in enumerate(TRANSPOSE_CONV_VARIANTS)
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)


def test_int8_transpose_conv_batches_and_zero_points():
    net = Int8Net(seed=8)
    x = net.input((3, 3, 3, 5), -0.5, 3.0)  # zero point far from 0
    assert_matches_reference(net.build(net.transpose_conv(x, 4, kernel=(3, 2), strides=(2, 2))), inputs=2)


def test_float_transpose_conv():
    net = FloatNet(seed=6)
    outputs = []
    for i, (kernel, strides, padding, activation, bias) in enumerate(TRANSPOSE_CONV_VARIANTS):
        x = net.input((2, 3, 4, 3))
        n, h, w, _ = net.shape(x)
        grow = (lambda size, k, s: size * s) if padding == "SAME" else (lambda size, k, s: (size - 1) * s + k)
        out_shape = (n, grow(h, kernel[0], strides[0]), grow(w, kernel[1], strides[1]), 2 + i)
        inputs = [net.int32_const(out_shape), net.const((2 + i, *kernel, 3)), x]
        inputs.append(net.const((2 + i,)) if bias else -1)
        options = {
            "padding": padding,
            "stride_h": strides[0],
            "stride_w": strides[1],
            "fused_activation_function": activation,
        }
        outputs.append(net.op("TRANSPOSE_CONV", inputs, out_shape, options))
    assert_matches_reference(net.build(*outputs), inputs=2)


def test_transpose_conv_output_shape_must_match():
    # A constant output_shape that disagrees with the output tensor's shape.
    tensors = (
        Tensor(0, "shape", (4,), "int32", None, data=np.array([1, 9, 9, 2], "<i4").tobytes()),
        Tensor(1, "w", (2, 3, 3, 1), "float32", None, data=bytes(2 * 9 * 4)),
        Tensor(2, "x", (1, 4, 4, 1), "float32", None),
        Tensor(3, "y", (1, 8, 8, 2), "float32", None),
    )
    op = Operator(0, "TRANSPOSE_CONV", 1, (0, 1, 2), (3,), options={"padding": "SAME", "stride_h": 2, "stride_w": 2})
    with pytest.raises(NotLowerable, match="output_shape"):
        lower(op, Graph(tensors, (op,), (2,), (3,)))


def test_16x8_add_sub_with_broadcasting_and_activations():
    net = Int16x8Net(seed=9)
    a = net.input((2, 3, 4, 5), -2.0, 2.0)
    b = net.input((1, 3, 1, 5), -0.01, 0.01)  # very different scales
    c = net.input((5,), -6.0, 6.0)
    outputs = [
        net.add(a, b),
        net.sub(a, b, activation="RELU"),
        net.add(c, a, activation="RELU6"),
        net.sub(c, a),
        net.add(a, a),
    ]
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_16x8_add_sub_saturate():
    # Output scales far below the inputs': most sums clamp at +-32767.
    model = Branches("int16 add saturating")
    for opcode in ("ADD", "SUB"):
        x = model.input((64,), "int16", (0.5, 0))
        y = model.input((64,), "int16", (0.25, 0))
        model.op(opcode, (x, y), (64,), "int16", (0.01, 0), {"pot_scale_int16": False})
    assert_matches_reference(model.build(), inputs=2)


@pytest.mark.parametrize("pot", [True, False], ids=["pot_scale_int16", "general"])
def test_16x8_add_sub_with_power_of_two_scales(pot):
    # pot_scale_int16 with power-of-two scales takes TFLite's shift-only path
    # (LSTM-era models); without the flag the same scales take the general one.
    model = Branches("int16 add power of two")
    for opcode in ("ADD", "SUB"):
        for in1, in2, out in ((2**-10, 2**-12, 2**-10), (2**-13, 2**-11, 2**-11), (2**-8, 2**-8, 2**-8)):
            x = model.input((3, 40), "int16", (in1, 0))
            y = model.input((3, 40), "int16", (in2, 0))
            model.op(opcode, (x, y), (3, 40), "int16", (out, 0), {"pot_scale_int16": pot})
    model_bytes = model.build()
    assert_matches_reference(model_bytes, inputs=3)
    from mcu_planner.emit.codegen import lower_all
    from mcu_planner.frontend.reader import read_model

    functions = {call.function for call in lower_all(read_model(model_bytes)).values()}
    assert functions == ({"mcu_add_s16_pot", "mcu_sub_s16_pot"} if pot else {"mcu_add_s16"})


def test_16x8_leaky_relu_and_requantization():
    rng = np.random.default_rng(12)
    model = Branches("int16 leaky relu and quantize")
    for alpha in (0.3, 0.01, 1.5):
        x = model.input((2, 50), "int16", (random_scale(rng, 1e-4, 0.01), 0))
        model.op("LEAKY_RELU", (x,), (2, 50), "int16", (random_scale(rng, 1e-4, 0.01), 0), {"alpha": alpha})
    # QUANTIZE to and from int16: every pair LiteRT takes.
    pairs = [
        ("int32", "int16"),
        ("int32", "int8"),
        ("int16", "int16"),
        ("int16", "int8"),
        ("int16", "int32"),
        ("int8", "int16"),
        ("uint8", "int16"),
        ("float32", "int16"),
    ]
    for in_dtype, out_dtype in pairs:
        in_q = None if in_dtype == "float32" else (random_scale(rng, 1e-5, 0.05), 0 if in_dtype != "uint8" else 128)
        out_zp = int(rng.integers(-20, 20)) if out_dtype == "int8" else 0
        x = model.input((3, 33), in_dtype, in_q)
        model.op("QUANTIZE", (x,), (3, 33), out_dtype, (random_scale(rng, 1e-5, 0.05), out_zp))
    x = model.input((3, 33), "int16", (random_scale(rng, 1e-4, 0.01), 0))
    model.op("DEQUANTIZE", (x,), (3, 33), "float32")
    assert_matches_reference(model.build(), inputs=3)


def test_16x8_data_movement():
    net = Int16x8Net(seed=13)
    x = net.input((1, 4, 6, 3), -1.0, 1.0)
    outputs = [
        net.pad(x, [(0, 0), (1, 2), (3, 0), (0, 1)]),
        net.strided_slice(x, (0, 1, 0, 0), (1, 4, 6, 3), (1, 2, 3, 1), begin_mask=0b1101, end_mask=0b1111),
        net.strided_slice(x, (0, 3, 5, 2), (1, 0, 0, 0), (1, -1, -2, -1), end_mask=0b0001),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)


@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_16x8_fully_connected(per_channel):
    # LiteRT rescales the int64 sum in double and rounds half away from zero
    # (TFLM applies the Q15-reduced multiplier); long rows of large inputs
    # give sums beyond int32, the +-2^40 biases results beyond int32.
    rng = np.random.default_rng(14)
    model = Branches("16x8 fully connected")
    for depth, units, bias, activation in ((9, 5, True, "NONE"), (3000, 4, True, "RELU"), (40, 6, False, "RELU6")):
        x = model.input((3, depth), "int16", (0.001, 0))
        weights = rng.integers(-127, 128, size=(units, depth)).astype(np.int8)
        weights[0] = 127  # a row that sums large
        scales = tuple(float(np.float32(s)) for s in rng.uniform(0.01, 0.03, units if per_channel else 1))
        w = model.constant(weights, "int8", Quantization(scales, (0,) * len(scales), 0))
        b = -1
        if bias:
            bias_scales = tuple(float(np.float32(0.001 * s)) for s in scales)
            b = model.constant(
                rng.integers(-(1 << 40), 1 << 40, size=units).astype(np.int64),
                "int64",
                Quantization(bias_scales, (0,) * len(bias_scales), 0),
            )
        out_scale = 0.0005 if depth < 100 else 40.0
        model.op(
            "FULLY_CONNECTED", (x, w, b), (3, units), "int16", (out_scale, 0), {"fused_activation_function": activation}
        )
    # Exact ties: x * 0.5 * 0.5 / 1.0 is k + 0.5 for every x = 2 mod 4; LiteRT
    # rounds them away from zero.
    x = model.input((4, 1), "int16", (0.5, 0))
    w = model.constant(np.ones((3, 1), np.int8), "int8", Quantization((0.5,), (0,), 0))
    model.op("FULLY_CONNECTED", (x, w, -1), (4, 3), "int16", (1.0, 0), {"fused_activation_function": "NONE"})
    assert_matches_reference(model.build(), inputs=3)


def test_16x8_mul_relu_and_pooling():
    net = Int16x8Net(seed=15)
    a = net.input((2, 5, 6, 3), -4.0, 4.0)
    b = net.input((1, 1, 6, 1), -8.0, 8.0)
    outputs = [
        net.mul(a, b),
        net.mul(a, a, activation="RELU6"),
        net.relu(a),
        net.relu6(a),
        net.average_pool2d(a, pool=(2, 3), strides=(1, 2), padding="SAME"),
        net.average_pool2d(a, pool=(5, 6), strides=(1, 1), padding="VALID", activation="RELU"),
        net.max_pool2d(a, pool=(3, 2), strides=(2, 1), padding="SAME"),
        net.max_pool2d(a, pool=(2, 2), strides=(2, 2), padding="VALID", activation="RELU6"),
    ]
    assert_matches_reference(net.build(*outputs), inputs=3)


def test_16x8_mul_saturates():
    # An output scale far below the product's: most products clamp.
    model = Branches("int16 mul saturating")
    x = model.input((3, 64), "int16", (0.01, 0))
    y = model.input((64,), "int16", (0.02, 0))
    model.op("MUL", (x, y), (3, 64), "int16", (1e-4, 0), {"fused_activation_function": "NONE"})
    assert_matches_reference(model.build(), inputs=2)


@pytest.mark.parametrize("opcode", ["LOGISTIC", "TANH"])
def test_16x8_logistic_and_tanh(opcode):
    # TFLite's interpolated sigmoid table: 2^-12 is the power-of-two input
    # scale it takes as is; the others are rescaled (2^-10 too), 0.05 and
    # 1e-6 reach the saturated and the flat ends.  Random inputs over the
    # whole int16 range, 16384 per scale.
    model = Branches(f"int16 {opcode.lower()}")
    for input_scale in (2.0**-12, 2.0**-10, 0.001, 3.0 / 16384, 0.05, 1e-6):
        x = model.input((4, 4096), "int16", (input_scale, 0))
        model.op(opcode, (x,), (4, 4096), "int16", (1 / 32768, 0))
    assert_matches_reference(model.build(), inputs=2)


def test_16x8_mean():
    net = Int16x8Net(seed=18)
    x = net.input((2, 5, 6, 7), -3.0, 3.0)
    outputs = [net.mean(x, (1, 2)), net.mean(x, (3,), keep_dims=False), net.mean(x, (0, 1, 2, 3))]
    model = Branches("int16 mean rescaling")
    model.mb = net.mb
    model.inputs, model.outputs = net.inputs, list(outputs)
    # Rescaling to a smaller output scale (saturating) and a larger one.
    for out_scale in (3e-5, 0.05):
        axes = net.mb.add_tensor((2,), "int32", data=np.array([1, 2], np.int32))
        model.op("MEAN", (x, axes), (2, 1, 1, 7), "int16", (out_scale, 0), {"keep_dims": True})
    assert_matches_reference(model.build(), inputs=2)


def test_16x8_shape_ops_and_dequantize():
    net = Int16x8Net(seed=16)
    x = net.input((1, 4, 6, 3), -2.0, 2.0)
    outputs = [
        net.concatenation(x, x, axis=2),
        net.transpose(x, (0, 3, 1, 2)),
        net.reshape(x, (4, 18)),
        net.squeeze(net.expand_dims(x, 0), (0,)),
        net.resize_nearest_neighbor(x, (8, 12)),
        net.dequantize(x),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2)


@pytest.mark.parametrize("opcode", ["HARD_SWISH", "RELU_N1_TO_1"])
def test_16x8_operators_not_implemented_say_int16(opcode):
    # What the runtime lacks for int16 is refused naming the dtype.
    net = Int16x8Net(seed=17)
    x = net.input((1, 8), -2.0, 2.0)
    y = {
        "HARD_SWISH": lambda: net.hard_swish(x),
        "RELU_N1_TO_1": lambda: net._unary("RELU_N1_TO_1", x, int16_quant(-1.0, 1.0)),  # LiteRT has no int16 one
    }[opcode]()
    graph = read_model(net.build(y))
    with pytest.raises(NotLowerable, match="int16"):
        lower(graph.operators[0], graph)


@pytest.mark.parametrize("transpose", [False, True], ids=["conv", "transpose_conv"])
def test_16x8_convolutions_at_extreme_rescales(transpose):
    # Rescale factors from about 2^-30 (outputs near 0) to 2^13 (nearly all
    # saturated) with per-channel filter scales, through the int64
    # requantization's whole shift range.
    rng = np.random.default_rng(19)
    model = Branches("16x8 extreme rescales")
    for out_scale in (2e5, 3.0, 0.01, 1e-6, 4e-8):
        x = model.input((1, 4, 5, 6), "int16", (0.02, 0))
        shape = (3, 3, 2, 6)
        weights = rng.integers(-127, 128, size=shape).astype(np.int8)
        scales = tuple(float(np.float32(s)) for s in (0.01, 0.004, 0.02))
        w = model.constant(weights, "int8", Quantization(scales, (0, 0, 0), 0))
        bias_scales = tuple(float(np.float32(0.02 * s)) for s in scales)
        b = model.constant(
            rng.integers(-5000, 5000, size=3).astype(np.int64), "int64", Quantization(bias_scales, (0, 0, 0), 0)
        )
        if transpose:
            shape_tensor = model.constant(np.array([1, 8, 10, 3], np.int32), "int32")
            model.op(
                "TRANSPOSE_CONV",
                (shape_tensor, w, x, b),
                (1, 8, 10, 3),
                "int16",
                (out_scale, 0),
                {"padding": "SAME", "stride_h": 2, "stride_w": 2, "fused_activation_function": "NONE"},
            )
        else:
            model.op(
                "CONV_2D",
                (x, w, b),
                (1, 4, 5, 3),
                "int16",
                (out_scale, 0),
                {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "NONE"},
            )
    assert_matches_reference(model.build(), inputs=2)


def test_16x8_rescale_beyond_the_int64_requantization_is_not_lowerable():
    model = Branches("16x8 rescale 2^16")
    x = model.input((1, 2, 2, 1), "int16", (1.0, 0))
    w = model.constant(np.ones((1, 1, 1, 1), np.int8), "int8", Quantization((1.0,), (0,), 0))
    model.op(
        "CONV_2D", (x, w, -1), (1, 2, 2, 1), "int16", (2.0**-16, 0), {"padding": "VALID", "stride_h": 1, "stride_w": 1}
    )
    graph = read_model(model.build())
    with pytest.raises(NotLowerable, match="rescale factor"):
        lower(graph.operators[0], graph)


@needs_cortex_m
def test_16x8_kernels_on_cortex_m4():
    # The same C on mps2-an386: FULLY_CONNECTED's double rescale is software
    # double arithmetic there, the int64 sums and shifts library calls.
    net = Int16x8Net(seed=20)
    x = net.input((1, 5, 6, 4), -3.0, 3.0)
    flat = net.reshape(x, (2, 60))
    outputs = [
        net.conv2d(x, 3, strides=(2, 1)),
        net.depthwise_conv2d(x, depth_multiplier=2),
        net.transpose_conv(x, 2, kernel=(3, 2), strides=(2, 2)),
        net.fully_connected(flat, 5),
        net.add(x, x),
        net.mul(x, x),
        net.logistic(x),
        net.tanh(x),
        net.mean(x, (1, 2)),
        net.average_pool2d(x),
    ]
    assert_matches_reference(net.build(*outputs), inputs=2, target="mps2-an386")


def _conv_chain_16x8(bias_dtype: str) -> bytes:
    net = Int16x8Net(seed=4)
    net.bias_dtype = bias_dtype
    x = net.input((1, 12, 9, 3), -2.0, 2.0)
    x = net.conv2d(x, 6, kernel=(3, 3), strides=(1, 1), padding="SAME", dilation=(1, 1), activation="RELU")
    return net.build(net.conv2d(x, 4, kernel=(3, 3), strides=(2, 1), padding="SAME", dilation=(1, 1)))


def test_16x8_conv_chain_with_int32_bias_runs_patch_by_patch_bit_exact():
    """mcu_conv_2d_s16_bias32 reads its input only through its geometry
    fields, as mcu_conv_2d_s16 does: its facts give it a window, so a chain
    of them may run in strips (patches.py), bit-exact."""
    from mcu_planner.pipeline import PlanOptions, plan_model

    model = _conv_chain_16x8("int32")
    planned = plan_model(model, PlanOptions(patches="3x1"))
    stage = planned.program.patch_stage
    assert stage is not None and stage.ops == (0, 1) and stage.rows == 3
    assert {planned.program.call(i).function for i in stage.ops} == {"mcu_conv_2d_s16_bias32"}
    graph, _plan, files = generate_for_model(model, name="model", patches="3x1")
    rng = np.random.default_rng(0)
    input_sets = [random_inputs(graph, rng) for _ in range(2)]
    runs = run_generated(graph, files, "model", input_sets)
    reference = ReferenceModel(_conv_chain_16x8("int64"))  # LiteRT misreads an int32 bias (above)
    for s, arrays in enumerate(input_sets):
        (want,) = reference.run(arrays)
        for run in runs:
            got = np.frombuffer(run.outputs[s][0], dtype=want.dtype).reshape(want.shape)
            assert np.array_equal(got, want), f"input set {s}: {np.count_nonzero(got != want)} values differ"


def _fast_paths_16x8() -> bytes:
    """Every branch of mcu_conv_s16.c's fast paths and their tails: output
    and depthwise channel counts leaving 1-3 after the blocks of four, odd
    input depths (SMLAD words and leftover values, Helium tails of 1-7),
    1x1 filters read in place, small windows gathered into a column with
    padding on every side, longer windows row by row, a filter row past one
    int32 run (the int64 loop), and the int64 loops for dilation and depth
    multiplier 2."""
    net = Int16x8Net(seed=23)
    x = net.input((1, 9, 7, 5), -3.0, 3.0)
    wide = net.input((1, 5, 4, 131), -1.0, 1.0)
    outputs = [
        net.conv2d(x, 7, kernel=(1, 1)),
        net.conv2d(x, 6, kernel=(3, 3), padding="SAME", activation="RELU"),
        net.conv2d(x, 13, kernel=(5, 3), strides=(2, 2), padding="SAME"),
        net.conv2d(x, 5, kernel=(4, 4), padding="VALID"),
        net.conv2d(x, 3, kernel=(3, 3), dilation=(2, 1)),
        net.conv2d(wide, 4, kernel=(1, 1)),
        net.conv2d(wide, 5, kernel=(2, 4), padding="SAME"),
        net.depthwise_conv2d(x, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(x, kernel=(5, 2), strides=(2, 1), padding="SAME", activation="RELU"),
        net.depthwise_conv2d(wide, kernel=(3, 3), padding="SAME"),
        net.depthwise_conv2d(x, kernel=(3, 3), depth_multiplier=2),
    ]
    return net.build(*outputs)


@needs_cortex_m
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_16x8_convolution_fast_paths_on_cortex_m(board):
    """The SMLAD (Cortex-M4) and Helium VMLADAVA (Cortex-M55) paths of the
    16x8 convolutions, bit-exact on the sizes where they can go wrong."""
    assert_matches_reference(_fast_paths_16x8(), inputs=2, target=board)
