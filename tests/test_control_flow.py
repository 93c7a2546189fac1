"""IF and WHILE (mcu_planner/frontend/control_flow.py, lowering/control_flow.py):
builder-made models bit-exact with LiteRT's reference kernels over both
branch outcomes and 0, 1 and many loop turns, plans the verifier accepts,
and the models refused, each in one line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import assert_matches_reference
from test_cli import assert_one_line_error, run_main

from mcu_planner.frontend.control_flow import bodies
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.control_flow import ControlFlowCall
from mcu_planner.lowering.control_flow import sub_arena as sub_arena_of
from mcu_planner.lowering.program import lower_program
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner_testing.builder import ModelBuilder, if_model, run_reference, while_model

SHAPE = (2, 3)


def _values(rng: np.random.Generator, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return rng.standard_normal(SHAPE).astype(np.float32)
    if dtype == "int8":
        return rng.integers(-128, 128, SHAPE).astype(np.int8)
    return rng.integers(-1000, 1000, SHAPE).astype(np.int32)


def if_inputs(dtype: str) -> list[list[np.ndarray]]:
    """Both outcomes, twice each, on different values."""
    rng = np.random.default_rng(3)
    return [[np.array([cond]), _values(rng, dtype), _values(rng, dtype)] for cond in (True, False, False, True)]


def while_inputs(dtype: str) -> list[list[np.ndarray]]:
    """No turn (n = 0 and n < 0), one turn, many turns."""
    rng = np.random.default_rng(4)
    return [[np.array([n], np.int32)] + [_values(rng, dtype) for _ in range(3)] for n in (0, 1, 7, -2)]


# -- what the reader makes of them ------------------------------------------------------


def test_if_keeps_its_branches_on_subgraph_zero_tensors():
    graph = read_model(if_model("int8"))
    (op,) = graph.operators
    then_body, else_body = bodies(op)
    assert (op.opcode, then_body.role, else_body.role) == ("IF", "then", "else")
    assert [inner.opcode for inner in then_body.operators] == ["ADD", "RELU"]
    assert [inner.opcode for inner in else_body.operators] == ["MUL", "RELU", "MUL"]
    # The branch inputs are the IF's inputs; outputs an op computes are written
    # into the IF's outputs, the input passed through is copied there.
    assert then_body.inputs == else_body.inputs == op.inputs[1:]
    assert then_body.results == (op.outputs[0], op.inputs[1])
    assert else_body.results == op.outputs
    # The sum and the product (6 B each) share the one 16-byte sub-arena:
    # one branch runs.
    (sub_arena,) = op.scratch
    assert graph.tensors[sub_arena].nbytes == 16
    size, places = sub_arena_of(op, graph)
    assert size == 16 and sorted(places.values()) == [0, 0]
    assert {graph.tensors[t].name for t in places} == {"op0_then_add", "op0_else_mul"}


def test_while_loop_variables_live_in_its_outputs():
    graph = read_model(while_model("float32"))
    (op,) = graph.operators
    cond, body = bodies(op)
    assert cond.inputs == body.inputs == op.outputs
    size, places = sub_arena_of(op, graph)
    names = {graph.tensors[t].name: offset for t, offset in places.items()}
    # The cond's bool, the body's three new values, and q copied aside
    # before the loop variable p takes it.
    assert set(names) == {"op0_cond_i_less_n", "op0_body_i_next", "op0_body_acc_next", "op0_body_q_next", "op0_aside_4"}
    # The four body values are all held at the copies that end a turn: side
    # by side (float32[2, 3] in 32 B, int32[1] in 16 B); the bool is dead by
    # then and shares their bytes.
    assert size == 3 * 32 + 16 == graph.tensors[op.scratch[0]].nbytes
    body_values = ("op0_body_i_next", "op0_body_acc_next", "op0_body_q_next", "op0_aside_4")
    assert sorted(names[name] for name in body_values) == [0, 32, 64, 96]
    assert names["op0_cond_i_less_n"] in (0, 32, 64, 96)


def test_a_constant_condition_runs_its_branch_only():
    """Known at generation time: no test in C, the other branch not generated."""
    for constant, opcodes in ((True, ["ADD", "RELU", "COPY"]), (False, ["MUL", "RELU", "MUL"])):
        graph = read_model(if_model("int8", constant=constant))
        (lowered,) = lower_program(graph).ops
        assert isinstance(lowered.call, ControlFlowCall)
        assert [step.kind for step in lowered.call.steps] == ["call"] * len(opcodes)
        assert [step.op.opcode for step in lowered.call.steps if step.op is not None] == opcodes


@pytest.mark.parametrize("model", [if_model("int8"), while_model("int8")], ids=["if", "while"])
def test_plans_pass_the_verifier(model):
    """The subgraphs' tensors are planned as scratch of the op: alive at its
    step only, never on the op's inputs or outputs."""
    analysed = plan_model(model, PlanOptions())
    problem = analysed.lifetimes.problem
    assert verify(problem, analysed.plan.offsets, analysed.plan.arena_bytes) == []
    (op,) = analysed.graph.operators
    planned = {t for t in op.inputs + op.outputs + op.scratch if t in analysed.lifetimes.placements}
    # Every value the op touches is live at its one step: no two share a byte.
    spans = sorted(
        (analysed.lifetimes.tensor_offset(analysed.plan.offsets, t), analysed.graph.tensors[t].nbytes) for t in planned
    )
    for (start, size), (next_start, _) in itertools.pairwise(spans):
        assert start + size <= next_start
    assert analysed.plan.arena_bytes >= sum(size for _, size in spans)
    # Inside the sub-arena, step by step: the bytes of the values a step
    # touches, and of those still to be touched later, are nobody else's.
    call = analysed.lifetimes.program.call(op.index)
    places = dict(call.places)
    touched = [
        {t for t in (step.op.inputs + step.op.outputs if step.op else (step.tensor,)) if t in places}
        for step in call.steps
    ]
    for position in range(len(touched)):
        live = {
            t
            for t in places
            if any(t in s for s in touched[: position + 1]) and any(t in s for s in touched[position:])
        }
        owner: dict[int, int] = {}
        for t in live:
            for byte in range(places[t], places[t] + analysed.graph.tensors[t].nbytes):
                assert owner.setdefault(byte, t) == t, (position, t, owner[byte])


def test_the_reference_runs_the_builder_models():
    """The models are what LiteRT runs: a worked example of each."""
    ones = np.ones(SHAPE, np.float32)
    y, z = run_reference(if_model("float32"), [np.array([False]), 2 * ones, 3 * ones])
    assert (y == 6).all() and (z == 3).all()  # relu(2 * 3), and b
    i, acc, q = run_reference(while_model("float32"), [np.array([4], np.int32), ones, 0 * ones, ones])
    assert i[0] == 4 and (acc == 4).all() and (q == 5).all()  # Fibonacci: (0, 1) -> (3, 5)


# -- bit-exact --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_if_bit_exact_on_the_host(dtype):
    assert_matches_reference(if_model(dtype), input_sets=if_inputs(dtype))


@pytest.mark.slow
def test_if_with_a_constant_condition_bit_exact_on_the_host():
    sets = [inputs[1:] for inputs in if_inputs("int8")[:2]]
    assert_matches_reference(if_model("int8", constant=False), input_sets=sets)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int8", "float32", "int32"])
def test_while_bit_exact_on_the_host(dtype):
    assert_matches_reference(while_model(dtype), input_sets=while_inputs(dtype))


@needs_cortex_m
def test_while_bit_exact_on_mps2_an386():
    assert_matches_reference(while_model("int8"), input_sets=while_inputs("int8"), target="mps2-an386")


# -- refused ----------------------------------------------------------------------------


def _if_builder(then_shape=SHAPE, then_index=None, nested=False, opcode="ADD", cond_dtype="bool") -> ModelBuilder:
    """An IF over float32 (a, b) whose then branch has output `then_shape`."""
    mb = ModelBuilder()
    cond = mb.add_tensor((1,), cond_dtype, name="cond")
    a, b, y = (mb.add_tensor(SHAPE, "float32") for _ in range(3))
    subs = []
    for _ in range(2):
        sub = mb.add_subgraph()
        sa, sb = sub.add_tensor(SHAPE, "float32"), sub.add_tensor(SHAPE, "float32")
        out = sub.add_tensor(then_shape if not subs else SHAPE, "float32")
        if nested and not subs:
            sub.add_op("IF", (sub.add_tensor((1,), "bool"), sa, sb), (out,), {"then_subgraph_index": 2})
        elif opcode == "RANK":
            out = sub.add_tensor((), "int32")
            sub.add_op("RANK", (sa,), (out,))
        else:
            sub.add_op(opcode, (sa, sb), (out,))
        sub.set_io([sa, sb], [out])
        subs.append(sub)
    if opcode == "RANK":
        y = mb.add_tensor((), "int32")
    mb.if_op(cond, (a, b), (y,), subs[0], subs[1])
    if then_index is not None:
        mb.ops[-1].options["then_subgraph_index"] = then_index
    mb.set_io([cond, a, b], [y])
    return mb


def _while_changing_shape() -> ModelBuilder:
    mb = ModelBuilder()
    x, y = mb.add_tensor((1, 4), "float32"), mb.add_tensor((1, 4), "float32")
    cond, body = mb.add_subgraph("cond"), mb.add_subgraph("body")
    cx = cond.add_tensor((1, 4), "float32")
    flag = cond.add_tensor((1,), "bool")
    cond.add_op("LESS", (cx, cond.add_tensor((1,), "float32", data=np.array([9], np.float32))), (flag,))
    cond.set_io([cx], [flag])
    bx = body.add_tensor((1, 4), "float32")
    grown = body.add_tensor((2, 4), "float32")
    body.add_op("CONCATENATION", (bx, bx), (grown,), {"axis": 0})
    body.set_io([bx], [grown])
    mb.while_op((x,), (y,), cond, body)
    mb.set_io([x], [y])
    return mb


@pytest.mark.parametrize(
    "builder, code, fragment",
    [
        (lambda: _if_builder(then_index=7), 2, "then subgraph 7 out of range (model has 3 subgraphs"),
        (lambda: _if_builder(then_index=0), 2, "then subgraph 0 out of range"),
        (lambda: _if_builder(then_shape=(3, 2)), 2, "output is float32[3, 2] but stands for float32[2, 3]"),
        (lambda: _if_builder(cond_dtype="int32"), 2, "the condition is int32[1], not one bool"),
        (_while_changing_shape, 2, "output 0 is float32[2, 4] but stands for float32[1, 4]"),
        (lambda: _if_builder(nested=True), 4, "IF inside control flow is not supported"),
    ],
    ids=["index-out-of-range", "calls-subgraph-0", "branch-signature", "condition-type", "loop-shape", "nested"],
)
def test_refused_in_one_line(tmp_path, capsys, builder, code, fragment):
    model = tmp_path / "control.tflite"
    model.write_bytes(builder().build())
    assert_one_line_error(run_main(capsys, model, "--ram", "1M"), code, "control.tflite", fragment)


def test_unsupported_ops_inside_branches_are_listed(tmp_path, capsys):
    model = tmp_path / "rank.tflite"
    model.write_bytes(_if_builder(opcode="RANK").build())
    result = run_main(capsys, model, "--ram", "1M", "-o", tmp_path / "out")
    assert result.returncode == 4, result.stderr
    assert "2 ops" in result.stderr and "RANK" in result.stderr
    assert not (tmp_path / "out").exists()
