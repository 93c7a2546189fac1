"""The reader against TFLite's own interpreter, the shared model table, and
models written by the builder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
from conftest import MODELS_DIR, model_param, needs_shared, parse_int, shared_model_paths, shared_model_table

from mcu_planner.errors import InputError, UnsupportedModel
from mcu_planner.frontend.reader import BUILTIN_CODES, DYNAMIC_INNER_NOTE, enum_for, option_fields, read_model
from mcu_planner.graph import Quantization
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import ModelBuilder, options_table_for, single_op_model, tiny_kws_int8

NUMPY_TO_DTYPE = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    np.dtype(np.int32): "int32",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int64): "int64",
    np.dtype(np.bool_): "bool",
    np.dtype(np.int16): "int16",
    np.dtype(np.int8): "int8",
}

SHARED_MODELS = [model_param(p) for p in shared_model_paths()]


def litert(path_or_bytes):
    """The reference interpreter on the same model.  Its loader refuses an
    out-of-range quantized_dimension that the reader accepts (person_detect),
    so it gets the copy reference.py makes valid."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from mcu_planner.targets.reference import with_valid_quantized_dimensions

    data = path_or_bytes if isinstance(path_or_bytes, bytes) else Path(path_or_bytes).read_bytes()
    return Interpreter(
        model_content=with_valid_quantized_dimensions(data), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )


# -- real models -------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", SHARED_MODELS)
def test_shared_model_matches_litert(path):
    graph = read_model(path)
    interpreter = litert(path)
    details = interpreter.get_tensor_details()
    ops = interpreter._get_ops_details()

    # The reader appends the kernels' scratch buffers after the model's tensors.
    scratch = [t.index for t in graph.tensors if t.is_scratch]
    assert len(graph.tensors) - len(scratch) == len(details)
    assert all(index >= len(details) for index in scratch)
    assert len(graph.operators) == len(ops)
    for d in details:
        t = graph.tensors[d["index"]]
        assert t.name == d["name"]
        assert t.dtype == NUMPY_TO_DTYPE[np.dtype(d["dtype"])], t.name
        assert t.shape == tuple(int(x) for x in d["shape"]), t.name
        q = d["quantization_parameters"]
        if len(q["scales"]):
            assert t.quantization is not None
            assert np.array_equal(np.array(t.quantization.scales, dtype=np.float32), q["scales"])
            assert t.quantization.zero_points == tuple(int(z) for z in q["zero_points"])
            if len(q["scales"]) > 1:
                assert t.quantization.axis == q["quantized_dimension"]
        else:
            assert t.quantization is None
    for op, d in zip(graph.operators, ops, strict=True):
        assert op.opcode == d["op_name"]
        assert op.inputs == tuple(int(i) for i in d["inputs"])
        assert op.outputs == tuple(int(i) for i in d["outputs"])
    assert graph.inputs == tuple(d["index"] for d in interpreter.get_input_details())
    assert graph.outputs == tuple(d["index"] for d in interpreter.get_output_details())


@needs_shared
@pytest.mark.parametrize("path", SHARED_MODELS)
def test_shared_model_constants_match_litert(path):
    graph = read_model(path)
    interpreter = litert(path)
    interpreter.allocate_tensors()
    for t in graph.tensors:
        if not t.is_constant:
            continue
        expected = interpreter.get_tensor(t.index)
        assert np.frombuffer(t.data, dtype=expected.dtype).tobytes() == expected.tobytes(), t.name


@needs_shared
def test_shared_models_match_models_table():
    rows = shared_model_table()
    assert len(rows) == len(SHARED_MODELS)
    for row in rows:
        graph = read_model(MODELS_DIR / row["file"])
        assert len(graph.operators) == parse_int(row["ops"]), row["file"]
        assert sorted({op.opcode for op in graph.operators}) == sorted(row["op types"].split(", ")), row["file"]

        def signature(indices, graph=graph):
            return ";".join(f"{graph.tensors[i].dtype}{list(graph.tensors[i].shape)}" for i in indices)

        assert signature(graph.inputs) == row["inputs"], row["file"]
        assert signature(graph.outputs) == row["outputs"], row["file"]


@needs_shared
def test_rank1_bias_with_filter_axis_is_read_along_its_only_dimension():
    # person_detect stores depthwise biases with quantized_dimension 3.
    graph = read_model(MODELS_DIR / "tflite-micro" / "person_detect.tflite")
    biases = [t for t in graph.tensors if len(t.shape) == 1 and t.quantization and t.quantization.per_channel]
    assert biases and all(t.quantization.axis == 0 for t in biases)
    assert any("quantized_dimension" in note for note in graph.notes)


# -- options -----------------------------------------------------------------------


def test_options_names_are_schema_snake_case():
    assert [f.name for f in option_fields("Conv2DOptions")][:6] == [
        "padding",
        "stride_w",
        "stride_h",
        "fused_activation_function",
        "dilation_w_factor",
        "dilation_h_factor",
    ]
    assert "keep_num_dims" in {f.name for f in option_fields("FullyConnectedOptions")}
    assert {"begin_mask", "shrink_axis_mask"} <= {f.name for f in option_fields("StridedSliceOptions")}
    assert options_table_for("MAX_POOL_2D") == "Pool2DOptions"
    assert options_table_for("DEPTHWISE_CONV_2D") == "DepthwiseConv2DOptions"
    assert options_table_for("RELU") is None


def _random_value(rng, table, field):
    enum = enum_for(table, field.name)
    if enum is not None:
        names = sorted(k for k in vars(enum) if not k.startswith("_"))
        pick = lambda: names[rng.integers(len(names))]  # noqa: E731
    elif field.number_type == "Bool":
        pick = lambda: bool(rng.integers(2))  # noqa: E731
    elif field.number_type and field.number_type.startswith("Float"):
        pick = lambda: float(np.float32(rng.normal() * 10))  # noqa: E731
    elif field.number_type and field.number_type.startswith("Uint"):
        pick = lambda: int(rng.integers(0, 200))  # noqa: E731
    else:
        pick = lambda: int(rng.integers(-100, 100))  # noqa: E731
    if field.kind == "vector":
        return tuple(pick() for _ in range(rng.integers(0, 5)))
    if field.kind == "string":
        return f"name{rng.integers(1000)}"
    return pick()


def test_every_options_table_round_trips():
    """For every options table of the schema, random values for every field
    read back as written: the generic converters of reader and builder agree."""
    from mcu_planner.frontend.reader import OPTIONS_UNION_MEMBERS

    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    x = mb.add_tensor((1,), "int8")
    written = {}
    for table in sorted(OPTIONS_UNION_MEMBERS):
        fields = [f for f in option_fields(table) if f.kind != "table"]
        if any("subgraph" in f.name for f in fields):
            continue  # control flow: refused by the reader, tested below
        options = {f.name: _random_value(rng, table, f) for f in fields}
        written[len(mb.ops)] = options
        mb.add_op("ADD", (x,), (x,), options, options_table=table)
    mb.set_io([x], [x])
    graph = read_model(mb.build())
    assert len(written) > 100
    for index, options in written.items():
        assert graph.operators[index].options == options


def test_builder_options_round_trip_on_runnable_models():
    model = single_op_model(
        "conv2d",
        (1, 9, 9, 2),
        filters=3,
        kernel=(3, 2),
        strides=(2, 1),
        padding="VALID",
        activation="RELU6",
        dilation=(1, 2),
    )
    conv = read_model(model).operators[0]
    assert conv.opcode == "CONV_2D"
    assert {
        k: conv.options[k]
        for k in (
            "padding",
            "stride_h",
            "stride_w",
            "fused_activation_function",
            "dilation_h_factor",
            "dilation_w_factor",
        )
    } == {
        "padding": "VALID",
        "stride_h": 2,
        "stride_w": 1,
        "fused_activation_function": "RELU6",
        "dilation_h_factor": 1,
        "dilation_w_factor": 2,
    }
    leaky = read_model(single_op_model("leaky_relu", (1, 4), alpha=0.3)).operators[0]
    assert leaky.options["alpha"] == float(np.float32(0.3))
    sq = read_model(single_op_model("squeeze", (1, 1, 4), axes=(1,))).operators[0]
    assert sq.options == {"squeeze_dims": (1,)}


def test_opcodes_past_127_use_the_wide_builtin_code():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "float32")
    y = mb.add_tensor((1, 4), "float32")
    mb.add_op("GELU", (x,), (y,), {"approximate": True})
    mb.set_io([x], [y])
    op = read_model(mb.build()).operators[0]
    assert BUILTIN_CODES["GELU"] > 127
    assert (op.opcode, op.options) == ("GELU", {"approximate": True})


def test_custom_op_keeps_its_code_and_version():
    mb = ModelBuilder()
    x = mb.add_tensor((4,), "int8")
    y = mb.add_tensor((4,), "int8")
    mb.add_op("CUSTOM", (x, -1), (y,), custom_code="MyFancyOp", version=3)
    mb.set_io([x], [y])
    op = read_model(mb.build()).operators[0]
    assert (op.opcode, op.custom_code, op.version, op.inputs) == ("CUSTOM", "MyFancyOp", 3, (x, -1))


# -- tensors -------------------------------------------------------------------------


def test_example_model_tensors():
    graph = read_model(tiny_kws_int8())
    assert graph.description.startswith("tiny_kws_int8")
    conv_weights = graph.tensors[graph.operators[0].inputs[1]]
    assert conv_weights.dtype == "int8" and conv_weights.is_constant
    assert conv_weights.quantization.per_channel and conv_weights.quantization.axis == 0
    assert len(conv_weights.quantization.scales) == conv_weights.shape[0]
    depthwise_weights = graph.tensors[graph.operators[1].inputs[1]]
    assert depthwise_weights.quantization.axis == 3
    for t in graph.tensors:
        if t.is_constant:
            assert len(t.data) == t.nbytes


def test_external_buffers_read_like_inline_ones():
    mb = _conv_builder()
    inline, external = read_model(mb.build()), read_model(mb.build(external_buffers=True))
    assert inline.tensors == external.tensors
    assert sum(t.is_constant for t in external.tensors) == 2


def test_external_buffer_past_end_of_file():
    model = _conv_builder().build(external_buffers=True)
    with pytest.raises(InputError, match="past the end of the file"):
        read_model(model[:-20], label="cut.tflite")


def test_offline_memory_allocation_metadata():
    mb = _conv_builder()
    offsets = [0, -1, -1, 64]
    mb.set_offline_offsets(offsets)
    graph = read_model(mb.build())
    assert graph.offline_offsets == tuple(offsets)
    assert read_model(_conv_builder().build()).offline_offsets is None


def test_offline_metadata_too_short():
    mb = _conv_builder()
    mb.add_metadata("OfflineMemoryAllocation", np.array([1, 1, 4, 0, 0], dtype="<i4").tobytes())
    with pytest.raises(InputError, match="OfflineMemoryAllocation"):
        read_model(mb.build())


def test_dynamic_batch_is_planned_as_one_with_one_note():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 8), "int8", (0.1, 0), shape_signature=(-1, 8), name="x")
    y = mb.add_tensor((1, 8), "int8", (0.1, 0), shape_signature=(-1, 8), name="y")
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    graph = read_model(mb.build())
    assert graph.tensors[x].shape == (1, 8) and graph.tensors[y].shape == (1, 8)
    assert graph.notes == ("input batch dimension is dynamic (-1); planned as 1",)


def test_dynamic_inner_dimension_with_a_concrete_shape_is_planned_with_one_note():
    """A time-major export: shape_signature leaves dimension 1 open, the
    shape holds the size the interpreter allocates; that size is planned and
    one note (naming the first such tensor) says so."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 8, 4), "int8", (0.1, 0), shape_signature=(1, -1, 4), name="frames")
    y = mb.add_tensor((1, 8, 4), "int8", (0.1, 0), shape_signature=(-1, -1, 4), name="y")
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    graph = read_model(mb.build(), label="dyn.tflite")
    assert graph.tensors[x].shape == (1, 8, 4) and graph.tensors[y].shape == (1, 8, 4)
    inner = [n for n in graph.notes if n.startswith(DYNAMIC_INNER_NOTE)]
    assert len(inner) == 1 and "frames" in inner[0]
    assert "input batch dimension is dynamic (-1); planned as 1" in graph.notes


def test_dynamic_inner_dimension_runs_bit_exact():
    mb = ModelBuilder()
    x = mb.add_tensor((1, 6, 3), "int8", (0.05, 3), shape_signature=(-1, -1, 3))
    y = mb.add_tensor((1, 6, 3), "int8", (0.04, -2), shape_signature=(-1, -1, 3))
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    report = check_model(mb.build(), inputs=3)
    assert report.passed and any(n.startswith(DYNAMIC_INNER_NOTE) for n in report.notes)


def test_inner_dimension_unknown_in_the_shape_too_is_an_input_error():
    mb = ModelBuilder()
    x = mb.add_tensor((1, -1), "int8", (0.1, 0), shape_signature=(1, -1), name="frames")
    y = mb.add_tensor((1, 8), "int8", (0.1, 0))
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    with pytest.raises(InputError, match=r"tensor 0 \(frames\) has dimension 1 unknown \(-1\)"):
        read_model(mb.build(), label="dyn.tflite")


def test_unknown_dtype_only_matters_when_used():
    mb = ModelBuilder()
    x = mb.add_tensor((4,), "int8")
    y = mb.add_tensor((4,), "int8")
    mb.add_tensor((2,), "string", name="label_names", data=b"\0" * 16)
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    assert read_model(mb.build()).tensors[x].dtype == "int8"

    mb.add_op("RELU", (2,), (y,))
    with pytest.raises(UnsupportedModel) as caught:
        read_model(mb.build())
    assert caught.value.exit_code == 4
    lines = str(caught.value).splitlines()
    assert "unsupported tensor type string" in lines[0]
    assert "  RELU string->int8: 1 op" in lines and "  tensor type string: 1 tensor" in lines


def test_a_tensor_name_with_line_breaks_gives_a_one_line_error():
    mb = ModelBuilder()
    x = mb.add_tensor((4,), "int8")
    w = mb.add_tensor((4,), "int32", data=b"\1" * 12, name="bad\nname\r")
    y = mb.add_tensor((4,), "int8")
    mb.add_op("ADD", (x, w), (y,))
    mb.set_io([x], [y])
    with pytest.raises(InputError) as error:
        read_model(mb.build(), label="names.tflite")
    assert str(error.value) == "names.tflite: tensor 1 (bad?name?): constant data has 12 bytes but int32[4] needs 16"


def test_constant_data_of_wrong_length():
    mb = ModelBuilder()
    x = mb.add_tensor((4,), "int8")
    w = mb.add_tensor((4,), "int32", data=b"\1" * 12, name="w")
    y = mb.add_tensor((4,), "int8")
    mb.add_op("ADD", (x, w), (y,))
    mb.set_io([x], [y])
    with pytest.raises(InputError, match=r"tensor 1 \(w\): constant data has 12 bytes but int32\[4\] needs 16"):
        read_model(mb.build())


def test_operator_tensor_index_out_of_range():
    mb = ModelBuilder()
    x = mb.add_tensor((4,), "int8")
    mb.add_op("RELU", (x,), (5,))
    mb.set_io([x], [x])
    with pytest.raises(InputError, match="operator 0: output tensor index 5 out of range"):
        read_model(mb.build())


def test_per_channel_scales_must_match_their_dimension():
    mb = ModelBuilder()
    w = mb.add_tensor((4, 3), "int8", Quantization((0.1, 0.2, 0.3), (0, 0, 0), 0), data=bytes(12))
    y = mb.add_tensor((4, 3), "int8")
    mb.add_op("RELU", (w,), (y,))
    mb.set_io([], [y])
    with pytest.raises(InputError, match="3 per-channel scales do not match dimension 0"):
        read_model(mb.build())


def test_control_flow_is_unsupported():
    mb = ModelBuilder()
    x = mb.add_tensor((1,), "int32")
    mb.add_op("CALL", (x,), (x,), {"subgraph": 1})
    mb.set_io([x], [x])
    mb.extra_subgraphs = 2
    with pytest.raises(UnsupportedModel, match=r"control flow \(CALL\) with 3 subgraphs is not supported"):
        read_model(mb.build(), label="loop.tflite")


def test_unreachable_subgraphs_are_ignored():
    mb = _conv_builder()
    mb.extra_subgraphs = 2
    assert len(read_model(mb.build()).operators) == 1


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_model(tmp_path / "absent.tflite")
    with pytest.raises(InputError, match="is a directory"):
        read_model(tmp_path)


def _conv_builder() -> ModelBuilder:
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4, 4, 2), "int8", (0.05, -3))
    w = mb.add_tensor(
        (3, 1, 1, 2),
        "int8",
        Quantization((0.01, 0.02, 0.03), (0, 0, 0), 0),
        data=np.arange(6, dtype=np.int8).reshape(3, 1, 1, 2),
    )
    b = mb.add_tensor((3,), "int32", Quantization((0.0005, 0.001, 0.0015), (0, 0, 0), 0), data=np.array([1, -2, 3]))
    y = mb.add_tensor((1, 4, 4, 3), "int8", (0.1, 4))
    mb.add_op("CONV_2D", (x, w, b), (y,), {"padding": "SAME", "stride_w": 1, "stride_h": 1})
    mb.set_io([x], [y])
    return mb


def test_conv_builder_model_matches_litert():
    from mcu_planner_testing.builder import check_runs

    model = _conv_builder().build()
    graph = read_model(model)
    interpreter = litert(model)
    for d in interpreter.get_tensor_details():
        assert graph.tensors[d["index"]].shape == tuple(d["shape"])
    assert check_runs(model)[0].shape == (1, 4, 4, 3)
    assert tflite.Model.ModelBufferHasIdentifier(model, 0)
