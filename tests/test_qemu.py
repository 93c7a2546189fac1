"""Cortex-M boards under QEMU: firmware build, RAM budget, harness, faults.

The first half runs a hand-written fake model (tests/fixtures/fake_model) so
that boards, linker scripts and the harness are tested on their own; the
second half runs generated code for the shared models and compares it with
the TFLite reference interpreter.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS_DIR, REPO, model_param, needs_cortex_m, needs_shared, supported_shared_model_paths

from mcu_planner.emit.output_dir import ModelInterface
from mcu_planner.errors import DoesNotFit, InputError
from mcu_planner.targets.firmware_build import board_names, build_firmware, load_board
from mcu_planner.targets.qemu import QemuError, exit_code_names, run_firmware

FAKE_MODEL = REPO / "tests" / "fixtures" / "fake_model"
BOARDS = ["mps2-an386", "mps3-an547"]
RUN_TIMEOUT = 120.0

FAKE_ARENA = 8192
FAKE_BUDGET = 16384


def fake_reference(in0: np.ndarray, in1: np.ndarray) -> list[bytes]:
    """What fake_model_invoke computes, in numpy."""
    wide0, wide1 = in0.astype(np.int32), in1.astype(np.int32)
    out0 = np.clip(3 * wide0 - wide1[np.arange(16) % 7], -128, 127).astype(np.int8)
    total = np.array([wide0.sum() + wide1.sum()], dtype="<i4")
    return [out0.tobytes(), total.tobytes()]


# What codegen would report for the hand-written fake model (fake_model.h).
FAKE_INTERFACE = ModelInterface(
    name="fake_model", num_inputs=2, num_outputs=2, arena_bytes=FAKE_ARENA, arena_section=None, extern_arena=False
)


def build_fake(outdir: Path, board: str, ram_bytes: int = FAKE_BUDGET, **kwargs):
    shutil.copytree(FAKE_MODEL, outdir, dirs_exist_ok=True)
    return build_firmware(outdir, model=FAKE_INTERFACE, board=board, ram_bytes=ram_bytes, **kwargs)


def command_input(command: bytes) -> list[bytes]:
    """Inputs that make the fake model obey `command` (see fake_model.h)."""
    return [bytes(16), command.ljust(7, b"\0")]


def elf_load_segments(elf: Path) -> list[tuple[int, int, int]]:
    """(virtual address, file bytes, memory bytes) of each PT_LOAD segment,
    read from the ELF32 program headers directly."""
    data = elf.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 1, "expected a 32-bit ELF"
    (phoff,) = struct.unpack_from("<I", data, 28)
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    segments = []
    for i in range(phnum):
        p_type, _, p_vaddr, _, p_filesz, p_memsz = struct.unpack_from("<6I", data, phoff + i * phentsize)
        if p_type == 1 and p_memsz:
            segments.append((p_vaddr, p_filesz, p_memsz))
    return segments


def symbols(elf: Path) -> dict[str, tuple[int, int]]:
    """name -> (address, size) from arm-none-eabi-nm."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            table[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
        elif len(parts) == 3:
            table[parts[2]] = (int(parts[0], 16), 0)
    return table


# ---------------------------------------------------------------- no toolchain needed


def test_boards_are_described():
    assert set(BOARDS) <= set(board_names())
    an386 = load_board("mps2-an386")
    assert "-mcpu=cortex-m4" in an386.cpu_flags and an386.ram[0].origin == 0x20000000
    an547 = load_board("mps3-an547")
    assert "-mcpu=cortex-m55" in an547.cpu_flags
    # Budgets above the DTCM move to the larger SRAM; beyond it nothing fits.
    assert an547.ram_region_for(512 * 1024).name == "DTCM"
    assert an547.ram_region_for(512 * 1024 + 1).origin == 0x21000000
    with pytest.raises(DoesNotFit):
        an547.ram_region_for(4 * 1024 * 1024 + 1)


def test_unknown_board_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="unknown board 'stm32'.*mps2-an386"):
        build_fake(tmp_path / "out", "stm32", run_make=False)


def test_arena_and_stack_over_budget_fail_before_make(tmp_path):
    with pytest.raises(DoesNotFit, match="exceeds the RAM budget"):
        build_fake(tmp_path / "out", "mps2-an386", ram_bytes=FAKE_ARENA + 4096 - 1, stack_bytes=4096, run_make=False)
    assert not (tmp_path / "out" / "Makefile").exists()


def test_variable_tensors_count_against_the_budget_before_make(tmp_path):
    """Variable tensors live outside the arena, in RAM all the same."""
    from dataclasses import replace

    stateful = replace(FAKE_INTERFACE, variable_bytes=1000)
    shutil.copytree(FAKE_MODEL, tmp_path / "out")
    with pytest.raises(DoesNotFit, match=r"state \(variable tensors\) 1000 B") as refused:
        build_firmware(tmp_path / "out", model=stateful, ram_bytes=FAKE_ARENA + 1000, stack_bytes=4096, run_make=False)
    exact = int(re.search(r"= (\d+) B exceeds", str(refused.value)).group(1))
    with pytest.raises(DoesNotFit, match="by 1 B"):
        build_firmware(tmp_path / "out", model=stateful, ram_bytes=exact - 1, stack_bytes=4096, run_make=False)
    assert not (tmp_path / "out" / "Makefile").exists()
    build_firmware(tmp_path / "out", model=stateful, ram_bytes=exact, stack_bytes=4096, run_make=False)
    assert (tmp_path / "out" / "Makefile").is_file()


def test_files_written_without_make(tmp_path):
    report = build_fake(tmp_path / "out", "mps3-an547", run_make=False)
    assert not report.built
    linker = (tmp_path / "out" / "board" / "linker.ld").read_text()
    assert f"LENGTH = {FAKE_BUDGET}" in linker and "0x20000000" in linker
    makefile = (tmp_path / "out" / "Makefile").read_text()
    assert "fake_model.c" in makefile and "-mcpu=cortex-m55" in makefile
    assert "make -C" in report.format()[0]


def test_harness_takes_the_model_interface_as_given(tmp_path):
    """The harness's input/output counts and the arena's section come from
    the interface codegen reports, not from reading the generated C."""
    from dataclasses import replace

    interface = replace(FAKE_INTERFACE, arena_section=".model_arena")
    shutil.copytree(FAKE_MODEL, tmp_path / "out")
    build_firmware(tmp_path / "out", model=interface, board="mps2-an386", ram_bytes=FAKE_BUDGET, run_make=False)
    config = (tmp_path / "out" / "board" / "harness_config.h").read_text()
    assert "#define MODEL_NUM_INPUTS 2\n" in config and "#define MODEL_NUM_OUTPUTS 2\n" in config
    assert "*(.model_arena)" in (tmp_path / "out" / "board" / "linker.ld").read_text()


@needs_cortex_m
def test_a_failed_build_is_one_line_naming_the_error(tmp_path):
    from mcu_planner.targets.firmware_build import FirmwareBuildError

    outdir = tmp_path / "out"
    shutil.copytree(FAKE_MODEL, outdir)
    # Declared first: the strict flags would otherwise stop at the missing prototype.
    (outdir / "broken.c").write_text("int broken(void);\nint broken(void) { return missing_name; }\n")
    with pytest.raises(FirmwareBuildError) as caught:
        build_fake(outdir, "mps2-an386")
    message = str(caught.value)
    assert "\n" not in message
    assert "broken.c" in message and "missing_name" in message and "error" in message


# ---------------------------------------------------------------- fake model on the boards


@pytest.fixture(scope="module", params=BOARDS)
def fake_firmware(request, tmp_path_factory):
    # Every test taking this fixture is marked needs_cortex_m: skipped before setup.
    outdir = tmp_path_factory.mktemp(f"fake-{request.param}")
    report = build_fake(outdir, request.param)
    return request.param, report


def _run(board: str, report, inputs, **kwargs):
    machine = load_board(board).qemu_machine
    return run_firmware(report.elf, machine=machine, inputs=inputs, num_outputs=2, timeout=RUN_TIMEOUT, **kwargs)


@needs_cortex_m
def test_fake_model_outputs_exact(fake_firmware):
    board, report = fake_firmware
    rng = np.random.default_rng(5)
    for _ in range(3):
        in0 = rng.integers(-128, 128, 16, dtype=np.int8)
        in1 = rng.integers(-128, 128, 7, dtype=np.int8)
        run = _run(board, report, [in0.tobytes(), in1.tobytes()]).check()
        assert list(run.outputs) == fake_reference(in0, in1)
        assert 0 < run.stack_used < run.stack_reserve == report.stack_bytes
    # -icount makes the run deterministic: the same input, the same ticks.
    again = _run(board, report, [in0.tobytes(), in1.tobytes()]).check()
    assert again.ticks == run.ticks > 0


@needs_cortex_m
def test_ticks_count_instructions(fake_firmware):
    """Under -icount shift=0 the tick count times the board's instructions
    per tick is the number of instructions invoke() ran."""
    board, report = fake_firmware
    per_tick = load_board(board).instructions_per_tick()
    short = _run(board, report, command_input(b"SPN" + struct.pack("<I", 1_000_000))).check()
    long = _run(board, report, command_input(b"SPN" + struct.pack("<I", 3_000_000))).check()
    # The difference cancels the fixed cost of the call: 4 M more instructions.
    assert abs((long.ticks - short.ticks) * per_tick - 4_000_000) <= 2 * per_tick


@needs_cortex_m
def test_ram_figures_match_the_elf(fake_firmware):
    board, report = fake_firmware
    ram = load_board(board).ram_region_for(FAKE_BUDGET)
    in_ram = [s for s in elf_load_segments(report.elf) if ram.origin <= s[0] < ram.origin + ram.length]
    assert sum(memsz for _, _, memsz in in_ram) == report.ram_bytes
    assert report.ram_bytes <= FAKE_BUDGET and report.margin_bytes == FAKE_BUDGET - report.ram_bytes
    table = symbols(report.elf)
    assert table["__stack_top"][0] - table["__stack_bottom"][0] == report.stack_bytes
    assert table["arena"][1] == FAKE_ARENA
    assert ram.origin <= table["arena"][0] and table["arena"][0] + FAKE_ARENA <= ram.origin + FAKE_BUDGET
    lines = report.format()
    assert any(line.startswith("flash") and str(report.flash_bytes) in line for line in lines)
    assert any(line.startswith("margin") and str(report.margin_bytes) in line for line in lines)


@needs_cortex_m
def test_firmware_does_not_depend_on_where_it_was_built(tmp_path):
    """mcu-plan builds in a random staging directory: its path must not reach the ELF."""
    first = build_fake(tmp_path / "a", "mps2-an386")
    second = build_fake(tmp_path / "elsewhere" / "b", "mps2-an386")
    elf = first.elf.read_bytes()
    assert str(tmp_path).encode() not in elf
    assert elf == second.elf.read_bytes()


@needs_cortex_m
def test_link_fails_one_byte_below_the_used_ram(tmp_path):
    fits = build_fake(tmp_path / "fits", "mps2-an386", ram_bytes=FAKE_BUDGET)
    linked = fits.ram_bytes  # RAM starts with the 8-aligned stack, so the used bytes are contiguous
    # The budget rule (ram_budget.py) counts at least what the link uses: its
    # total is the smallest budget accepted, and one byte less is refused.
    try:
        exact = build_fake(tmp_path / "tight", "mps2-an386", ram_bytes=linked).ram_budget
    except DoesNotFit as refused:
        exact = int(re.search(r"= (\d+) B exceeds", str(refused)).group(1))
    assert 0 <= exact - linked <= 8
    assert build_fake(tmp_path / "exact", "mps2-an386", ram_bytes=exact).ram_bytes == linked
    with pytest.raises(DoesNotFit, match="by 1 B$"):
        build_fake(tmp_path / "short", "mps2-an386", ram_bytes=exact - 1)
    # The linker script itself refuses a RAM region one byte below what the link uses.
    build_fake(tmp_path / "link", "mps2-an386", ram_bytes=exact, run_make=False)
    script = tmp_path / "link" / "board" / "linker.ld"
    script.write_text(script.read_text().replace(f"LENGTH = {exact}", f"LENGTH = {linked - 1}"))
    make = subprocess.run(["make", "-C", str(tmp_path / "link")], capture_output=True, text=True)
    assert make.returncode != 0 and "region `RAM' overflowed by 1 byte" in make.stderr


@needs_cortex_m
def test_bad_pointer_exits_with_the_fault_code(fake_firmware):
    board, report = fake_firmware
    run = _run(board, report, command_input(b"BAD" + struct.pack("<I", 0xF0000000)))
    assert exit_code_names()[run.exit_status] == "HARD_FAULT"
    assert "fault" in run.console and "bfar=0xf0000000" in run.console
    with pytest.raises(QemuError, match="HARD_FAULT"):
        run.check()


@needs_cortex_m
def test_stack_overflow_exits_instead_of_locking_up(fake_firmware):
    board, report = fake_firmware
    shallow = _run(board, report, command_input(b"REC\x02")).check()
    deeper = _run(board, report, command_input(b"REC\x06")).check()
    # Four more levels show in the high-water mark.
    assert deeper.stack_used > shallow.stack_used
    # 250 levels need over 12 KiB, beyond any sensible reserve: the fault handler
    # finds the exception frame below the reserve and says so.
    overflow = _run(board, report, command_input(b"REC\xfa"))
    assert exit_code_names()[overflow.exit_status] == "STACK_OVERFLOW", overflow.console


@needs_cortex_m
def test_invoke_status_is_the_exit_status(fake_firmware):
    board, report = fake_firmware
    run = _run(board, report, command_input(b"RET\x07"))
    assert run.exit_status == 7 and run.invoke_status == 7
    with pytest.raises(QemuError, match="invoke returned 7"):
        run.check()


@needs_cortex_m
def test_missing_or_wrong_sized_input(fake_firmware):
    board, report = fake_firmware
    names = exit_code_names()
    assert names[_run(board, report, [bytes(16)]).exit_status] == "INPUT_MISSING"
    assert names[_run(board, report, [bytes(16), bytes(8)]).exit_status] == "INPUT_SIZE"


@needs_cortex_m
def test_wrong_sized_input_says_expected_and_actual_bytes(fake_firmware):
    board, report = fake_firmware
    # The fake model's inputs hold 16 and 7 bytes: 24 is no whole number of sets ...
    run = _run(board, report, [bytes(24), bytes(7)])
    assert "wrong size input0.bin: 24 bytes, expected a positive multiple of 16 " in run.console
    # ... and 7 bytes is one set where input0.bin holds two.
    run = _run(board, report, [bytes(32), bytes(7)])
    assert "wrong size input1.bin: 7 bytes, expected 14 (2 x the input tensor's 7 bytes" in run.console


@needs_cortex_m
def test_hung_firmware_is_stopped_by_the_timeout(fake_firmware):
    board, report = fake_firmware
    machine = load_board(board).qemu_machine
    with pytest.raises(QemuError, match="did not finish within 3 s"):
        run_firmware(report.elf, machine=machine, inputs=command_input(b"HNG"), num_outputs=2, timeout=3)


@needs_cortex_m
def test_make_run_uses_the_callers_directory(fake_firmware, tmp_path):
    board, report = fake_firmware
    in0 = np.arange(-8, 8, dtype=np.int8)
    in1 = np.array([1, -2, 3, -4, 5, -6, 7], dtype=np.int8)
    (tmp_path / "input0.bin").write_bytes(in0.tobytes())
    (tmp_path / "input1.bin").write_bytes(in1.tobytes())
    env = dict(os.environ, PWD=str(tmp_path), QEMU_TIMEOUT=str(int(RUN_TIMEOUT)))
    result = subprocess.run(
        ["make", "-s", "-C", str(report.outdir), "run"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mcu-harness: status=0" in result.stdout
    outputs = [(tmp_path / f"output{i}.bin").read_bytes() for i in range(2)]
    assert outputs == fake_reference(in0, in1)


# ---------------------------------------------------------------- shared models, bit-exact under QEMU

# A sample of the shared models runs on the Cortex-M55 board as well (its
# Helium kernels differ from the Cortex-M4's).
AN547_MODELS = ["tflite-micro/person_detect", "mlcommons-tiny/kws_ref_model", "mlcommons-tiny/pretrainedResnet_quant"]


def _check_on_board(path: Path, board: str):
    from mcu_planner.targets.check import check_model

    # check_build=False: the host target already runs the plan-discipline
    # build; here the question is whether the Cortex-M build computes the
    # same bytes.
    report = check_model(path, target=board, inputs=3, seed=11, check_build=False)
    assert report.passed and report.total == 3, report.mismatch_message()
    assert report.ticks_per_inference and report.ticks_per_inference > 0


@needs_shared
@needs_cortex_m
@pytest.mark.parametrize("path", [model_param(p) for p in supported_shared_model_paths()])
def test_shared_model_bit_exact_on_mps2_an386(path):
    _check_on_board(path, "mps2-an386")


@needs_shared
@needs_cortex_m
@pytest.mark.parametrize("model", AN547_MODELS, ids=[m.split("/")[1] for m in AN547_MODELS])
def test_shared_model_bit_exact_on_mps3_an547(model):
    _check_on_board(MODELS_DIR / f"{model}.tflite", "mps3-an547")


def _mcu_plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcu_planner.cli", *args], capture_output=True, text=True, cwd=REPO)


@needs_shared
@needs_cortex_m
def test_mcu_plan_budget_edges(tmp_path):
    """The RAM the built ELF uses is within --ram and is what the plan
    command counted; exactly that budget still builds, one byte less builds
    only a plan that links within it, and a budget below the plan's arena
    fails before any C is written (exit 3)."""
    from mcu_planner.targets.firmware_build import DEFAULT_STACK_BYTES

    model = str(MODELS_DIR / "mlcommons-tiny" / "kws_ref_model.tflite")
    plain = ("--alias", "off", "--board", "mps2-an386")
    roomy = _mcu_plan(model, "--ram", "256K", "-o", str(tmp_path / "roomy"), *plain)
    assert roomy.returncode == 0, roomy.stderr
    elf = tmp_path / "roomy" / "firmware.elf"
    ram = load_board("mps2-an386").ram[0]
    used = sum(m for a, _, m in elf_load_segments(elf) if ram.origin <= a < ram.origin + ram.length)
    assert used <= 256 * 1024
    assert int(re.search(r"^RAM\s+(\d+) B", roomy.stdout, re.MULTILINE).group(1)) == used

    exact = _mcu_plan(model, "--ram", str(used), "-o", str(tmp_path / "exact"), *plain)
    assert exact.returncode == 0, exact.stderr
    assert re.search(r"^margin\s+0 B", exact.stdout, re.MULTILINE)
    assert f"counted {used} B before the link; the link ends .bss at {used} B" in exact.stdout  # ram_budget.py's

    # One byte less: either the plan command finds a smaller plan (patches, a
    # tighter search), whose firmware then links within it, or it refuses,
    # saying by how much, and writes nothing.
    short = _mcu_plan(model, "--ram", str(used - 1), "-o", str(tmp_path / "short"), *plain)
    if short.returncode == 0:
        elf = tmp_path / "short" / "firmware.elf"
        assert sum(m for a, _, m in elf_load_segments(elf) if ram.origin <= a < ram.origin + ram.length) < used
    else:
        assert short.returncode == 3 and re.search(r"\d B short", short.stderr), short.stderr
        assert not (tmp_path / "short").exists()

    arena = int(re.search(r"^arena: ([\d,]+) B", roomy.stdout, re.MULTILINE).group(1).replace(",", ""))
    assert arena + DEFAULT_STACK_BYTES <= used
    # Without overlaps, which a short --ram may otherwise call in, the arena is the one printed.
    below_plan = _mcu_plan(
        model,
        "--ram",
        str(arena - 1),
        "--alias",
        "off",
        "--patches",
        "off",
        "-o",
        str(tmp_path / "below"),
        "--board",
        "mps2-an386",
    )
    assert below_plan.returncode == 3, below_plan.stderr
    assert not (tmp_path / "below").exists()


@needs_shared
@needs_cortex_m
def test_check_target_links_against_the_given_ram():
    from mcu_planner.targets.check import check_model

    model = MODELS_DIR / "tflite-micro" / "hello_world_int8.tflite"
    report = check_model(model, target="mps2-an386", inputs=1, ram=8192, check_build=False)
    assert report.passed
    # 64 bytes hold the arena (32 B) but not the stack reserve: the firmware link refuses.
    with pytest.raises(DoesNotFit):
        check_model(model, target="mps2-an386", inputs=1, ram=64, check_build=False)


@needs_shared
@needs_cortex_m
@pytest.mark.parametrize(
    "board, placement",
    [("mps2-an386", ["--arena-section", ".model_arena"]), ("mps3-an547", ["--extern-arena"])],
    ids=["arena-section", "extern-arena"],
)
def test_arena_placement_options_land_in_zeroed_ram(tmp_path, board, placement):
    """--arena-section puts the arena in its own section, --extern-arena lets
    the application (here the harness) define it; either way the board's
    linker script must count it as RAM (.bss), not copy a flash image of it."""
    model = str(MODELS_DIR / "mlcommons-tiny" / "kws_ref_model.tflite")
    out = tmp_path / "out"
    done = _mcu_plan(model, "--ram", "64K", "-o", str(out), "--board", board, *placement)
    assert done.returncode == 0, done.stderr
    table = symbols(out / "firmware.elf")
    arena_address, arena_size = table["kws_ref_model_arena"]
    assert table["__bss_start"][0] <= arena_address and arena_address + arena_size <= table["__bss_end"][0]
    assert re.search(r"^flash\s+\d+ B\s+\(text \d+ \+ data 0\)", done.stdout, re.MULTILINE)
    from mcu_planner.targets.reference import ReferenceModel

    features = np.random.default_rng(3).integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
    run = run_firmware(
        out / "firmware.elf", machine=board, inputs=[features.tobytes()], num_outputs=1, timeout=RUN_TIMEOUT
    ).check()
    expected = ReferenceModel(Path(model).read_bytes()).run([features])
    assert run.outputs[0] == expected[0].tobytes()
