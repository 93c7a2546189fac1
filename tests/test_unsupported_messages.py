"""What a user sees for a model the runtime cannot run: exit 4 and one line
per missing operator and dtype combination with its op count, at most
MAX_UNSUPPORTED_LINES of them plus "and N more", never a line of thousands
of characters; unsupported tensor types are listed with the ops."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from conftest import REPO
from test_codegen import unsupported_lines

from mcu_planner.errors import MAX_UNSUPPORTED_LINES
from mcu_planner_testing.builder import ModelBuilder


def run_plan(model_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", str(model_path), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )


def many_unsupported_model(kinds: int, copies: int) -> bytes:
    """`kinds` different custom operators with very long names, the k-th used
    k * copies times, in a chain."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "float32", name="x")
    t = x
    for k in range(1, kinds + 1):
        for _ in range(k * copies):
            y = mb.add_tensor((1, 4), "float32")
            mb.add_op("CUSTOM", (t,), (y,), custom_code=f"VendorOp{k:02d}_" + "x" * 300)
            t = y
    mb.set_io([x], [t])
    return mb.build()


def test_many_unsupported_operators_give_at_most_ten_short_lines(tmp_path):
    model = tmp_path / "many.tflite"
    model.write_bytes(many_unsupported_model(kinds=14, copies=3))
    done = run_plan(model, "-o", tmp_path / "out")
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
    message = done.stderr.strip()
    lines = message.splitlines()
    assert len(lines) == 1 + MAX_UNSUPPORTED_LINES + 1
    assert lines[-1] == f"  and {14 - MAX_UNSUPPORTED_LINES} more"
    found = unsupported_lines(message)
    # The most frequent first: kinds 14 down to 5, each with its own count.
    counts = sorted(found.values(), reverse=True)
    assert counts == [k * 3 for k in range(14, 14 - MAX_UNSUPPORTED_LINES, -1)]
    assert f"{sum(k * 3 for k in range(1, 15))} ops in 14 unsupported" in lines[0]
    assert not (tmp_path / "out").exists()


def test_an_unsupported_tensor_type_is_exit_4_listed_with_the_ops(tmp_path):
    """float64 activations: the plan command still plans (and says -o would
    stop); -o stops with exit 4 naming the type and the ops using it."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 8), "float64", name="x")
    y = mb.add_tensor((1, 8), "float64", name="y")
    z = mb.add_tensor((1, 8), "float32", name="z")
    mb.add_op("RELU", (x,), (y,))
    mb.add_op("CAST", (y,), (z,))
    mb.set_io([x], [z])
    model = tmp_path / "f64.tflite"
    model.write_bytes(mb.build())

    planned = run_plan(model, "--ram", "64K")
    assert planned.returncode == 0, planned.stderr
    assert "-o would stop with exit 4" in planned.stdout

    done = run_plan(model, "--ram", "64K", "-o", tmp_path / "out")
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
    message = done.stderr.strip()
    assert "unsupported tensor type float64" in message.splitlines()[0]
    assert "  tensor type float64: 2 tensors" in message.splitlines()
    assert unsupported_lines(message)[("RELU", "float64")] == 1
    assert not (tmp_path / "out").exists()


def test_a_string_tensor_is_exit_4_not_bad_input(tmp_path):
    mb = ModelBuilder()
    keys = mb.add_tensor((3,), "string", name="words")
    ids = mb.add_tensor((3,), "int32", name="ids")
    out = mb.add_tensor((3,), "int32", name="out")
    mb.add_op("CUSTOM", (keys,), (ids,), custom_code="Tokenize")
    mb.add_op("ADD", (ids, mb.add_tensor((3,), "int32", data=np.ones(3, np.int32))), (out,))
    mb.set_io([keys], [out])
    model = tmp_path / "text.tflite"
    model.write_bytes(mb.build())
    done = run_plan(model, "--ram", "64K")
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
    message = done.stderr.strip()
    assert "  tensor type string: 1 tensor" in message.splitlines()
    assert unsupported_lines(message) == {("CUSTOM(Tokenize)", "string->int32"): 1}


def test_a_long_refusal_reason_is_cut():
    from mcu_planner.errors import MAX_REASON_CHARS, unsupported_model_error

    error = unsupported_model_error({"CONV_2D int8": 2}, {"CONV_2D int8": "why " * 500}, {})
    head, line = str(error).splitlines()
    assert head == "2 ops in 1 unsupported operator and dtype combination:"
    assert line.startswith("  CONV_2D int8: 2 ops (why why") and line.endswith("...)")
    assert len(line) <= len("  CONV_2D int8: 2 ops ()") + MAX_REASON_CHARS


def _plan_in_process(model: bytes, tmp_path, capsys) -> tuple[int, list[str]]:
    from mcu_planner.cli import main

    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    capsys.readouterr()
    code = main([str(path), "-o", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
    return code, capsys.readouterr().err.strip().splitlines()


def vela_like_model() -> bytes:
    """The shape of a Vela-compiled model: one CUSTOM 'ethos-u' op reading
    its command stream and weights (constants), the NPU's scratch areas
    (tensors no op writes) and the input, writing the output."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 8, 8, 3), "int8", (0.05, -3), name="input")
    commands = mb.add_tensor((64,), "uint8", data=np.arange(64, dtype=np.uint8), name="_split_1_command_stream")
    flash = mb.add_tensor((32,), "uint8", data=np.zeros(32, np.uint8), name="_split_1_flash")
    scratch = mb.add_tensor((1024,), "uint8", name="_split_1_scratch")
    scratch_fast = mb.add_tensor((256,), "uint8", name="_split_1_scratch_fast")
    y = mb.add_tensor((1, 4, 4, 8), "int8", (0.1, 2), name="output")
    mb.add_op("CUSTOM", (commands, flash, scratch, scratch_fast, x), (y,), custom_code="ethos-u")
    mb.set_io([x], [y])
    return mb.build()


def test_an_ethos_u_compiled_model_is_exit_4_naming_the_npu_op(tmp_path, capsys):
    """Was exit 2, 'rule written-before-read' on the NPU's scratch tensor (issue 21)."""
    code, err = _plan_in_process(vela_like_model(), tmp_path, capsys)
    assert code == 4, err
    assert "written-before-read" not in "\n".join(err)
    found = unsupported_lines("\n".join(err))
    assert [op for op, _dtype in found] == ["CUSTOM(ethos-u)"], err
    assert any("Ethos-U NPU" in line and "needs the NPU" in line for line in err), err


def test_an_int8_svdf_state_is_named_as_the_wrong_state_type(tmp_path, capsys):
    """TFLM's keyword_scrambled_8bit keeps int8 SVDF state: exit 4 names the
    state's type and what TFLite keeps, not an unnamed tensor (issue 21)."""
    import dataclasses

    from test_validate import _bench_coverage

    from mcu_planner.frontend.reader import read_model

    graph = read_model(_bench_coverage().build_variant("SVDF", "int8"))
    state = next(t for t in graph.tensors if t.is_variable)
    tensors = list(graph.tensors)
    tensors[state.index] = dataclasses.replace(state, dtype="int8", name="")
    model = ModelBuilder.from_graph(dataclasses.replace(graph, tensors=tuple(tensors))).build()
    code, err = _plan_in_process(model, tmp_path, capsys)
    assert code == 4, err
    assert any("SVDF state tensor is int8; TFLite's integer SVDF keeps int16 state" in line for line in err), err
