"""Deployment, built and run: a two-region plan and two models in one arena
are bit-exact on the host and on mps2-an386 (through `mcu-plan check`'s own
machinery) and build with the CMake and Make drop-ins; a board described
outside the checkout builds and runs; named arena sections never add to the
image; --align aligns the arena itself; --board CORE builds the library."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS_DIR, REPO, needs_arm_gcc, needs_cortex_m, needs_shared, needs_tools

from mcu_planner.emit.codegen import render
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.regions import Region
from mcu_planner.targets.check import check_model, check_models, random_inputs
from mcu_planner.targets.reference import run_isolated

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
KWS = MODELS_DIR / "mlcommons-tiny" / "kws_ref_model.tflite"
VWW = MODELS_DIR / "mlcommons-tiny" / "vww_96_int8.tflite"
TWO_REGIONS = (Region("dtcm", 32 * 1024, ".dtcm_bss"), Region("sram", 256 * 1024, None))
# The memory map of mps2-an386, described outside the checkout.
AN386_BOARD = {
    "description": "MPS2 AN386 as a user would describe it",
    "core": "cortex-m4",
    "fpu": True,
    "code": {"name": "FLASH", "origin": "0x00000000", "length": "0x00400000"},
    "ram": [{"name": "SRAM", "origin": "0x20000000", "length": "0x00400000"}],
    "qemu_machine": "mps2-an386",
}


def mcu_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=600
    )


@needs_shared
@needs_cortex_m
def test_two_region_plan_is_bit_exact_on_mps2_an386():
    """(On the host: test_regions_and_shared_arena_build_with_the_drop_ins.)"""
    report = check_model(VWW, target="mps2-an386", inputs=2, regions=TWO_REGIONS)
    assert report.passed and report.exact == 2


@needs_shared
@needs_cortex_m
def test_two_models_in_one_arena_are_bit_exact_on_mps2_an386():
    reports = check_models([KWS, VWW], target="mps2-an386", inputs=2, ram=256 * 1024)
    assert [r.model for r in reports] == ["kws_ref_model", "vww_96_int8"]
    assert all(r.passed and r.exact == 2 for r in reports)


def _harness(outdir: Path, name: str, graph) -> Path:
    """mcu-plan check's host harness for model `name` of `outdir`, beside it."""
    input_bytes = [graph.tensors[t].nbytes for t in graph.inputs]
    path = outdir.parent / f"{name}_harness.c"
    path.write_bytes(render("host_harness.c.j2", name=name, input_bytes=input_bytes, has_state=False))
    return path


def _run_and_compare(program: Path, model: Path) -> None:
    graph = read_model(model)
    inputs = [random_inputs(graph, np.random.default_rng(7)) for _ in range(2)]
    expected = run_isolated(model.read_bytes(), inputs)
    stdin = b"".join(np.ascontiguousarray(a).tobytes() for sample in inputs for a in sample)
    done = subprocess.run([str(program), "2"], input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"".join(a.tobytes() for sample in expected for a in sample)


@needs_shared
@needs_tools("cmake", "make", "cc")
@pytest.mark.parametrize("build", ["cmake", "make"])
def test_regions_and_shared_arena_build_with_the_drop_ins(tmp_path, build):
    """Both OUTDIRs of the done-when, each with both build systems: the
    application (check's host harness) computes what the reference does."""
    regions_dir, models_dir = tmp_path / "regions", tmp_path / "models"
    done = mcu_plan(str(VWW), "--region", "dtcm=32K@.dtcm_bss", "--region", "sram=256K", "-o", str(regions_dir))
    assert done.returncode == 0, done.stderr
    done = mcu_plan(str(KWS), str(VWW), "--ram", "256K", "-o", str(models_dir))
    assert done.returncode == 0, done.stderr
    apps = [(regions_dir, "vww_96_int8", "vww_96_int8", VWW), (models_dir, "mcu_models", "kws_ref_model", KWS)]
    apps.append((models_dir, "mcu_models", "vww_96_int8", VWW))
    for outdir, library, name, model in apps:
        harness = _harness(outdir, name, read_model(model))
        app = tmp_path / f"{outdir.name}_{name}"
        if build == "cmake":
            project = app.with_suffix(".project")
            project.mkdir()
            (project / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
                f'add_subdirectory("{outdir}" model)\nadd_executable(app "{harness}")\n'
                f"target_link_libraries(app PRIVATE {name})\n"
            )
            steps = [["cmake", "-S", str(project), "-B", str(project / "b")], ["cmake", "--build", str(project / "b")]]
            program = project / "b" / "app"
        else:
            prefix = library.upper()
            (app.with_suffix(".mk")).write_text(
                f"include {outdir}/{library}.mk\n"
                f"{app}: {harness} $({prefix}_SRCS)\n"
                f"\t$(CC) $({prefix}_CFLAGS) -O2 -Wall -Wextra -Werror -pedantic $^ $({prefix}_LDLIBS) -o $@\n"
            )
            steps = [["make", "-f", str(app.with_suffix(".mk")), str(app)]]
            program = app
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, cwd=tmp_path)
            assert result.returncode == 0, result.stdout + result.stderr
        _run_and_compare(program, model)


@needs_cortex_m
def test_board_json_outside_the_checkout_builds_and_runs(tmp_path):
    board = tmp_path / "my-board" / "board.json"
    board.parent.mkdir()
    board.write_text(json.dumps(AN386_BOARD))
    report = check_model(EXAMPLE, target=str(board), inputs=2)
    assert report.passed and report.exact == 2
    out = tmp_path / "fw"
    done = mcu_plan(str(EXAMPLE), "--ram", "64K", "--stack", "2K", "-o", str(out), "--board", str(board))
    assert done.returncode == 0, done.stderr
    assert "stack reserve       2048 B" in done.stdout
    linker = (out / "board" / "linker.ld").read_text()
    assert "ORIGIN = 0x20000000, LENGTH = 65536" in linker and "STACK_BYTES = 2048;" in linker


def _load_segments(elf: Path) -> list[tuple[int, int]]:
    """(address, bytes in the file) of every PT_LOAD segment of a 32-bit little-endian ELF."""
    data = elf.read_bytes()
    phoff, phentsize, phnum = struct.unpack_from("<I", data, 28)[0], *struct.unpack_from("<HH", data, 42)
    segments = []
    for i in range(phnum):
        kind, _offset, vaddr, _paddr, filesz = struct.unpack_from("<IIIII", data, phoff + i * phentsize)
        if kind == 1:
            segments.append((vaddr, filesz))
    return segments


def _symbol(elf: Path, name: str) -> tuple[int, int]:
    nm = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            return int(parts[0], 16), int(parts[1], 16)
    raise AssertionError(f"{name} not in {elf}")


USER_LINKER_SCRIPT = """
MEMORY { FLASH (rx) : ORIGIN = 0x0, LENGTH = 1M  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 256K }
ENTRY(tiny_kws_int8_invoke)
SECTIONS {
  .text : { *(.text*) *(.rodata*) } > FLASH
  .data : { *(.data*) } > RAM AT> FLASH
  .model_arena : { *(.model_arena) } > RAM AT> FLASH
  .bss (NOLOAD) : { *(.bss*) *(COMMON) } > RAM
}
"""


@needs_arm_gcc
def test_arena_section_is_never_loaded_and_align_aligns_the_arena(tmp_path):
    """Under a user's `> RAM AT> FLASH` rule the arena's section adds no
    bytes to the image (it is NOBITS in the object), and --align 64 puts
    the arena itself on a 64-byte boundary."""
    out = tmp_path / "kws"
    done = mcu_plan(str(EXAMPLE), "--ram", "64K", "--align", "64", "-o", str(out), "--arena-section", ".model_arena")
    assert done.returncode == 0, done.stderr
    (tmp_path / "user.ld").write_text(USER_LINKER_SCRIPT)
    elf = tmp_path / "app.elf"
    sources = sorted(str(p) for p in out.glob("*.c"))
    link = subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", "-std=c99", "-ffp-contract=off", "-nostartfiles"]
        + ["--specs=nano.specs", "-Wl,--gc-sections", f"-Wl,-T,{tmp_path / 'user.ld'}", f"-I{out}", *sources]
        + ["-lm", "-o", str(elf)],
        capture_output=True,
        text=True,
    )
    assert link.returncode == 0, link.stderr
    address, size = _symbol(elf, "tiny_kws_int8_arena")
    assert size > 0 and address % 64 == 0
    for start, file_bytes in _load_segments(elf):
        assert not (start < address + size and address < start + file_bytes), "the arena is in the image"


@needs_arm_gcc
@needs_tools("make", "arm-none-eabi-ar")
def test_board_core_builds_the_library_and_a_noload_fragment(tmp_path):
    out = tmp_path / "lib"
    done = mcu_plan(
        str(EXAMPLE),
        "--region",
        "fast=4K@.fast_bss",
        "--region",
        "slow=64K",
        "-o",
        str(out),
        "--board",
        "cortex-m0plus",
    )
    assert done.returncode == 0, done.stderr
    assert (out / "libtiny_kws_int8.a").is_file() and "-mcpu=cortex-m0plus" in (out / "Makefile").read_text()
    assert not (out / "board").exists()  # no start-up code
    fragment = (out / "tiny_kws_int8_sections.ld").read_text()
    assert ".fast_bss (NOLOAD)" in fragment and "> FAST" in fragment


@needs_shared
def test_state_stays_apart_with_regions_and_with_shared_arenas():
    """Variable tensors: in the last region, and per model beside a shared arena."""
    keyword = MODELS_DIR / "tflite-micro" / "keyword_scrambled.tflite"
    lstm = MODELS_DIR / "tflite-micro" / "trained_lstm_int8.tflite"
    report = check_model(keyword, inputs=3, regions=(Region("fast", 160, ".fast_bss"), Region("slow", 16 * 1024)))
    assert report.passed and report.reset_total == 2
    assert all(r.passed and r.reset_total == 2 for r in check_models([lstm, keyword], inputs=2, concurrent=True))


def test_a_region_s_check_build_catches_a_buffer_moved_onto_a_live_one():
    """The check build addresses buffers through their region's plan tables:
    moving a buffer onto one alive in the same region is reported."""
    import re

    from mcu_planner.errors import CheckMismatch
    from mcu_planner.pipeline import PlanOptions, plan_model
    from mcu_planner.targets.check import run_generated

    planned = plan_model(EXAMPLE, PlanOptions(regions=(Region("a", 3 * 1024), Region("b", 64 * 1024))))
    regions, problem = planned.regions, planned.lifetimes.problem
    slot_of = {b.id: k for k, b in enumerate(sorted(problem.buffers, key=lambda b: b.id))}
    first = [b for b in problem.buffers if regions.region_of[b.id] == 0 and b.size]
    victim, target = next((b, a) for b in first for a in first if a.start < b.start < a.end)
    files = planned.generate("tiny_kws_int8")
    source = files["tiny_kws_int8.c"].decode()
    table = re.search(r"tiny_kws_int8_plan_a_offset\[[^]]*\] = \{\n(.*?)\};", source, re.S)
    lines = table.group(1).splitlines()
    lines[slot_of[victim.id]] = f"    {regions.offset_of(target.id)}u,"
    files["tiny_kws_int8.c"] = (source[: table.start(1)] + "\n".join(lines) + "\n" + source[table.end(1) :]).encode()
    graph = planned.graph
    inputs = [random_inputs(graph, np.random.default_rng(1))]
    with pytest.raises(CheckMismatch, match=rf"op {victim.start} .* over live tensor {target.id}:"):
        run_generated(graph, files, "tiny_kws_int8", inputs, check_build=True)
