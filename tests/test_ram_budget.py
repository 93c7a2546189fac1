"""One RAM budget (ram_budget.py): the plan command with --board says "fits"
exactly when the firmware links, and the runtime's static buffers it counts
are the ones the linker keeps."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import MODELS_DIR, compact_columns_everywhere, needs_cortex_m, needs_shared

from mcu_planner import cli
from mcu_planner.emit.output_dir import read_interface
from mcu_planner.emit.resources import firmware_dir
from mcu_planner.errors import DoesNotFit
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.program import lower_program
from mcu_planner.memory.ram_budget import (
    HARNESS_STATIC_BYTES,
    KERNEL_STATIC_BUFFERS,
    LIBC_STATE_BYTES,
    cpu_has_helium,
    libc_state_functions,
    ram_budget,
)
from mcu_planner.pipeline import PlanOptions
from mcu_planner.targets.firmware_build import (
    DEFAULT_STACK_BYTES,
    firmware_target,
    linked_ram_bytes,
    load_board,
    make_firmware,
    write_firmware_files,
)
from mcu_planner.targets.flash import flash_shortfall
from mcu_planner_testing.compiler_cache import real_compiler

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_kws_int8.tflite"
BOARDS = ("mps2-an386", "mps3-an547")
needs_toolchain = pytest.mark.skipif(
    not shutil.which("arm-none-eabi-gcc"), reason="the Cortex-M toolchain (arm-none-eabi-gcc) is absent"
)


def test_a_board_adds_its_stack_harness_and_core_sized_buffers():
    functions = frozenset({"mcu_conv_2d_s8_windows", "mcu_softmax_f32"})
    library = ram_budget(6000, 32, 12, functions)
    # 12 uint16 counters and the state's ready flag; no stack, no C library: the application's.
    assert library.total == 6000 + 32 + 24 + 4
    m4 = ram_budget(6000, 32, 12, functions, target=firmware_target("mps2-an386", 1024))
    m55 = ram_budget(6000, 32, 12, functions, target=firmware_target("mps3-an547", 2048))
    assert m4.total == 1024 + 104 + 8 + 6000 + 32 + 24 + 4 + HARNESS_STATIC_BYTES  # .data, .bss from 16
    assert m55.total - m4.total == 2048 - 1024
    assert sum(size for _, size in m4.terms()) == m4.total
    assert not cpu_has_helium(load_board("mps2-an386").cpu_flags) and cpu_has_helium(load_board("mps3-an547").cpu_flags)


def test_board_without_output_prints_each_term_and_says_by_how_much(capsys):
    assert cli.main([str(EXAMPLE), "--ram", "64K", "--board", "mps2-an386", "--patches", "off"]) == 0
    printed = capsys.readouterr().out
    figures = {
        name.strip(): int(value.replace(",", ""))
        for name, value in re.findall(r"^  ([a-z][a-z ()0-9-]+?)\s+([+-]?[0-9,]+) B", printed, re.M)
    }
    # No static kernel buffer is left (the conv columns are arena scratch).
    assert figures["static kernel buffers"] == 0 and figures["stack reserve (mps2-an386)"] == DEFAULT_STACK_BYTES
    total = figures["total"]
    assert figures["margin"] == 64 * 1024 - total
    assert total == sum(v for k, v in figures.items() if k not in ("total", "budget", "margin"))
    # The default plan may keep bytes for speed (a slower raster walk that a
    # tighter --ram takes): go down to the smallest RAM first.
    while cli.main([str(EXAMPLE), "--ram", str(total - 1), "--board", "mps2-an386", "--patches", "off"]) == 0:
        total = int(re.search(r"^  total\s+([0-9,]+) B", capsys.readouterr().out, re.M).group(1).replace(",", ""))
    assert "1 B short" in capsys.readouterr().err


def test_stack_is_checked_for_check_and_plan(capsys):
    assert cli.main(["check", str(EXAMPLE), "--stack", "2K"]) == 2
    assert "--target with a board" in capsys.readouterr().err
    assert cli.main([str(EXAMPLE), "--ram", "64K", "--board", "mps2-an386", "--stack", "1001"]) == 2
    assert "multiple of 8" in capsys.readouterr().err


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("board", BOARDS)
def test_fits_exactly_when_the_firmware_links(board, tmp_path, capsys):
    """`--ram min --board B -o` builds the firmware at the smallest RAM it
    prints, and the link ends RAM there, to the byte; one alignment unit
    below, the plan command and -o refuse, naming that same figure, and the
    same sources linked against one byte less overflow: the rule is the
    link's."""
    args = [str(EXAMPLE), "--board", board, "--patches", "off"]
    out = tmp_path / "out"
    assert cli.main([*args, "--ram", "min", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    total = int(re.search(r"^  total\s+([0-9,]+) B", printed, re.M).group(1).replace(",", ""))
    assert re.search(rf"^  budget\s+{total:,} B", printed, re.M)
    spec = load_board(board)
    assert linked_ram_bytes(out / "firmware.elf", spec) == total
    below = [*args, "--ram", str(total - 16)]
    assert cli.main(below) == 3
    assert f"needs {total:,} B" in capsys.readouterr().err
    assert cli.main([*below, "-o", str(tmp_path / "below")]) == 3
    assert not (tmp_path / "below").exists()
    capsys.readouterr()
    # The same sources linked against one byte less: the linker refuses.
    interface = read_interface(out)
    assert interface is not None
    write_firmware_files(out, model=interface, board=spec, ram_bytes=total - 1, stack_bytes=DEFAULT_STACK_BYTES)
    with pytest.raises(DoesNotFit, match="overflowed RAM by 1 B"):
        make_firmware(out, spec, total - 1)


def _compile_runtime(flags: list[str], out: Path) -> list[str]:
    runtime = firmware_dir() / "runtime"
    objects = []
    for source in sorted(runtime.glob("*.c")):
        obj = out / f"{source.stem}.o"
        command = ["arm-none-eabi-gcc", *flags, "-std=c99", "-O2", "-ffunction-sections", "-fdata-sections"]
        subprocess.run([*command, "-DNDEBUG", "-I", str(runtime), "-c", str(source), "-o", str(obj)], check=True)
        objects.append(str(obj))
    return objects


def _static_symbols(elf_or_objects: list[str]) -> dict[str, int]:
    listed = subprocess.run(
        ["arm-none-eabi-nm", "-S", "-t", "d", *elf_or_objects], capture_output=True, text=True, check=True
    ).stdout
    return {
        fields[3]: int(fields[1])
        for fields in (line.split() for line in listed.splitlines())
        if len(fields) == 4 and fields[2] in "bBdD"
    }


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("board", BOARDS)
def test_static_kernel_buffers_are_what_the_linker_keeps(board, tmp_path):
    """Every kernel entry point of the runtime, linked alone with
    --gc-sections for the board's core: the runtime's static RAM it pulls in
    is what the table says, the C library's state only for the listed float
    kernels."""
    flags = list(load_board(board).cpu_flags)
    helium = cpu_has_helium(tuple(flags))
    objects = _compile_runtime(flags, tmp_path)
    declared = {buffer.symbol for buffer in KERNEL_STATIC_BUFFERS}
    assert set(_static_symbols(objects)) == declared  # no static buffer the table misses
    listed = subprocess.run(["arm-none-eabi-nm", *objects], capture_output=True, text=True, check=True).stdout
    entry_points = sorted(set(re.findall(r" T (mcu_\w+)$", listed, re.M)))
    elf = tmp_path / "alone.elf"
    # The compiler itself, not the test session's caching shim: two hundred
    # links gain nothing from the cache and each would start a Python.
    link = [real_compiler("arm-none-eabi-gcc"), *flags, "-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections"]
    for function in entry_points:
        # The entry point is the link's entry symbol: --gc-sections keeps what
        # it reaches and nothing else (no stub to compile for each).
        subprocess.run([*link, f"-Wl,-e,{function}", *objects, "-lm", "-o", str(elf)], check=True)
        kept = _static_symbols([str(elf)])
        ours = {symbol: size for symbol, size in kept.items() if symbol in declared}
        expected = {
            buffer.symbol: buffer.bytes_for(frozenset({function}), helium)
            for buffer in KERNEL_STATIC_BUFFERS
            if buffer.bytes_for(frozenset({function}), helium)
        }
        assert ours == expected, function
        libc = sum(size for symbol, size in kept.items() if symbol not in declared)
        assert (libc > 0) == (function in libc_state_functions(helium)), function
        # newlib-nano's errno state: 100 B, or 101 B with __fdlib_version, counted as 104 B.
        assert libc == 0 or LIBC_STATE_BYTES - 4 <= libc <= LIBC_STATE_BYTES, function


@needs_cortex_m
def test_check_counts_its_stack_in_the_budget():
    """`check --target BOARD --ram R --stack S` plans as `mcu-plan --ram R
    --board BOARD --stack S` does: at that plan's RAM it links and runs
    bit-exact (the profile build with its own headroom), below it the check
    refuses before building."""
    from mcu_planner.pipeline import plan_model
    from mcu_planner.targets.check import check_model

    stack = 2048
    options = PlanOptions(target=firmware_target("mps2-an386", stack), patches="off", alias=False)
    # The least the plan gives up for a budget: the M4 DSP blocks' scratch
    # (pipeline.plan_analysed), as the plan without them needs.
    with compact_columns_everywhere():
        total = plan_model(EXAMPLE, options).ram_needed
    report = check_model(
        EXAMPLE, target="mps2-an386", ram=total, stack=stack, inputs=1, check_build=False, profile=True, alias=False
    )
    assert report.passed and report.profile is not None
    with pytest.raises(DoesNotFit, match="stack reserve"):
        check_model(EXAMPLE, target="mps2-an386", ram=total - 16, stack=stack, inputs=1, patches="off", alias=False)


@needs_shared
def test_weights_past_the_boards_flash_do_not_fit_whatever_the_ram(capsys):
    """mobilenet_v2's 3.75 MB of weights and tables fit mps2-an386's 4 MiB of
    code flash but not mps3-an547's 2 MiB SRAM for constants: the plan
    command with that board refuses (its firmware never links)."""
    model = MODELS_DIR / "tflite-micro" / "mobilenet_v2_quantized_1x3x224x224.tflite"
    program = lower_program(read_model(str(model)))
    assert flash_shortfall("mps2-an386", program) is None
    assert "SRAM (2,097,152 B, holding weights)" in (flash_shortfall("mps3-an547", program) or "")
    args = [str(model), "--ram", "4M", "--alias", "off", "--patches", "off", "--order", "model", "--planner", "greedy"]
    assert cli.main([*args, "--board", "mps3-an547"]) == 3
    assert "does not fit mps3-an547's flash" in capsys.readouterr().err
