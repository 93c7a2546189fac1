"""The Python<->C parameter contract: every lowering's params dict names
exactly the fields of the C struct its kernel takes (declared once, in
firmware/runtime/*.h), with values that fit their C types; a lowering that
forgets or adds a field is an error at generation time, not a silent 0."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import model_param, needs_shared, supported_shared_model_paths
from kernel_models import Branches

from mcu_planner import cli
from mcu_planner.emit.codegen import lower_all
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering import LOWERINGS, CArray, KernelCall, load_all
from mcu_planner.lowering.control_flow import op_calls
from mcu_planner.lowering.runtime_contract import (
    CField,
    ContractError,
    check_call,
    field_problem,
    parse_header,
    runtime_declarations,
)
from mcu_planner_testing.builder import FloatNet, Int8Net, Int16x8Net, Uint8Net, int8_quant

# -- the parser ---------------------------------------------------------------------

HEADER = r"""
/* A header in the subset: comments, field-list macros, pointers, arrays. */
#ifndef X_H
#define X_H
#include "mcu_runtime.h"
#define X_RANK (4)
#define X_SHAPE_FIELDS   \
    int32_t rank; /* a comment \
    over two lines */    \
    const int32_t *dims;
typedef struct {
    X_SHAPE_FIELDS
    int8_t zero_point; // line comment
    float scale;
    double wide;
    uint32_t perm[X_RANK];
} x_params;
void x_kernel(const x_params *p, const int8_t *input,
              int8_t *output);
static inline int32_t x_helper(int32_t a) { return a; }
#endif
"""


def test_parser_reads_fields_in_declaration_order():
    (parsed,), (function,) = parse_header(HEADER, "x.h")
    assert parsed.name == "x_params"
    assert [(f.name, f.c_type, f.pointer, f.length) for f in parsed.fields] == [
        ("rank", "int32_t", False, None),
        ("dims", "int32_t", True, None),
        ("zero_point", "int8_t", False, None),
        ("scale", "float", False, None),
        ("wide", "double", False, None),
        ("perm", "uint32_t", False, 4),
    ]
    assert (function.name, function.params_type, function.num_tensor_args) == ("x_kernel", "x_params", 2)


GROUPED_HEADER = r"""
typedef struct { int32_t n; } z_params;
typedef struct {
    const int8_t *input;
    const void *weights; /* may be NULL */
    int16_t *state;
    int8_t *output;
} z_tensors;
typedef struct { const int8_t *input; int32_t n; } z_mixed;
void z_kernel(const z_params *p, const z_tensors *t);
void z_not_grouped(const z_params *p, const z_mixed *m);
"""


def test_parser_reads_tensor_arguments_grouped_in_a_struct():
    """A kernel taking `const NAME *` of a struct of pointers after its
    params takes one tensor argument per field of it; a struct with any
    other field is one argument."""
    _, functions = parse_header(GROUPED_HEADER, "z.h")
    by_name = {f.name: f for f in functions}
    assert (by_name["z_kernel"].tensors_type, by_name["z_kernel"].num_tensor_args) == ("z_tensors", 4)
    assert (by_name["z_not_grouped"].tensors_type, by_name["z_not_grouped"].num_tensor_args) == (None, 1)


def test_grouped_kernels_are_called_with_a_struct_in_its_block():
    """The generated call passes the tensors in one struct, in the call's
    order, declared in a block of its own (so that the ops' structs share
    their stack)."""
    from mcu_planner.pipeline import generate_for_model
    from mcu_planner_testing.builder import lstm_model

    _, _, files = generate_for_model(lstm_model("int8", n_cell=4), name="m")
    source = files["m.c"].decode()
    assert "\n        const mcu_lstm_s8_tensors op0_tensors = { (const int8_t *)" in source
    assert "        mcu_lstm_s8(&op0_params, &op0_tensors);\n    }\n" in source
    assert runtime_declarations().functions["mcu_lstm_s8"].num_tensor_args == 27


@pytest.mark.parametrize(
    "declaration, complaint",
    [
        ("int a, b;", "cannot read field declaration"),
        ("long a;", "has type long"),
        ("int32_t *a;", "must point at const data"),
        ("int32_t a[N];", "no constant length"),
        ("int32_t n;", "field n is declared twice"),
    ],
)
def test_parser_marks_structs_outside_the_subset(declaration, complaint):
    """Kept with the reason, raised only when a lowering names the struct."""
    (parsed,), _ = parse_header(f"typedef struct {{ int32_t n; {declaration} }} y_params;", "y.h")
    assert parsed.problem is not None and complaint in parsed.problem


def test_parser_reads_pointers_to_opaque_structs():
    """A pointer to a struct only the runtime looks inside (`typedef struct
    T T;` in this header or another) names one of its objects by a macro of
    integer literals, or is NULL; a pointer to an undeclared type is not a
    params field."""
    header = "typedef struct w_loop w_loop; typedef struct { int32_t n; const w_loop *loop; } w_params;"
    (parsed,), _ = parse_header(header, "w.h")
    assert parsed.problem is None and parsed.fields[1] == CField("loop", "w_loop", pointer=True, opaque=True)
    field = parsed.fields[1]
    assert field_problem(field, "NULL") is None and field_problem(field, "W_LOOP(4, 0)") is None
    assert all(field_problem(field, bad) for bad in ("", "w_loop_4_0; x", "W_LOOP(a)", CArray("int32_t", (1,)), 0))
    (elsewhere,), _ = parse_header(header.split(";", 1)[1], "w.h", opaque=frozenset({"w_loop"}))
    assert elsewhere.problem is None
    (undeclared,), _ = parse_header(header.split(";", 1)[1], "w.h")
    assert "has type w_loop" in undeclared.problem


def test_parser_skips_structs_with_nested_braces():
    structs, _ = parse_header("typedef struct { struct { int32_t a; } inner; } z_params;", "z.h")
    assert structs == []


def _kernel_params_structs() -> set[str]:
    """The `*_params` structs some runtime function takes first (other
    structs, such as the plan checker's, are no kernel's parameters)."""
    declarations = runtime_declarations()
    taken = {f.params_type for f in declarations.functions.values()}
    return {name for name in declarations.structs if name in taken and name.endswith("_params")}


def test_every_struct_a_kernel_takes_parses():
    declarations = runtime_declarations()
    taken = _kernel_params_structs()
    assert taken, "no kernel prototype in firmware/runtime takes a params struct"
    assert [declarations.structs[name].problem for name in sorted(taken)] == [None] * len(taken)


# -- the check ----------------------------------------------------------------------


def _copy_call(**params) -> KernelCall:
    return KernelCall("mcu_copy", "mcu_copy_params", params, args=(0, 1), sources=("mcu_copy",))


@pytest.mark.parametrize(
    "call, complaint",
    [
        (_copy_call(), "mcu_copy_params field bytes is missing"),
        (_copy_call(bytes=4, size=4), "field size is not in mcu_copy_params"),
        (_copy_call(bytes=2**31), "2147483648 is outside int32_t"),
        (_copy_call(bytes=4.0), "float 4.0 for an integer int32_t"),
        (_copy_call(bytes=True), "bool True for an integer int32_t"),
        (_copy_call(bytes="4"), "str '4' for scalar int32_t bytes"),
        (_copy_call(bytes=CArray("int32_t", (4,))), "CArray"),
        (KernelCall("mcu_copy", "mcu_copy_params", {"bytes": 4}, args=(0,)), "declares 2 tensor arguments"),
        (KernelCall("mcu_copy", "mcu_pad_params", {}, args=(0, 1)), "declares it taking mcu_copy_params"),
        (KernelCall("mcu_nothing", "mcu_copy_params", {"bytes": 4}), "no firmware/runtime header declares"),
        (KernelCall("mcu_copy", "mcu_nothing_params", {}), "declared in no firmware/runtime header"),
    ],
)
def test_check_names_kernel_field_and_op(call, complaint):
    with pytest.raises(ContractError) as error:
        check_call(call, "op 7 RESHAPE")
    assert complaint in str(error.value)
    assert str(error.value).startswith(f"kernel {call.function} (op 7 RESHAPE): ")


def test_check_types_pointer_and_float_fields():
    def pad_params(**changes):
        params = dict(
            element_bytes=1,
            output_elements=4,
            input_dims=CArray("int32_t", (1, 1, 1, 1, 1, 2)),
            output_strides=CArray("int32_t", (4, 4, 4, 4, 4, 1)),
            output_origin=1,
            pad_value=CArray("uint8_t", (0,)),
        )
        params.update(changes)
        return KernelCall("mcu_pad", "mcu_pad_params", params, args=(0, 1))

    check_call(pad_params(), "op 0 PAD")
    check_call(pad_params(input_dims="NULL"), "op 0 PAD")
    for changes, complaint in [
        (dict(pad_value=CArray("int8_t", (0,))), "a CArray of int8_t for const uint8_t *pad_value"),
        (dict(pad_value=CArray("uint8_t", (256,))), "element 0: 256 is outside uint8_t"),
        (dict(input_dims=(1, 2)), "tuple (1, 2) for pointer"),
    ]:
        with pytest.raises(ContractError, match=re.escape(complaint)):
            check_call(pad_params(**changes), "op 0 PAD")

    relu = dict(size=4, act_min=0.0, act_max=6.0)
    check_call(KernelCall("mcu_relu_f32", "mcu_relu_f32_params", relu, args=(0, 1)), "op 0 RELU6")
    for changes, complaint in [
        (dict(act_max=6), "int 6 for a float"),
        (dict(act_max=0.1), "0.1 is not a float32 value"),
    ]:
        with pytest.raises(ContractError, match=re.escape(complaint)):
            check_call(KernelCall("mcu_relu_f32", "mcu_relu_f32_params", {**relu, **changes}, args=(0, 1)), "op")


# -- every lowering against its struct -------------------------------------------------


def _int8_models() -> dict[str, bytes]:
    """One builder-built int8 model per Int8Net layer (and the variants that
    take other kernels or params)."""
    image, vector = (1, 6, 5, 3), (1, 12)
    layers = {
        "conv2d": ([image], dict(filters=4, strides=(2, 1))),
        "depthwise_conv2d": ([image], dict(depth_multiplier=2, activation="RELU6")),
        "fully_connected": ([vector], dict(units=5)),
        "average_pool2d": ([image], {}),
        "max_pool2d": ([image], dict(padding="SAME", activation="RELU")),
        "reshape": ([image], dict(shape=(1, 90))),
        "squeeze": ([(1, 1, 5, 3)], dict(axes=(1,))),
        "expand_dims": ([(1, 5, 3)], dict(axis=1)),
        "transpose": ([image], dict(perm=(0, 3, 1, 2))),
        "pad": ([image], dict(paddings=[(0, 0), (1, 1), (2, 0), (0, 0)])),
        "mean": ([image], dict(axes=(1, 2))),
        "strided_slice": ([image], dict(begin=(0, 1, 0, 0), end=(1, 5, 5, 3), strides=(1, 2, 1, 1))),
        "resize_nearest_neighbor": ([(1, 3, 2, 2)], dict(size=(6, 4))),
        "concatenation": ([image, image], dict(axis=3)),
        "add": ([image, (1, 1, 1, 3)], {}),
        "sub": ([image, image], dict(activation="RELU")),
        "mul": ([image, (1, 1, 5, 1)], {}),
        "softmax": ([vector], {}),
        "logistic": ([vector], {}),
        "tanh": ([vector], {}),
        "relu": ([vector], {}),
        "relu6": ([vector], {}),
        "leaky_relu": ([vector], {}),
        "hard_swish": ([vector], {}),
        "quantize": ([vector], dict(low=-2.0, high=0.5)),
        "dequantize": ([vector], {}),
    }
    models = {}
    for layer, (shapes, kwargs) in layers.items():
        net = Int8Net(seed=len(models))
        xs = [net.input(shape) for shape in shapes]
        models[f"int8_{layer}"] = net.build(getattr(net, layer)(*xs, **kwargs))
    # CONCATENATION of differently quantized inputs (requantizing kernel),
    # RELU_N1_TO_1 and PADV2, which Int8Net does not write.
    net = Int8Net(seed=100)
    a, b = net.input(image, -1.0, 1.0), net.input(image, -3.0, 2.0)
    y = net.mb.add_tensor((1, 6, 5, 6), "int8", int8_quant(-2.0, 2.0))
    net.mb.add_op("CONCATENATION", (a, b), (y,), {"axis": 3, "fused_activation_function": "NONE"})
    clipped = net.mb.add_tensor(image, "int8", int8_quant(-1.0, 1.0))
    net.mb.add_op("RELU_N1_TO_1", (b,), (clipped,))
    paddings = net.mb.add_tensor((4, 2), "int32", data=np.array([[0, 0], [1, 0], [0, 2], [0, 0]], np.int32))
    pad_value = net.mb.add_tensor((), "int8", net.quant(a), data=np.array(5, np.int8))
    padded = net.mb.add_tensor((1, 7, 7, 3), "int8", net.quant(a))
    net.mb.add_op("PADV2", (a, paddings, pad_value), (padded,))
    models["int8_requantizing_concat_relu_n1_to_1_padv2"] = net.build(y, clipped, padded)
    # The pieces ops, each on a graph input (so they run as kernels, not aliases).
    net = Int8Net(seed=101)
    x = net.input((2, 6, 4))
    pieces = [
        *net.split(x, 2, axis=-1),
        *net.split_v(net.input((2, 5)), [2, -1], axis=1),
        *net.unpack(net.input((2, 3)), axis=1),
        net.slice(net.input((3, 4)), [1, 0], [2, 3]),
        net.gather(net.input((5, 2)), [3, 0], axis=0),
        net.pack(x, x, axis=1),
    ]
    models["int8_split_unpack_slice_gather_pack"] = net.build(*pieces)
    return models


def _float_models() -> dict[str, bytes]:
    """Every float32 kernel in one FloatNet: each op reads the graph input or
    a tensor of the right shape."""
    net = FloatNet(seed=1)
    x = net.input((1, 6, 5, 3))
    none = {"fused_activation_function": "NONE"}
    window = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
    outputs = [
        net.op("CONV_2D", (x, net.const((4, 3, 3, 3)), net.const((4,))), (1, 6, 5, 4), window),
        net.op(
            "DEPTHWISE_CONV_2D",
            (x, net.const((1, 3, 3, 3)), net.const((3,))),
            (1, 6, 5, 3),
            {**window, "depth_multiplier": 1},
        ),
        net.op("AVERAGE_POOL_2D", (x,), (1, 6, 5, 3), {**window, "filter_height": 2, "filter_width": 2}),
        net.op("MAX_POOL_2D", (x,), (1, 6, 5, 3), {**window, "filter_height": 2, "filter_width": 2}),
        net.op("ADD", (x, x), (1, 6, 5, 3), none),
        net.op("SUB", (x, net.const((1, 1, 1, 3))), (1, 6, 5, 3), none),
        net.op("MUL", (x, x), (1, 6, 5, 3), none),
        net.op("MEAN", (x, net.int32_const([1, 2])), (1, 1, 1, 3), {"keep_dims": True}),
        net.op("TRANSPOSE", (x, net.int32_const([0, 3, 1, 2])), (1, 3, 6, 5)),
        net.op("PAD", (x, net.int32_const([[0, 0], [1, 1], [0, 0], [0, 0]])), (1, 8, 5, 3)),
        net.op("CONCATENATION", (x, x), (1, 6, 5, 6), {"axis": 3, "fused_activation_function": "NONE"}),
        net.op("RESHAPE", (x, net.int32_const([1, 90])), (1, 90), {"new_shape": [1, 90]}),
    ]
    flat = outputs[-1]
    outputs.append(net.op("FULLY_CONNECTED", (flat, net.const((4, 90)), net.const((4,))), (1, 4), none))
    outputs.append(net.op("SOFTMAX", (flat,), (1, 90), {"beta": 1.0}))
    for opcode, options in [
        ("RELU", None),
        ("RELU6", None),
        ("RELU_N1_TO_1", None),
        ("LEAKY_RELU", {"alpha": 0.25}),
        ("HARD_SWISH", None),
    ]:
        outputs.append(net.op(opcode, (flat,), (1, 90), options))
    quantized = net.mb.add_tensor((1, 90), "int8", int8_quant(-1.0, 1.0))
    net.mb.add_op("QUANTIZE", (flat,), (quantized,))
    outputs.append(quantized)
    return {"float32_kernels": net.build(*outputs)}


def _uint8_models() -> dict[str, bytes]:
    """Every uint8 kernel in one Uint8Net, the RESIZE_BILINEAR / ARG_MAX /
    ARG_MIN kernels of the other types, and the hybrid FULLY_CONNECTED."""
    net = Uint8Net(seed=5)
    x = net.input((1, 6, 5, 3))
    y = net.conv2d(x, 4, kernel=(3, 3), activation="RELU")
    z = net.depthwise_conv2d(y)
    flat = net.reshape(z, (1, 120))
    f = net.fully_connected(flat, 6)
    outputs = [
        net.average_pool2d(y),
        net.max_pool2d(y),
        net.add(y, z),
        net.mul(y, z),
        net.concatenation(y, x, axis=3),
        net.softmax(f),
        net.logistic(f),
        net.relu(f),
        net.resize_bilinear(y, (9, 7)),
        net.arg_max(y, 3, "int64"),
        net.arg_min(y, 1),
    ]
    models = {"uint8_kernels": net.build(*outputs)}
    net = Int8Net(seed=6)
    x = net.input((1, 6, 5, 3))
    models["int8_resize_bilinear_arg_max"] = net.build(net.resize_bilinear(x, (4, 9)), net.arg_max(x, 2))
    net = FloatNet(seed=7)
    x = net.input((1, 6, 5, 3))
    resized = net.op("RESIZE_BILINEAR", (x, net.int32_const([3, 8])), (1, 3, 8, 3), {"half_pixel_centers": True})
    arg = net.mb.add_tensor((1, 6, 5), "int32")
    net.mb.add_op("ARG_MIN", (x, net.int32_const([3])), (arg,), {"output_type": "INT32"})
    models["float32_resize_bilinear_arg_min"] = net.build(resized, arg)
    net = Int8Net(seed=8)
    x = net.float_input((2, 12))
    image = net.float_input((1, 4, 4, 2))
    models["hybrid_fully_connected_conv"] = net.build(
        net.hybrid_fully_connected(x, 5, asymmetric_quantize_inputs=True),
        net.hybrid_conv2d(image, 3),
        net.hybrid_depthwise_conv2d(image),
    )
    return models


def _int16x8_models() -> dict[str, bytes]:
    """The 16x8 kernels and TRANSPOSE_CONV (int8, 16x8, float32)."""
    net = Int16x8Net(seed=7)
    x = net.input((1, 6, 5, 3), -1.0, 1.0)
    outputs = [
        net.conv2d(x, 4, activation="RELU"),
        net.depthwise_conv2d(x, depth_multiplier=2),
        net.transpose_conv(x, 2, use_bias=False),
        net.add(x, x),
        net.sub(x, net.input((3,), -2.0, 2.0)),
        net.leaky_relu(x, 0.3),
        net.fully_connected(net.reshape(x, (1, 90)), 3),
        net.mul(x, x),
        net.relu6(x),
        net.average_pool2d(x),
        net.max_pool2d(x),
        net.mean(x, (1, 2)),
        net.logistic(x),
        net.tanh(x),
    ]
    net.bias_dtype = "int32"
    outputs.append(net.conv2d(x, 2))
    a = net.mb.add_tensor((8,), "int16", (2.0**-10, 0))
    b = net.mb.add_tensor((8,), "int16", (2.0**-12, 0))
    net.inputs += [a, b]
    for opcode in ("ADD", "SUB"):
        y = net.mb.add_tensor((8,), "int16", (2.0**-10, 0))
        net.mb.add_op(opcode, (a, b), (y,), {"pot_scale_int16": True, "fused_activation_function": "NONE"})
        outputs.append(y)
    wide = net.mb.add_tensor((8,), "int32", (2.0**-20, 0))
    net.inputs.append(wide)
    outputs.append(net.quantize(wide, -1.0, 1.0))
    models = {"int16x8_kernels": net.build(*outputs)}

    net = Int8Net(seed=8)
    models["int8_transpose_conv"] = net.build(net.transpose_conv(net.input((1, 3, 3, 2)), 3, padding="VALID"))

    floats = FloatNet(seed=9)
    x = floats.input((1, 3, 3, 2))
    y = floats.op(
        "TRANSPOSE_CONV",
        (floats.int32_const([1, 6, 6, 4]), floats.const((4, 3, 3, 2)), x, floats.const((4,))),
        (1, 6, 6, 4),
        {"padding": "SAME", "stride_h": 2, "stride_w": 2, "fused_activation_function": "NONE"},
    )
    models["float32_transpose_conv"] = floats.build(y)
    return models


def _calls(model: bytes) -> list[tuple[str, KernelCall]]:
    graph = read_model(model)
    calls = lower_all(graph)
    # An IF's or WHILE's calls are those of its subgraphs' ops (and copies).
    return [
        (f"op {i} {graph.operators[i].opcode} ({inner_op.opcode})", inner)
        for i, call in sorted(calls.items())
        for inner_op, inner in op_calls(graph.operators[i], call)
    ]


def _math_models() -> dict[str, bytes]:
    """The float math operators (mcu_math.c, reductions, rearrangements)."""
    from test_kernels_math import every_math_op_model

    model = Branches("int8 prelu")
    q = (0.05, 3)
    x = model.input((1, 4, 4, 3), "int8", q)
    alpha = model.constant(np.arange(-1, 2, dtype=np.int8), "int8", (0.01, 0))
    model.op("PRELU", (x, alpha), (1, 4, 4, 3), "int8", q)
    y = model.input((1, 4, 4, 3), "int8", (0.04, -2))
    model.op("SQUARED_DIFFERENCE", (x, y), (1, 4, 4, 3), "int8", (0.5, -128))
    model.op("BATCH_MATMUL", (x, y), (1, 4, 4, 4), "int8", (0.1, 0), {"adj_x": False, "adj_y": True})
    model.op("L2_NORMALIZATION", (y,), (1, 4, 4, 3), "int8", (1 / 128, 0))
    model.op("DIV", (x, y), (1, 4, 4, 3), "int8", (0.3, 1), {"fused_activation_function": "NONE"})
    return {"float32_math": every_math_op_model(), "int8_math": model.build()}


def _svdf_models() -> dict[str, bytes]:
    """SVDF, float32 and int8 (mcu_svdf_f32 / mcu_svdf_s8)."""
    from test_kernels_svdf import _svdf_branch

    rng = np.random.default_rng(3)
    model = Branches("SVDF kernels")
    _svdf_branch(model, rng, 1, 8, 4, 2, 3, True, "float32", "RELU")
    _svdf_branch(model, rng, 2, 8, 4, 1, 3, True, "int8", "RELU")
    return {"svdf_kernels": model.build()}


def _int16_softmax_models() -> dict[str, bytes]:
    """SOFTMAX int8 -> int16 and int16 -> int16 (lookup tables)."""
    model = Branches("int16 softmax kernels")
    x8 = model.input((2, 5), "int8", (0.05, 3))
    model.op("SOFTMAX", (x8,), (2, 5), "int16", (1.0 / 65536, -32768), {"beta": 1.0})
    x16 = model.input((2, 5), "int16", (0.001, 0))
    model.op("SOFTMAX", (x16,), (2, 5), "int16", (1.0 / 32768, 0), {"beta": 1.0})
    return {"int16_softmax_kernels": model.build()}


def _lstm_models() -> dict[str, bytes]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM, int8 with every optional part and float32
    (mcu_lstm_s8 / mcu_lstm_f32)."""
    from mcu_planner_testing.builder import lstm_model

    full = dict(n_cell=4, n_output=3, projection=True, projection_bias=True, peephole=True, layer_norm=True)
    return {"lstm_int8": lstm_model("int8", **full), "lstm_float32": lstm_model("float32", **full)}


def _resource_variable_models() -> dict[str, bytes]:
    """READ_VARIABLE and ASSIGN_VARIABLE (mcu_copy to and from the state region)."""
    from mcu_planner_testing.builder import streaming_int8_model

    return {"resource_variables": streaming_int8_model()}


def _control_flow_models() -> dict[str, bytes]:
    """IF and WHILE (lowering/control_flow.py)."""
    from mcu_planner_testing.builder import if_model, while_model

    return {"if": if_model("int8"), "while": while_model("float32")}


def _index_math_models() -> dict[str, bytes]:
    """The ops of issue 21: CAST, GATHER_ND, int32 arithmetic, comparisons,
    SELECT(_V2), float unary ops, LOGICAL_*, ZEROS_LIKE, TILE, BROADCAST_TO."""
    from test_kernels_comparisons import comparisons_model, select_model
    from test_kernels_index_math import cast_model, gather_nd_model, int32_arithmetic_model
    from test_kernels_more_builtins import (
        cumsum_l2_pool_model,
        float_unary_model,
        rearrangements_model,
        space_batch_model,
    )
    from test_kernels_tflm_variants import broadcast_args_model, dynamic_update_slice_model, int16_model

    return {
        "float_unary": float_unary_model(("CEIL", "FLOOR", "ROUND", "COS", "SIN", "ELU")).build(),
        "rearrangements": rearrangements_model().build(),
        "space_batch": space_batch_model().build(),
        "cumsum_l2_pool": cumsum_l2_pool_model().build(),
        "comparisons": comparisons_model().build(),
        "select": select_model().build(),
        "cast": cast_model().build(),
        "int32_arithmetic": int32_arithmetic_model().build(),
        "gather_nd": gather_nd_model()[0],
        "dynamic_update_slice": dynamic_update_slice_model().build(),
        "int16_maximum_minimum_abs": int16_model().build(),
        "broadcast_args": broadcast_args_model().build(),
    }


BUILT_MODELS = {
    **_index_math_models(),
    **_int8_models(),
    **_float_models(),
    **_svdf_models(),
    **_int16_softmax_models(),
    **_lstm_models(),
    **_uint8_models(),
    **_int16x8_models(),
    **_math_models(),
    **_resource_variable_models(),
    **_control_flow_models(),
}


@pytest.mark.parametrize("name", sorted(BUILT_MODELS))
def test_builder_models_lower_to_params_their_structs_declare(name):
    calls = _calls(BUILT_MODELS[name])
    assert calls
    for op_label, call in calls:
        check_call(call, op_label)


def _grid_copy_calls() -> list[KernelCall]:
    """The window copies codegen adds around a stage run in a grid of patches (patches.py)."""
    from mcu_planner.memory.patches import candidate_stages, make_stage, window_copy_calls, with_stage

    net = Int8Net(2)
    x = net.input((1, 9, 7, 3))
    x = net.conv2d(x, 4, (3, 3), (1, 1), "SAME", "RELU")
    graph = read_model(net.build(net.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", "NONE")))
    from mcu_planner.lowering.program import lower_program

    program = lower_program(graph)
    patched = with_stage(program, make_stage(program, candidate_stages(program)[0], 2, 2))
    assert patched.patch_stage is not None and patched.patch_stage.cols > 1
    return [c for gather in (True, False) for c in window_copy_calls(patched.graph, patched.patch_stage, gather)]


def test_grid_window_copies_give_params_their_struct_declares():
    for call in _grid_copy_calls():
        check_call(call, "grid window copy")


def test_builder_models_walk_every_lowered_opcode_and_params_struct():
    walked = [call for model in BUILT_MODELS.values() for _, call in _calls(model)] + _grid_copy_calls()
    opcodes = {
        read_model(model).operators[i].opcode for model in BUILT_MODELS.values() for i in lower_all(read_model(model))
    }
    missing = sorted(set(load_all()) - opcodes)
    assert not missing, f"add a builder model with {missing} to BUILT_MODELS in tests/test_params_contract.py"
    # Every struct some lowering can produce is one the walk saw (a struct
    # only a rare variant takes would otherwise go unchecked here).
    taken = _kernel_params_structs()
    unwalked = sorted(taken - {call.params_type for call in walked})
    assert not unwalked, f"no builder model lowers to {unwalked}: add one to BUILT_MODELS"
    assert set(LOWERINGS) == set(load_all())


@needs_shared
@pytest.mark.parametrize("path", [model_param(p) for p in supported_shared_model_paths()])
def test_shared_models_lower_to_params_their_structs_declare(path):
    for op_label, call in _calls(path.read_bytes()):
        check_call(call, op_label)


# -- a forgotten field is an error at generation time ----------------------------------


def test_softmax_without_diff_min_is_an_error_at_generation_time(monkeypatch, tmp_path, capsys):
    """The case C hides: a designated initializer without .diff_min compiles
    under -Wall -Wextra -Werror -pedantic and runs with diff_min = 0."""
    lower_softmax = load_all()["SOFTMAX"]

    def without_diff_min(op, graph):
        call = lower_softmax(op, graph)
        params = {k: v for k, v in call.params.items() if k != "diff_min"}
        return KernelCall(call.function, call.params_type, params, call.args, call.sources)

    monkeypatch.setitem(LOWERINGS, "SOFTMAX", without_diff_min)
    net = Int8Net(seed=3)
    model = tmp_path / "softmax.tflite"
    model.write_bytes(net.build(net.softmax(net.fully_connected(net.input((1, 8)), 4))))
    outdir = tmp_path / "out"
    code = cli.main([str(model), "--ram", "64K", "-o", str(outdir)])
    err = capsys.readouterr().err
    print(err)
    assert code == 1
    assert err.strip().splitlines() == [
        "mcu-plan: error: kernel mcu_softmax_s8 (op 1 SOFTMAX): mcu_softmax_s8_params field diff_min "
        "is missing from the lowering's params"
    ]
    assert not outdir.exists()
