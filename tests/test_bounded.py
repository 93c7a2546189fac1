"""Every stage bounded in time and memory by the model's size, the whole
command by --time-limit: large generated models plan under a memory cap,
hostile files are refused before they are read, a tiny --time-limit stops
the searches with a verified plan and says so."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given, settings
from test_cli import assert_one_line_error, run_main
from test_overlap import _largest_safe_shift, walks

from mcu_planner.deadline import Deadline
from mcu_planner.frontend.model_file import MAX_MODEL_BYTES
from mcu_planner.memory import overlap
from mcu_planner.memory.overlap import max_output_offset
from mcu_planner.memory.problem import WindowAccess
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner_testing.builder import Int8Net

MEMORY_CAP = 2 << 30  # bytes of address space for a command under test
DONE_WHEN_SECONDS = 20  # the bound for each large model, with the defaults, in CPU seconds
# Wall-clock seconds before a command is taken for hung: the bound itself is
# on CPU time (RLIMIT_CPU), which other processes on a loaded machine do not eat.
HUNG_SECONDS = 6 * DONE_WHEN_SECONDS


def _capped(cpu_seconds: int | None) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        if cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))

    return limit


def run_capped(*args, timeout: float = 60, cpu_seconds: int | None = None) -> subprocess.CompletedProcess:
    """The command in a process limited to MEMORY_CAP of memory, to
    `cpu_seconds` of CPU time if given (SIGXCPU past it: a negative return
    code), and to `timeout` seconds of wall-clock time."""
    return subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        preexec_fn=_capped(cpu_seconds),
    )


def branches(count: int) -> bytes:
    """`count` two-convolution branches of one input, concatenated."""
    net = Int8Net(seed=2)
    x = net.input((1, 8, 8, 8))
    ends = [net.conv2d(net.conv2d(x, 8, kernel=(1, 1), activation="RELU"), 8, kernel=(1, 1)) for _ in range(count)]
    return net.build(net.concatenation(*ends))


def chain(length: int) -> bytes:
    """`length` elementwise ops one after another."""
    net = Int8Net(seed=1)
    x = net.input((1, 8))
    for i in range(length):
        x = net.relu(x) if i % 2 else net.leaky_relu(x)
    return net.build(x)


def blocks(ops: int) -> bytes:
    """About `ops` ops: blocks of four two-op branches, concatenated and mixed by a convolution."""
    net = Int8Net(seed=4)
    x = net.input((1, 4, 4, 8))
    for _ in range(ops // 10):
        ends = [net.depthwise_conv2d(net.conv2d(x, 4, kernel=(1, 1), activation="RELU")) for _ in range(4)]
        x = net.conv2d(net.concatenation(*ends), 8, kernel=(1, 1))
    return net.build(x)


@pytest.mark.slow
@pytest.mark.parametrize(
    "make, ops", [(blocks, 2500), (branches, 64), (chain, 10_000)], ids=["2500-ops", "64-branches", "10000-op-chain"]
)
def test_large_models_plan_within_the_memory_cap_and_the_done_when_time(tmp_path, make, ops):
    path = tmp_path / "large.tflite"
    path.write_bytes(make(ops))
    result = run_capped(path, timeout=HUNG_SECONDS, cpu_seconds=DONE_WHEN_SECONDS)
    assert result.returncode == 0, result.stderr
    assert "arena:" in result.stdout


def test_a_tiny_time_limit_stops_the_searches_and_keeps_a_verified_plan():
    deadline = Deadline(1e-9)
    planned = plan_model(branches(12), PlanOptions(deadline=deadline, ram=1024))
    assert "op order search" in deadline.cut_stages
    assert verify(planned.lifetimes.problem, planned.plan.offsets) == []
    assert "stopped at the time limit" in (deadline.stopped_line() or "")


def test_the_command_says_when_the_time_limit_stopped_it(tmp_path, capsys):
    path = tmp_path / "branches.tflite"
    path.write_bytes(branches(12))
    result = run_main(capsys, path, "--time-limit", "1e-9")
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if "stopped at the time limit" in line]
    assert len(notes) == 1 and "op order search" in notes[0]
    assert result.stderr == ""
    # With time to spare, no note.
    assert "stopped at the time limit" not in run_main(capsys, path).stdout


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf", "-inf", "soon"])
def test_a_time_limit_that_is_no_positive_finite_number_is_refused(capsys, value):
    assert_one_line_error(run_main(capsys, "examples/tiny_kws_int8.tflite", f"--time-limit={value}"), 2, "--time-limit")


def test_a_character_device_is_refused_before_it_is_read():
    # /dev/zero never ends: reading it grew until memory ran out.
    result = run_capped("/dev/zero", timeout=60)
    assert_one_line_error(result, 2, "/dev/zero", "character device", "not a regular file")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "model.tflite"
    os.mkfifo(fifo)
    result = run_capped(fifo, timeout=60)
    assert_one_line_error(result, 2, "FIFO", "not a regular file")


def test_a_file_over_the_size_limit_is_refused(tmp_path, capsys):
    big = tmp_path / "big.tflite"
    with open(big, "wb") as f:
        f.truncate(MAX_MODEL_BYTES + 1)  # sparse: no disk space used
    assert_one_line_error(run_main(capsys, big), 2, f"{MAX_MODEL_BYTES:,} B limit")


@contextmanager
def _chunks_of(pixels: int):
    saved = overlap.PIXELS_PER_CHUNK
    overlap.PIXELS_PER_CHUNK = pixels
    try:
        yield
    finally:
        overlap.PIXELS_PER_CHUNK = saved


@settings(max_examples=60, deadline=None)
@given(walks())
def test_the_overlap_bound_walked_in_small_chunks_is_the_same(access):
    whole = max_output_offset(access)
    channel_wise = replace(access, output_pixel_bytes=access.input_pixel_bytes, channel_wise=True)
    whole_channel_wise = max_output_offset(channel_wise, whole_pixels=True)
    for pixels in (1, 2, 5):
        with _chunks_of(pixels):
            assert max_output_offset(access) == whole == _largest_safe_shift(access)
            assert max_output_offset(channel_wise, whole_pixels=True) == whole_channel_wise


def test_a_huge_output_is_kept_apart_from_its_input_without_walking_it():
    side = 100_000
    access = WindowAccess(
        batches=1, input_h=side, input_w=side, input_pixel_bytes=1, output_h=side, output_w=side, output_pixel_bytes=1
    )
    assert max_output_offset(access) == -side * side  # no shared byte: every walk allows it


def test_a_tiny_model_with_a_huge_output_plans_within_the_memory_cap(tmp_path):
    # 800 bytes declaring a 10,000 x 10,000 image: the overlap analysis took
    # 26 B per output pixel (2.6 GB) and ended in an internal error.
    net = Int8Net(seed=5)
    x = net.input((1, 10_000, 10_000, 1))
    path = tmp_path / "huge.tflite"
    path.write_bytes(net.build(net.conv2d(x, 1, kernel=(1, 1))))
    result = run_capped(path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "arena: 200,000,000 B" in result.stdout


def test_the_model_is_read_once_for_graph_and_digest(tmp_path):
    from mcu_planner import pipeline

    path = Path(tmp_path / "kws.tflite")
    path.write_bytes((REPO / "examples" / "tiny_kws_int8.tflite").read_bytes())
    reads = []
    real = pipeline.read_model_file

    def counting(*args, **kwargs):
        reads.append(args[0])
        return real(*args, **kwargs)

    pipeline.read_model_file = counting
    try:
        planned = plan_model(path, PlanOptions())
    finally:
        pipeline.read_model_file = real
    assert len(reads) == 1
    import hashlib

    assert planned.model_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_batch_matmul_of_millions_of_batches_is_described_in_constant_size(tmp_path):
    # A few hundred bytes of model: the kernel's description was one table
    # entry per batch (1 GB while planning, 50 MB of C).
    from mcu_planner_testing.builder import FloatNet

    net = FloatNet(seed=6)
    lhs = net.input((4_000_000, 1, 2))
    path = tmp_path / "batches.tflite"
    path.write_bytes(net.build(net.batch_matmul(lhs, net.const((2, 3)))))
    assert path.stat().st_size < 1024
    result = run_capped(path, "-o", tmp_path / "out", timeout=300)
    assert result.returncode == 0, result.stderr
    model_c = tmp_path / "out" / "batches.c"
    assert model_c.is_file()
    assert model_c.stat().st_size < 64 * 1024
    assert ".batch_2 = 4000000," in model_c.read_text()


def test_progress_shows_on_a_terminal_after_two_seconds_and_is_cleared():
    import io

    now = [0.0]
    terminal = io.StringIO()
    deadline = Deadline(10.0, clock=lambda: now[0], progress_to=terminal)
    deadline.progress("op order search", 5, 100)
    assert terminal.getvalue() == ""  # a quick command shows nothing
    now[0] = 2.5
    deadline.progress("op order search", 50, 100)
    assert "op order search 50/100 (2 s)" in terminal.getvalue()
    deadline.progress("op order search", 51, 100)  # too soon after the last update
    assert "51/100" not in terminal.getvalue()
    deadline.end_progress()
    assert terminal.getvalue().endswith("\r\x1b[K")
    now[0] = 11.0
    assert deadline.expired() and deadline.remaining() == 0.0


def test_progress_never_goes_to_a_stderr_that_is_no_terminal(capsys):
    now = [100.0]
    deadline = Deadline.for_terminal(10.0, clock=lambda: now[0])  # stderr is captured here: a pipe
    now[0] += 50.0
    deadline.progress("op order search", 1, 2)
    deadline.end_progress()
    assert capsys.readouterr().err == ""


def test_the_patch_search_derives_a_bounded_number_of_candidates(monkeypatch):
    # A run of 40 spatial ops gives 39 stages, each with a dozen cuts; each
    # candidate's lifetimes cost time and memory in the model's size.
    from mcu_planner import pipeline

    net = Int8Net(seed=8)
    x = net.input((1, 8, 8, 4))
    for _ in range(40):
        x = net.depthwise_conv2d(x)
    model = net.build(x)
    ops = 40
    monkeypatch.setattr(pipeline, "PATCH_SEARCH_OPS", 10 * ops)
    derived = []
    real = pipeline.compute_lifetimes

    def counting(graph, *args, **kwargs):
        if graph.patch_stage is not None:
            derived.append(graph.patch_stage.ops)
        return real(graph, *args, **kwargs)

    monkeypatch.setattr(pipeline, "compute_lifetimes", counting)
    planned = plan_model(model, PlanOptions(ram=160, time_limit=1.0))  # below the whole tensors
    assert 0 < len(derived) <= 10
    assert verify(planned.lifetimes.problem, planned.plan.offsets) == []
