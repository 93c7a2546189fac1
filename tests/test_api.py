"""The Python API (mcu_planner.plan / Plan / check): the CLI's figures,
no file I/O unless asked, picklable plans, the CLI's exit codes on errors."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest
from conftest import REPO, model_param, needs_shared, shared_model_paths

import mcu_planner
from mcu_planner.cli import main

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
HEAVY = ("tensorflow", "ai_edge_litert", "tflite_runtime")


def test_importing_and_planning_load_neither_tensorflow_nor_litert():
    script = (
        "import sys, mcu_planner\n"
        f"heavy = {HEAVY!r}\n"
        "assert 'numpy' not in sys.modules, 'import mcu_planner loads numpy'\n"
        f"plan = mcu_planner.plan({str(EXAMPLE)!r}, ram='64K')\n"
        "plan.to_json(); plan.flash\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _cli_json(tmp_path, model, *flags) -> dict:
    path = tmp_path / "plan.json"
    assert main([str(model), "--json", str(path), *flags]) == 0
    return json.loads(path.read_text())


def test_plan_is_the_cli_plan_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    plan = mcu_planner.plan(str(EXAMPLE), ram="64K")
    assert list(tmp_path.iterdir()) == []  # no file I/O unless asked
    record = _cli_json(tmp_path, EXAMPLE, "--ram", "64K")
    assert plan.to_json() == record
    assert (plan.fits, plan.arena_bytes, plan.lower_bound_bytes) == (
        True,
        record["arena_bytes"],
        record["lower_bound_bytes"],
    )
    assert plan.live_peak_bytes == record["live_peak_bytes"] and plan.ram == 65536
    # The techniques the CLI's JSON counts (the default overlaps one op more on its slower walk, by the cost model).
    assert plan.techniques == [f"overlaps {record['techniques']['overlap_ops']}"] and plan.extra_macs_percent == 0.0
    # Flash as the CLI's -o counts it (weights and tables; the code needs a compiler).
    assert plan.flash.weights > 0 and plan.flash.total == plan.flash.weights + plan.flash.tables
    # The same from the model's bytes; the record names it model.tflite.
    from_bytes = mcu_planner.plan(EXAMPLE.read_bytes(), ram=65536)
    assert from_bytes.sha256 == plan.sha256 and from_bytes.to_json()["tensors"] == record["tensors"]


def test_a_plan_over_budget_is_a_plan_and_generate_refuses_it(tmp_path):
    plan = mcu_planner.plan(str(EXAMPLE), ram="1K", patches="off")
    assert not plan.fits and plan.ram_needed > 1024
    with pytest.raises(mcu_planner.DoesNotFit) as error:
        plan.generate(tmp_path / "out")
    assert error.value.exit_code == 3 and "short" in error.value.message
    assert not (tmp_path / "out").exists()


def test_plans_pickle_and_ram_min_is_the_cli_figure(capsys):
    plan = mcu_planner.plan(str(EXAMPLE), ram="min")
    again = pickle.loads(pickle.dumps(plan))
    assert again.to_json() == plan.to_json() and again.ram == plan.ram
    assert main([str(EXAMPLE), "--ram", "min"]) == 0
    assert f"smallest --ram: {plan.ram:,} B; techniques: {', '.join(plan.techniques)};" in capsys.readouterr().out


@pytest.mark.parametrize(
    "model, options, error, code",
    [
        ("missing.tflite", {}, "InputError", 2),
        (b"not a model", {}, "InputError", 2),
        (str(EXAMPLE), {"ram": "lots"}, "InputError", 2),
        (str(EXAMPLE), {"planner": "nope"}, "InputError", 2),
        (str(EXAMPLE), {"patches": "7y"}, "InputError", 2),
        (str(EXAMPLE), {"max_extra_macs": 5}, "InputError", 2),
    ],
)
def test_errors_carry_the_cli_exit_code_and_one_line(model, options, error, code):
    with pytest.raises(mcu_planner.McuPlanError) as raised:
        mcu_planner.plan(model, **options)
    assert type(raised.value).__name__ == error and raised.value.exit_code == code
    assert raised.value.message and "\n" not in raised.value.message


@pytest.mark.slow
def test_generate_writes_what_dash_o_writes(tmp_path):
    plan = mcu_planner.plan(str(EXAMPLE), ram="64K")
    plan.generate(tmp_path / "api")
    assert main([str(EXAMPLE), "--ram", "64K", "-o", str(tmp_path / "cli")]) == 0
    api = {p.name: p.read_bytes() for p in (tmp_path / "api").iterdir()}
    cli = {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()}
    assert api == cli


@pytest.mark.slow
def test_check_compares_with_litert():
    report = mcu_planner.check(str(EXAMPLE), ram="64K", inputs=2)
    assert report.passed and report.summary() == "bit-exact 2/2"


@needs_shared
@pytest.mark.parametrize("model", [model_param(p) for p in shared_model_paths()])
def test_plan_matches_the_cli_json_on_every_shared_model(tmp_path, capsys, model):
    # --planner greedy: a plan that no time limit can change between the two runs.
    flags = ["--ram", "16M", "--planner", "greedy"]
    assert mcu_planner.plan(str(model), ram="16M", planner="greedy").to_json() == _cli_json(tmp_path, model, *flags)
