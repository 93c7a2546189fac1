"""The one pipeline (read -> lifetimes -> plan) the command line, check and
bench share, and its one fit rule."""

from __future__ import annotations

import json
from pathlib import Path

from mcu_planner import cli
from mcu_planner.memory.planners import load_all
from mcu_planner.memory.problem import arena_bytes
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_kws_int8.tflite"


def test_the_command_writes_the_plan_the_pipeline_makes(tmp_path, capsys):
    planned = plan_model(EXAMPLE, PlanOptions(planner="greedy", ram=64 * 1024))
    plan_json = tmp_path / "plan.json"
    assert cli.main([str(EXAMPLE), "--ram", "64K", "--planner", "greedy", "--json", str(plan_json)]) == 0
    capsys.readouterr()
    written = json.loads(plan_json.read_text())
    assert written["arena_bytes"] == planned.plan.arena_bytes
    offsets = {t["index"]: t["offset"] for t in written["tensors"]}
    for t, placement in planned.lifetimes.placements.items():
        assert offsets[t] == planned.plan.offsets[placement.buffer] + placement.offset


def test_a_model_fits_exactly_at_its_ram_needed():
    # The default plan may keep bytes for speed (an overlap through a slower
    # raster walk, taken only when --ram needs it): start from the smallest.
    planned = plan_model(EXAMPLE, PlanOptions(planner="greedy"))
    while (tighter := plan_model(EXAMPLE, PlanOptions(planner="greedy", ram=planned.ram_needed - 1))).fits:
        planned = tighter
    # The arena as the offsets reach and a uint16 counter per buffer (in fours);
    # no static kernel buffer: the convolutions' columns are planned scratch.
    buffers = len(planned.lifetimes.problem.buffers)
    needed = arena_bytes(planned.lifetimes.problem, planned.plan.offsets) + 2 * (-(-buffers // 4) * 4)
    assert needed == planned.ram_needed
    assert plan_model(EXAMPLE, PlanOptions(planner="greedy", ram=needed)).fits
    assert not plan_model(EXAMPLE, PlanOptions(planner="greedy", ram=needed - 1)).fits


def test_planner_all_compares_every_planner_and_keeps_the_smallest_verified_plan():
    planned = plan_model(EXAMPLE, PlanOptions(planner="all", time_limit=2.0))
    rows = dict(planned.compared)
    assert list(rows) == list(load_all())
    plans = [plan for plan in rows.values() if not isinstance(plan, str)]
    assert planned.plan in plans and planned.plan.chosen_by_auto
    assert planned.plan.arena_bytes == min(plan.arena_bytes for plan in plans)
    assert verify(planned.lifetimes.problem, planned.plan.offsets) == []
