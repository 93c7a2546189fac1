"""Grids of R x C patches (mcu_planner/memory/patches.py with cols > 1): windows
along both axes against a brute-force enumeration of every tap, random chains
run patch by patch bit-exact against the reference with verified plans, the
verifier and the -DMCU_PLAN_CHECK build refusing a plan whose patch buffer
lies over a live tensor, the stage input/output overlap bound simulated byte
by byte through the grid's walk, a grid beating every strip cut on a wide
image, and random networks with every technique at once under a tight budget."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compact_columns_everywhere, needs_cortex_m
from test_patches import _random_chain, _vww_like, planned_verified_and_bit_exact

from mcu_planner.emit.report import in_place_depthwise_ops, patches_json
from mcu_planner.errors import InputError
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.program import lower_program
from mcu_planner.memory.patches import candidate_stages, make_stage, patchable_call, with_stage
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, forced_grid, patch_counts, plan_model
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import Int8Net


def _taps(first: int, end: int, stride: int, pad: int, filter_size: int, dilation: int) -> list[tuple[int, int]]:
    """(output index, input index) of every tap of outputs [first, end) along one axis."""
    return [(o, o * stride - pad + t * dilation) for o in range(first, end) for t in range(filter_size)]


@pytest.mark.parametrize("seed", range(12))
def test_grid_windows_read_exactly_the_pixels_their_taps_touch(seed):
    graph = read_model(_random_chain(seed))
    program = lower_program(graph)
    rng = np.random.default_rng(seed)
    ops = candidate_stages(program)[-1]
    height, width = graph.tensors[graph.operators[ops[-1]].outputs[0]].shape[1:3]
    rows, cols = int(rng.integers(1, max(2, height // 2) + 1)), int(rng.integers(1, max(2, width // 2) + 1))
    stage = make_stage(program, ops, rows, cols)
    assert stage.cols == -(-width // cols) and stage.rows == -(-height // rows)
    wholes = []
    for index in ops:
        assert patchable_call(index, program) is not None
        window = program.facts(index).window
        assert window is not None
        wholes.append(window)
    covered = np.zeros((height, width), dtype=int)
    for windows in stage.windows:
        last = windows[-1]
        if stage.cols > 1:
            assert last.columns is not None
            covered[last.out_first : last.out_end, last.columns.out_first : last.columns.out_end] += 1
        else:
            covered[last.out_first : last.out_end, :] += 1
        for position, (window, whole) in enumerate(zip(windows, wholes, strict=True)):
            axes = [
                (window, whole.input_h, whole.stride_h, whole.pad_h, whole.filter_h, whole.dilation_h),
            ]
            if stage.cols > 1:
                assert window.columns is not None
                axes.append(
                    (window.columns, whole.input_w, whole.stride_w, whole.pad_w, whole.filter_w, whole.dilation_w)
                )
            for axis, size, stride, pad, filter_size, dilation in axes:
                taps = _taps(axis.out_first, axis.out_end, stride, pad, filter_size, dilation)
                inside = [i for _, i in taps if 0 <= i < size]
                if inside:
                    assert (axis.in_first, axis.in_end) == (min(inside), max(inside) + 1)
                else:
                    assert axis.in_first == axis.in_end
                # As the kernel sees them in the patch: local index, local pad, the window's size.
                for o, i in taps:
                    local = (o - axis.out_first) * stride - axis.pad_h + (i - (o * stride - pad))
                    assert (0 <= local < axis.in_end - axis.in_first) == (0 <= i < size)
                    if 0 <= i < size:
                        assert local + axis.in_first == i
            if position + 1 < len(windows):  # an op computes exactly what the next one reads
                nxt = windows[position + 1]
                assert (window.out_first, window.out_end) == (nxt.in_first, nxt.in_end) or nxt.in_first == nxt.in_end
    assert (covered == 1).all(), "the patches tile the stage output once"


def test_patches_values_name_grids():
    assert forced_grid("3") == (3, 3)
    assert forced_grid("4x1") == (4, 1)
    assert forced_grid("2X5") == (2, 5)
    assert forced_grid("auto") is None
    for bad in ("1", "1x1", "0x3", "x2", "3x", "2x2x2", "nine"):
        with pytest.raises(InputError):
            forced_grid(bad)


# Chains of test_patches._random_chain whose stages are 2 columns wide or more
# (the others end in a column: a grid of them is strips).
GRID_CHAIN_SEEDS = (0, 1, 4, 6, 10)


@pytest.mark.parametrize("seed", GRID_CHAIN_SEEDS)
def test_random_chains_run_in_a_grid_bit_exact(seed):
    model = _random_chain(seed)
    graph = read_model(model)
    ops = candidate_stages(lower_program(graph))
    shapes = [graph.tensors[graph.operators[s[-1]].outputs[0]].shape[1:3] for s in ops]
    widest = max(w for _, w in shapes)
    grid = f"{2 + seed % 2}x{min(widest, 2 + seed % 3)}"
    stage = planned_verified_and_bit_exact(model, grid, seed).program.patch_stage
    assert stage is not None and stage.cols >= 2


def test_a_grid_through_pads_and_pooling_is_bit_exact():
    net = Int8Net(8)
    x = net.input((1, 13, 17, 3))
    x = net.pad(x, [(0, 0), (2, 1), (1, 3), (0, 0)])
    x = net.conv2d(x, 6, (3, 3), (1, 1), "VALID", "RELU")
    x = net.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", "NONE", dilation=(1, 1))
    x = net.hard_swish(x)
    x = net.max_pool2d(x, (2, 2), (1, 1), "SAME")
    model = net.build(net.conv2d(x, 4, (1, 1)))
    planned = planned_verified_and_bit_exact(model, "3")
    stage = planned.program.patch_stage
    assert stage is not None and (stage.rows, stage.cols) == (3, 3)
    assert planned.graph.operators[stage.ops[0]].opcode == "PAD"


def _grid_plan_with_a_patch_buffer_over_the_stage_output():
    """_vww_like in a 2 x 2 grid as the planner lays it out, and the same
    layout with the scatter buffer moved onto the stage output's bytes."""
    model = _vww_like()
    planned = plan_model(model, PlanOptions(patches="2", time_limit=1.0))
    stage = planned.program.patch_stage
    assert stage is not None and stage.cols == 2
    placements = planned.lifetimes.placements
    good = dict(planned.plan.offsets)
    bad = {**good, placements[stage.scatter].buffer: good[placements[stage.output].buffer]}
    return model, planned, stage, good, bad


def test_verifier_rejects_a_patch_buffer_over_the_stage_output():
    _, planned, stage, good, bad = _grid_plan_with_a_patch_buffer_over_the_stage_output()
    problem = planned.lifetimes.problem
    assert not verify(problem, good, planned.plan.arena_bytes)
    errors = verify(problem, bad, planned.plan.arena_bytes)
    scatter, output = (planned.lifetimes.placements[t].buffer for t in (stage.scatter, stage.output))
    assert any(f"{min(scatter, output)} and {max(scatter, output)} share bytes" in e for e in errors), errors


def test_check_build_stops_a_patch_scattered_from_over_the_stage_output(tmp_path):
    from test_codegen import run_host, seeded_inputs

    from mcu_planner.emit.codegen import generate
    from mcu_planner.emit.output_dir import write_output
    from mcu_planner.errors import CheckMismatch
    from mcu_planner.memory.planning import ArenaPlan

    model, planned, stage, good, bad = _grid_plan_with_a_patch_buffer_over_the_stage_output()
    graph, lifetimes = planned.graph, planned.lifetimes
    samples, expected = seeded_inputs(graph, model, count=1)

    def run(name: str, offsets: dict[int, int]):
        plan = ArenaPlan("test layout", offsets, planned.plan.arena_bytes, False, 0.0)
        out = write_output(generate(graph, lifetimes, plan, name="net"), tmp_path / name / "gen")
        return run_host(out, "net", graph, samples, check_build=True, workdir=tmp_path / name / "run")

    assert run("good", good).outputs == expected
    last = graph.operators[stage.ops[-1]]
    message = rf"op {last.index} \({last.opcode}\) writes tensor {stage.scatter}:.* over live tensor {stage.output}:"
    with pytest.raises(CheckMismatch, match=message):
        run("bad", bad)


@needs_cortex_m
def test_grid_model_bit_exact_on_mps2_an386():
    report = check_model(_vww_like(1), target="mps2-an386", inputs=2, time_limit=1.0, patches="3x2")
    assert report.passed


def _wide_model() -> bytes:
    net = Int8Net(5)
    x = net.input((1, 160, 160, 3))
    x = net.conv2d(x, 16, (3, 3), (2, 2), "SAME", "RELU6")
    x = net.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", "RELU6")
    x = net.conv2d(x, 24, (1, 1), (1, 1), "SAME", "RELU6")
    x = net.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", "RELU6")
    x = net.conv2d(x, 8, (1, 1), (1, 1), "SAME", "NONE")
    return net.build(net.average_pool2d(x, (2, 2), (2, 2), "VALID"))


def test_on_a_wide_image_a_grid_beats_every_strip_cut():
    """Strips can get no thinner than their halo rows across the whole width;
    a grid's patches shrink in both axes.  Every strip count the search tries
    against the n x n grids, each planned and verified."""
    model = _wide_model()

    def planned_figures(patches: str) -> tuple[int, int]:
        planned = plan_model(model, PlanOptions(patches=patches, time_limit=1.0))
        stage = planned.program.patch_stage
        assert stage is not None
        assert not verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes)
        return planned.plan.arena_bytes, stage.extra_macs

    height = 80  # _wide_model's output rows: the counts that cut them into equal strips (but the last)
    strips = [planned_figures(f"{n}x1") for n in range(2, 17) if n in patch_counts(height)]
    grids = [planned_figures(str(n)) for n in range(2, 7)]
    best_strips = min(strips)
    assert any(arena < best_strips[0] and macs <= best_strips[1] for arena, macs in grids), (strips, grids)
    auto = plan_model(model, PlanOptions(patches="auto", time_limit=1.0))
    assert auto.program.patch_stage is not None and auto.program.patch_stage.cols > 1
    assert auto.plan.arena_bytes <= min(min(strips), min(grids))[0]
    json = patches_json(auto.program)
    assert json is not None and json["grid"] == [auto.program.patch_stage.rows, auto.program.patch_stage.cols]


# -- every technique at once (issue item 7) ----------------------------------

# Random networks (test_random_networks.py's generator) whose tightest budget
# takes, between them, every technique: patches (strips or a grid), in-place
# depthwise, partial overlaps through raster walks, and another op order.
# (Since the convolutions' columns became planned scratch, net 34 no longer
# takes in-place depthwise at its tightest budget; net 42 does.)
EVERY_TECHNIQUE_RECIPES = [
    (42, "depthwise", False, False, 2),
    (40, "residual", False, False, 3),
    (37, "inception", False, False, 2),
    (52, "pool", False, False, 3),
]


def _tightest(recipe):
    """The network and its plan under the smallest budget the planner reaches with patches off or auto."""
    from test_random_networks import make_network

    net = make_network(recipe)
    # Without a budget the convolutions keep the M4 DSP blocks' scratch, which
    # a budget gives up first (pipeline.plan_analysed): the budgets come from
    # the plans without it.
    with compact_columns_everywhere():
        loose = plan_model(net.model, PlanOptions(patches="off", time_limit=1.0))
        tightest = plan_model(net.model, PlanOptions(patches="auto", time_limit=1.0))
    ram = min(loose.ram_needed, tightest.ram_needed)
    return net, ram, plan_model(net.model, PlanOptions(ram=ram, time_limit=1.0))


def _techniques(planned) -> set[str]:
    problem, offsets = planned.lifetimes.problem, planned.plan.offsets
    sizes = {b.id: b.size for b in problem.buffers}
    used = set()
    stage = planned.program.patch_stage
    if stage is not None:
        used.add("grid" if stage.cols > 1 else "strips")
    if in_place_depthwise_ops(planned.program):
        used.add("in-place depthwise")
    for step in problem.steps:
        for o in step.overlaps:
            out_at, in_at = offsets[o.output], offsets[o.input]
            if out_at < in_at + sizes[o.input] and in_at < out_at + sizes[o.output]:
                used.add("overlap")
    if planned.op_order is not None and list(planned.op_order) != sorted(planned.op_order):
        used.add("order")
    return used


@pytest.mark.parametrize("recipe", EVERY_TECHNIQUE_RECIPES, ids=lambda r: f"net{r[0]:02d}_{r[1]}_x{r[4]}")
def test_random_networks_with_every_technique_under_a_tight_budget_bit_exact(recipe):
    net, ram, planned = _tightest(recipe)
    assert planned.fits
    assert not verify(planned.lifetimes.problem, planned.plan.offsets, planned.plan.arena_bytes)
    report = check_model(net.model, inputs=2, seed=recipe[0], ram=ram, time_limit=1.0, raise_on_mismatch=False)
    assert report.passed, f"{net.name} ({sorted(net.features)}): {report.mismatch_message()}"


def test_the_tight_sample_takes_every_technique():
    used = set()
    for recipe in EVERY_TECHNIQUE_RECIPES:
        used |= _techniques(_tightest(recipe)[2])
    assert used >= {"grid", "in-place depthwise", "overlap", "order"}, used


def test_cli_reports_a_grid_in_the_report_and_the_plan_json(tmp_path, capsys):
    import json

    from mcu_planner.cli import main

    model_path, plan_path = tmp_path / "chain.tflite", tmp_path / "plan.json"
    model_path.write_bytes(_vww_like())
    assert main([str(model_path), "--patches", "2x3", "--json", str(plan_path)]) == 0
    out = capsys.readouterr().out
    patches = json.loads(plan_path.read_text())["techniques"]["patches"]
    assert patches["grid"] == [2, 3]
    graph = read_model(model_path.read_bytes())
    stage = make_stage(lower_program(graph), tuple(patches["ops"]), patches["strip_rows"], patches["patch_cols"])
    assert (stage.rows, stage.cols) == (2, 3) and patches["extra_macs"] == stage.extra_macs > 0
    assert f"run in 6 patches of {stage.strip_rows}x{stage.patch_cols} output pixels (grid 2x3)" in out
    assert main([str(model_path), "--patches", "1x1"]) == 2
    assert "RxC" in capsys.readouterr().err


@pytest.mark.parametrize("grid", [(2, 2), (3, 3), (2, 3), (6, 2)])
def test_the_stage_overlap_bound_holds_for_the_grid_walk_byte_by_byte(grid):
    """The stage output placed as far into the stage input as the bound
    allows; then every patch, in the order the generated loop runs them,
    gathers its input window and scatters its output patch: no byte it
    gathers has been scattered over before."""
    from mcu_planner.memory.lifetimes import compute_lifetimes
    from mcu_planner.memory.problem import align_down

    graph = read_model(_vww_like())
    program = lower_program(graph)
    ops = candidate_stages(program)[-1]
    height, width = graph.tensors[graph.operators[ops[-1]].outputs[0]].shape[1:3]
    stage = make_stage(program, ops, -(-height // grid[0]), -(-width // grid[1]))
    assert (stage.rows, stage.cols) == grid
    patched = with_stage(program, stage)
    problem = compute_lifetimes(patched).problem
    (overlap,) = [o for step in problem.steps for o in step.overlaps if o.span > 1]
    shift = align_down(overlap.max_offset, problem.alignment) + overlap.output_at - overlap.input_at
    inp, out = graph.tensors[stage.input], graph.tensors[stage.output]
    in_pixel, out_pixel = inp.nbytes // (inp.shape[1] * inp.shape[2]), out.nbytes // (out.shape[1] * out.shape[2])
    overwritten = np.zeros(inp.nbytes, dtype=bool)
    for windows in stage.windows:
        first, last = windows[0], windows[-1]
        assert first.columns is not None and last.columns is not None
        for y in range(first.in_first, first.in_end):
            start = (y * inp.shape[2] + first.columns.in_first) * in_pixel
            end = (y * inp.shape[2] + first.columns.in_end) * in_pixel
            assert not overwritten[start:end].any(), f"patch reads input row {y} after a patch wrote over it"
        for y in range(last.out_first, last.out_end):
            start = shift + (y * out.shape[2] + last.columns.out_first) * out_pixel
            end = shift + (y * out.shape[2] + last.columns.out_end) * out_pixel
            overwritten[max(0, start) : max(0, min(end, inp.nbytes))] = True
    assert overwritten.any(), "the output lies over the input at the bound"
