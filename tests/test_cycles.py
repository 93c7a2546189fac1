"""The cycle estimate (mcu_planner/targets/cycles.py): micro-kernels whose
cycles are counted here by hand from the Cortex-M4 TRM's instruction table
and the dual-beat Helium model of the Cortex-M55, run under QEMU and traced,
must come out at exactly those counts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import needs_tools

from mcu_planner.targets.cycles import (
    BRANCH_REFILL,
    CORTEX_M4,
    CORTEX_M55,
    Instruction,
    classify,
    core_for_cpu_flags,
    estimate,
    estimate_regions,
    parse_clock,
    symbol_address,
)
from mcu_planner.targets.qemu import qemu_command

FIXTURES = Path(__file__).parent / "fixtures" / "cycles"
P = BRANCH_REFILL  # pipeline refill of a taken branch (TRM: 1 to 3)
TAKEN = 1 + P  # B, BL, BX, B<cond> taken
LOOP_BRANCH = {True: TAKEN, False: 1}  # B<cond> taken / not taken


def loop(iterations: int, body: int) -> int:
    """`body` cycles per iteration plus the closing B<cond>: taken but the last time."""
    return iterations * body + (iterations - 1) * LOOP_BRANCH[True] + LOOP_BRANCH[False]


# Cortex-M4 TRM table 3-1 figures, per kernel of fixtures/cycles/cortex_m4.S;
# each region ends with the `b kN_end` that leaves it (1 + P).
M4_EXPECTED = {
    # 4 x SMLAD (1) + SUBS (1)
    "k1": loop(100, 4 * 1 + 1) + TAKEN,
    # LDR (2), then three LDRs pipelined behind a load (1 each) + SUBS
    "k2": loop(50, 2 + 3 * 1 + 1) + TAKEN,
    # ADDS (1); LDR whose base the ADDS wrote (2 + 1 stall); LDR pipelined (1);
    # STR immediate offset (1); SUBS (1)
    "k3": loop(30, 1 + 3 + 1 + 1 + 1) + TAKEN,
    # LDM of 4 (1 + N); BL (1 + P); BX LR in the leaf (1 + P); SUBS
    "k4": loop(20, (1 + 4) + TAKEN + TAKEN + 1) + TAKEN,
    # VMLA.F32 (3), VADD.F32 (1), SUBS
    "k5": loop(10, 3 + 1 + 1) + TAKEN,
    # SUBS (1), CBZ falling through (1), B back (1 + P) nine times; then SUBS,
    # CBZ taken (1 + P), B out (1 + P)
    "k6": 9 * (1 + 1 + TAKEN) + (1 + TAKEN) + TAKEN,
}
M4_INSTRUCTIONS = {
    "k1": 100 * 6 + 1,
    "k2": 50 * 6 + 1,
    "k3": 30 * 6 + 1,
    "k4": 20 * 5 + 1,
    "k5": 10 * 4 + 1,
    "k6": 9 * 3 + 2 + 1,
}

# Cortex-M55, dual beat: a 128-bit vector instruction is 2 cycles, 1 when it
# overlaps a previous vector instruction of the other group (memory / compute).
VECTOR, OVERLAPPED = 2, 1
M55_EXPECTED = {
    # DLS (1); first iteration VLDRB (2) VLDRB (2) VMLADAVA overlapping (1),
    # LE looping (0, branch cache); middle iterations: the first VLDRB now
    # overlaps the previous VMLADAVA (1); the last LE falls through (1).
    "k6": 1 + (2 + 2 + 1 + 0) + 18 * (1 + 2 + 1 + 0) + (1 + 2 + 1 + 1) + TAKEN,
    # VADD, VADD, VMUL: all compute, no overlap (2 each) + SUBS
    "k7": loop(10, 3 * VECTOR + 1) + TAKEN,
}
M55_INSTRUCTIONS = {"k6": 1 + 20 * 4 + 1, "k7": 10 * 5 + 1}


def test_the_timing_tables_follow_the_trm():
    cases = [
        (Instruction(0, 4, "smlad", "r2, r3, r4, r2"), "alu", 1),
        (Instruction(0, 4, "smlal", "r2, r3, r4, r5"), "alu", 1),
        (Instruction(0, 4, "ldrsb.w", "r4, [r1], #1"), "load", 2),
        (Instruction(0, 2, "ldrgt", "r3, [sp, #104]"), "load", 2),
        (Instruction(0, 4, "ldrd", "r7, r8, [sp, #44]"), "load_store_multiple", 3),
        (Instruction(0, 4, "ldmia.w", "sp!, {r4, r5, r6, r7, r8, r9, sl, fp, pc}"), "load_store_multiple", 10),
        (Instruction(0, 2, "str", "r3, [r0, #4]"), "store_immediate", 1),
        (Instruction(0, 2, "bne.n", "6f80 <memcpy+0x10>"), "branch", 1),
        (Instruction(0, 4, "vfma.f32", "s0, s1, s2"), "fp_mac", 3),
        (Instruction(0, 4, "vdiv.f32", "s0, s1, s2"), "fp_divide", 14),
        (Instruction(0, 4, "vpush", "{d8-d15}"), "fp_multiple", 17),
    ]
    for insn, klass, cycles in cases:
        costed = classify(insn, CORTEX_M4)
        assert (costed.klass, costed.cycles) == (klass, cycles), insn
    assert classify(Instruction(0, 2, "pop", "{r4, pc}"), CORTEX_M4).writes_pc
    # Condition and S suffixes come off: a compare in an IT block writes no register,
    # a branch in one may fall through, "movs"/"bls" are MOV+S and B+LS.
    assert classify(Instruction(0, 2, "cmpeq", "r1, #0"), CORTEX_M4).writes == ()
    assert classify(Instruction(0, 2, "bxeq", "lr"), CORTEX_M4).conditional
    assert not classify(Instruction(0, 2, "bx", "lr"), CORTEX_M4).conditional
    assert [Instruction(0, 2, m, "").base for m in ("movs", "bls", "ldrhi", "ldrsb", "strbne")] == [
        "mov",
        "b",
        "ldr",
        "ldrsb",
        "strb",
    ]
    mac = classify(Instruction(0, 4, "vmladava.s8", "r4, q0, q1"), CORTEX_M55)
    load = classify(Instruction(0, 4, "vldrb.s8", "q0, [r1], #16"), CORTEX_M55)
    gather = classify(Instruction(0, 4, "vldrb.u8", "q0, [r1, q1]"), CORTEX_M55)
    assert (mac.cycles, mac.vector_group, load.vector_group, gather.cycles) == (2, "compute", "memory", 16)


def test_clock_and_core_parsing():
    assert [parse_clock(t) for t in ("120M", "25MHz", "32000000", "1.5G", "80k")] == [
        120_000_000,
        25_000_000,
        32_000_000,
        1_500_000_000,
        80_000,
    ]
    for bad in ("fast", "-3M", "0", "12 X"):
        with pytest.raises(ValueError):
            parse_clock(bad)
    assert core_for_cpu_flags(["-mcpu=cortex-m4", "-mthumb"]) is CORTEX_M4
    assert core_for_cpu_flags(["-mcpu=cortex-m55"]) is CORTEX_M55
    assert core_for_cpu_flags(["-mcpu=cortex-m7"]) is None


def test_a_block_that_never_ran_is_not_counted():
    """QEMU logs a TB, then `Stopped execution` when an interrupt or the
    icount budget stops it at entry: it must not be counted."""
    code = {
        0x100: Instruction(0x100, 2, "adds", "r0, #1"),
        0x102: Instruction(0x102, 2, "bne.n", "100"),
        0x104: Instruction(0x104, 2, "nop", ""),
    }
    log = [
        b"OP:\n",
        b" ---- 00000100 00000000 00000000\n",
        b" ---- 00000102 00000000 00000000\n",
        b"\n",
        b"Trace 0: 0x7f00 [00800408/00000100/00000010/ff000200] f\n",
        b"Trace 0: 0x7f00 [00800408/00000100/00000010/ff000200] f\n",
        b"Stopped execution of TB chain before 0x7f00 [00000100] f\n",
        b"Trace 0: 0x7f00 [00800408/00000100/00000010/ff000200] f\n",
        b"OP:\n",
        b" ---- 00000104 00000000 00000000\n",
        b"Trace 0: 0x7f80 [00800408/00000104/00000010/ff000200] g\n",
    ]
    (region,) = estimate_regions(log, code, CORTEX_M4, {0x100}, {0x104})
    # ADDS (1) + BNE taken (1 + P), then ADDS + BNE falling through (1).
    assert (region.cycles, region.instructions) == ((1 + TAKEN) + (1 + 1), 4)


def test_a_block_rewound_at_an_io_access_counts_up_to_it():
    """Under -icount QEMU rewinds a TB at a device access (the SysTick read)
    and runs the rest in a new TB: the first counts only what ran."""
    code = {
        0x200: Instruction(0x200, 2, "adds", "r0, #1"),
        0x202: Instruction(0x202, 2, "ldr", "r1, [r2, #0]"),
        0x204: Instruction(0x204, 2, "bx", "lr"),
        0x300: Instruction(0x300, 2, "nop", ""),
    }
    log = [
        b"OP:\n",
        b" ---- 00000200 00000000 00000000\n",
        b" ---- 00000202 00000000 00000000\n",
        b" ---- 00000204 00000000 00000000\n",
        b"Trace 0: 0x7f00 [00800408/00000200/00000010/ff000200] f\n",
        b"cpu_io_recompile: rewound execution of TB to 00000202\n",
        b"OP:\n",
        b" ---- 00000202 00000000 00000000\n",
        b"Trace 0: 0x7f40 [00800408/00000202/00000010/ff038201] f\n",
        b"OP:\n",
        b" ---- 00000204 00000000 00000000\n",
        b"Trace 0: 0x7f80 [00800408/00000204/00000010/ff000200] f\n",
        b"OP:\n",
        b" ---- 00000300 00000000 00000000\n",
        b"Trace 0: 0x7fc0 [00800408/00000300/00000010/ff000200] g\n",
    ]
    (region,) = estimate_regions(log, code, CORTEX_M4, {0x200}, {0x300})
    # ADDS (1), LDR (2), BX taken (1 + P): each once.
    assert (region.cycles, region.instructions) == (1 + 2 + TAKEN, 3)


def _build(source: str, cpu_flags: list[str], out: Path) -> Path:
    elf = out / (Path(source).stem + ".elf")
    subprocess.run(
        ["arm-none-eabi-gcc", *cpu_flags, "-nostdlib", "-nostartfiles", "-Wl,-Ttext=0", "-o", str(elf), source],
        cwd=FIXTURES,
        check=True,
        capture_output=True,
    )
    return elf


@pytest.mark.qemu
@needs_tools("arm-none-eabi-gcc", "arm-none-eabi-objdump", "qemu-system-arm")
@pytest.mark.parametrize(
    "source, machine, timing, cpu_flags, expected, instructions",
    [
        (
            "cortex_m4.S",
            "mps2-an386",
            CORTEX_M4,
            ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
            M4_EXPECTED,
            M4_INSTRUCTIONS,
        ),
        (
            "cortex_m55.S",
            "mps3-an547",
            CORTEX_M55,
            ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"],
            M55_EXPECTED,
            M55_INSTRUCTIONS,
        ),
    ],
    ids=["cortex-m4", "cortex-m55"],
)
def test_micro_kernels_take_the_cycles_counted_by_hand(
    tmp_path, source, machine, timing, cpu_flags, expected, instructions
):
    elf = _build(source, cpu_flags, tmp_path)
    begin = {name: symbol_address(elf, name) for name in expected}
    end = {symbol_address(elf, f"{name}_end") for name in expected}
    command = qemu_command(machine, elf)
    regions = estimate(elf, command, timing, tmp_path, begin=set(begin.values()), end=end, timeout=60)
    order = sorted(expected, key=lambda name: begin[name])
    assert {name: r.instructions for name, r in zip(order, regions, strict=True)} == instructions
    assert {name: r.cycles for name, r in zip(order, regions, strict=True)} == expected
