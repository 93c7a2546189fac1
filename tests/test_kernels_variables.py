"""READ_VARIABLE / ASSIGN_VARIABLE with CALL_ONCE (resource variables) in
generated C against LiteRT's reference kernels: twelve invocations in one
process with the state carried over, then all twelve again after
NAME_reset(), compared with a new reference interpreter (check.py).

ESPHome's microWakeWord models from ../shared/peer-tests/microwakeword and
a builder-made streaming model (mcu_planner_testing.builder.streaming_int8_model).
hey_jarvis's published output, a probability in uint8, stays 0 on random
features, so it is also checked with its graph output moved to the dense
layer's int8 score (the tensor before LOGISTIC), which differs invocation
to invocation and depends on every ring buffer."""

from __future__ import annotations

import struct

import pytest
import tflite
from conftest import SHARED, needs_cortex_m

from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import streaming_int8_model

MICROWAKEWORD = SHARED / "peer-tests" / "microwakeword"
needs_microwakeword = pytest.mark.skipif(
    not (MICROWAKEWORD / "hey_jarvis.tflite").is_file(),
    reason=f"../shared/peer-tests/microwakeword is absent (looked for {MICROWAKEWORD})",
)
INVOCATIONS = 12
# hey_jarvis's tensor "model/dense/MatMul;model/dense/BiasAdd": int8 [1, 1], the score before LOGISTIC.
HEY_JARVIS_SCORE = 67


def with_output(model: bytes, tensor: int) -> bytes:
    """`model` with subgraph 0's one graph output replaced by `tensor`
    (an int32 in the outputs vector, rewritten in place)."""
    subgraph = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    field = subgraph._tab.Offset(8)  # SubGraph.outputs
    assert subgraph._tab.VectorLen(field) == 1
    patched = bytearray(model)
    struct.pack_into("<i", patched, subgraph._tab.Vector(field), tensor)
    return bytes(patched)


def hey_jarvis_score_model() -> bytes:
    return with_output((MICROWAKEWORD / "hey_jarvis.tflite").read_bytes(), HEY_JARVIS_SCORE)


def assert_exact_over_invocations(model, target: str = "host"):
    report = check_model(model, target=target, inputs=INVOCATIONS, after_reset=INVOCATIONS, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()
    assert (report.exact, report.reset_exact) == (INVOCATIONS, INVOCATIONS)
    return report


def _distinct_reference_outputs(model: bytes) -> int:
    """How many different outputs the reference gives over the checked sequence (seed 0)."""
    import numpy as np

    from mcu_planner.frontend.reader import read_model
    from mcu_planner.targets.check import random_inputs
    from mcu_planner.targets.reference import ReferenceModel

    graph, rng = read_model(model), np.random.default_rng(0)
    reference = ReferenceModel(model)
    return len({reference.run(random_inputs(graph, rng))[0].tobytes() for _ in range(INVOCATIONS)})


def test_builder_streaming_model_bit_exact_over_invocations_on_the_host():
    assert_exact_over_invocations(streaming_int8_model())


def test_an_init_value_computed_from_a_constant_bit_exact_on_the_host():
    """The init subgraph's RESHAPE runs at generation time; the first read gives its value."""
    from test_resource_variables import one_variable_model

    assert_exact_over_invocations(one_variable_model("folded"))


@pytest.mark.parametrize("read_between", [False, True], ids=["sliced-into-variable", "read-between"])
def test_a_variable_read_around_its_slice_bit_exact_on_the_host(read_between):
    """The ASSIGN_VARIABLE folded into the STRIDED_SLICE, and kept because a
    read sits between them: both give LiteRT's values before and after."""
    from test_resource_variables import sliced_into_variable_model

    assert_exact_over_invocations(sliced_into_variable_model(read_between))


@needs_microwakeword
def test_microwakeword_outputs_checked_change_from_invocation_to_invocation():
    """The checks below compare outputs that depend on the state: the
    reference gives many different values over the twelve invocations."""
    assert _distinct_reference_outputs(hey_jarvis_score_model()) >= 8
    assert _distinct_reference_outputs((MICROWAKEWORD / "vad.tflite").read_bytes()) >= 3


@needs_microwakeword
@pytest.mark.parametrize("stem", ["hey_jarvis", "vad"])
def test_microwakeword_bit_exact_over_invocations_on_the_host(stem):
    report = assert_exact_over_invocations(MICROWAKEWORD / f"{stem}.tflite")
    # Arena and state together stay far below the TFLM arena ESPHome gives each model.
    esphome_arena = {"hey_jarvis": 22_860, "vad": 16_772}[stem]
    assert report.arena_bytes < esphome_arena // 4


@needs_microwakeword
def test_hey_jarvis_score_bit_exact_over_invocations_on_the_host():
    assert_exact_over_invocations(hey_jarvis_score_model())


def _microwakeword_model(name: str):
    return hey_jarvis_score_model() if name == "hey_jarvis_score" else MICROWAKEWORD / f"{name}.tflite"


@needs_microwakeword
@needs_cortex_m
@pytest.mark.parametrize("target", ["mps2-an386", "mps3-an547"])
@pytest.mark.parametrize("name", ["hey_jarvis", "hey_jarvis_score", "vad"])
def test_microwakeword_bit_exact_over_invocations_under_qemu(name, target):
    assert_exact_over_invocations(_microwakeword_model(name), target=target)


def test_check_command_replays_every_set_after_reset(tmp_path, capsys):
    """`mcu-plan check --inputs 4 --after-reset 4` runs the four sets, resets,
    runs all four again and says so."""
    from mcu_planner.cli import main

    model = tmp_path / "stream.tflite"
    model.write_bytes(streaming_int8_model())
    assert main(["check", str(model), "--inputs", "4", "--after-reset", "4"]) == 0
    assert "bit-exact 4/4 (one sequence, state carried over); after reset 4/4" in capsys.readouterr().out
