"""int4 weights (TFLite's INT4, packed two to a byte, low nibble first):
the filters of FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D that LiteRT's
reference kernels take are unpacked to int8 at generation time
(mcu_planner/int4_weights.py) and the generated C is bit-exact with LiteRT;
any other int4 tensor ends in exit 4 naming it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import assert_matches_reference

from mcu_planner.cli import main
from mcu_planner.emit.codegen import lower_all
from mcu_planner.errors import InputError
from mcu_planner.frontend.int4_weights import unpack_int4_weights
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import unpack_int4
from mcu_planner.pipeline import PlanOptions, analyse_model
from mcu_planner.targets.flash import counted_flash
from mcu_planner_testing.builder import (
    Int4Net,
    Int8Net,
    Int16x4Net,
    ModelBuilder,
    int4_weights,
    int8_quant,
    pack_int4,
    run_reference,
)


def test_unpack_int4_inverts_the_packing_for_every_value_and_an_odd_count():
    values = np.array([*range(-8, 8), 7, -8, 0], dtype=np.int8)  # 19 values: the last byte half used
    packed = pack_int4(values)
    assert len(packed) == 10 and packed[0] == 0x98  # -8 (0x8) low, -7 (0x9) high
    assert np.array_equal(unpack_int4(packed, values.size), values)


def _int8_branches(net: Int4Net) -> list[int]:
    """FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D with odd filter sizes,
    on inputs whose zero points sit at both ends of int8 (all-positive and
    all-negative ranges) and in between; ReLU outputs have zero point -128."""
    low = net.input((1, 5, 6, 3), 0.0, 2.0)  # zero point -128
    high = net.input((1, 5, 6, 3), -3.0, 0.0)  # zero point 127
    flat = net.input((2, 9), -0.5, 1.5)
    wide = net.input((3, 67), -1.0, 0.5)
    return [
        net.fully_connected(flat, 5),  # 45 weights; rows of odd depth start inside a byte
        net.fully_connected(flat, 7, activation="RELU"),
        net.fully_connected(wide, 6),  # rows unpacked 32 values at a time: 32 + 32 + 3
        net.fully_connected(wide, 4, activation="RELU6"),
        net.conv2d(low, 3, kernel=(3, 3), activation="RELU"),  # 81 weights
        net.conv2d(high, 5, kernel=(2, 3), strides=(2, 1), padding="VALID"),
        net.depthwise_conv2d(high, activation="RELU6"),  # 27 weights
        net.depthwise_conv2d(low, kernel=(3, 1), depth_multiplier=3, strides=(2, 2)),
    ]


@pytest.mark.slow
def test_int8_models_with_int4_filters_are_bit_exact():
    net = Int4Net(21)
    outputs = _int8_branches(net)  # one scale per output channel
    net.per_channel = False
    outputs += _int8_branches(net)  # one scale per filter
    model = net.build(*outputs)
    weights = [t for t in read_model(model).tensors if t.name.endswith("/weights")]
    assert [t.dtype for t in weights] == ["int4"] * 16
    assert [len(t.quantization.scales) for t in weights] == [5, 7, 6, 4, 3, 5, 3, 9] + [1] * 8
    values = np.concatenate([unpack_int4(t.data, t.num_elements) for t in weights])
    assert values.min() == -8 and values.max() == 7  # both ends of the range are exercised
    assert_matches_reference(model, inputs=3)


@pytest.mark.slow
def test_int16_models_with_int4_filters_are_bit_exact():
    net = Int16x4Net(23)
    x = net.input((1, 5, 5, 3))
    flat = net.input((1, 11))
    outputs = [net.conv2d(x, 3, activation="RELU"), net.fully_connected(flat, 5)]
    assert_matches_reference(net.build(*outputs), inputs=3)


def _hybrid_model(seed: int) -> bytes:
    """float32 activations, int4 filters (per channel) and float biases:
    FULLY_CONNECTED over two rows and a CONV_2D, as LiteRT's hybrid kernels take."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder("hybrid int4")
    x = mb.add_tensor((2, 9), "float32", name="x")
    image = mb.add_tensor((1, 5, 5, 3), "float32", name="image")
    outputs = []
    for opcode, source, shape, out_shape, options in (
        ("FULLY_CONNECTED", x, (5, 9), (2, 5), {}),
        ("CONV_2D", image, (4, 3, 3, 3), (1, 5, 5, 4), {"padding": "SAME", "stride_h": 1, "stride_w": 1}),
    ):
        values, quant = int4_weights(rng, shape, 0, 0.5)
        w = mb.add_tensor(shape, "int4", quant, data=values, name=f"{opcode}/weights")
        b = mb.add_tensor((shape[0],), "float32", data=rng.normal(0, 0.1, shape[0]).astype(np.float32))
        y = mb.add_tensor(out_shape, "float32", name=opcode)
        mb.add_op(opcode, (source, w, b), (y,), {"fused_activation_function": "NONE", **options})
        outputs.append(y)
    mb.set_io([x, image], outputs)
    return mb.build()


@pytest.mark.slow
def test_hybrid_models_with_int4_filters_are_bit_exact():
    assert_matches_reference(_hybrid_model(24), inputs=3)


def _same_model_with_int8_filters(model: bytes) -> bytes:
    mb = ModelBuilder.from_graph(read_model(model))
    for spec in mb.tensors:
        if spec.dtype == "int4":
            spec.dtype = "int8"
            spec.data = unpack_int4(spec.data, int(np.prod(spec.shape))).tobytes()
    return mb.build()


def test_fully_connected_keeps_int4_packed_and_the_convolutions_unpack():
    net = Int4Net(25)
    dense = net.fully_connected(net.input((1, 9)), 5)  # 45 weights: 23 bytes packed
    conv = net.conv2d(net.input((1, 4, 4, 3)), 3)  # 81 weights: 41 bytes packed
    model = net.build(dense, conv)
    analysed = analyse_model(model, PlanOptions(order="model"))
    tensors = {t.name: t for t in analysed.graph.tensors}
    assert tensors["fully_connected_1/weights"].dtype == "int4"
    assert len(tensors["fully_connected_1/weights"].data) == 23
    assert tensors["conv2d_1/weights"].dtype == "int8" and len(tensors["conv2d_1/weights"].data) == 81
    calls = lower_all(analysed.lifetimes.program)
    assert [call.function for call in calls.values()][0] == "mcu_fully_connected_s8_s4"
    assert counted_flash(analysed.graph, calls)[0] == 23 + 81 + sum(
        tensors[name].nbytes for name in ("fully_connected_1/bias", "conv2d_1/bias")
    )
    notes = " | ".join(analysed.graph.notes)
    assert "1 tensor kept packed for the FULLY_CONNECTED kernels: 23 B" in notes
    assert "1 tensor unpacked to int8 for the kernels: 81 B of flash where the file packs them in 41 B" in notes
    # The same values stored as int8 give LiteRT the same outputs: unpacking is exact.
    unpacked = _same_model_with_int8_filters(model)
    for seed in range(2):
        expected, got = run_reference(model, seed=seed), run_reference(unpacked, seed=seed)
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


def test_a_filter_shared_with_a_kernel_that_cannot_read_it_packed_is_unpacked():
    # One int4 filter read by an int8 FULLY_CONNECTED (which reads it packed)
    # and an int16 one (which does not): unpacked once, for both.
    mb = ModelBuilder()
    values, quant = int4_weights(np.random.default_rng(29), (3, 5), 0, 0.5)
    w = mb.add_tensor((3, 5), "int4", quant, data=values, name="shared")
    x8 = mb.add_tensor((1, 5), "int8", int8_quant(-1, 1), name="x8")
    x16 = mb.add_tensor((1, 5), "int16", (1 / 32767, 0), name="x16")
    y8 = mb.add_tensor((1, 3), "int8", int8_quant(-1, 1), name="y8")
    y16 = mb.add_tensor((1, 3), "int16", (1 / 32767, 0), name="y16")
    for x, y in ((x8, y8), (x16, y16)):
        mb.add_op("FULLY_CONNECTED", (x, w, -1), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([x8, x16], [y8, y16])
    graph = read_model(mb.build())
    shared = unpack_int4_weights(graph).tensors[w]
    assert shared.dtype == "int8" and np.array_equal(np.frombuffer(shared.data, np.int8), values.reshape(-1))
    # Without the int16 reader the filter stays packed, byte for byte.
    alone = dataclasses.replace(graph, operators=graph.operators[:1], inputs=(x8,), outputs=(y8,))
    assert unpack_int4_weights(alone).tensors[w] == graph.tensors[w]


def _run_plan(tmp_path, model: bytes, capsys) -> tuple[int, str]:
    """`mcu-plan MODEL -o OUT` in this process: its exit code and stderr."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    code = main([str(path), "-o", str(tmp_path / "out")])
    return code, capsys.readouterr().err


def _int4_transpose_conv() -> bytes:
    net = Int8Net(26)
    model = net.build(net.transpose_conv(net.input((1, 3, 3, 2)), 3))
    mb = ModelBuilder.from_graph(read_model(model))
    weights = next(spec for spec in mb.tensors if spec.name.endswith("/weights"))
    values = np.clip(np.frombuffer(weights.data, dtype=np.int8), -8, 7)
    weights.dtype, weights.data = "int4", pack_int4(values)
    return mb.build()


def _int4_depthwise_with_int16_input() -> bytes:
    # LiteRT's int16 depthwise kernel reads the packed bytes as int8.
    net = Int16x4Net(27)
    return net.build(net.depthwise_conv2d(net.input((1, 4, 4, 2))))


def _int4_add_operand() -> bytes:
    mb = ModelBuilder()
    q = int8_quant(-1.0, 1.0)
    x = mb.add_tensor((1, 5), "int8", q, name="x")
    c = mb.add_tensor((1, 5), "int4", (0.1, 0), data=np.array([[-8, -1, 0, 3, 7]]), name="c")
    y = mb.add_tensor((1, 5), "int8", q, name="y")
    mb.add_op("ADD", (x, c), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([x], [y])
    return mb.build()


@pytest.mark.parametrize(
    "make, line",
    [
        (
            _int4_transpose_conv,
            "TRANSPOSE_CONV int8: 1 op (TRANSPOSE_CONV with int4 tensor 'transpose_conv_1/weights')",
        ),
        (
            _int4_depthwise_with_int16_input,
            "DEPTHWISE_CONV_2D int16: 1 op (DEPTHWISE_CONV_2D with int4 tensor 'depthwise_conv2d_1/weights')",
        ),
        (_int4_add_operand, "ADD int8: 1 op (ADD mixing int8, int4 -> int8)"),
    ],
    ids=["transpose-conv", "int16-depthwise", "add"],
)
def test_int4_where_no_kernel_takes_it_exits_4_naming_the_tensor(tmp_path, capsys, make, line):
    code, stderr = _run_plan(tmp_path, make(), capsys)
    assert code == 4 and "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert lines[-2:] == ["mcu-plan: error: 1 op in 1 unsupported operator and dtype combination:", f"  {line}"]
    assert stderr.count("int4") == 1
    assert not (tmp_path / "out").exists()


def test_int4_data_of_the_wrong_length_is_refused():
    # 5 int4 values take 3 bytes; a 5-byte (int8-sized) buffer is refused.
    mb = ModelBuilder()
    x = mb.add_tensor((1, 5), "int8", int8_quant(-1, 1), name="x")
    w = mb.add_tensor((1, 5), "int4", (0.1, 0), data=bytes(5), name="w")
    y = mb.add_tensor((1, 1), "int8", int8_quant(-1, 1), name="y")
    mb.add_op("FULLY_CONNECTED", (x, w, -1), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([x], [y])
    with pytest.raises(InputError, match=r"constant data has 5 bytes but int4\[1, 5\] needs 3"):
        read_model(mb.build())


# The packed FULLY_CONNECTED kernel multiplies rows of an even depth straight
# from the nibbles (SMLAD on the M4, VMLADAVA on the M55; 288 values: whole
# passes, 70: a tail of 6 on both) and unpacks rows of an odd depth a chunk
# at a time into the int8 dot product (67: 32 + 32 + 3).
@needs_cortex_m
@pytest.mark.parametrize("target", ["mps2-an386", "mps3-an547"])
def test_int4_model_bit_exact_on_cortex_m(target):
    net = Int4Net(28)
    x = net.input((1, 6, 6, 3), 0.0, 2.0)
    y = net.depthwise_conv2d(net.conv2d(x, 4, activation="RELU"), depth_multiplier=2)
    z = net.fully_connected(net.reshape(y, (1, 288)), 7)
    odd = net.fully_connected(net.input((3, 67), -1.0, 0.5), 9)
    even = net.fully_connected(net.input((2, 70), 0.0, 3.0), 6, activation="RELU")
    assert_matches_reference(net.build(z, odd, even), inputs=2, target=target)
