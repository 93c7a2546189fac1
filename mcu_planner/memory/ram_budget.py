"""The one rule for the RAM a generated model needs, and so for whether it
fits a `--ram` budget.  The plan command, `-o`, `--board`, `mcu-plan check`
and the firmware build all ask `ram_budget()`.

RAM = the arena (every region's) + the state (variable tensors) + the model's
own counters + the runtime kernels' static buffers, and, when a board is
named, the stack reserve, the harness's statics and the C library's state the
kernels pull in, laid out as the board's linker script lays them out
(templates/board/linker.ld.j2: the stack at the bottom of RAM, then .data,
then .bss sorted by alignment, largest first, so that nothing pads between
objects of one alignment).

"Fits" under a board means the firmware links: the total here is the link's
RAM to within the few bytes a 4-aligned array of 16-bit counters may leave
(never less; tests/test_ram_budget.py checks both against linked firmware).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .problem import align_up

if TYPE_CHECKING:
    from ..lowering.program import Program
    from .lifetimes import Lifetimes

# The runtime's static (non-const) buffers: firmware/runtime/*.c as linked
# with --gc-sections, per kind of core, and the kernel entry points that pull
# each one in.  tests/test_ram_budget.py links every entry point of the
# runtime for a plain and a Helium core and checks this table against the
# symbols the linker keeps (arm-none-eabi-nm).  A buffer that becomes planned
# arena scratch leaves this table (one line).


@dataclass(frozen=True)
class StaticBuffer:
    symbol: str
    plain_bytes: int  # on cores without Helium (M0+, M4, M7, M33)
    helium_bytes: int  # with Helium (M55)
    plain_functions: frozenset[str]  # kernel entry points that link it
    helium_functions: frozenset[str]

    def bytes_for(self, functions: frozenset[str], helium: bool) -> int:
        users = self.helium_functions if helium else self.plain_functions
        return (self.helium_bytes if helium else self.plain_bytes) if users & functions else 0


# None today: the convolution's columns, once `static conv_columns` in
# mcu_conv.c (2 x 640 B, 4 x 640 B with Helium), are planned scratch of each
# CONV_2D (lowering/conv.py conv_columns_bytes).
KERNEL_STATIC_BUFFERS: tuple[StaticBuffer, ...] = ()

# The float kernels that call the C library's math functions link
# newlib-nano's reentrancy state, for errno (impure_data 96 B, _impure_ptr
# 4 B, __fdlib_version 1 B with some functions: counted as 104 B, .data
# rounded to a word).  Only in a board's firmware: a library build leaves
# the C library to the application.
LIBC_STATE_BYTES = 104
LIBC_STATE_FUNCTIONS_PLAIN = frozenset(
    {
        "mcu_elu_f32",
        "mcu_exp_f32",
        "mcu_floor_mod_f32",
        "mcu_gelu_approximate_f32",
        "mcu_l2_normalization_f32",
        "mcu_l2_pool_2d_f32",
        "mcu_log_f32",
        "mcu_log_softmax_f32",
        "mcu_logistic_f32",
        "mcu_lstm_f32",
        "mcu_pow_f32",
        "mcu_round_f32",
        "mcu_rsqrt_f32",
        "mcu_softmax_f32",
        "mcu_sqrt_f32",
        "mcu_tanh_f32",
    }
)
# With Helium, the exact GELU's erff and COS/SIN's cosf/sinf are library calls too.
LIBC_STATE_FUNCTIONS_HELIUM = LIBC_STATE_FUNCTIONS_PLAIN | {"mcu_gelu_f32", "mcu_cos_f32", "mcu_sin_f32"}


def libc_state_functions(helium: bool) -> frozenset[str]:
    return LIBC_STATE_FUNCTIONS_HELIUM if helium else LIBC_STATE_FUNCTIONS_PLAIN


# firmware/harness/systick_timer.c: `static volatile uint32_t wraps`.
HARNESS_STATIC_BYTES = 4
# The generated model's counters: `NAME_refcount`, one uint16_t per planned
# buffer, padded to a multiple of 4 (codegen.counter_slots): 8-byte multiples,
# whatever alignment (4 on M4, 8 on M55) the compiler gives the array.
COUNTER_BYTES = 2
COUNTERS_PER_GROUP = 4
# With state: `static int NAME_state_ready`, set by the first NAME_reset().
STATE_FLAG_BYTES = 4
STACK_ALIGNMENT = 8
WORD = 4


@dataclass(frozen=True)
class FirmwareTarget:
    """What the board adds to a model's RAM: its core kind and the stack reserve."""

    board: str
    helium: bool
    stack_bytes: int


def cpu_has_helium(cpu_flags: tuple[str, ...]) -> bool:
    """Whether the runtime builds its Helium (MVE) kernels for these flags (mcu_dsp.h: __ARM_FEATURE_MVE)."""
    for flag in cpu_flags:
        if flag.startswith("-mcpu="):
            cpu = flag.removeprefix("-mcpu=")
            if "+nomve" in cpu:
                return False
            if cpu.split("+")[0] in ("cortex-m55", "cortex-m85") or "+mve" in cpu:
                return True
    return False


@dataclass(frozen=True)
class RamBudget:
    """Every term of a generated model's RAM, in bytes."""

    arena: int  # every region's arena
    state: int  # variable tensors, outside the arena
    counters: int  # the model's per-buffer counters (and its state's ready flag)
    kernel_static: int  # the runtime kernels' static buffers (conv_columns)
    arena_alignment: int = 16
    target: FirmwareTarget | None = None
    libc_state: int = 0  # with a board: the C library's state the kernels link
    harness: int = 0  # with a board: the harness's statics

    @property
    def stack(self) -> int:
        return self.target.stack_bytes if self.target is not None else 0

    @property
    def total(self) -> int:
        return self._total(max(self.arena, 1))  # the C array has at least one byte

    @property
    def other(self) -> int:
        """All but the arena: what an arena of a multiple of its alignment must leave of a budget."""
        return self._total(0)

    def _total(self, arena: int) -> int:
        if self.target is None:
            return arena + self.state + self.counters + self.kernel_static
        # As the board's linker script places them (see the module docstring).
        # The arena array's alignment: --align when a power of two above 16 (codegen's rule), else 16.
        power_of_two = self.arena_alignment & (self.arena_alignment - 1) == 0
        widest = self.arena_alignment if power_of_two and self.arena_alignment > 16 else 16
        end = align_up(self.stack, STACK_ALIGNMENT)
        end = align_up(end, WORD) + align_up(self.libc_state, WORD)  # .data
        end = align_up(end, widest)  # .bss starts at its widest member's alignment
        end += align_up(arena, widest) + (align_up(self.state, 16) if self.state else 0)
        end += align_up(self.counters, WORD) + align_up(self.kernel_static, WORD) + align_up(self.harness, WORD)
        return end

    def margin(self, budget: int) -> int:
        return budget - self.total

    def terms(self) -> list[tuple[str, int]]:
        """(what, bytes) of every term that counts, padding last: they add up to `total`."""
        terms = [
            ("arena", self.arena),
            ("state (variable tensors)", self.state),
            ("model counters", self.counters),
            ("static kernel buffers", self.kernel_static),
        ]
        if self.target is not None:
            terms.append(("C library state", self.libc_state))
            terms.append(("harness", self.harness))
            terms.append((f"stack reserve ({self.target.board})", self.stack))
        padding = self.total - sum(size for _, size in terms)
        return terms + ([("alignment padding", padding)] if padding else [])

    def lines(self, budget: int | None = None) -> list[str]:
        """The printed report's RAM block: each term, the total, budget and margin."""
        terms = self.terms()
        width = max(len(name) for name, _ in terms)
        lines = ["RAM:"] + [f"  {name:<{width}} {size:>11,} B" for name, size in terms]
        lines.append(f"  {'total':<{width}} {self.total:>11,} B")
        if budget is not None:
            margin = self.margin(budget)
            verdict = "fits" if margin >= 0 else f"DOES NOT FIT, {-margin:,} B short"
            lines.append(f"  {'budget':<{width}} {budget:>11,} B")
            lines.append(f"  {'margin':<{width}} {margin:>+11,} B: {verdict}")
        return lines

    def as_json(self, budget: int | None = None) -> dict[str, int | str | None]:
        record = {
            "arena_bytes": self.arena,
            "state_bytes": self.state,
            "counter_bytes": self.counters,
            "kernel_static_bytes": self.kernel_static,
            "libc_state_bytes": self.libc_state,
            "harness_bytes": self.harness,
            "stack_bytes": self.stack,
            "board": self.target.board if self.target is not None else None,
            "total_bytes": self.total,
        }
        if budget is not None:
            record["budget_bytes"] = budget
            record["margin_bytes"] = self.margin(budget)
        return record


def ram_budget(
    arena_bytes: int,
    state_bytes: int,
    num_buffers: int,
    functions: frozenset[str],
    *,
    target: FirmwareTarget | None = None,
    arena_alignment: int = 16,
) -> RamBudget:
    """The RAM of a generated model with an arena of `arena_bytes`,
    `num_buffers` planned buffers and kernels `functions` (their C names), in
    the firmware of `target` when given, else as a library."""
    helium = target is not None and target.helium
    return RamBudget(
        arena=arena_bytes,
        state=state_bytes,
        counters=COUNTER_BYTES * align_up(max(num_buffers, 1), COUNTERS_PER_GROUP)
        + (STATE_FLAG_BYTES if state_bytes else 0),
        kernel_static=sum(buffer.bytes_for(functions, helium) for buffer in KERNEL_STATIC_BUFFERS),
        arena_alignment=arena_alignment,
        target=target,
        libc_state=LIBC_STATE_BYTES if target is not None and functions & libc_state_functions(helium) else 0,
        harness=HARNESS_STATIC_BYTES if target is not None else 0,
    )


def kernel_functions(program: Program, elided_ops: frozenset[int] = frozenset()) -> frozenset[str]:
    """The C kernels the generated model calls, from the calls the Program
    lowered once (ops without a kernel are left out: such a model cannot be
    generated anyway)."""
    from ..lowering.control_flow import op_calls

    functions: set[str] = set()
    for op in program.graph.operators:
        call = program.call(op.index)
        if op.index not in elided_ops and call is not None:
            functions.update(inner.function for _, inner in op_calls(op, call))
    return frozenset(functions)


def lifetimes_budget(
    lifetimes: Lifetimes,
    arena_bytes: int,
    *,
    target: FirmwareTarget | None = None,
    alignment: int = 16,
    functions: frozenset[str] | None = None,
) -> RamBudget:
    """The RAM of the model whose buffers `lifetimes` holds, generated with an
    arena of `arena_bytes` (its kernels: `functions`, else the Program's)."""
    if functions is None:
        functions = kernel_functions(lifetimes.program, lifetimes.elided_ops)
    return ram_budget(
        arena_bytes,
        lifetimes.variable_bytes,
        len(lifetimes.problem.buffers),
        functions,
        target=target,
        arena_alignment=alignment,
    )
