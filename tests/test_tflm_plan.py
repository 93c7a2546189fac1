"""`--tflm-plan`: our plan as TFLM's offline plan (OfflineMemoryAllocation).

The written model is checked three ways: our reader reads the offsets back,
LiteRT's reference kernels compute the same outputs from it, and TFLM itself
(the `tflite-micro` package) accepts it, plans its arena around our offsets
and computes the same outputs as from the original model."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tflite
from conftest import MODELS_DIR, REPO, needs_shared
from test_cli import assert_one_line_error, run_cli

from mcu_planner.emit.tflm_plan import ONLINE, choose_tflm_plan, tflm_arena, tflm_problem, with_offline_plan
from mcu_planner.frontend.reader import OFFLINE_PLAN_METADATA, read_model
from mcu_planner.memory.problem import Problem, peak_live
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner.targets.check import random_inputs
from mcu_planner_testing.builder import ModelBuilder, run_reference, tiny_kws_int8

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"

try:
    from tflite_micro.python.tflite_micro import runtime as tflm_runtime
except ImportError:  # pragma: no cover - the test extra installs it
    tflm_runtime = None

needs_tflm = pytest.mark.skipif(tflm_runtime is None, reason="tflite-micro is not installed (pip install '.[test]')")


def _metadata(model: bytes) -> dict[str, bytes]:
    parsed = tflite.Model.GetRootAsModel(model, 0)
    entries = {}
    for k in range(parsed.MetadataLength()):
        entry = parsed.Metadata(k)
        entries[entry.Name().decode()] = parsed.Buffers(entry.Buffer()).DataAsNumpy().tobytes()
    return entries


def test_offsets_read_back_and_the_model_still_computes_the_same():
    model = tiny_kws_int8()
    count = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0).TensorsLength()
    offsets = [16 * k if k % 3 else ONLINE for k in range(count)]
    written = with_offline_plan(model, offsets, count)
    assert len(written) % 16 == len(model) % 16  # the old bytes keep their alignment
    assert read_model(written).offline_offsets == tuple(offsets)
    header = np.frombuffer(_metadata(written)[OFFLINE_PLAN_METADATA], dtype="<i4")
    assert list(header[:3]) == [1, 0, count]
    inputs = random_inputs(read_model(model), np.random.default_rng(3))
    for got, want in zip(run_reference(written, inputs), run_reference(model, inputs), strict=True):
        assert np.array_equal(got, want)


def test_an_existing_offline_plan_is_replaced_and_other_metadata_kept():
    builder = ModelBuilder()
    x = builder.add_tensor((1, 8), "float32", name="x")
    y = builder.add_tensor((1, 8), "float32", name="y")
    builder.add_op("RELU", [x], [y])
    builder.set_io([x], [y])
    builder.set_offline_offsets([0, 32])
    builder.add_metadata("min_runtime_version", b"1.5.0\0")
    builder.extra_subgraphs = 1  # TFLM counts the tensors of every subgraph
    model = builder.build()
    written = with_offline_plan(model, [64, ONLINE], 3)
    entries = _metadata(written)
    assert sorted(entries) == sorted([OFFLINE_PLAN_METADATA, "min_runtime_version"])
    assert entries["min_runtime_version"] == b"1.5.0\0"
    assert list(np.frombuffer(entries[OFFLINE_PLAN_METADATA], dtype="<i4")) == [1, 0, 3, 64, ONLINE, ONLINE]
    assert read_model(written).offline_offsets == (64, ONLINE)


def test_the_chosen_plan_holds_under_tflms_lifetimes_where_aliasing_does_not():
    graph = read_model(EXAMPLE)
    problem = tflm_problem(graph)
    plan = choose_tflm_plan(str(EXAMPLE), PlanOptions())
    offline = {t: o for t, o in enumerate(plan.offsets) if o != ONLINE}
    # Every tensor TFLM plans gets our offset (nothing is folded in this model) ...
    assert set(offline) == {b.id for b in problem.buffers if not graph.tensors[b.id].is_scratch}
    subset = type(problem)(
        tuple(b for b in problem.buffers if b.id in offline), problem.alignment, problem.steps, problem.step_times
    )
    assert verify(subset, offline) == []
    # ... while the plan with aliasing (the concatenation written in place,
    # the reshape sharing bytes) breaks TFLM's lifetimes, which is why it was not chosen.
    aliased = plan_model(str(EXAMPLE), PlanOptions(order="model"))
    assert aliased.lifetimes.aliases
    offsets = {
        t: aliased.lifetimes.tensor_offset(aliased.plan.offsets, t)
        for t in aliased.lifetimes.placements
        if t in offline
    }
    assert verify(subset, offsets) != []


def _tflm_outputs(path: Path, input_sets: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Outputs after each input set, one interpreter for the whole sequence (state carries over)."""
    interpreter = tflm_runtime.Interpreter.from_file(str(path), arena_size=8 * 1024 * 1024)
    outputs = []
    for inputs in input_sets:
        for k, value in enumerate(inputs):
            interpreter.set_input(value, k)
        interpreter.invoke()
        outputs += [np.array(interpreter.get_output(k)) for k in range(len(read_model(path).outputs))]
    return outputs


def _tflm_case(model: Path, tmp_path: Path) -> tuple[int, tuple[int, int], tuple[int, int]]:
    """(our arena in TFLM, TFLM's (head, total) for the original, for ours), outputs compared."""
    out = tmp_path / "planned.tflite"
    result = run_cli(model, "--tflm-plan", out)
    assert result.returncode == 0, result.stderr
    ours = int(re.search(r"([\d,]+) B of TFLM's arena", result.stdout).group(1).replace(",", ""))
    graph = read_model(model)
    input_sets = [random_inputs(graph, np.random.default_rng(seed)) for seed in range(3)]
    for got, want in zip(_tflm_outputs(out, input_sets), _tflm_outputs(model, input_sets), strict=True):
        assert np.array_equal(got, want)
    before, after = tflm_arena(str(model)), tflm_arena(str(out))
    assert before is not None and after is not None
    return ours, before, after


@needs_tflm
def test_tflm_runs_the_example_in_our_arena(tmp_path):
    ours, before, after = _tflm_case(EXAMPLE, tmp_path)
    assert after[0] <= max(before[0], ours)


@needs_tflm
@needs_shared
@pytest.mark.parametrize(
    "name",
    ["mlcommons-tiny/vww_96_int8", "tflite-micro/keyword_scrambled", "tflite-micro/trained_lstm_int8"],
)
def test_tflm_runs_shared_models_in_our_arena(name, tmp_path):
    model = MODELS_DIR / f"{name}.tflite"
    ours, before, after = _tflm_case(model, tmp_path)
    # Our own arena when a budget asks for every overlap (the slower kernel
    # walks included): below what TFLM's lifetimes allow.
    roomy = plan_model(str(model), PlanOptions(order="model")).plan.arena_bytes
    our_plan = plan_model(str(model), PlanOptions(order="model", ram=roomy - 16))
    # TFLM's head is at most our offline buffers' extent (which keeps holes for
    # our kernels' scratch, such as the convolutions' columns: TFLM's own
    # scratch may take less) unless its own kernels' scratch (planned online
    # around them) does not fit where ours did; never worse than its own plan.
    assert after[0] <= before[0]
    assert after[0] <= ours or after[0] == before[0]
    assert after[1] - after[0] == before[1] - before[0]  # the persistent tail is untouched
    if name.endswith("vww_96_int8"):
        # The case TFLM's greedy planner loses: its head falls to the least its
        # own lifetimes allow (no two live tensors sharing a byte) ...
        # (without our kernels' scratch, which TFLM does not have).
        graph = read_model(model)
        problem = tflm_problem(graph)
        tensors_only = Problem(
            tuple(b for b in problem.buffers if not graph.tensors[b.id].is_scratch),
            problem.alignment,
            problem.steps,
            problem.step_times,
        )
        tflm_bound = peak_live(tensors_only).bytes
        assert after[0] == tflm_bound < before[0]
        # ... above our own arena, whose ops writing over their dying inputs TFLM cannot express.
        assert our_plan.plan.arena_bytes < tflm_bound


def test_bad_tflm_plan_paths_are_one_line_and_write_nothing(tmp_path):
    target = tmp_path / "dir.tflite"
    target.mkdir()
    assert_one_line_error(run_cli(EXAMPLE, "--tflm-plan", target), 2, "not a regular file")
    builder = ModelBuilder.from_graph(read_model(EXAMPLE))
    external = tmp_path / "external.tflite"
    external.write_bytes(builder.build(external_buffers=True))
    out = tmp_path / "out.tflite"
    assert_one_line_error(run_cli(external, "--tflm-plan", out), 2, "buffers stored after the flatbuffer")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.tflite", "external.tflite"]


def test_a_model_with_called_subgraphs_is_refused(tmp_path):
    """TFLM counts allocation scopes through the subgraphs control flow runs:
    subgraph 0's lifetimes are then not its own, so no offline plan is written."""
    import copy

    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(EXAMPLE.read_bytes(), 0))
    model.subgraphs.append(copy.deepcopy(model.subgraphs[0]))
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    two = tmp_path / "two_subgraphs.tflite"
    two.write_bytes(builder.Output())
    out = tmp_path / "out.tflite"
    assert_one_line_error(run_cli(two, "--tflm-plan", out), 2, "subgraph 1 has operators")
    assert not out.exists()
