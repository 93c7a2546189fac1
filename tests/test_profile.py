"""The per-op profile: MACs per op from the shapes, the -DMCU_PROFILE build on
the host and under QEMU, `make run PROFILE=1`, and a normal build that the
profile hooks leave untouched."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from conftest import needs_cortex_m

from mcu_planner.emit.output_dir import write_output
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.program import lower_program
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.check import check_model, random_inputs
from mcu_planner.targets.firmware_build import build_firmware
from mcu_planner.targets.profiling import parse_profile
from mcu_planner_testing.builder import Int8Net, lstm_model

# input (1, 9, 9, 5) -> CONV_2D 7 filters 3x3 SAME -> DEPTHWISE_CONV_2D 3x3 VALID
# stride 2 -> ADD (with itself) -> FULLY_CONNECTED 6 units over the 4x4 positions.
HEIGHT, WIDTH, CHANNELS, FILTERS, UNITS = 9, 9, 5, 7, 6
DW_SIDE = (HEIGHT - 3) // 2 + 1  # VALID, stride 2
# Counted by hand from the layer sizes above: outputs x products per output.
EXPECTED_MACS = {
    "CONV_2D": HEIGHT * WIDTH * FILTERS * (3 * 3 * CHANNELS),
    "DEPTHWISE_CONV_2D": DW_SIDE * DW_SIDE * FILTERS * (3 * 3),
    "ADD": 0,
    "FULLY_CONNECTED": DW_SIDE * DW_SIDE * UNITS * FILTERS,
}
# Ticks a bracket may add to or hide from one op (half of each SysTick read,
# the hook's call and return: a few dozen instructions, about one tick at 25
# to 32 MHz SysTick per GHz of -icount), plus the work between ops that no
# bracket covers (buffer release, invoke's own start and end).
TICKS_PER_BRACKET = 3
TICKS_OUTSIDE_OPS = 40


def small_model() -> bytes:
    net = Int8Net(seed=3)
    x = net.input((1, HEIGHT, WIDTH, CHANNELS))
    x = net.conv2d(x, FILTERS, activation="RELU")
    x = net.depthwise_conv2d(x, strides=(2, 2), padding="VALID")
    x = net.add(x, x)
    return net.build(net.fully_connected(x, UNITS))


def test_macs_per_op_match_a_count_from_the_layer_sizes():
    graph = read_model(small_model())
    assert {op.opcode: lower_program(graph).facts(op.index).macs for op in graph.operators} == EXPECTED_MACS


@pytest.mark.parametrize("projection", [False, True])
def test_lstm_macs_count_every_gate_matrix_per_step(projection):
    batch, time, n_input, n_cell = 2, 3, 4, 5
    n_output = 3 if projection else n_cell
    graph = read_model(
        lstm_model(batch=batch, time=time, n_input=n_input, n_cell=n_cell, n_output=n_output, projection=projection)
    )
    (op,) = graph.operators
    per_step = 4 * n_cell * n_input + 4 * n_cell * n_output + (n_output * n_cell if projection else 0)
    assert lower_program(graph).facts(op.index).macs == batch * time * per_step


def test_a_normal_build_preprocesses_without_any_profile_hook(tmp_path):
    """Without -DMCU_PROFILE the hooks vanish in the preprocessor: the compiled
    model is the one generated before profiling existed."""
    _, _, files = generate_for_model(small_model(), name="small")
    outdir = write_output(files, tmp_path / "out")
    normal = subprocess.run(["cc", "-std=c99", "-E", "-P", "small.c"], cwd=outdir, capture_output=True, text=True)
    profiled = subprocess.run(
        ["cc", "-std=c99", "-E", "-P", "-DMCU_PROFILE", "small.c"], cwd=outdir, capture_output=True, text=True
    )
    assert normal.returncode == 0 and profiled.returncode == 0
    assert "small_profile" not in normal.stdout
    assert profiled.stdout.count("small_profile_begin(") == 1 + len(EXPECTED_MACS)  # declaration + one per op


def _check_profile(report, graph):
    profile = report.profile
    assert report.passed and profile is not None
    assert [(t.op, t.name) for t in profile.ops] == [(op.index, op.opcode) for op in graph.operators]
    assert {t.name: t.macs for t in profile.ops} == EXPECTED_MACS
    assert all(t.ticks > 0 for t in profile.ops)
    return profile


def test_host_profile_times_every_op():
    graph = read_model(small_model())
    report = check_model(small_model(), inputs=2, check_build=False, profile=True)
    profile = _check_profile(report, graph)
    assert profile.unit == "ns"
    assert profile.total_ticks <= profile.invoke_ticks


@needs_cortex_m
def test_qemu_profile_adds_up_to_the_whole_inference():
    graph = read_model(small_model())
    report = check_model(small_model(), target="mps2-an386", inputs=2, check_build=False, profile=True)
    profile = _check_profile(report, graph)
    whole = report.ticks_per_inference  # the normal build, without hooks
    slack = TICKS_PER_BRACKET * len(profile.ops)
    assert whole - TICKS_OUTSIDE_OPS - slack <= profile.total_ticks <= whole + slack
    assert profile.total_ticks <= profile.invoke_ticks <= whole + TICKS_OUTSIDE_OPS + slack
    # The cycle estimate (traced run, tests/test_cycles.py): one figure per op
    # adding up to the total; every M4 instruction costs at least a cycle, and
    # the bracket's instructions are the ticks x 40 of -icount shift=0.
    estimate = profile.cycles
    assert estimate is not None and estimate.core == "cortex-m4" and estimate.op_cycles is not None
    assert abs(sum(estimate.op_cycles) - estimate.total_cycles) <= len(profile.ops)
    for op, cycles in zip(profile.ops, estimate.op_cycles, strict=True):
        assert (op.ticks - TICKS_PER_BRACKET) * 40 <= cycles <= 3 * (op.ticks + TICKS_PER_BRACKET) * 40, op
    assert any(line.startswith("cycle estimate (cortex-m4") for line in report.format())
    # check --clock: the same cycles, in milliseconds at the clock given.
    line = next(x for x in profile.at_clock(120_000_000, "--clock").format() if "cycles = " in x)
    assert f"= {1e3 * estimate.total_cycles / 120e6:.3f} ms at 120 MHz (--clock)" in line, line


@pytest.mark.parametrize(
    "extra",
    [["--clock", "120M"], ["--profile", "--clock", "120M"], ["--profile", "--target", "mps2-an386", "--clock", "fast"]],
)
def test_clock_without_a_profiled_board_run_is_an_input_error(extra, tmp_path, capsys):
    from mcu_planner.cli import main

    model = tmp_path / "m.tflite"
    model.write_bytes(small_model())
    assert main(["check", str(model), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--clock" in err[-1], err


@needs_cortex_m
def test_make_run_profile_prints_the_profile(tmp_path):
    graph, _, files = generate_for_model(small_model(), name="small")
    outdir = write_output(files, tmp_path / "out")
    build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=64 * 1024)
    inputs = random_inputs(graph, np.random.default_rng(1))
    np.ascontiguousarray(inputs[0]).tofile(tmp_path / "input0.bin")
    done = subprocess.run(
        ["make", "-s", "-C", str(outdir), "run", "PROFILE=1", f"RUN_DIR={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    profile = parse_profile(done.stdout, "SysTick ticks")
    assert profile is not None and {t.name: t.macs for t in profile.ops} == EXPECTED_MACS
    assert (outdir / "firmware-profile.elf").is_file()
