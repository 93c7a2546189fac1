"""`mcu-plan check` on every shared model the runtime supports: the generated
C, built for the host normally and with -DMCU_PLAN_CHECK, gives the reference
interpreter's bytes on three seeded random input sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import model_param, needs_shared, supported_shared_model_paths

from mcu_planner.emit import report
from mcu_planner.errors import CheckMismatch, DoesNotFit, InputError, McuPlanError
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import run_planner
from mcu_planner.targets import reference
from mcu_planner.targets.check import HostTarget, check_model
from mcu_planner_testing.builder import Int8Net, ModelBuilder


@needs_shared
@pytest.mark.parametrize("path", [model_param(p) for p in supported_shared_model_paths()] or [None])
def test_shared_model_matches_the_reference(path):
    report = check_model(path, inputs=3, seed=0, raise_on_mismatch=False)
    assert report.total == 3
    assert report.passed, report.mismatch_message()


def small_model() -> bytes:
    net = Int8Net(seed=7)
    x = net.input((1, 5, 5, 3))
    y = net.depthwise_conv2d(x, activation="RELU6")
    y = net.average_pool2d(y, pool=(5, 5), strides=(1, 1))
    y = net.reshape(y, (1, 3))
    return net.build(net.softmax(net.fully_connected(y, 4)))


def test_check_passes_a_correct_model():
    report = check_model(small_model(), inputs=4, seed=3)
    assert (report.total, report.exact, report.first_mismatch) == (4, 4, None)
    assert report.format()[-1] == "bit-exact 4/4"


def test_check_reports_the_first_differing_byte(monkeypatch):
    # A reference that is off by one in one byte of the second input set: the
    # check must name exactly that output, byte and the two values.
    true_run = reference.ReferenceModel.run
    calls = []

    def altered(self, inputs):
        outputs = true_run(self, inputs)
        calls.append(1)
        if len(calls) == 2:
            flat = outputs[0].reshape(-1)
            flat[2] = flat[2] + 1 if flat[2] < 127 else flat[2] - 1
        return outputs

    monkeypatch.setattr(reference.ReferenceModel, "run", altered)
    report = check_model(small_model(), inputs=3, seed=3, raise_on_mismatch=False)
    assert (report.total, report.exact) == (3, 2)
    output, index, expected, got = report.first_mismatch
    assert (output, index) == (0, 2) and abs(expected - got) == 1
    calls.clear()
    with pytest.raises(CheckMismatch, match=r"output 0 byte 2: expected"):
        check_model(small_model(), inputs=3, seed=3)


def test_inputs_are_seeded():
    from mcu_planner.frontend.reader import read_model
    from mcu_planner.targets.check import random_inputs

    graph = read_model(small_model())
    first = random_inputs(graph, np.random.default_rng(5))
    again = random_inputs(graph, np.random.default_rng(5))
    other = random_inputs(graph, np.random.default_rng(6))
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    # int8 inputs span the whole range, not a corner of it.
    values = np.concatenate([random_inputs(graph, np.random.default_rng(s))[0].reshape(-1) for s in range(20)])
    assert values.min() == -128 and values.max() == 127


def variable_state_model() -> bytes:
    """ADD of the input and a variable tensor: state outside the arena."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 16), "int8", (0.1, 0), name="x")
    state = mb.add_tensor((1, 16), "int8", (0.1, 0), name="state", is_variable=True)
    y = mb.add_tensor((1, 16), "int8", (0.1, 0), name="y")
    mb.add_op("ADD", (x, state), (y,))
    mb.set_io([x], [y])
    return mb.build()


def test_ram_budget_counts_variable_tensors_as_the_planner_does():
    model = variable_state_model()
    graph = read_model(model)
    lifetimes = compute_lifetimes(graph, alignment=16, alias=True)
    plan = run_planner(lifetimes.problem, "greedy")
    assert lifetimes.variable_bytes > 0
    needed = report.ram_needed(graph, lifetimes, plan)
    with pytest.raises(DoesNotFit, match="variable tensors"):
        check_model(model, planner="greedy", ram=needed - 1, inputs=1)
    assert check_model(model, planner="greedy", ram=needed, inputs=1).passed


def test_check_plans_as_mcu_plan_ram_does(monkeypatch):
    """The exact planner gets `mcu-plan`'s default time limit and the arena's
    share of the RAM, as the plan command gives it."""
    import mcu_planner.memory.planning as planning

    model = variable_state_model()
    graph = read_model(model)
    lifetimes = compute_lifetimes(graph, alignment=16, alias=True)
    plan = run_planner(lifetimes.problem, "greedy")
    ram = report.ram_needed(graph, lifetimes, plan)
    calls = []
    real_run_planner = planning.run_planner

    def recording_run_planner(problem, name, time_limit=None, capacity=None, stop_at_fit=False, work_limit=None):
        calls.append((name, time_limit, capacity, work_limit))
        return real_run_planner(problem, name, time_limit, capacity, stop_at_fit, work_limit)

    monkeypatch.setattr(planning, "run_planner", recording_run_planner)
    assert check_model(model, planner="optimal", ram=ram, inputs=1).passed
    # The arena's share: all but what the model keeps beside it (variables, counters).
    # ram is exactly the greedy plan's need; the clock bounds the search (no trials: no slower walks).
    assert calls == [("optimal", 10.0, plan.arena_bytes, None)]


def test_check_runs_the_c_mcu_plan_writes(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "state.tflite"
    path.write_bytes(variable_state_model())
    graph = read_model(path)
    lifetimes = compute_lifetimes(graph, alignment=16, alias=True)
    ram = report.ram_needed(graph, lifetimes, run_planner(lifetimes.problem, "greedy"))
    check_model(path, ram=ram, inputs=1, keep_dir=tmp_path / "checked")
    done = subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", str(path), "--ram", str(ram), "-o", str(tmp_path / "written")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr

    def tree(directory: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}

    assert tree(tmp_path / "checked") == tree(tmp_path / "written")


def test_unknown_target_and_no_inputs_are_bad_input():
    with pytest.raises(InputError, match="unknown target 'foo'.*host"):
        check_model(small_model(), target="foo")
    with pytest.raises(InputError, match="at least 1"):
        check_model(small_model(), inputs=0)


HANGING_MODEL = r"""
#include "net.h"
static volatile int spinning = 1;
static unsigned char arena[4];
int net_invoke(void) { while (spinning) { } return 0; }
void *net_input(int index) { return index == 0 ? arena : NULL; }
void *net_output(int index) { return index == 0 ? arena : NULL; }
size_t net_input_bytes(int index) { return index == 0 ? 4u : 0u; }
size_t net_output_bytes(int index) { return index == 0 ? 4u : 0u; }
"""
HANGING_HEADER = """#include <stddef.h>
#define NET_NUM_INPUTS 1
#define NET_NUM_OUTPUTS 1
int net_invoke(void);
void *net_input(int index);
void *net_output(int index);
size_t net_input_bytes(int index);
size_t net_output_bytes(int index);
"""


def test_a_hung_host_run_or_build_is_stopped(tmp_path):
    generated = tmp_path / "generated"
    generated.mkdir()
    (generated / "net.h").write_text(HANGING_HEADER)
    (generated / "net.c").write_text(HANGING_MODEL)
    run = dict(input_bytes=[4], output_bytes=[4], check_build=False)
    with pytest.raises(McuPlanError, match="did not finish 1 input set.*within 1 s"):
        HostTarget(run_timeout=1.0).run(generated, "net", [[bytes(4)]], workdir=tmp_path / "run", **run)
    # A compiler driver whose child (cc1, say) hangs: the child must end too.
    child_pid = tmp_path / "child.pid"
    stuck_compiler = tmp_path / "stuck-cc"
    stuck_compiler.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {child_pid}\nwait\n")
    stuck_compiler.chmod(0o755)
    with pytest.raises(McuPlanError, match="host build did not finish within 1 s"):
        HostTarget(str(stuck_compiler), build_timeout=1.0).run(
            generated, "net", [[bytes(4)]], workdir=tmp_path / "build", **run
        )
    assert not process_alive(int(child_pid.read_text()))


def process_alive(pid: int) -> bool:
    """Running or sleeping; a zombie awaiting its reaper counts as ended.
    SIGKILL takes effect asynchronously, so allow it a moment."""
    import time

    stat = Path(f"/proc/{pid}/stat")
    for _ in range(50):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True
