"""Patch-based execution of a stage (mcu_planner/memory/patches.py): per-patch
windows against a brute-force enumeration of the taps, random chains run
strip by strip bit-exact against the reference with their plans verified,
the verifier refusing a patched plan that writes a strip over input rows a
later strip still reads, and the issue's arena bars on the shared models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import needs_cortex_m, needs_shared

from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.common import compute_out_size, compute_padding
from mcu_planner.lowering.program import lower_program
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.patches import RowGeometry, candidate_stages, make_stage, stage_access, with_stage
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net
from mcu_planner_testing.shared import shared_model_paths


def _random_geometry(rng: np.random.Generator) -> RowGeometry:
    input_h = int(rng.integers(1, 14))
    filter_h, stride_h, dilation_h = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padding = str(rng.choice(["SAME", "VALID"]))
    if padding == "VALID" and (filter_h - 1) * dilation_h + 1 > input_h:
        padding = "SAME"
    output_h = compute_out_size(padding, input_h, filter_h, stride_h, dilation_h)
    pad_h = compute_padding(stride_h, dilation_h, input_h, filter_h, output_h) if padding == "SAME" else 0
    return RowGeometry(input_h, output_h, filter_h, stride_h, dilation_h, pad_h)


@pytest.mark.parametrize("seed", range(300))
def test_patch_window_reads_exactly_the_rows_its_taps_touch(seed):
    rng = np.random.default_rng(seed)
    g = _random_geometry(rng)
    first = int(rng.integers(0, g.output_h))
    end = int(rng.integers(first + 1, g.output_h + 1))
    window = g.window(first, end)
    # Brute force: every tap of every output row of the strip, in the whole tensor.
    taps = {(r, t): r * g.stride_h - g.pad_h + t * g.dilation_h for r in range(first, end) for t in range(g.filter_h)}
    inside = [row for row in taps.values() if 0 <= row < g.input_h]
    if inside:
        assert (window.in_first, window.in_end) == (min(inside), max(inside) + 1)
    else:
        assert window.in_end == window.in_first
    # The same taps as the kernel sees them in the window: local row, local pad, local input_h.
    local_h = window.in_end - window.in_first
    for (r, t), row in taps.items():
        local = (r - window.out_first) * g.stride_h - window.pad_h + t * g.dilation_h
        assert (0 <= local < local_h) == (0 <= row < g.input_h)
        if 0 <= row < g.input_h:
            assert local + window.in_first == row


def _random_chain(seed: int) -> bytes:
    """A chain of convolutions, depthwise convolutions, pooling, PADs and unary elementwise ops
    with random strides, dilations, paddings and odd sizes, then a pointwise head."""
    rng = np.random.default_rng(seed)
    net = Int8Net(seed)
    x = net.input((1, int(rng.integers(9, 24)), int(rng.integers(5, 14)), int(rng.integers(1, 4))))
    for _ in range(int(rng.integers(2, 5))):
        h = net.shape(x)[1]
        kind = rng.choice(["conv", "depthwise", "pool", "pad", "unary"])
        stride = int(rng.integers(1, 3)) if h > 6 else 1
        padding = str(rng.choice(["SAME", "VALID"])) if h > 6 else "SAME"
        if kind == "conv":
            dilation = int(rng.integers(1, 3)) if stride == 1 else 1
            kernel = (int(rng.choice([1, 3, 5])), int(rng.choice([1, 3])))
            x = net.conv2d(x, int(rng.integers(2, 9)), kernel, (stride, stride), padding, "RELU6", (dilation, 1))
        elif kind == "unary":
            x = [net.logistic, net.tanh, net.leaky_relu, net.hard_swish][int(rng.integers(0, 4))](x)
        elif kind == "pad":
            top, bottom, left, right = (int(v) for v in rng.integers(0, 3, size=4))
            x = net.pad(x, [(0, 0), (top, bottom), (left, right), (0, 0)])
        elif kind == "depthwise":
            x = net.depthwise_conv2d(x, (3, 3), (stride, stride), padding, "RELU")
        else:
            x = (
                net.max_pool2d(x, (2, 2), (stride, stride), padding)
                if rng.random() < 0.5
                else net.average_pool2d(x, (3, 2), (stride, 1), padding)
            )
    return net.build(net.conv2d(x, 4, (1, 1)))


def planned_verified_and_bit_exact(model: bytes, patches: str, seed: int = 0):
    """`model` planned with `--patches patches`: the plan verified, and the generated C bit-exact on the host."""
    planned = plan_model(model, PlanOptions(patches=patches, time_limit=1.0))
    assert planned.program.patch_stage is not None
    assert not verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes)
    report = check_model(model, inputs=2, seed=seed, time_limit=1.0, patches=patches, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()
    return planned


@pytest.mark.parametrize("seed", range(7))
def test_random_chains_run_strip_by_strip_bit_exact(seed):
    model = _random_chain(seed)
    graph = read_model(model)
    stages = candidate_stages(lower_program(graph))
    assert stages, "the chain has a stage"
    tallest = max(graph.tensors[graph.operators[ops[-1]].outputs[0]].shape[1] for ops in stages)
    strips = min(2 + seed % 3, tallest)
    assert strips >= 2
    stage = planned_verified_and_bit_exact(model, f"{strips}x1", seed).program.patch_stage
    assert stage is not None and stage.rows >= 2


def _vww_like(seed: int = 0) -> bytes:
    net = Int8Net(seed)
    x = net.input((1, 24, 24, 3))
    x = net.conv2d(x, 8, (3, 3), (2, 2), "SAME", "RELU")
    x = net.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", "RELU")
    x = net.conv2d(x, 16, (1, 1), (1, 1), "SAME", "RELU")
    x = net.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", "RELU")
    return net.build(net.conv2d(x, 8, (1, 1)))


def test_patches_auto_lowers_the_arena_and_overlaps_the_stage_input():
    model = _vww_like()
    whole = plan_model(model, PlanOptions(patches="off", time_limit=1.0))
    patched = plan_model(model, PlanOptions(patches="auto", time_limit=1.0))
    assert patched.program.patch_stage is not None
    assert patched.plan.arena_bytes < whole.plan.arena_bytes
    assert not verify(patched.lifetimes.problem, patched.plan.offsets, patched.plan.arena_bytes)
    report = check_model(model, inputs=2, time_limit=1.0, patches="auto", raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


def _stage_at_its_bound(graph):
    """A patched stage of _vww_like and a plan laying every buffer one after
    another, the stage input first past room for the output, and the stage
    output starting as far into the stage input as its walk allows."""
    program = lower_program(graph)
    stage = make_stage(program, candidate_stages(program)[2], 3)
    lifetimes = compute_lifetimes(with_stage(program, stage))
    problem = lifetimes.problem
    (overlap,) = [o for step in problem.steps for o in step.overlaps if o.span > 1]
    by_id = problem.by_id()
    end = sum(b.size for b in problem.buffers)
    offsets = {}
    for b in sorted(problem.buffers, key=lambda b: b.id != overlap.input):
        if b.id != overlap.output:
            offsets[b.id] = end
            end += b.size
    assert by_id[overlap.output].size + overlap.max_offset <= by_id[overlap.input].size
    lowest = offsets[overlap.input] + overlap.max_offset
    offsets[overlap.output] = lowest - lowest % problem.alignment
    return stage, lifetimes, overlap, offsets, end


def test_verifier_rejects_a_strip_written_over_rows_a_later_strip_reads():
    graph = read_model(_vww_like())
    stage, lifetimes, overlap, offsets, _ = _stage_at_its_bound(graph)
    problem = lifetimes.problem
    assert not verify(problem, offsets)
    # One alignment step further in: strip 0 then overwrites rows strip 1 reads.
    offsets[overlap.output] += problem.alignment
    assert verify(problem, offsets)
    # The walk the verifier enumerates is the stage's receptive field, one group per strip.
    access = stage_access(lower_program(graph), stage)
    assert access.group == 3 * graph.tensors[stage.output].shape[2]
    assert overlap.access == access


def test_check_build_stops_a_strip_written_over_rows_a_later_strip_reads(tmp_path):
    from test_codegen import run_host, seeded_inputs

    from mcu_planner.emit.codegen import generate
    from mcu_planner.emit.output_dir import write_output
    from mcu_planner.errors import CheckMismatch
    from mcu_planner.memory.planning import ArenaPlan

    model = _vww_like()
    graph = read_model(model)
    stage, lifetimes, overlap, offsets, end = _stage_at_its_bound(graph)
    patched = with_stage(lower_program(graph), stage).graph
    samples, expected = seeded_inputs(patched, model, count=1)

    def run(name: str, plan_offsets: dict[int, int]):
        plan = ArenaPlan("test layout", plan_offsets, end, False, 0.0)
        out = write_output(generate(patched, lifetimes, plan, name="net"), tmp_path / name / "gen")
        return run_host(out, "net", patched, samples, check_build=True, workdir=tmp_path / name / "run")

    assert run("good", offsets).outputs == expected
    bad = {**offsets, overlap.output: offsets[overlap.output] + lifetimes.problem.alignment}
    message = rf"op {stage.ops[0]} \(CONV_2D\) writes tensor {overlap.output}:.* over live tensor {overlap.input}:"
    with pytest.raises(CheckMismatch, match=message):
        run("bad", bad)


@needs_cortex_m
def test_patched_model_bit_exact_on_mps2_an386():
    report = check_model(_vww_like(1), target="mps2-an386", inputs=2, time_limit=1.0, patches="3x1")
    assert report.passed


BARS = {"person_detect": 24 * 1024, "vww_96_int8": 36 * 1024}


@needs_shared
@pytest.mark.parametrize("stem", sorted(BARS))
def test_arena_bars_bit_exact_on_the_host(stem):
    paths = shared_model_paths(stem)
    assert paths, f"{stem} is in the shared models"
    ram = BARS[stem]
    planned = plan_model(paths[0], PlanOptions(ram=ram))
    assert planned.fits and planned.program.patch_stage is not None
    assert not verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes)
    report = check_model(paths[0], ram=ram, inputs=2)
    assert report.passed


@needs_shared
@needs_cortex_m
def test_person_detect_at_the_bar_bit_exact_on_mps2_an386():
    (path,) = shared_model_paths("person_detect")
    report = check_model(path, target="mps2-an386", ram=24 * 1024, inputs=2)
    assert report.passed


@needs_shared
def test_mobilenet_v2_bar_bit_exact_on_the_host():
    (path,) = shared_model_paths("mobilenet_v2_quantized_1x3x224x224")
    ram = 612_960
    report = check_model(path, ram=ram, inputs=1)
    assert report.passed


def _conv_macs(graph, op) -> int:
    """A convolution's products from its shapes: per output value, the filter's
    taps times the input channels it reads (1 for a depthwise one)."""
    out = graph.tensors[op.outputs[0]]
    _, filter_h, filter_w, filter_c = graph.tensors[op.inputs[1]].shape
    per_output = filter_h * filter_w * (1 if op.opcode == "DEPTHWISE_CONV_2D" else filter_c)
    return out.num_elements * per_output


def test_cli_reports_the_stage_and_its_cost_in_the_plan_json(tmp_path, capsys):
    from mcu_planner.cli import main

    model_path = tmp_path / "chain.tflite"
    model_path.write_bytes(_vww_like())
    plan_path = tmp_path / "plan.json"
    assert main([str(model_path), "--patches", "3x1", "--json", str(plan_path)]) == 0
    out = capsys.readouterr().out
    patches = json.loads(plan_path.read_text())["techniques"]["patches"]
    assert f"patches: ops {', '.join(map(str, patches['ops']))} run in {patches['grid'][0]} strips" in out
    assert patches["grid"][1] == 1 and patches["grid"][0] >= 2
    graph = read_model(model_path.read_bytes())
    assert patches["model_macs"] == sum(_conv_macs(graph, op) for op in graph.operators)
    # Extra MACs counted per output row each strip computes, against the rows of the whole tensor.
    stage = make_stage(lower_program(graph), tuple(patches["ops"]), patches["strip_rows"])
    extra = 0
    for position, index in enumerate(stage.ops):
        op = graph.operators[index]
        height = graph.tensors[op.outputs[0]].shape[1]
        rows = [
            row
            for first in range(0, graph.tensors[stage.output].shape[1], stage.strip_rows)
            for row in range(
                stage.windows[first // stage.strip_rows][position].out_first,
                stage.windows[first // stage.strip_rows][position].out_end,
            )
        ]
        extra += _conv_macs(graph, op) // height * (len(rows) - height)
    assert patches["extra_macs"] == extra > 0
    assert main([str(model_path), "--patches", "nine"]) == 2
    assert "--patches" in capsys.readouterr().err


def test_a_long_stage_through_pad_pooling_and_an_activation_is_bit_exact():
    net = Int8Net(7)
    x = net.input((1, 21, 11, 3))
    x = net.pad(x, [(0, 0), (1, 2), (2, 1), (0, 0)])
    x = net.conv2d(x, 24, (3, 3), (1, 1), "VALID", "RELU")
    x = net.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", "NONE", dilation=(1, 1))
    x = net.hard_swish(x)
    x = net.average_pool2d(x, (2, 2), (2, 2), "VALID")
    model = net.build(net.conv2d(x, 4, (1, 1)))
    planned = planned_verified_and_bit_exact(model, "auto")
    stage = planned.program.patch_stage
    assert stage is not None
    opcodes = [planned.graph.operators[i].opcode for i in stage.ops]
    assert opcodes[:5] == ["PAD", "CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH", "AVERAGE_POOL_2D"]


def test_a_strip_wholly_in_a_pads_padding_is_bit_exact():
    net = Int8Net(3)
    x = net.input((1, 6, 5, 2))
    x = net.pad(x, [(0, 0), (0, 4), (1, 0), (0, 0)])
    x = net.depthwise_conv2d(x, (1, 1), (1, 1), "VALID", "RELU")
    model = net.build(net.conv2d(x, 3, (1, 1)))
    stage = planned_verified_and_bit_exact(model, "5x1").program.patch_stage
    assert stage is not None and stage.windows[-1][0].in_end == stage.windows[-1][0].in_first  # reads no input row


@needs_shared
@pytest.mark.parametrize("grid", ["4x1", "2"])
def test_a_budget_a_forced_grid_fits_is_fitted_by_the_default_search(grid):
    """Under --ram the default search tries the cheapest cuts, then each
    stage's in turn: a budget that a forced grid meets is met (pretrainedResnet:
    the later stages' cuts are cheaper but leave the first stage's peak)."""
    path = shared_model_paths("pretrainedResnet")[0]
    forced = plan_model(path, PlanOptions(patches=grid))
    assert forced.program.patch_stage is not None
    searched = plan_model(path, PlanOptions(ram=forced.plan.arena_bytes))
    assert searched.fits, f"forced {grid}: {forced.plan.arena_bytes} B; search needs {searched.plan.arena_bytes} B"
    assert searched.program.patch_stage is not None
    assert not verify(searched.lifetimes.problem, searched.plan.offsets, searched.plan.arena_bytes)
