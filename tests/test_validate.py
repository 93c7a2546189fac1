"""The semantic validator (mcu_planner/validate.py): models that parse but make
no sense end in exit 2 with one line naming the op, the tensor and the rule;
real models pass.  One regression test per class of issue 14."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED, needs_shared
from mcu_planner_testing.builder import Int8Net, ModelBuilder, single_op_model, tiny_kws_int8
from mcu_planner.cli import main
from mcu_planner.graph import Graph, Quantization
from mcu_planner.reader import read_model
from semantic_fuzz import with_op, with_tensor


def rebuilt(graph: Graph) -> bytes:
    return ModelBuilder.from_graph(graph).build()


def first_op(graph: Graph, opcode: str):
    return next(op for op in graph.operators if op.opcode == opcode)


def plan_exit(model: bytes, tmp_path: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    capsys.readouterr()
    code = main([str(path), "--ram", "1M", *extra])
    return code, capsys.readouterr().err.strip().splitlines()


def assert_refused(model: bytes, tmp_path, capsys, rule: str, *fragments: str) -> None:
    outdir = tmp_path / "out"
    code, err = plan_exit(model, tmp_path, capsys, "-o", str(outdir))
    assert code == 2, err
    assert len(err) == 1, err
    assert f"rule {rule}" in err[0], err
    for fragment in fragments:
        assert fragment in err[0], err
    assert not outdir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]


KWS = read_model(tiny_kws_int8())


# ---------------------------------------------------------------- bad values (were exit 1)


@pytest.mark.parametrize("bad_scale", [0.0, math.nan, math.inf, -0.5])
def test_bad_activation_scale_is_refused(bad_scale, tmp_path, capsys):
    conv = first_op(KWS, "CONV_2D")
    out = KWS.tensors[conv.outputs[0]]
    graph = with_tensor(KWS, out.index, quantization=dataclasses.replace(out.quantization, scales=(bad_scale,)))
    assert_refused(rebuilt(graph), tmp_path, capsys, "scale-positive", f"tensor {out.index}")


def test_huge_scales_generate_instead_of_crashing(tmp_path, capsys):
    """Scales near float32's maximum give rescale exponents far above 31; the
    double-rounding kernels reproduce what the reference computes there (see
    test_arithmetic_limits.py), so the model is planned and generated."""
    conv = first_op(KWS, "CONV_2D")
    inp, filt = KWS.tensors[conv.inputs[0]], KWS.tensors[conv.inputs[1]]
    graph = with_tensor(KWS, inp.index, quantization=dataclasses.replace(inp.quantization, scales=(3e38,)))
    q = filt.quantization
    graph = with_tensor(graph, filt.index, quantization=dataclasses.replace(q, scales=(3e38,) * len(q.scales)))
    code, err = plan_exit(rebuilt(graph), tmp_path, capsys, "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert (tmp_path / "out").is_dir()


@pytest.mark.parametrize("zero_point", [-129, 128, 2**40])
def test_zero_point_outside_its_dtype_is_refused(zero_point, tmp_path, capsys):
    t = KWS.inputs[0]
    q = KWS.tensors[t].quantization
    graph = with_tensor(KWS, t, quantization=dataclasses.replace(q, zero_points=(zero_point,)))
    assert_refused(rebuilt(graph), tmp_path, capsys, "zero-point-range", f"tensor {t}")


def test_nan_alpha_is_refused(tmp_path, capsys):
    net = Int8Net(0)
    x = net.input((1, 4, 4, 3))
    model = net.build(net.leaky_relu(x, alpha=0.2))
    graph = read_model(model)
    graph = with_op(graph, 0, options={**graph.operators[0].options, "alpha": math.nan})
    assert_refused(rebuilt(graph), tmp_path, capsys, "finite-option", "op 0 (LEAKY_RELU)")


def test_op_writing_its_own_input_is_refused(tmp_path, capsys):
    op = KWS.operators[1]
    graph = with_op(KWS, 1, outputs=(op.inputs[0],))
    assert_refused(rebuilt(graph), tmp_path, capsys, "written-once", "op 1")


def test_op_writing_a_graph_input_is_refused(tmp_path, capsys):
    graph = with_op(KWS, 2, outputs=(KWS.inputs[0],))
    assert_refused(rebuilt(graph), tmp_path, capsys, "no-input-write", "op 2")


# ---------------------------------------------------------------- short biases (were exit 0, then OOB reads)


@pytest.mark.parametrize(
    "layer, shape, kwargs",
    [
        ("conv2d", (1, 6, 6, 3), {"filters": 8}),
        ("depthwise_conv2d", (1, 6, 6, 4), {}),
        ("fully_connected", (1, 12), {"units": 8}),
    ],
)
def test_bias_shorter_than_output_channels_is_refused(layer, shape, kwargs, tmp_path, capsys):
    graph = read_model(single_op_model(layer, shape, **kwargs))
    bias = graph.tensors[graph.operators[0].inputs[2]]
    short = bias.shape[0] - 1
    graph = with_tensor(
        graph,
        bias.index,
        shape=(short,),
        data=bias.data[: 4 * short],
        quantization=Quantization(bias.quantization.scales[:short], bias.quantization.zero_points[:short]),
    )
    assert_refused(rebuilt(graph), tmp_path, capsys, "bias-length", f"tensor {bias.index}", f"{short} elements")


def test_float_bias_shorter_than_output_channels_is_refused(tmp_path, capsys):
    b = ModelBuilder()
    x = b.add_tensor((1, 4, 4, 2), "float32")
    w = b.add_tensor((3, 1, 1, 2), "float32", data=np.ones((3, 1, 1, 2), np.float32))
    bias = b.add_tensor((2,), "float32", data=np.ones(2, np.float32))
    y = b.add_tensor((1, 4, 4, 3), "float32")
    b.add_op("CONV_2D", [x, w, bias], [y], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    b.set_io([x], [y])
    assert_refused(b.build(), tmp_path, capsys, "bias-length", "op 0 (CONV_2D)")


# ---------------------------------------------------------------- graphs that cannot run (were exit 0)


def test_ops_out_of_order_are_refused(tmp_path, capsys):
    ops = list(KWS.operators)
    ops[1], ops[2] = ops[2], ops[1]
    graph = dataclasses.replace(KWS, operators=tuple(dataclasses.replace(op, index=i) for i, op in enumerate(ops)))
    assert_refused(rebuilt(graph), tmp_path, capsys, "written-before-read", "op 1")


def test_tensor_read_but_never_written_is_refused(tmp_path, capsys):
    b = ModelBuilder()
    x = b.add_tensor((1, 4), "int8", (0.1, 0))
    ghost = b.add_tensor((1, 4), "int8", (0.1, 0))
    y = b.add_tensor((1, 4), "int8", (0.2, 0))
    b.add_op("ADD", [x, ghost], [y])
    b.set_io([x], [y])
    assert_refused(b.build(), tmp_path, capsys, "written-before-read", f"tensor {ghost}", "never written")


def test_two_ops_in_a_cycle_are_refused(tmp_path, capsys):
    b = ModelBuilder()
    x = b.add_tensor((1, 4), "int8", (0.1, 0))
    p = b.add_tensor((1, 4), "int8", (0.1, 0))
    q = b.add_tensor((1, 4), "int8", (0.1, 0))
    b.add_op("ADD", [x, q], [p])
    b.add_op("ADD", [x, p], [q])
    b.set_io([x], [q])
    assert_refused(b.build(), tmp_path, capsys, "written-before-read", "op 0 (ADD)")


# ---------------------------------------------------------------- options and shapes


def test_options_table_of_another_opcode_is_refused(tmp_path, capsys):
    graph = read_model(single_op_model("conv2d", (1, 6, 6, 3), filters=4))
    op = graph.operators[0]
    b = ModelBuilder.from_graph(dataclasses.replace(graph, operators=()))
    b.add_op("CONV_2D", op.inputs, op.outputs, {"filter_width": 3, "filter_height": 3}, options_table="Pool2DOptions")
    assert_refused(b.build(), tmp_path, capsys, "options-table", "Pool2DOptions", "Conv2DOptions")


@pytest.mark.parametrize("stride", [0, -1, 2**15])
def test_strides_outside_int16_or_below_one_are_refused(stride, tmp_path, capsys):
    graph = read_model(single_op_model("conv2d", (1, 6, 6, 3), filters=4))
    graph = with_op(graph, 0, options={**graph.operators[0].options, "stride_w": stride})
    assert_refused(rebuilt(graph), tmp_path, capsys, "window-option-range", "stride_w")


def test_filter_depth_that_does_not_divide_the_input_is_refused(tmp_path, capsys):
    graph = read_model(single_op_model("conv2d", (1, 6, 6, 3), filters=4))
    inp = graph.operators[0].inputs[0]
    graph = with_tensor(graph, inp, shape=(1, 6, 6, 4))
    assert_refused(rebuilt(graph), tmp_path, capsys, "filter-depth", "op 0 (CONV_2D)")


def test_empty_input_depth_is_refused_not_divided_by(tmp_path, capsys):
    """Found by the semantic fuzz (seed 20261122, run 1229): ZeroDivisionError, exit 1."""
    graph = read_model(single_op_model("conv2d", (1, 6, 6, 3), filters=4))
    graph = with_tensor(graph, graph.operators[0].inputs[0], shape=(1, 6, 6, 0))
    assert_refused(rebuilt(graph), tmp_path, capsys, "filter-depth", "op 0 (CONV_2D)")


def test_shapes_that_do_not_broadcast_are_refused(tmp_path, capsys):
    net = Int8Net(0)
    a, c = net.input((1, 4, 3)), net.input((1, 4, 3))
    graph = read_model(net.build(net.add(a, c)))
    graph = with_tensor(graph, graph.inputs[1], shape=(1, 2, 3))
    assert_refused(rebuilt(graph), tmp_path, capsys, "broadcast", "op 0 (ADD)")


def test_per_channel_scales_of_the_wrong_length_are_refused():
    from mcu_planner.validate import InvalidModel, validate

    graph = read_model(single_op_model("conv2d", (1, 6, 6, 3), filters=4))
    filt = graph.tensors[graph.operators[0].inputs[1]]
    q = filt.quantization
    graph = with_tensor(graph, filt.index, quantization=Quantization(q.scales[:3], q.zero_points[:3], 0))
    with pytest.raises(InvalidModel, match="per-channel-length"):
        validate(graph)


def test_an_opcode_without_rules_is_left_to_lowering(tmp_path, capsys):
    b = ModelBuilder()
    x = b.add_tensor((1, 4), "float32")
    y = b.add_tensor((1, 4), "float32")
    b.add_op("SIGN", [x], [y])
    b.set_io([x], [y])
    from mcu_planner.validate import OP_RULES

    assert "SIGN" not in OP_RULES
    code, err = plan_exit(b.build(), tmp_path, capsys, "-o", str(tmp_path / "out"))
    assert code == 4 and any(line.strip().startswith("SIGN float32") for line in err), err


def test_zero_point_outside_an_int32_field_is_bad_input_not_a_bug():
    """An int16-range zero point on an int8 MUL passes no zero-point rule if
    it is changed after reading; the derived offset must still be refused as
    bad input by the C-type rule (exit 2), not as a contract bug (exit 1)."""
    from mcu_planner.codegen import lower_all
    from mcu_planner.validate import InvalidModel

    net = Int8Net(0)
    a, c = net.input((1, 4)), net.input((1, 4))
    graph = read_model(net.build(net.mul(a, c)))
    t = graph.inputs[0]
    graph = with_tensor(graph, t, quantization=dataclasses.replace(graph.tensors[t].quantization, zero_points=(2**40,)))
    with pytest.raises(InvalidModel, match="c-type-range"):
        lower_all(graph)


# ---------------------------------------------------------------- real models pass


def _real_models() -> list[Path]:
    roots = [SHARED / "models", SHARED / "peer-tests"]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*.tflite"))


@needs_shared
def test_every_shared_model_passes_validation():
    from mcu_planner.validate import load_model

    models = _real_models()
    assert len(models) > 20
    for path in models:
        load_model(path)  # raises on a refused model
