"""An independent check of any plan.

It shares no code with the planners: it re-derives every constraint from the
problem alone.  A plan is valid when every buffer is placed at a non-negative
multiple of the alignment, inside the arena, and no two buffers alive at a
common step share a byte, except an in-place pair that the problem allows to
start at exactly the same offset.
"""

from __future__ import annotations

from .problem import Buffer, Problem


class PlanInvalid(Exception):
    """A planner produced a plan that breaks the problem's constraints (a planner bug)."""


def verify(problem: Problem, offsets: dict[int, int], arena_bytes: int | None = None) -> list[str]:
    errors: list[str] = []
    placed = []
    for b in problem.buffers:
        if b.id not in offsets:
            errors.append(f"buffer {b.id} is not placed")
            continue
        off = offsets[b.id]
        if not isinstance(off, int) or off < 0:
            errors.append(f"buffer {b.id} has offset {off!r}")
            continue
        if off % problem.alignment:
            errors.append(f"buffer {b.id} offset {off} is not a multiple of {problem.alignment}")
        if arena_bytes is not None and off + b.size > arena_bytes:
            errors.append(f"buffer {b.id} [{off}, {off + b.size}) ends past the arena of {arena_bytes} bytes")
        if b.end < b.start:
            errors.append(f"buffer {b.id} has an inverted lifetime [{b.start}, {b.end})")
        elif b.size > 0 and b.end > b.start:
            placed.append(b)

    # An output may start exactly on an input only at the op that declares the
    # pair, where the input is read for the last time.
    by_id = problem.by_id()
    in_place = {
        frozenset(pair)
        for step_index, step in enumerate(problem.steps)
        for pair in step.in_place
        if pair[0] in by_id
        and pair[1] in by_id
        and by_id[pair[0]].start == step_index
        and by_id[pair[1]].end == step_index + 1
    }
    # Sweep in time: any two buffers alive together meet when the later one starts.
    placed.sort(key=lambda b: (b.start, b.id))
    active: list[Buffer] = []
    for b in placed:
        active = [a for a in active if a.end > b.start]
        lo, hi = offsets[b.id], offsets[b.id] + b.size
        for a in active:
            a_lo, a_hi = offsets[a.id], offsets[a.id] + a.size
            if a_lo < hi and lo < a_hi:
                if frozenset((a.id, b.id)) in in_place and a_lo == lo and a.size == b.size:
                    continue
                step = max(a.start, b.start)
                errors.append(
                    f"buffers {a.id} and {b.id} share bytes [{max(lo, a_lo)}, {min(hi, a_hi)}) "
                    f"while both alive at step {step}"
                )
        active.append(b)
    return errors


def check_plan(problem: Problem, offsets: dict[int, int], arena_bytes: int | None = None) -> None:
    errors = verify(problem, offsets, arena_bytes)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PlanInvalid(errors[0] + more)
