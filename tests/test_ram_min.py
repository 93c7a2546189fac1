"""`mcu-plan --ram min`: the smallest budget a model fits (a multiple of
--align), and the one "needs N B" a failed fit reports whatever budget was asked."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, model_param, needs_shared, shared_model_paths
from test_cli import assert_one_line_error, run_main

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
# Shared models whose search takes a second or two: the fast tier's sample.
QUICK = ("hello_world_int8", "magic_wand", "micro_speech_quantized", "model_runner_codegen_model", "ad01_int8")
ALIGN = 16


def smallest(capsys, model, *flags) -> tuple[int, str]:
    result = run_main(capsys, model, "--ram", "min", *flags)
    assert result.returncode == 0, result.stderr
    found = re.search(r"^smallest --ram[^:]*: ([0-9,]+) B; techniques: (.*)$", result.stdout, re.M)
    assert found, result.stdout
    return int(found.group(1).replace(",", "")), result.stdout


def assert_smallest(capsys, tmp_path, model, *flags) -> int:
    budget, out = smallest(capsys, model, "--json", tmp_path / "plan.json", *flags)
    record = json.loads((tmp_path / "plan.json").read_text())
    # The plan printed and written is the plan at that budget, within it.
    assert re.search(rf"^  budget +{budget:,} B$", out, re.M) and ": fits" in out
    assert record["arena_bytes"] + record["variable_bytes"] <= budget
    # 16 B less does not fit, and the failure names the same smallest budget.
    less = run_main(capsys, model, "--ram", budget - ALIGN, *flags)
    assert_one_line_error(less, 3, f"needs {budget:,} B", f"{ALIGN} B short")
    return budget


def test_ram_min_on_the_example_fits_and_16_bytes_less_does_not(capsys, tmp_path):
    budget = assert_smallest(capsys, tmp_path, EXAMPLE)
    assert budget < 6000  # below the live peak: patches run the first convolutions


def test_needs_is_the_same_figure_whatever_budget_was_asked(capsys):
    # (assert_smallest asks 16 B below the smallest budget: the same figure.)
    budget, out = smallest(capsys, EXAMPLE)
    assert "patches" in out.splitlines()[0]  # the techniques the budget takes are named
    for asked in (64, 2048):
        assert_one_line_error(run_main(capsys, EXAMPLE, "--ram", asked), 3, f"needs {budget:,} B")


def test_max_extra_macs_caps_the_recomputed_work(capsys):
    budget, out = smallest(capsys, EXAMPLE, "--max-extra-macs", "0%")
    first = out.splitlines()[0]
    assert first.startswith("smallest --ram (at most 0% extra MACs)")
    assert float(re.search(r"extra MACs ([-+0-9.]+)%", first).group(1)) <= 0
    assert budget < 6000  # strips of the example recompute nothing: still below the live peak


def test_ram_min_refuses_what_it_cannot_search(capsys):
    assert_one_line_error(run_main(capsys, EXAMPLE, EXAMPLE, "--ram", "min"), 2, "one model")
    assert_one_line_error(run_main(capsys, EXAMPLE, "--max-extra-macs", "5%"), 2, "--ram min")
    assert_one_line_error(run_main(capsys, EXAMPLE, "--ram", "min", "--max-extra-macs", "x"), 2, "percentage")


@pytest.mark.slow
def test_ram_min_writes_the_c_of_the_plan_it_found(capsys, tmp_path):
    budget, out = smallest(capsys, EXAMPLE, "-o", tmp_path / "out")
    header = (tmp_path / "out" / "tiny_kws_int8.h").read_text()
    arena = int(re.search(r"#define TINY_KWS_INT8_ARENA_SIZE (\d+)", header).group(1))
    assert arena <= budget and f"arena: {arena:,} B" in out


@needs_shared
@pytest.mark.parametrize("model", [model_param(p) for p in shared_model_paths(",".join(QUICK))])
def test_ram_min_on_quick_shared_models(capsys, tmp_path, model):
    assert_smallest(capsys, tmp_path, model)


@needs_shared
@pytest.mark.slow
# mobilenet_v2's bisection alone took 37 s of the suite; test_cli checks that the
# figure its failure names fits and that 16 B less names it again.
@pytest.mark.parametrize(
    "model", [model_param(p) for p in shared_model_paths() if p.stem not in QUICK and "mobilenet_v2" not in p.stem]
)
def test_ram_min_on_every_other_shared_model(capsys, tmp_path, model):
    # The greedy planner (no time-limited exact search): each plan is the same
    # whatever the machine's load, so "fits at N, not at N - 16" is decided by
    # the search alone, not by how far a time limit let the exact planner get.
    assert_smallest(capsys, tmp_path, model, "--planner", "greedy")
