"""Deployment options without a compiler: memory regions (every buffer in
one region, each region's plan valid on its own, checked here with the
independent verifier; the fastest region filled first; `--ram` unchanged),
several models in one arena, board descriptions.  Built and run:
tests/test_qemu_deploy.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import MODELS_DIR, REPO, needs_shared

from mcu_planner.memory.planning import run_planner
from mcu_planner.memory.regions import Region, buffer_macs, subproblem
from mcu_planner.memory.verify import verify
from mcu_planner.pipeline import PlanOptions, plan_model

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


@pytest.mark.slow  # -o measures the model's flash with the cross compiler
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


def two_copies(tmp_path, first="a", second="b"):
    paths = []
    for name in (first, second):
        path = tmp_path / f"{name}.tflite"
        shutil.copyfile(EXAMPLE, path)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("concurrent", [False, True])
def test_several_models_share_one_arena(tmp_path, concurrent):
    single = plan_model(EXAMPLE, PlanOptions()).plan.arena_bytes
    plan_file, out = tmp_path / "plan.json", tmp_path / "out"
    args = [*two_copies(tmp_path), "--ram", "64K", "-o", str(out), "--json", str(plan_file)]
    done = mcu_plan(*args, *(["--concurrent"] if concurrent else []))
    assert done.returncode == 0, done.stderr
    record = json.loads(plan_file.read_text())
    bases = [model["arena_base"] for model in record["models"]]
    aligned = -(-single // 16) * 16
    assert (record["arena_bytes"], bases) == ((aligned + single, [0, aligned]) if concurrent else (single, [0, 0]))
    files = {p.name for p in out.iterdir()}
    assert {"a.c", "a.h", "b.c", "b.h", "mcu_models_arena.c", "mcu_models_arena.h", "mcu_models.mk"} <= files
    assert "CMakeLists.txt" in files and not {"a.mk", "b.mk"} & files
    assert f"MCU_MODELS_ARENA_SIZE {record['arena_bytes']}u" in (out / "mcu_models_arena.h").read_text()
    assert "(mcu_models_arena + 0u)" in (out / "a.c").read_text()


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--concurrent"], "two or more"),
        (["--stack", "2K"], "--stack"),
        (["--board", "/nonexistent/board.json", "--ram", "64K", "-o", "OUT"], "cannot read board"),
        (["--region", "a=1K", "--region", "b=64K", "--tflm-plan", "OUT"], "--tflm-plan"),
        (["--concurrent", "--ram", "64K", "--report", "OUT", "SECOND"], "--report describes one model"),
    ],
)
def test_deploy_argument_errors_are_one_line(extra, words, tmp_path):
    second = tmp_path / "second.tflite"
    shutil.copyfile(EXAMPLE, second)
    extra = [str(tmp_path / "out") if e == "OUT" else str(second) if e == "SECOND" else e for e in extra]
    done = mcu_plan(str(EXAMPLE), *extra)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


def test_two_models_with_one_stem_are_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    first, second = two_copies(tmp_path / "x", "m", "n")[0], two_copies(tmp_path / "y", "m", "n")[0]
    done = mcu_plan(first, second, "--ram", "64K", "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "'m'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_board_description_lists_every_problem(tmp_path):
    board = tmp_path / "board.json"
    board.write_text(
        json.dumps({"core": "cortex-m9", "code": {"name": "F", "origin": "zz", "length": 0}, "ram": [], "x": 1})
    )
    done = mcu_plan(str(EXAMPLE), "--ram", "64K", "-o", str(tmp_path / "out"), "--board", str(board))
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    lines = done.stderr.strip().splitlines()
    assert "5 problem(s)" in lines[0]
    for words in ("x: unknown key", "core: 'cortex-m9'", "code.origin", "code.length", "ram: must be"):
        assert sum(words in line for line in lines[1:]) == 1, words


def test_a_good_board_description_loads(tmp_path):
    from mcu_planner.targets.firmware_build import core_flags, load_board

    board = tmp_path / "mine" / "board.json"
    board.parent.mkdir()
    (board.parent / "vectors.c").write_text("/* vector table */\n")
    board.write_text(
        json.dumps(
            {
                "core": "cortex-m33",
                "fpu": False,
                "code": {"name": "FLASH", "origin": 0, "length": "0x100000"},
                "ram": [{"name": "SRAM", "origin": "0x20000000", "length": 262144}],
                "startup": "vectors.c",
            }
        )
    )
    loaded = load_board(str(board))
    assert loaded.cpu_flags == core_flags("cortex-m33", False) and "-mfloat-abi=hard" not in loaded.cpu_flags
    assert loaded.ram[0].length == 262144 and loaded.startup == (board.parent / "vectors.c").resolve()
    assert loaded.qemu_machine is None
