"""A cycle estimate for Cortex-M4 and Cortex-M55 from QEMU's executed-instruction trace.

QEMU counts instructions, not cycles (`-icount shift=0`: one instruction per
virtual nanosecond).  To give a figure a user can set beside a datasheet or a
published millisecond figure, the firmware is run once more with

    qemu-system-arm -d op,exec,nochain -D /dev/fd/N

which logs every translation block (TB) QEMU translates (`-d op`: one
` ---- PC` line per guest instruction) and every TB it executes (`-d exec`
with `nochain`: one `Trace` line per execution, chained TBs included).  Each
TB is decoded once (arm-none-eabi-objdump of the ELF), its instructions are
weighted with the tables below, and each execution adds its TB's cycles:
streaming, so that a 23 M-instruction model (2 M TB executions) takes a few
seconds.

The model (docs/check.md states it for users):
- Cortex-M4: the instruction timings of the Cortex-M4 Technical Reference
  Manual (ARM DDI 0439, table 3-1 and the FPU table), zero wait states.
  Neighbouring single loads pipeline (the second costs 1 cycle unless it
  takes its address from the first's result); STR with an immediate offset
  costs 1; a load or store whose address register the previous data-
  processing instruction wrote stalls 1 cycle; a taken branch costs 1 + P
  with P (pipeline refill, 1 to 3 in the TRM) fixed at BRANCH_REFILL.
- Cortex-M55: its TRM publishes no per-instruction table.  Scalar code is
  costed with the Cortex-M4 table; Helium (MVE) instructions with the
  Armv8.1-M beat model of a dual-beat core: a 128-bit instruction is 4 beats,
  2 cycles, and it overlaps by one cycle with the previous vector instruction
  when one is a memory access and the other is not (a VLDR beside a VMLA);
  gathers and scatters take one cycle per element; LE of a low-overhead loop
  costs nothing when it loops (the loop is in the branch cache).
- Not modelled: caches, flash wait states, bus contention, interrupt entry
  and exit, data-dependent early termination (divides: a fixed middle of the
  TRM's range), result latencies other than those above.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import McuPlanError

OBJDUMP = "arm-none-eabi-objdump"
# The pipeline refill of a taken branch, P in the Cortex-M4 TRM (1 to 3
# cycles by the target's alignment and width and by early speculation).
BRANCH_REFILL = 2

_CONDITIONS = frozenset("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al".split())
_REGISTER_NAMES = {"sb": 9, "sl": 10, "fp": 11, "ip": 12, "sp": 13, "lr": 14, "pc": 15}
_REGISTER = re.compile(r"\b(r1[0-5]|r[0-9]|sb|sl|fp|ip|sp|lr|pc)\b")
_VECTOR_REGISTER = re.compile(r"\bq[0-7]\b")


@dataclass(frozen=True)
class CoreTiming:
    """One core's cycle table: cycles by instruction class (the classes of
    `classify`), and the few pipeline rules the estimate applies."""

    name: str
    cycles: dict[str, int]
    branch_refill: int = BRANCH_REFILL
    # Helium: beats per 128-bit instruction, beats retired per cycle.
    vector_beats: int = 4
    beats_per_cycle: int = 2


# Cortex-M4 TRM (DDI 0439) table 3-1 and the FPU instruction table; N = the
# registers transferred (added in `_scalar_cycles`), P = branch_refill (added
# when a branch is taken).
_M4_CYCLES: dict[str, int] = {
    "alu": 1,  # MOV, ADD, logic, shifts, compare, extend, bit field, saturate, DSP SIMD, MUL, MLA, SMLAD, SMLAL ...
    "divide": 7,  # SDIV/UDIV: 2 to 12 by early termination; the middle
    "load": 2,  # LDR/LDRB/LDRH/LDRSB/LDRSH; 1 when pipelined after a load
    "store": 2,  # STR register offset; immediate offset: store_immediate
    "store_immediate": 1,
    "load_store_multiple": 1,  # LDM/STM/PUSH/POP/LDRD/STRD: 1 + N
    "branch": 1,  # B, BL, BX, BLX, CBZ, CBNZ, B<cond>: 1, + P when taken
    "branch_table": 2,  # TBB/TBH: 2 + P
    "load_pc": 2,  # LDR PC: 2 + P
    "barrier": 1,  # DMB, DSB, ISB (B = 0 assumed)
    "fp": 1,  # VADD, VSUB, VMUL, VCVT, VCMP, VMOV, VABS, VNEG, VMRS
    "fp_mac": 3,  # VMLA, VMLS, VNMLA, VNMLS, VFMA, VFMS, VFNMA, VFNMS
    "fp_divide": 14,  # VDIV, VSQRT
    "fp_load_store": 2,  # VLDR, VSTR
    "fp_multiple": 1,  # VLDM, VSTM, VPUSH, VPOP: 1 + N
    "fp_move_pair": 2,  # VMOV between two core registers and a D or two S registers
    "vector_setup": 1,  # VPST, VCTP (M55)
    "loop_start": 1,  # DLS, WLS, DLSTP, WLSTP (M55)
    "loop_end": 1,  # LE, LETP: 1 when it falls through, 0 when it loops (M55)
}

CORTEX_M4 = CoreTiming("cortex-m4", _M4_CYCLES)
# Scalar code as the M4 (the M55 TRM gives no table); Helium by beats.
CORTEX_M55 = CoreTiming("cortex-m55", dict(_M4_CYCLES))
CORES: dict[str, CoreTiming] = {CORTEX_M4.name: CORTEX_M4, CORTEX_M55.name: CORTEX_M55}


def core_for_cpu_flags(cpu_flags: Sequence[str]) -> CoreTiming | None:
    """The timing of a board's -mcpu, or None for a core without a table."""
    for flag in cpu_flags:
        if flag.startswith("-mcpu="):
            return CORES.get(flag.split("=", 1)[1].split("+", 1)[0])
    return None


# ---------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Instruction:
    address: int
    size: int  # bytes: 2 or 4
    mnemonic: str  # as objdump prints it: "ldrb.w", "vmladava.s8", "bne.n", "addeq"
    operands: str

    @property
    def base(self) -> str:
        """The mnemonic without width qualifier, data type, condition or S flag, when the table knows it."""
        return _base_mnemonic(self.mnemonic.split(".", 1)[0])


_KNOWN_BASES = frozenset(
    """b bl blx bx cbz cbnz tbb tbh le letp dls wls dlstp wlstp it ite itt itee itet itte ittt iteee iteet
    itete itett ittee ittet ittte itttt ldr ldrb ldrh ldrsb ldrsh ldrex ldrexb ldrexh ldrt str strb strh strex
    strexb strexh strt ldrd strd ldm ldmia ldmdb ldmfd stm stmia stmdb stmea stmfd push pop sdiv udiv dmb dsb isb
    vadd vsub vmul vnmul vcvt vcvtr vcvtb vcvtt vcmp vcmpe vmov vabs vneg vmrs vmsr vmla vmls vnmla vnmls vfma vfms
    vfnma vfnms vdiv vsqrt vldr vstr vldm vldmia vldmdb vstm vstmia vstmdb vpush vpop vpst vpt vctp vpsel
    mov mvn add adc sub sbc rsb cmp cmn tst teq and orr orn eor bic lsl lsr asr ror mul mla""".split()
)


def _base_mnemonic(stem: str) -> str:
    if stem in _KNOWN_BASES:
        return stem
    for cut in (2, 1, 3):  # condition, S flag, S flag and condition
        head, tail = stem[:-cut], stem[-cut:]
        if head in _KNOWN_BASES and (
            (cut == 2 and tail in _CONDITIONS) or (cut == 1 and tail == "s") or (cut == 3 and tail[1:] in _CONDITIONS)
        ):
            return head
    return stem


def _registers(text: str) -> list[int]:
    return [_REGISTER_NAMES.get(name) or int(name[1:]) for name in _REGISTER.findall(text)]


_BRANCHES = frozenset("b bl blx bx cbz cbnz".split())
_LOADS = frozenset("ldr ldrb ldrh ldrsb ldrsh ldrex ldrexb ldrexh ldrt".split())
_STORES = frozenset("str strb strh strex strexb strexh strt".split())
_MULTIPLE = frozenset("ldrd strd ldm ldmia ldmdb ldmfd stm stmia stmdb stmea stmfd push pop".split())
_FP_MAC = frozenset("vmla vmls vnmla vnmls vfma vfms vfnma vfnms".split())
_VECTOR_MEMORY = re.compile(r"^v(ldr|str|ld[24]|st[24])")


@dataclass(frozen=True)
class Costed:
    """One instruction as the estimate sees it."""

    klass: str
    cycles: int  # before the pipeline rules; branches: not taken
    writes_pc: bool = False
    conditional: bool = False  # a PC write that may fall through (B<cond>, CBZ, LE, in an IT block)
    reads_address: tuple[int, ...] = ()  # base and index registers of a load or store
    writes: tuple[int, ...] = ()  # registers a data-processing instruction writes
    loaded: tuple[int, ...] = ()  # registers a single load writes
    vector_group: str = ""  # "memory" or "compute" for Helium, "" otherwise


def classify(insn: Instruction, timing: CoreTiming) -> Costed:
    """The class and base cycles of one instruction."""
    base = insn.base
    ops = insn.operands
    table = timing.cycles
    if base.startswith("v") and (_VECTOR_REGISTER.search(ops) or base in ("vpst", "vpt", "vctp", "vpsel")):
        if base in ("vpst", "vctp"):
            return Costed("vector_setup", table["vector_setup"])
        group = "memory" if _VECTOR_MEMORY.match(base) else "compute"
        cycles = timing.vector_beats // timing.beats_per_cycle
        if group == "memory" and re.search(r"\[[^]]*\bq[0-7]", ops):
            # Gather/scatter: one element per cycle (lanes from the element size).
            size = re.search(r"\.[suif]?(8|16|32|64)", insn.mnemonic)
            cycles = 128 // int(size.group(1)) if size else 4
        return Costed("vector", cycles, vector_group=group)
    # A condition suffix (B<cond>, or any branch inside an IT block) makes a PC write conditional.
    conditional = insn.mnemonic.split(".", 1)[0] != base or base in ("cbz", "cbnz")
    if base in ("le", "letp"):
        return Costed("loop_end", table["loop_end"], writes_pc=True, conditional=True)
    if base in ("dls", "wls", "dlstp", "wlstp"):
        return Costed("loop_start", table["loop_start"], writes_pc=base.startswith("w"), conditional=True)
    if base in _BRANCHES:
        return Costed("branch", table["branch"], writes_pc=True, conditional=conditional)
    if base in ("tbb", "tbh"):
        return Costed("branch_table", table["branch_table"], writes_pc=True, conditional=conditional)
    address = ops[ops.find("[") :] if "[" in ops else ""
    if base in _LOADS:
        dest = _registers(ops.split(",", 1)[0])
        if dest == [15]:
            return Costed("load_pc", table["load_pc"], writes_pc=True, conditional=conditional)
        return Costed("load", table["load"], reads_address=tuple(_registers(address)), loaded=tuple(dest))
    if base in _STORES:
        immediate = "," not in address or "#" in address
        klass = "store_immediate" if immediate else "store"
        return Costed(klass, table[klass], reads_address=tuple(_registers(address)))
    if base in _MULTIPLE:
        transferred = 2 if base in ("ldrd", "strd") else len(_register_list(ops))
        writes_pc = base in ("pop", "ldm", "ldmia", "ldmfd") and 15 in _register_list(ops)
        return Costed(
            "load_store_multiple",
            table["load_store_multiple"] + transferred,
            writes_pc=writes_pc,
            conditional=conditional,
        )
    if base in ("sdiv", "udiv"):
        return Costed("divide", table["divide"], writes=tuple(_registers(ops.split(",", 1)[0])))
    if base in ("dmb", "dsb", "isb"):
        return Costed("barrier", table["barrier"])
    if base.startswith("v"):
        if base in _FP_MAC:
            return Costed("fp_mac", table["fp_mac"])
        if base in ("vdiv", "vsqrt"):
            return Costed("fp_divide", table["fp_divide"])
        if base in ("vldr", "vstr"):
            return Costed("fp_load_store", table["fp_load_store"])
        if base in ("vldm", "vldmia", "vldmdb", "vstm", "vstmia", "vstmdb", "vpush", "vpop"):
            return Costed("fp_multiple", table["fp_multiple"] + _fp_register_count(ops))
        if base == "vmov" and ops.count(",") >= 2:
            return Costed("fp_move_pair", table["fp_move_pair"])
        return Costed("fp", table["fp"])
    # Data processing.  A write to PC (MOV PC, ADD PC) is a branch: 1 + P.
    first = ops.split(",", 1)[0]
    writes = _registers(first) if base not in ("cmp", "cmn", "tst", "teq") and not base.startswith("it") else []
    if base in ("smull", "umull", "smlal", "umlal", "smlald", "smlsld", "umaal") or base.startswith("smlal"):
        writes = _registers(",".join(ops.split(",", 2)[:2]))
    if 15 in writes:
        return Costed("branch", table["branch"], writes_pc=True, conditional=conditional)
    return Costed("alu", table["alu"], writes=tuple(writes))


def _register_list(ops: str) -> list[int]:
    braces = re.search(r"\{([^}]*)\}", ops)
    if not braces:
        return []
    registers = []
    for part in braces.group(1).split(","):
        ends = _registers(part)
        if "-" in part and len(ends) == 2:
            registers += list(range(ends[0], ends[1] + 1))
        else:
            registers += ends
    return registers


def _fp_register_count(ops: str) -> int:
    braces = re.search(r"\{([^}]*)\}", ops)
    if not braces:
        return 1
    count = 0
    for part in braces.group(1).split(","):
        numbers = [int(n) for n in re.findall(r"[sd](\d+)", part)]
        width = 2 if "d" in part else 1  # a D register moves two words
        count += (numbers[-1] - numbers[0] + 1) * width if len(numbers) == 2 else width
    return count


def disassemble(elf: str | os.PathLike[str], timing: CoreTiming) -> dict[int, Instruction]:
    """Every instruction of the ELF's code, by address."""
    command = [OBJDUMP, "-d"]
    if timing is CORTEX_M55:
        command += ["-m", "armv8.1-m.main"]  # else objdump prints Helium as coprocessor instructions
    try:
        text = subprocess.run(command + [str(elf)], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        raise McuPlanError(
            f"{OBJDUMP} not found; install gcc-arm-none-eabi (binutils) for the cycle estimate"
        ) from None
    instructions = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0].endswith(":"):
            continue
        try:
            address = int(parts[0].strip()[:-1], 16)
        except ValueError:
            continue
        halfwords = parts[1].split()
        mnemonic = parts[2].strip()
        if not mnemonic or mnemonic.startswith("."):
            continue
        operands = parts[3].split("@", 1)[0].strip() if len(parts) > 3 else ""
        instructions[address] = Instruction(address, 2 * len(halfwords), mnemonic, operands)
    return instructions


# ---------------------------------------------------------------- blocks


# The pipeline state between two instructions: whether the previous one was a
# single load (and which registers it loaded), the registers a data-processing
# instruction just wrote, the Helium group of the previous vector instruction.
State = tuple[bool, tuple[int, ...], tuple[int, ...], str]
START: State = (False, (), (), "")


@dataclass
class Block:
    """A translation block: its instructions costed once."""

    costed: tuple[Costed, ...]
    fallthrough: int  # address after the last instruction
    ends_in_branch: bool
    branch_conditional: bool  # the last instruction's PC write may fall through
    instructions: int
    addresses: tuple[int, ...]
    _memo: dict[tuple[State, bool], tuple[int, State]] = field(default_factory=dict)

    def cycles(self, state: State, taken: bool, timing: CoreTiming) -> tuple[int, State]:
        key = (state, taken)
        cached = self._memo.get(key)
        if cached is None:
            cached = self._memo[key] = _block_cycles(self.costed, state, taken, timing)
        return cached


def _block_cycles(costed: Sequence[Costed], state: State, taken: bool, timing: CoreTiming) -> tuple[int, State]:
    after_load, loaded, written, vector_group = state
    total = 0
    last = len(costed) - 1
    for index, insn in enumerate(costed):
        cycles = insn.cycles
        if insn.klass in ("load", "store", "store_immediate"):
            depends = any(r in written for r in insn.reads_address)
            if after_load and not any(r in loaded for r in insn.reads_address) and insn.klass != "store_immediate":
                cycles = 1  # pipelined behind the previous load
            if depends:
                cycles += 1  # address from the previous data-processing result: no forwarding path
        elif insn.klass == "vector":
            if vector_group and vector_group != insn.vector_group:
                cycles -= 1  # overlaps the previous vector instruction's last beats
        branch_taken = index == last and taken and insn.writes_pc
        if branch_taken:
            cycles = 0 if insn.klass == "loop_end" else cycles + timing.branch_refill
        total += cycles
        if branch_taken and insn.klass == "loop_end":
            continue  # the loop branch cache hides LE: the pipeline state carries over
        if branch_taken:
            after_load, loaded, written, vector_group = START
            continue
        after_load = insn.klass == "load"
        loaded = insn.loaded
        written = insn.writes if insn.klass in ("alu", "divide") else ()
        if insn.klass == "vector":
            vector_group = insn.vector_group
        elif insn.klass not in ("vector_setup", "loop_end", "loop_start"):
            vector_group = ""
    return total, (after_load, loaded, written, vector_group)


# ---------------------------------------------------------------- the trace


@dataclass(frozen=True)
class Region:
    """Cycles and instructions between a begin marker and the next end marker."""

    cycles: int
    instructions: int


class UnknownInstruction(McuPlanError):
    """The trace executed an address objdump did not decode."""


def estimate_regions(
    lines: Iterable[bytes],
    code: dict[int, Instruction],
    timing: CoreTiming,
    begin: set[int],
    end: set[int],
) -> list[Region]:
    """The regions of a `-d op,exec,nochain` log: each from the first TB
    that starts at an address in `begin` to the next TB that starts at an
    address in `end` (that one excluded)."""
    blocks: dict[bytes, Block] = {}  # host TB pointer -> block
    translated: list[int] | None = None  # the in-page offsets of the TB translated last
    current: list[int] | None = None
    regions: list[Region] = []
    inside = False
    cycles = instructions = 0
    state = START
    pending: Block | None = None  # the last TB logged; costed when the next one shows whether it branched
    pending_state = START
    classified: dict[int, Costed] = {}

    def settle(next_pc: int | None) -> None:
        nonlocal cycles, instructions, state, pending
        if pending is None:
            return
        # An unconditional branch is taken even to the next address (a refill all the same).
        taken = pending.ends_in_branch and (not pending.branch_conditional or next_pc != pending.fallthrough)
        spent, state = pending.cycles(pending_state, taken, timing)
        if inside:
            cycles += spent
            instructions += pending.instructions
        pending = None

    for line in lines:
        head = line[:5]
        if current is not None and head[:1] not in (b" ", b"\n"):
            translated = current  # the end of an OP dump: the next TB logged is this one
            current = None
        if head == b"Trace":
            parts = line.split(b" ", 4)
            pointer = parts[2]
            pc = int(parts[3][10:18], 16)
            settle(pc)
            if inside and pc in end:
                regions.append(Region(cycles, instructions))
                inside = False
            elif not inside and pc in begin:
                inside = True
                cycles = instructions = 0
            block = blocks.get(pointer)
            if translated is not None:
                block = blocks[pointer] = _make_block(pc, translated, code, timing, classified)
                translated = None
            if block is None:
                raise McuPlanError(f"trace: TB at {pc:#x} executed before it was translated")
            pending, pending_state = block, state
        elif head == b" ----":
            if current is not None:
                current.append(int(line.split(None, 2)[1], 16))
        elif head[:3] == b"OP:":
            current = []
        elif line.startswith(b"cpu_io_recompile: rewound") and pending is not None:
            # An I/O access under -icount: the TB ran up to that instruction, which runs again in a new TB.
            stop = int(line.rsplit(None, 1)[1], 16)
            pending = _truncated(pending, stop)
        elif line.startswith(b"Stopped"):
            # The TB logged last never ran (an interrupt or the icount budget stopped it at entry).
            pending = None
            state = pending_state
    settle(None)
    return regions


def _make_block(
    pc: int, offsets: list[int], code: dict[int, Instruction], timing: CoreTiming, classified: dict[int, Costed]
) -> Block:
    """The TB at `pc` whose `-d op` dump gave these instruction offsets.
    QEMU 7.2 logs each instruction's offset in its (1 KiB, M-profile) page
    only, so the addresses come from walking the disassembly from `pc`,
    checked against the offsets."""
    costed = []
    addresses = []
    address = pc
    insn = None
    for offset in offsets:
        insn = code.get(address)
        if insn is None:
            raise UnknownInstruction(f"trace: no instruction at {address:#x} in the ELF's disassembly")
        if (address & _PAGE_OFFSET_MASK) != (offset & _PAGE_OFFSET_MASK):
            raise UnknownInstruction(f"trace: the TB at {pc:#x} does not match the disassembly at {address:#x}")
        item = classified.get(address)
        if item is None:
            item = classified[address] = classify(insn, timing)
        costed.append(item)
        addresses.append(address)
        address += insn.size
    if insn is None:
        raise UnknownInstruction(f"trace: an empty TB at {pc:#x}")
    return Block(tuple(costed), address, costed[-1].writes_pc, costed[-1].conditional, len(costed), tuple(addresses))


def _truncated(block: Block, stop: int) -> Block:
    """The part of `block` before the instruction at `stop` (QEMU rewound the rest)."""
    count = block.addresses.index(stop) if stop in block.addresses else block.instructions
    return Block(block.costed[:count], stop, False, False, count, block.addresses[:count])


# The smallest page QEMU uses for Arm (1 KiB): the offsets of `-d op` are within it.
_PAGE_OFFSET_MASK = 0x3FF


def symbol_address(elf: str | os.PathLike[str], name: str) -> int | None:
    """The address of a function symbol (Thumb bit cleared), or None."""
    text = subprocess.run(["arm-none-eabi-nm", "-C", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16) & ~1
    return None


def return_addresses(code: dict[int, Instruction], function: int) -> set[int]:
    """The addresses just after every BL to `function`: where its calls return."""
    target = f"{function:x} "
    return {
        insn.address + insn.size
        for insn in code.values()
        if insn.mnemonic == "bl" and (insn.operands + " ").startswith(target)
    }


def trace_lines(command: Sequence[str], run_dir: str | os.PathLike[str], timeout: float) -> Iterator[bytes]:
    """The `-d op,exec,nochain` log of one run of the QEMU `command` (its
    usual command line, qemu.qemu_command; run in `run_dir`, which holds the
    input files), line by line as QEMU writes it."""
    read_end, write_end = os.pipe()
    command = [command[0], "-d", "op,exec,nochain", "-D", f"/dev/fd/{write_end}", *command[1:]]
    name = Path(command[-1]).name
    with tempfile.TemporaryFile() as console:
        process = subprocess.Popen(
            command, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=console, stderr=console, pass_fds=(write_end,)
        )
        os.close(write_end)
        # The log streams for as long as the firmware runs: a watchdog ends a run that never stops.
        watchdog = threading.Timer(timeout, process.kill)
        watchdog.start()
        try:
            with os.fdopen(read_end, "rb", buffering=1 << 20) as log:
                yield from log
            status = process.wait()
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        if status < 0:
            raise McuPlanError(f"the traced run of {name} did not finish within {timeout:g} s")
        if status != 0:
            console.seek(0)
            tail = console.read()[-400:].decode(errors="replace").strip().replace("\n", " | ")
            raise McuPlanError(f"the traced run of {name} ended with exit {status}: {tail}")


def estimate(
    elf: str | os.PathLike[str],
    command: Sequence[str],
    timing: CoreTiming,
    run_dir: str | os.PathLike[str],
    *,
    begin: set[int],
    end: set[int],
    timeout: float = 600.0,
) -> list[Region]:
    """Run `elf` traced (`command`: QEMU's command line for it) and estimate
    the cycles of every begin..end region."""
    code = disassemble(elf, timing)
    return estimate_regions(trace_lines(command, run_dir, timeout), code, timing, begin, end)


def estimate_call(
    elf: str | os.PathLike[str],
    command: Sequence[str],
    timing: CoreTiming,
    run_dir: str | os.PathLike[str],
    function: str,
    *,
    timeout: float = 600.0,
) -> list[Region]:
    """One region per call of `function` (by symbol, demangled), from its entry to its return."""
    entry = symbol_address(elf, function)
    if entry is None:
        raise McuPlanError(f"{Path(elf).name} has no function {function!r}")
    code = disassemble(elf, timing)
    returns = return_addresses(code, entry)
    if not returns:
        raise McuPlanError(f"{Path(elf).name}: no BL to {function!r} found")
    lines = trace_lines(command, run_dir, timeout)
    return estimate_regions(lines, code, timing, {entry}, returns)


def milliseconds(cycles: float, clock_hz: float) -> float:
    return 1e3 * cycles / clock_hz


def parse_clock(text: str) -> int:
    """'120M', '25MHz', '32000000', '1.5G' -> Hz; ValueError when it is none of those."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:[hH][zZ])?\s*", text)
    if not match:
        raise ValueError(f"not a clock frequency: {text!r} (e.g. 120M, 25MHz, 32000000)")
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[match.group(2).lower()]
    hz = round(float(match.group(1)) * scale)
    if hz <= 0:
        raise ValueError(f"not a clock frequency: {text!r}")
    return hz
