"""The semantic validator (mcu_planner/frontend/validate.py): models that parse but make
no sense end in exit 2 with one line naming the op, the tensor and the rule;
real models pass.  One regression test per class of issue 14."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED, needs_shared
from semantic_fuzz import with_op, with_tensor

from mcu_planner.cli import main
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph, Quantization
from mcu_planner_testing.builder import Int8Net, ModelBuilder, single_op_model, tiny_kws_int8


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
    from mcu_planner.frontend.validate import InvalidModel, validate

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
    from mcu_planner.frontend.validate import OP_RULES

    assert "SIGN" not in OP_RULES
    code, err = plan_exit(b.build(), tmp_path, capsys, "-o", str(tmp_path / "out"))
    assert code == 4 and any(line.strip().startswith("SIGN float32") for line in err), err


def test_zero_point_outside_an_int32_field_is_bad_input_not_a_bug():
    """An int16-range zero point on an int8 MUL passes no zero-point rule if
    it is changed after reading; the derived offset must still be refused as
    bad input by the C-type rule (exit 2), not as a contract bug (exit 1)."""
    from mcu_planner.emit.codegen import lower_all
    from mcu_planner.frontend.validate import InvalidModel

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
    from mcu_planner.frontend.validate import load_model

    models = _real_models()
    assert len(models) > 20
    for path in models:
        load_model(path)  # raises on a refused model


# ---------------------------------------------------------------- what LiteRT's Prepare refuses (issue 20, item 11)
# Each model below is refused by LiteRT's BUILTIN_REF interpreter (its
# constructor, allocate_tensors or, for GATHER, every invoke) and was planned
# with exit 0 before these rules.


def litert_refuses(model: bytes, invoke: bool = False) -> bool:
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    try:
        interpreter = interpreter_module.Interpreter(
            model_content=model, experimental_op_resolver_type=interpreter_module.OpResolverType.BUILTIN_REF
        )
        interpreter.allocate_tensors()
        if invoke:
            interpreter.invoke()
    except (RuntimeError, ValueError):
        return True
    return False


def litert_output_shape(model: bytes) -> list[int]:
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    interpreter = interpreter_module.Interpreter(
        model_content=model, experimental_op_resolver_type=interpreter_module.OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    interpreter.invoke()
    return [int(d) for d in interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).shape]


def _bench_coverage():
    import importlib.util
    import sys

    if "bench_coverage" not in sys.modules:  # tests/test_coverage.py loads it under this name too
        path = Path(__file__).resolve().parents[1] / "bench" / "coverage.py"
        spec = importlib.util.spec_from_file_location("bench_coverage", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_coverage"] = module
        spec.loader.exec_module(module)
    return sys.modules["bench_coverage"]


def _int16_op_model(opcode: str) -> bytes:
    """A one-op int16 model of `opcode` (bench/coverage.py's recipe; QUANTIZE
    as the int16 -> int16 requantization, the case TFLite keeps symmetric)."""
    if opcode == "QUANTIZE":
        net = Int8Net(0)
        x = net.typed_input((1, 8), "int16", Quantization((0.01,), (0,)))
        return net.build(net.op("QUANTIZE", [x], (1, 8), "int16", quant=Quantization((0.02,), (0,))))
    return _bench_coverage().build_variant(opcode, "int16")


def _with_zero_point(graph: Graph, tensor: int, zero_point: int) -> Graph:
    q = graph.tensors[tensor].quantization
    return with_tensor(graph, tensor, quantization=dataclasses.replace(q, zero_points=(zero_point,) * len(q.scales)))


def _int16_symmetric_opcodes() -> list[str]:
    from mcu_planner.frontend.validate import INT16_SYMMETRIC_OPCODES

    return sorted(INT16_SYMMETRIC_OPCODES)


@pytest.mark.parametrize("opcode", _int16_symmetric_opcodes())
def test_int16_zero_point_is_refused_where_litert_refuses_it(opcode, tmp_path, capsys):
    graph = read_model(_int16_op_model(opcode))
    op = first_op(graph, opcode)
    assert not litert_refuses(rebuilt(graph))
    int16 = [t for t in op.inputs + op.outputs if t >= 0 and graph.tensors[t].dtype == "int16"]
    target = next(t for t in int16 if not graph.tensors[t].is_constant)
    model = rebuilt(_with_zero_point(graph, target, 5))
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "int16-zero-point", f"({opcode})", f"tensor {target}", "zero point 5")


@pytest.mark.parametrize("opcode", ["MUL", "RESHAPE", "AVERAGE_POOL_2D"])
def test_int16_zero_point_passes_where_litert_takes_it(opcode, tmp_path, capsys):
    graph = read_model(_int16_op_model(opcode))
    for t in graph.tensors:
        if t.dtype == "int16" and t.quantization is not None:
            graph = _with_zero_point(graph, t.index, 5)
    model = rebuilt(graph)
    assert not litert_refuses(model)
    code, err = plan_exit(model, tmp_path, capsys, "-o", str(tmp_path / "out"))
    assert code == 0, err


def _split_like(opcode: str) -> bytes:
    net = Int8Net(0)
    if opcode == "PACK":
        return net.build(net.pack(net.input((3, 4)), net.input((3, 4))))
    x = net.input((3, 6))
    if opcode == "SPLIT":
        return net.build(*net.split(x, 3))
    if opcode == "SPLIT_V":
        return net.build(*net.split_v(x, [1, 2, 3]))
    return net.build(*net.unpack(x))


_COUNT_OPTIONS = {"SPLIT": "num_splits", "SPLIT_V": "num_splits", "UNPACK": "num", "PACK": "values_count"}


@pytest.mark.parametrize("opcode", sorted(_COUNT_OPTIONS))
@pytest.mark.parametrize("declared", ["one more", "no options table"])
def test_declared_counts_that_disagree_with_the_tensors_are_refused(opcode, declared, tmp_path, capsys):
    option = _COUNT_OPTIONS[opcode]
    graph = read_model(_split_like(opcode))
    op = first_op(graph, opcode)
    assert not litert_refuses(rebuilt(graph))
    builder = ModelBuilder.from_graph(graph)
    spec = builder.ops[op.index]
    if declared == "one more":
        spec.options = {**spec.options, option: spec.options[option] + 1}
    else:
        spec.options, spec.options_table = {}, None
    model = builder.build()
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "declared-count", f"({opcode})", option)


def test_arg_max_without_its_options_table_is_refused(tmp_path, capsys):
    net = Int8Net(0)
    graph = read_model(net.build(net.arg_max(net.input((2, 5)))))
    assert not litert_refuses(rebuilt(graph))
    builder = ModelBuilder.from_graph(graph)
    builder.ops[0].options, builder.ops[0].options_table = {}, None
    model = builder.build()
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "arg-output-type", "(ARG_MAX)", "FLOAT32")


@pytest.mark.parametrize("index", [4, -1, 1000])
def test_constant_gather_index_outside_the_axis_is_refused(index, tmp_path, capsys):
    def gather(indices: list[int]) -> bytes:
        net = Int8Net(0)
        return net.build(net.gather(net.input((4, 3)), indices))

    model = gather([0, index])
    assert litert_refuses(model, invoke=True)
    assert not litert_refuses(gather([0, 3]), invoke=True)
    assert_refused(model, tmp_path, capsys, "gather-index-range", "(GATHER)", f"index {index}")


@pytest.mark.parametrize("stored", [np.arange(4, dtype=np.int8).reshape(1, 4), b""], ids=["values", "empty"])
def test_variable_tensor_with_a_buffer_is_refused(stored, tmp_path, capsys):
    """An empty data vector counts too: LiteRT refuses a variable whose
    buffer has one ("variable tensor with buffer")."""
    net = Int8Net(0)
    x = net.input((1, 4))
    state = net.mb.add_tensor((1, 4), "int8", net.quant(x), data=stored, is_variable=True, name="state")
    model = net.build(net.add(x, state))
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "variable-without-buffer", "op 0 (ADD)", "'state'")


# Found by the semantic fuzz (seed 11, 300 mutations): models LiteRT refuses
# in Prepare that planned with exit 0.


def _reshape_model() -> Graph:
    net = Int8Net(0)
    return read_model(net.build(net.reshape(net.input((2, 6)), (3, 4))))


@pytest.mark.parametrize("new_shape", [[3, 5], [-1, -1], [-2, 6], [0, 4], [3, 4, 1], [-1, 3], []])
def test_reshape_to_a_shape_that_cannot_hold_the_input_is_refused(new_shape, tmp_path, capsys):
    graph = _reshape_model()
    shape_tensor = graph.operators[0].inputs[1]
    new = np.array(new_shape, np.int32)
    model = rebuilt(with_tensor(graph, shape_tensor, shape=new.shape, data=new.tobytes()))
    if new_shape in ([3, 4, 1], [-1, 3]):
        # LiteRT takes these, and gives its output the new shape instead of
        # the [3, 4] the model declares (semantic fuzz, seed 20261127, run
        # 2296: a SOFTMAX after such a RESHAPE then differed, check exit 5).
        assert litert_output_shape(model) == ([3, 4, 1] if new_shape == [3, 4, 1] else [4, 3])
    else:
        assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "reshape-shape", "(RESHAPE)", str(new_shape))


def test_reshape_into_a_variable_is_refused(tmp_path, capsys):
    net = Int8Net(0)
    hidden = net.reshape(net.relu(net.input((2, 6))), (3, 4))
    graph = read_model(net.build(net.relu(hidden)))
    model = rebuilt(with_tensor(graph, hidden, is_variable=True))
    assert litert_refuses(model, invoke=True)
    assert_refused(model, tmp_path, capsys, "reshape-variable-output", "(RESHAPE)")


@pytest.mark.parametrize("change", ["scale", "zero_point"])
def test_int8_concatenation_of_differently_quantized_inputs_is_refused(change, tmp_path, capsys):
    net = Int8Net(0)
    a, b = net.input((1, 4)), net.input((1, 4))
    graph = read_model(net.build(net.concatenation(a, b)))
    q = graph.tensors[b].quantization
    q = (
        dataclasses.replace(q, scales=(q.scales[0] * 2,))
        if change == "scale"
        else dataclasses.replace(q, zero_points=(3,))
    )
    model = rebuilt(with_tensor(graph, b, quantization=q))
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "concat-quantization", "(CONCATENATION)", f"tensor {b}")


@pytest.mark.parametrize("dtype, quantization", [("int8", (1 / 200, -128)), ("int8", (1 / 256, -127))])
def test_softmax_output_quantization_other_than_tflites_is_refused(dtype, quantization, tmp_path, capsys):
    net = Int8Net(0)
    graph = read_model(net.build(net.softmax(net.input((1, 8)))))
    out = graph.operators[0].outputs[0]
    model = rebuilt(with_tensor(graph, out, quantization=Quantization((quantization[0],), (quantization[1],))))
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "softmax-output-quantization", "(SOFTMAX)")


@pytest.mark.parametrize("layer", ["conv2d", "depthwise_conv2d"])
def test_convolution_with_an_empty_filter_window_is_refused(layer, tmp_path, capsys):
    """Found by the semantic fuzz (seed 20261127, run 356): a filter of
    height 0 ended in exit 1 (a reduction over no taps) in the plan verifier."""
    net = Int8Net(0)
    x = net.input((1, 6, 6, 3))
    graph = read_model(net.build(getattr(net, layer)(x, 3) if layer == "conv2d" else net.depthwise_conv2d(x)))
    filt = graph.tensors[graph.operators[0].inputs[1]]
    shape = (filt.shape[0], 0, *filt.shape[2:])
    model = rebuilt(with_tensor(graph, filt.index, shape=shape, data=b""))
    assert litert_refuses(model)
    assert_refused(model, tmp_path, capsys, "filter-shape", "empty window")


@pytest.mark.parametrize(("dilation", "refused"), [(21845, False), (21846, True)])
def test_window_padding_past_int16_is_refused_where_litert_refuses_it(dilation, refused, tmp_path, capsys):
    """Found by the semantic fuzz (seed 20261127, mutation 5432): a 4-wide
    filter dilated 32767 times needs 98,300 columns of SAME padding, which
    LiteRT's Prepare refuses (its padding is int16 a side). The boundary:
    dilation 21846 pads 32,769 a side, 21845 pads 32,767 (accepted)."""
    net = Int8Net(0)
    x = net.input((1, 10, 10, 1))
    graph = read_model(net.build(net.conv2d(x, 4, kernel=(1, 4), strides=(2, 2))))
    conv = graph.operators[0]
    options = {**conv.options, "dilation_w_factor": dilation}
    model = rebuilt(dataclasses.replace(graph, operators=[dataclasses.replace(conv, options=options)]))
    assert litert_refuses(model) is refused
    if refused:
        assert_refused(model, tmp_path, capsys, "window-padding", "(CONV_2D)", "int16")
    else:
        assert plan_exit(model, tmp_path, capsys)[0] == 0


def test_split_outputs_of_another_shape_than_the_split_makes_are_refused(tmp_path, capsys):
    """Found by the semantic fuzz (seed 20261127, run 3313): LiteRT gives
    SPLIT's outputs the shape it computes ([1, 4, 4] here) whatever the
    model declares ([1, 2, 4]); what follows then runs on other shapes."""
    net = Int8Net(0)
    outputs = net.split(net.input((1, 6, 4)), 3, axis=1)
    graph = read_model(net.build(*outputs))
    model = rebuilt(with_tensor(graph, graph.inputs[0], shape=(1, 12, 4)))
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    interpreter = interpreter_module.Interpreter(
        model_content=model, experimental_op_resolver_type=interpreter_module.OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    assert list(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).shape) == [1, 4, 4]
    assert_refused(model, tmp_path, capsys, "split-shape", "(SPLIT)", "[1, 4, 4]")
    uneven = rebuilt(with_tensor(graph, graph.inputs[0], shape=(1, 7, 4)))
    assert litert_refuses(uneven)
    assert_refused(uneven, tmp_path, capsys, "split-shape", "equal parts")


@pytest.mark.parametrize("layer", ["conv2d", "depthwise_conv2d"])
@pytest.mark.parametrize("bias", ["marked absent", "left out"])
def test_convolution_bias_is_required_where_litert_requires_it(layer, bias, tmp_path, capsys):
    """Found by the semantic fuzz (seed 20261127, mutations 3055 and 3163): a
    CONV_2D whose bias index is -1 was planned, but LiteRT's Prepare refuses
    it. LiteRT requires CONV_2D's bias in every form; DEPTHWISE_CONV_2D runs
    without one when the slot is left out, but not when it is marked -1."""
    net = Int8Net(0)
    x = net.input((1, 6, 6, 3))
    graph = read_model(net.build(net.conv2d(x, 3) if layer == "conv2d" else net.depthwise_conv2d(x)))
    conv = graph.operators[0]
    inputs = (*conv.inputs[:2], -1) if bias == "marked absent" else conv.inputs[:2]
    model = rebuilt(dataclasses.replace(graph, operators=[dataclasses.replace(conv, inputs=inputs)]))
    refused = litert_refuses(model, invoke=True)
    assert refused is (layer == "conv2d" or bias == "marked absent")
    if refused:
        assert_refused(model, tmp_path, capsys, "conv-bias", f"({conv.opcode})")
    else:
        assert plan_exit(model, tmp_path, capsys)[0] == 0
