"""The per-op profile of a -DMCU_PROFILE build, as its harness prints it.

A profile build of the generated model calls the harness's hooks right before
and after every op that runs code; the harness times each op (the SysTick on
a Cortex-M board, CLOCK_MONOTONIC in nanoseconds on the host) and prints one
line per op and a total, with the op's multiply-accumulates from the model's
table (each op's KernelFacts.macs, at generation time):

    mcu-profile: op 3 CONV_2D ticks=5120 macs=73728 macs/tick=14.40
    mcu-profile: total ticks=6012 macs=81920 macs/tick=13.62 invoke=6290

Ticks are the mean of one invocation.  The op lines' ticks add up to the
total; `invoke` is the whole invocation in the same build, so that the
difference is what runs between ops (buffer release, the hooks themselves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_OP_LINE = re.compile(r"^mcu-profile: op (\d+) (\S+) ticks=(\d+) macs=(\d+) macs/tick=[\d.]+$")
_TOTAL_LINE = re.compile(r"^mcu-profile: total ticks=(\d+) macs=(\d+) macs/tick=[\d.]+ invoke=(\d+)$")


@dataclass(frozen=True)
class OpTiming:
    op: int  # index in execution order
    name: str  # TFLite builtin
    ticks: int  # mean per invocation
    macs: int


@dataclass(frozen=True)
class CycleEstimate:
    """The cycle estimate of mcu_planner/targets/cycles.py for a profile's ops."""

    core: str  # "cortex-m4", "cortex-m55"
    op_cycles: tuple[int, ...] | None  # per op of Profile.ops, mean per invocation; None when not attributable
    total_cycles: int  # the ops' cycles, mean per invocation
    clock_hz: int  # the clock the milliseconds are given at
    clock_source: str  # "the board's nominal clock" or "--clock"


@dataclass(frozen=True)
class Profile:
    ops: tuple[OpTiming, ...]
    invoke_ticks: int  # the whole invocation of the profile build, hooks included
    unit: str  # "SysTick ticks" or "ns"
    cycles: CycleEstimate | None = None

    @property
    def total_ticks(self) -> int:
        return sum(op.ticks for op in self.ops)

    @property
    def total_macs(self) -> int:
        return sum(op.macs for op in self.ops)

    def format(self) -> list[str]:
        """One aligned row per op, then the total."""
        rate = "MACs/ns" if self.unit == "ns" else "MACs/tick"
        estimate = self.cycles
        per_op = estimate.op_cycles if estimate is not None else None
        rows = [("op", "name", self.unit, "share", "MACs", rate) + (("cycles (est.)",) if per_op else ())]
        total = self.total_ticks
        for index, op in enumerate(self.ops):
            rows.append(
                (
                    str(op.op),
                    op.name,
                    f"{op.ticks:,}",
                    f"{100 * op.ticks / total:.1f}%" if total else "-",
                    f"{op.macs:,}" if op.macs else "-",
                    f"{op.macs / op.ticks:.2f}" if op.macs and op.ticks else "-",
                )
                + ((f"{per_op[index]:,}",) if per_op else ())
            )
        rows.append(
            (
                "",
                "total",
                f"{total:,}",
                "100.0%" if total else "-",
                f"{self.total_macs:,}",
                f"{self.total_macs / total:.2f}" if total and self.total_macs else "-",
            )
            + ((f"{estimate.total_cycles:,}",) if per_op and estimate else ())
        )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = []
        for row in rows:
            cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])] + [
                c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)
            ]
            lines.append("  ".join(cells).rstrip())
        lines.append(f"whole invocation in the profile build: {self.invoke_ticks:,} {self.unit} (hooks included)")
        if estimate is not None:
            ms = 1e3 * estimate.total_cycles / estimate.clock_hz
            macs = f", {self.total_macs / estimate.total_cycles:.2f} MACs/cycle" if self.total_macs else ""
            lines.append(
                f"cycle estimate ({estimate.core}, zero wait states; the model: docs/check.md#cycle-estimate): "
                f"{estimate.total_cycles:,} cycles = {ms:.3f} ms at {estimate.clock_hz / 1e6:g} MHz "
                f"({estimate.clock_source}){macs}"
            )
        return lines

    def at_clock(self, clock_hz: int, source: str) -> Profile:
        """This profile with its cycle estimate's milliseconds at another clock."""
        if self.cycles is None:
            return self
        return replace(self, cycles=replace(self.cycles, clock_hz=clock_hz, clock_source=source))


def parse_profile(console: str, unit: str) -> Profile | None:
    """The profile in a harness's output; None when it printed none."""
    ops = []
    invoke = None
    for line in console.splitlines():
        line = line.strip()
        op = _OP_LINE.match(line)
        if op:
            ops.append(OpTiming(int(op.group(1)), op.group(2), int(op.group(3)), int(op.group(4))))
            continue
        total = _TOTAL_LINE.match(line)
        if total:
            invoke = int(total.group(3))
    if invoke is None:
        return None
    return Profile(tuple(ops), invoke, unit)
