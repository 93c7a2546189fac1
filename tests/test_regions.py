"""Memory regions (`--region NAME=SIZE[@SECTION]`): every buffer in one
region, each region's plan valid on its own (checked here with the
independent verifier), the fastest region filled first, `--ram` unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import MODELS_DIR, REPO, needs_shared
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner.regions import Region, buffer_macs, subproblem
from mcu_planner.planning import run_planner
from mcu_planner.verify import verify

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
VWW = MODELS_DIR / "mlcommons-tiny" / "vww_96_int8.tflite"
TWO_REGIONS = (Region("dtcm", 32 * 1024, ".dtcm_bss"), Region("sram", 256 * 1024, None))


def mcu_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=300
    )


@needs_shared
def test_two_regions_each_verified_and_the_fast_one_filled_first():
    planned = plan_model(VWW, PlanOptions(regions=TWO_REGIONS))
    regions = planned.regions
    problem = planned.lifetimes.problem
    assert regions is not None and planned.fits
    assert set(regions.region_of) == {b.id for b in problem.buffers}
    whole = plan_model(VWW, PlanOptions()).plan.arena_bytes
    assert whole > TWO_REGIONS[0].size, "the model must not fit the first region alone for this test"
    for index, region in enumerate(TWO_REGIONS):
        ids = {b for b, r in regions.region_of.items() if r == index}
        assert ids, f"region {region.name} is empty"
        assert verify(subproblem(problem, ids), regions.plans[index].offsets, region.size) == []
    # Nothing left in the slow region would still fit the fast one.
    fast = {b for b, r in regions.region_of.items() if r == 0}
    for buffer in set(regions.region_of) - fast:
        plan = run_planner(subproblem(problem, fast | {buffer}), "greedy")
        assert plan.arena_bytes > TWO_REGIONS[0].size
    # The buffer the most MACs read sits in the fast region.
    macs = buffer_macs(planned.graph, planned.lifetimes)
    assert regions.region_of[max(macs, key=lambda b: (macs[b], -b))] == 0


@needs_shared
def test_plan_json_records_regions_and_cli_reports_each(tmp_path):
    plan_file = tmp_path / "plan.json"
    done = mcu_plan(str(VWW), "--region", "dtcm=32K@.dtcm_bss", "--region", "sram=256K", "--json", str(plan_file))
    assert done.returncode == 0, done.stderr
    record = json.loads(plan_file.read_text())
    assert [(r["name"], r["size"], r["section"]) for r in record["regions"]] == [
        ("dtcm", 32768, ".dtcm_bss"),
        ("sram", 262144, None),
    ]
    for region in record["regions"]:
        assert f"region {region['name']}" in done.stdout
        inside = [t for t in record["tensors"] if t["region"] == region["name"]]
        assert max(t["offset"] + t["bytes"] for t in inside) <= region["arena_bytes"] <= region["size"]
    assert record["arena_bytes"] == sum(r["arena_bytes"] for r in record["regions"])


def test_one_region_is_the_ram_shorthand(tmp_path):
    """--region NAME=SIZE alone writes exactly what --ram SIZE writes."""
    by_ram, by_region = tmp_path / "ram", tmp_path / "region"
    assert mcu_plan(str(EXAMPLE), "--ram", "64K", "-o", str(by_ram)).returncode == 0
    assert mcu_plan(str(EXAMPLE), "--region", "sram=64K", "-o", str(by_region)).returncode == 0
    names = sorted(p.name for p in by_ram.iterdir())
    assert names == sorted(p.name for p in by_region.iterdir())
    for name in names:
        assert (by_ram / name).read_bytes() == (by_region / name).read_bytes(), name


@pytest.mark.parametrize(
    "args, words",
    [
        (["--region", "dtcm"], "NAME=SIZE"),
        (["--region", "dtcm=lots"], "not a size"),
        (["--region", "dtcm=32K@9bad"], "not a section name"),
        (["--region", "a=1K", "--region", "A=2K"], "given twice"),
        (["--region", "a=1K", "--ram", "64K"], "not both"),
    ],
)
def test_bad_regions_are_one_line_and_exit_2(args, words, tmp_path):
    done = mcu_plan(str(EXAMPLE), *args, "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
    assert not (tmp_path / "out").exists()


def test_regions_too_small_say_which_region_and_by_how_much():
    done = mcu_plan(str(EXAMPLE), "--region", "a=1K", "--region", "b=2K")
    assert done.returncode == 3
    assert "region b needs" in done.stderr and "short" in done.stderr
