"""Resource variables and CALL_ONCE as the reader resolves them
(mcu_planner/frontend/resource_variables.py): one variable tensor per (container,
shared_name), initial values from the init subgraph run at generation time,
reads and writes kept in order; and the models it refuses, in one line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED

from mcu_planner.errors import UnsupportedModel
from mcu_planner.frontend.reader import read_model
from mcu_planner.pipeline import PlanOptions, analyse_model
from mcu_planner_testing.builder import ModelBuilder, streaming_int8_model

MICROWAKEWORD = SHARED / "peer-tests" / "microwakeword"
needs_microwakeword = pytest.mark.skipif(
    not (MICROWAKEWORD / "hey_jarvis.tflite").is_file(),
    reason=f"../shared/peer-tests/microwakeword is absent (looked for {MICROWAKEWORD})",
)


def _variable_ops(graph) -> dict[int, list[str]]:
    """Variable tensor -> opcodes of the ops reading or writing it, in run order."""
    ops: dict[int, list[str]] = {}
    for op in graph.operators:
        for t in dict.fromkeys(op.inputs + op.outputs):
            if t >= 0 and graph.tensors[t].is_variable:
                ops.setdefault(t, []).append(op.opcode)
    return ops


def test_builder_streaming_model_reads_as_variable_tensors():
    """CALL_ONCE and VAR_HANDLE leave the graph; each shared name is one
    variable tensor holding what the init subgraph assigns; both handles of
    "stream/ring" name the same one."""
    model = streaming_int8_model()
    graph = read_model(model)
    opcodes = [op.opcode for op in graph.operators]
    assert "CALL_ONCE" not in opcodes and "VAR_HANDLE" not in opcodes
    variables = {graph.tensors[t].name: graph.tensors[t] for t in _variable_ops(graph)}
    assert set(variables) == {"stream/ring", "stream/acc"}
    ring, acc = variables["stream/ring"], variables["stream/acc"]
    assert (ring.shape, ring.dtype, acc.shape, acc.dtype) == ((1, 3, 1, 8), "int8", (1, 1, 1, 6), "int8")
    # The same seeded values the builder assigned in subgraph 1.
    rng = np.random.default_rng(0)
    expected_ring = rng.integers(-128, 128, (1, 3, 1, 8)).astype(np.int8).tobytes()
    assert ring.data == expected_ring
    assert acc.data is not None and len(acc.data) == 6
    # The ring buffer's STRIDED_SLICE writes straight into it; the accumulator's
    # ADD may run in place over its input, so its value is copied in.
    assert _variable_ops(graph)[ring.index] == ["READ_VARIABLE", "STRIDED_SLICE", "READ_VARIABLE"]
    assert _variable_ops(graph)[acc.index] == ["READ_VARIABLE", "ASSIGN_VARIABLE"]
    assert any("2 resource variables (30 B) kept as state" in note for note in graph.notes)


def test_memory_aware_order_keeps_each_variables_reads_and_writes_in_order():
    """Whatever order the planner picks, the ops on one variable run in the model's order."""
    model = streaming_int8_model()
    in_model_order = _variable_ops(read_model(model))
    analysed = analyse_model(model, PlanOptions(order="memory"))
    assert _variable_ops(analysed.graph) == in_model_order


def test_variable_state_is_counted_outside_the_arena():
    analysed = analyse_model(streaming_int8_model(), PlanOptions())
    lifetimes = analysed.lifetimes
    assert lifetimes.variable_bytes == 32 + 16  # 24 and 6 bytes, each rounded up to 16
    assert not set(lifetimes.variable_offsets) & set(lifetimes.placements)


def one_variable_model(init: str = "constant", with_init: bool = True, read_shape=(1, 4)) -> bytes:
    """v: int8 [1, 4] whose initial value is a constant, or computed from
    one (init "folded": a RESHAPE; "computed": a RELU, which is not folded)."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", (0.5, 0))
    if with_init:
        sub = mb.add_subgraph("init")
        if init == "constant":
            value = sub.add_tensor((1, 4), "int8", (0.5, 0), data=np.arange(4))
        else:
            source = sub.add_tensor((4,), "int8", (0.5, 0), data=np.arange(4))
            value = sub.add_tensor((1, 4), "int8", (0.5, 0))
            if init == "folded":
                shape = sub.add_tensor((2,), "int32", data=np.array([1, 4]))
                sub.add_op("RESHAPE", (source, shape), (value,))
            else:
                sub.add_op("RELU", (source,), (value,))
        sub.assign_variable(sub.var_handle("v"), value)
        mb.call_once(sub)
    handle = mb.var_handle("v")
    y = mb.read_variable(handle, read_shape, "int8", (0.5, 0))
    mb.assign_variable(handle, x)
    mb.set_io([x], [y])
    return mb.build()


@pytest.mark.parametrize("init", ["constant", "folded"])
def test_theone_variable_model_reads_its_initial_value(init):
    graph = read_model(one_variable_model(init))
    (variable,) = _variable_ops(graph)
    assert graph.tensors[variable].data == bytes([0, 1, 2, 3])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"init": "computed"}, r"CALL_ONCE init subgraph 1: RELU is not supported there"),
        ({"with_init": False}, r"op 1 \(READ_VARIABLE\) reads variable 'v' before anything assigns it"),
        ({"read_shape": (1, 2)}, r"uses variable 'v' as int8\[1, 2\], but it holds int8\[1, 4\]"),
    ],
    ids=["computed-init", "read-before-assign", "changing-shape"],
)
def test_variables_outside_what_is_supported_are_refused_in_one_line(kwargs, message):
    with pytest.raises(UnsupportedModel, match=message) as caught:
        read_model(one_variable_model(**kwargs), label="v.tflite")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("v.tflite: ")


def sliced_into_variable_model(read_between: bool) -> bytes:
    """v = x[:, 1:3], written by STRIDED_SLICE + ASSIGN_VARIABLE; with
    `read_between` the variable is read after the slice and before the assign."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", (0.5, 0))
    init = mb.add_subgraph("init")
    init.assign_variable(init.var_handle("v"), init.add_tensor((1, 2), "int8", (0.5, 0), data=np.array([[5, 6]])))
    mb.call_once(init)
    handle = mb.var_handle("v")
    before = mb.read_variable(handle, (1, 2), "int8", (0.5, 0))
    bounds = [mb.add_tensor((2,), "int32", data=np.array(v)) for v in ((0, 1), (1, 3), (1, 1))]
    value = mb.add_tensor((1, 2), "int8", (0.5, 0))
    mb.add_op("STRIDED_SLICE", (x, *bounds), (value,), {})
    outputs = [before]
    if read_between:
        outputs.append(mb.read_variable(handle, (1, 2), "int8", (0.5, 0)))
    mb.assign_variable(handle, value)
    mb.set_io([x], outputs)
    return mb.build()


def test_a_slice_writes_straight_into_its_variable_unless_the_variable_is_read_in_between():
    direct = read_model(sliced_into_variable_model(read_between=False))
    assert [op.opcode for op in direct.operators] == ["READ_VARIABLE", "STRIDED_SLICE"]
    (variable,) = _variable_ops(direct)
    assert direct.operators[1].outputs == (variable,)
    copied = read_model(sliced_into_variable_model(read_between=True))
    assert [op.opcode for op in copied.operators] == [
        "READ_VARIABLE",
        "STRIDED_SLICE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
    ]


def test_a_var_handle_without_its_output_is_a_bad_model():
    from mcu_planner.errors import InputError

    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", (0.5, 0))
    mb.add_op("VAR_HANDLE", (), (), {"shared_name": "v"})
    mb.add_op("RELU", (x,), (mb.add_tensor((1, 4), "int8", (0.5, 0)),))
    mb.set_io([x], [1])
    with pytest.raises(InputError, match=r"v.tflite: op 0 \(VAR_HANDLE\): has 0 outputs"):
        read_model(mb.build(), label="v.tflite")


def test_other_control_flow_stays_refused():
    mb = ModelBuilder()
    x = mb.add_tensor((1,), "int32")
    mb.add_op("CALL", (x,), (x,), {"subgraph": 1})
    mb.set_io([x], [x])
    mb.extra_subgraphs = 1
    with pytest.raises(UnsupportedModel, match=r"control flow \(CALL\) with 2 subgraphs is not supported"):
        read_model(mb.build())


@needs_microwakeword
@pytest.mark.parametrize(
    "stem, variables, state_bytes", [("hey_jarvis", 6, 2840), ("vad", 4, 1120)], ids=["hey_jarvis", "vad"]
)
def test_microwakeword_models_read_with_their_ring_buffers_as_state(stem, variables, state_bytes):
    graph = read_model(MICROWAKEWORD / f"{stem}.tflite")
    ring_buffers = [graph.tensors[t] for t in _variable_ops(graph)]
    assert len(ring_buffers) == variables
    assert sum(t.nbytes for t in ring_buffers) == state_bytes
    assert all(t.data is not None and len(t.data) == t.nbytes for t in ring_buffers)
    # Each ring buffer's newest slices are sliced straight into it.
    assert all(ops == ["READ_VARIABLE", "STRIDED_SLICE"] for ops in _variable_ops(graph).values())
    assert "ASSIGN_VARIABLE" not in [op.opcode for op in graph.operators]
