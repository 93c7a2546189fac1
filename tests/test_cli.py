"""The command as users run it: exit codes, one-line errors, nothing half written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MODELS_DIR, REPO, needs_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_planner.cli import main
from mcu_planner.errors import MAX_UNSUPPORTED_LINES
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.problem import Buffer, Problem
from mcu_planner.memory.verify import verify
from mcu_planner.sizes import parse_size

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
MOBILENET = MODELS_DIR / "tflite-micro" / "mobilenet_v2_quantized_1x3x224x224.tflite"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=300,
    )


def run_main(capsys, *args) -> subprocess.CompletedProcess:
    """`run_cli` in this process (no interpreter start-up): main's exit code
    (argparse's too) and what it wrote."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["mcu-plan", *map(str, args)], code, out, err)


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, *fragments: str) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(
    "text, expected",
    [("262144", 262144), ("256K", 262144), ("256KiB", 262144), ("1M", 1048576), ("1.5M", 1572864), ("64kb", 65536)],
)
def test_sizes_as_users_write_them(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "K", "1.5", "-3K", "12Q", "0.3K"])
def test_sizes_that_are_not_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_example_fits_and_the_json_plan_is_valid(tmp_path):
    plan_path = tmp_path / "plan.json"
    result = run_cli(EXAMPLE, "--ram", "64K", "--json", plan_path, "--map")
    assert result.returncode == 0, result.stderr
    graph = read_model(EXAMPLE)
    lifetimes = compute_lifetimes(graph, alignment=16)
    # With ops that may run in place the live peak bounds nothing, and the report says so.
    bound_name = "live peak" if lifetimes.problem.in_place_pairs() else "lower bound"
    assert "fits" in result.stdout and bound_name in result.stdout and "memory map" in result.stdout
    plan = json.loads(plan_path.read_text())
    assert plan["planner"] and plan["align"] == 16

    # Rebuild the problem from the JSON alone and verify it independently of the tool.
    by_index = {t["index"]: t for t in plan["tensors"]}
    assert set(by_index) == set(lifetimes.placements)

    def root_of(entry):
        while "alias_of" in entry:
            entry = by_index[entry["alias_of"]]
        return entry

    roots = [t for t in plan["tensors"] if "alias_of" not in t]
    buffers = []
    for t in roots:
        members = [m for m in plan["tensors"] if root_of(m) is t]
        size = max(m["offset"] + m["bytes"] for m in members) - t["offset"]
        buffers.append(
            Buffer(
                t["index"],
                -(-size // 16) * 16,
                min(m["first_op"] for m in members),
                max(m["last_op"] for m in members) + 1,
            )
        )
    problem = Problem(tuple(buffers), 16, lifetimes.problem.steps)
    offsets = {t["index"]: t["offset"] for t in roots}
    assert verify(problem, offsets, plan["arena_bytes"]) == []
    assert plan["arena_bytes"] >= plan["lower_bound_bytes"]
    for t in plan["tensors"]:
        assert t["bytes"] == graph.tensors[t["index"]].nbytes


def test_a_budget_below_the_arena_exits_3_and_writes_nothing(tmp_path):
    plan_path = tmp_path / "plan.json"
    # Whole tensors only: by default a budget below the arena runs a stage in patches instead.
    ok = run_cli(EXAMPLE, "--ram", "64K", "--patches", "off", "--json", plan_path)
    plan = json.loads(plan_path.read_text())
    assert plan["ram"]["arena_bytes"] == plan["arena_bytes"] < plan["ram"]["total_bytes"]
    plan_path.unlink()
    # The default plan may leave bytes for speed (a slower raster walk that
    # --ram would take): go down to the smallest RAM first.
    total = plan["ram"]["total_bytes"]
    result = run_cli(EXAMPLE, "--ram", str(total - 1), "--patches", "off", "--json", plan_path)
    while result.returncode == 0:
        total = json.loads(plan_path.read_text())["ram"]["total_bytes"]
        plan_path.unlink()
        result = run_cli(EXAMPLE, "--ram", str(total - 1), "--patches", "off", "--json", plan_path)
    assert_one_line_error(result, 3, "1 B short", "peak is at op")
    assert not plan_path.exists()
    assert ok.returncode == 0


@needs_shared
def test_mobilenet_v2_does_not_fit_256k_and_says_why():
    from conftest import parse_int, shared_model_table

    row = next(r for r in shared_model_table() if r["file"].endswith(MOBILENET.name))
    live_peak = parse_int(row["live peak B"])  # 16-byte aligned sizes change nothing here
    graph = read_model(MOBILENET)

    def beside_the_arena(alias: bool) -> int:
        # A uint16 counter per buffer (in fours); the conv columns are planned scratch in the arena.
        buffers = len(compute_lifetimes(graph, alignment=16, alias=alias).problem.buffers)
        return 2 * (-(-buffers // 4) * 4)

    # Without aliasing (and without strips, patches.py) no output overlaps its
    # input: the arena is the live peak.
    result = run_cli(MOBILENET, "--ram", "256K", "--alias", "off", "--patches", "off")
    assert_one_line_error(
        result,
        3,
        f"{live_peak + beside_the_arena(False) - 262144:,} B short",
        f"whose live tensors reach {live_peak:,} B:",
    )
    # With it, outputs start inside their dying inputs: the arena is the
    # largest tensor (the 114 x 114 x 96 PAD output) and the first group of
    # pixels (96 B each) of the stride-2 depthwise output after it must start
    # below that tensor: as many pixels as the kernel's walk writes at a time.
    from mcu_planner.lowering.conv import WALKS

    largest = max(t.nbytes for t in graph.tensors if not t.is_constant)
    assert largest == 114 * 114 * 96
    group = WALKS["mcu_depthwise_conv_2d_s8_3x3"].pixels_per_group
    whole_tensors = largest + group * 96
    result = run_cli(MOBILENET, "--ram", "256K", "--patches", "off")
    assert_one_line_error(
        result, 3, f"{whole_tensors + beside_the_arena(True) - 262144:,} B short", f"reach {whole_tensors:,} B:"
    )
    # By default a budget that nothing fits is still planned with the stage in
    # strips that needs the least: the shortfall said is what strips reach.
    result = run_cli(MOBILENET, "--ram", "256K")
    needs = int(re.search(r"needs ([0-9,]+) B", result.stderr).group(1).replace(",", ""))
    assert 262144 < needs < whole_tensors + beside_the_arena(True)
    # The op named is where that plan's buffers reach the top of its arena.
    arena = re.search(r"\(arena ([0-9,]+) B", result.stderr).group(1)
    assert_one_line_error(result, 3, f"whose live tensors reach {arena} B:")
    # That figure fits, and 16 B less names it again: the smallest --ram
    # (test_ram_min runs the bisection itself on the other shared models).
    assert run_cli(MOBILENET, "--ram", str(needs)).returncode == 0
    assert_one_line_error(run_cli(MOBILENET, "--ram", str(needs - 16)), 3, f"needs {needs:,} B", "16 B short")


def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    text = tmp_path / "notes.tflite"
    text.write_text("this is not a model\n" * 10)
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(EXAMPLE.read_bytes()[:2000])
    corrupt = tmp_path / "corrupt.tflite"
    data = bytearray(EXAMPLE.read_bytes())
    data[0:4] = (len(data) + 4096).to_bytes(4, "little")  # the root table offset points past the end
    corrupt.write_bytes(bytes(data))
    huge = tmp_path / "huge.tflite"
    huge.write_bytes(_model_with_overflowing_dimensions())
    cases = [
        ([tmp_path / "missing.tflite", "--ram", "1M"], "missing.tflite"),
        ([empty, "--ram", "1M"], "empty"),
        ([text, "--ram", "1M"], "TFL3"),
        ([truncated, "--ram", "1M"], "truncated"),
        ([corrupt, "--ram", "1M"], "corrupt"),
        ([huge, "--ram", "1M"], "huge.tflite"),
        ([EXAMPLE, "--ram", "1M", "--json", tmp_path / "no" / "such" / "dir" / "p.json"], "cannot write"),
        ([EXAMPLE, "--board", "mps2-an386", "-o", tmp_path / "fw"], "--board needs --ram"),
        ([EXAMPLE, "--ram", "1M", "-o", tmp_path / "c", "--name", "mcu_net"], "reserved for the runtime"),
        ([EXAMPLE, "--ram", "lots"], "not a size"),
        ([EXAMPLE, "--planner", "magic"], "unknown planner"),
        ([], "no model"),
    ]
    # One case through a real process (exit status, stderr, no traceback), the
    # rest through main() in this process: the same code path, without an
    # interpreter start-up each.
    assert_one_line_error(run_cli(*cases[0][0]), 2, cases[0][1])
    for args, fragment in cases[1:]:
        assert_one_line_error(run_main(capsys, *args), 2, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["empty.tflite", "notes.tflite", "truncated.tflite", "corrupt.tflite", "huge.tflite"]
    )


def _model_with_overflowing_dimensions() -> bytes:
    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    q = {"scale": 0.1, "zero_point": 0}
    x = mb.add_tensor((1 << 30, 1 << 30, 1 << 20), "int8", quant=q, name="x")
    y = mb.add_tensor((1 << 30, 1 << 30, 1 << 20), "int8", quant=q, name="y")
    mb.add_op("RELU", [x], [y])
    mb.inputs, mb.outputs = [x], [y]
    return mb.build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_models_never_crash_the_command(tmp_path, capsys, data):
    original = bytearray(EXAMPLE.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(original) - 1))
        original[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(original))))
    mutated = tmp_path / "mutated.tflite"
    mutated.write_bytes(bytes(original[:cut]))
    outdir, plan = tmp_path / "out", tmp_path / "plan.json"
    code = main([str(mutated), "--ram", "64K", "-o", str(outdir), "--json", str(plan)])
    err = capsys.readouterr().err
    assert code in (0, 2, 3, 4), err
    if code:
        lines = err.strip().splitlines()
        if code == 4:
            # Unsupported: the error line, then one indented line per missing
            # operator and dtype (errors.unsupported_model_error).
            assert len(lines) <= MAX_UNSUPPORTED_LINES + 2, err
            assert all(line.startswith("  ") for line in lines[1:]), err
        else:
            assert len(lines) == 1, err
        assert not outdir.exists() and not plan.exists()
    else:
        assert (outdir / "mutated.h").is_file() and json.loads(plan.read_text())["arena_bytes"] > 0
    for leftover in (outdir, plan):
        if leftover.is_dir():
            import shutil

            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()


def _intervals_file(tmp_path: Path) -> Path:
    # Five buffers whose live peak is 12 and whose optimum is 12 (minimalloc's README example shape).
    path = tmp_path / "small.csv"
    path.write_text("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n")
    return path


def test_intervals_within_capacity_write_verified_offsets(tmp_path):
    from mcu_planner.memory.intervals import read_intervals
    from mcu_planner.memory.problem import problem_from_intervals

    source = _intervals_file(tmp_path)
    out = tmp_path / "offsets.csv"
    result = run_cli("--intervals", source, "--capacity", "12", "--out", out)
    assert result.returncode == 0, result.stderr
    rows = [line.split(",") for line in out.read_text().splitlines()[1:]]
    assert [r[0] for r in rows] == ["b1", "b2", "b3", "b4", "b5"]
    buffers = read_intervals(source)
    problem = problem_from_intervals(buffers)
    offsets = {b.id: int(r[4]) for b, r in zip(buffers, rows, strict=True)}
    assert verify(problem, offsets, 12) == []


def test_intervals_over_capacity_exit_3(tmp_path):
    result = run_cli("--intervals", _intervals_file(tmp_path), "--capacity", "11", "--planner", "optimal")
    assert_one_line_error(result, 3, "11 B")


def test_malformed_intervals_exit_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\nb1,0,x,4\n")
    assert_one_line_error(run_cli("--intervals", bad), 2, "bad.csv")


def test_the_readme_example_application_builds_and_runs(tmp_path):
    """The README's two lines: generate C for the bundled model, build the example app with it."""
    import numpy as np

    from mcu_planner.targets.reference import ReferenceModel

    outdir = tmp_path / "kws"
    assert run_cli(EXAMPLE, "--ram", "64K", "-o", outdir).returncode == 0
    app = tmp_path / "kws_app"
    build = subprocess.run(
        [
            "cc",
            "-std=c99",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I",
            str(outdir),
            *map(str, sorted(outdir.glob("*.c"))),
            str(REPO / "examples" / "kws_app.c"),
            "-lm",
            "-o",
            str(app),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(app)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr

    graph = read_model(EXAMPLE)
    inp = graph.tensors[graph.inputs[0]]
    silence = np.full(inp.shape, inp.quantization.zero_points[0], dtype=np.int8)
    scores = ReferenceModel(EXAMPLE.read_bytes()).run([silence])[0].reshape(-1)
    assert run.stdout.startswith(f"class {int(np.argmax(scores))}, ")


def test_a_json_path_that_cannot_be_written_stops_before_any_output(tmp_path):
    outdir = tmp_path / "out"
    result = run_cli(EXAMPLE, "--ram", "64K", "-o", outdir, "--json", tmp_path / "missing" / "plan.json")
    assert_one_line_error(result, 2, "cannot write")
    assert not outdir.exists()


def test_a_model_without_outputs_is_bad_input(tmp_path):
    from mcu_planner_testing.builder import ModelBuilder

    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", quant={"scale": 0.1, "zero_point": 0}, name="x")
    mb.inputs, mb.outputs = [x], []
    path = tmp_path / "no_outputs.tflite"
    path.write_bytes(mb.build())
    assert_one_line_error(run_cli(path, "--ram", "1K"), 2, "no outputs")


@needs_shared
def test_planner_all_picks_what_auto_picks():
    model = MODELS_DIR / "mlcommons-tiny" / "vww_96_int8.tflite"
    result = run_cli(model, "--planner", "all")
    auto = run_cli(model)
    assert result.returncode == 0 and auto.returncode == 0
    import re

    def choice(stdout: str) -> tuple[str, str]:
        line = next(row for row in stdout.splitlines() if row.startswith("arena:"))
        return re.match(r"arena: ([\d,]+ B) \(planner ([\w-]+)", line).groups()

    assert choice(result.stdout) == choice(auto.stdout)
