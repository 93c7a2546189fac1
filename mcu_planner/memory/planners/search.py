"""`search`: place buffers in execution order, each on one of a few
candidate placements, and backtrack over the placements not taken.

Follows the application claiming French priority FR2004337 (2020-04-30;
placing intermediate data blocks of an artificial neural network in a global
memory area).  How its claims map to
the code:

- claims 11-13 (possible placements of a block): in a free gap among the
  blocks alive at the same time (below the current arena size, so that the
  arena does not grow); over an input of the same op that dies there, when the
  problem lets the op run in place on it (same offset, same size); or on top
  of the blocks alive with it, growing the arena (`_candidates`);
- claim 2 (priority order): in place first, then the free gaps from the
  tightest to the loosest (then the lowest), then on top;
- claim 1 (initial sequence): from the first layer to the last each block
  takes its highest-priority placement; the resulting arena is the first
  candidate sequence;
- claims 3, 6, 8 (the stack): every placement not taken is pushed with the
  arena size it implies; among one block's placements the one implying the
  smallest arena (then the higher priority) ends on top;
- claim 9: the stack has a bounded size (`stack_limit`); when it is full the
  oldest entry, at its bottom, is dropped;
- claim 4 (modified sequences): the top entry is popped; the sequence keeps
  its placements up to that block, takes the popped placement there, and is
  developed further by priority, pushing what it does not take;
- claim 7: entries that cannot beat the best sequence found (the arena they
  imply is not smaller) are dropped when popped, and a sequence is abandoned
  as soon as its arena reaches the best one's;
- claim 5: the search stops when the stack is empty; also when the budget is
  spent (`max_backtracks` modified sequences, `max_placements` blocks placed
  over all sequences, or `time_limit` seconds when one is given), or when the
  best arena meets the live-bytes lower bound (nothing can beat it without
  in-place pairs).  Without a time limit the work bounds alone stop it, so the
  same problem always gets the same plan, however loaded the machine;
- claim 10 (a block's region is freed once all layers reading it are placed):
  a block conflicts only with the blocks whose lifetimes overlap its own.
"""

from __future__ import annotations

import time
from collections import deque

from ..problem import Budget, Buffer, PlannerResult, Problem, peak_live
from . import register

# Work bound of a run without time limit: blocks placed over all developed
# sequences.  Deterministic; about half a second to a second on minimalloc's
# 150-450-buffer instances, while the shared models reach the live-bytes
# bound long before it.
DEFAULT_MAX_PLACEMENTS = 50_000


@register("search", seed="003_cffe83005d7d4ffc.txt")
def plan_search(
    problem: Problem,
    budget: Budget = Budget(),
    *,
    max_backtracks: int = 20000,
    max_placements: int = DEFAULT_MAX_PLACEMENTS,
    stack_limit: int = 4096,
    max_gaps: int = 3,
) -> PlannerResult:
    offsets, _ = search_placements(
        problem,
        budget.time_limit,
        max_backtracks=max_backtracks,
        max_placements=max_placements,
        stack_limit=stack_limit,
        max_gaps=max_gaps,
    )
    return PlannerResult(offsets)


def search_placements(
    problem: Problem,
    time_limit: float | None = None,
    *,
    max_backtracks: int = 20000,
    max_placements: int = DEFAULT_MAX_PLACEMENTS,
    stack_limit: int = 4096,
    max_gaps: int = 3,
) -> tuple[dict[int, int], int]:
    """The best placement found and its arena size.  `max_backtracks=0` returns
    the initial sequence, which is always developed in full; `time_limit=None`
    reads no clock."""
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    order = sorted(problem.buffers, key=lambda b: (b.start, b.id))
    position = {b.id: k for k, b in enumerate(order)}
    earlier_conflicts = _earlier_conflicts(order)
    in_place_with = _in_place_partners(problem, position)
    bound = None if problem.in_place_pairs() else peak_live(problem).bytes

    chosen: list[int] = []  # offset per position of the sequence under development
    arena_after: list[int] = []  # arena size once positions 0..k are placed
    stack: deque[tuple[int, int, int]] = deque(maxlen=max(stack_limit, 1))  # (position, offset, arena)
    best_arena: int | None = None
    best_offsets: list[int] = []
    placements = 0

    def develop(start: int) -> None:
        nonlocal best_arena, best_offsets, placements
        arena = arena_after[start - 1] if start > 0 else 0
        for k in range(start, len(order)):
            placements += 1
            options = _candidates(order, k, chosen, earlier_conflicts[k], in_place_with.get(k, ()), arena, max_gaps)
            offset, arena = options[0]
            if best_arena is not None and arena >= best_arena:
                return  # claim 7: this sequence cannot become the candidate
            chosen.append(offset)
            arena_after.append(arena)
            untaken = sorted(enumerate(options[1:]), key=lambda item: (item[1][1], item[0]))
            for _, (alt_offset, alt_arena) in reversed(untaken):
                if best_arena is None or alt_arena < best_arena:
                    stack.append((k, alt_offset, alt_arena))
        best_arena = arena
        best_offsets = list(chosen)

    develop(0)
    assert best_arena is not None, "developing the first sequence places every buffer"
    backtracks = 0
    while stack and backtracks < max_backtracks and (bound is None or best_arena > bound):
        if placements >= max_placements or (deadline is not None and time.perf_counter() > deadline):
            break
        k, offset, arena = stack.pop()
        if arena >= best_arena:
            continue
        backtracks += 1
        del chosen[k:]
        del arena_after[k:]
        chosen.append(offset)
        arena_after.append(arena)
        develop(k + 1)

    return {b.id: best_offsets[k] for k, b in enumerate(order)}, best_arena or 0


def _earlier_conflicts(order: list[Buffer]) -> list[list[int]]:
    """Per position, the earlier positions whose lifetimes overlap it (sizes > 0)."""
    conflicts: list[list[int]] = []
    active: list[int] = []
    for k, b in enumerate(order):
        active = [j for j in active if order[j].end > b.start]
        conflicts.append(list(active) if b.size > 0 else [])
        if b.size > 0:
            active.append(k)
    return conflicts


def _in_place_partners(problem: Problem, position: dict[int, int]) -> dict[int, tuple[int, ...]]:
    """Position of an output -> positions of the earlier inputs it may be written over."""
    by_id = problem.by_id()
    partners: dict[int, list[int]] = {}
    for pair in problem.in_place_pairs():
        if len(pair) != 2:
            continue
        a, b = sorted(pair, key=lambda i: position.get(i, -1))
        if a in position and b in position and by_id[a].size == by_id[b].size:
            partners.setdefault(position[b], []).append(position[a])
    return {k: tuple(sorted(v)) for k, v in partners.items()}


def _candidates(
    order: list[Buffer],
    k: int,
    chosen: list[int],
    conflicts: list[int],
    partners: tuple[int, ...],
    arena: int,
    max_gaps: int,
) -> list[tuple[int, int]]:
    """(offset, arena after) of block k's possible placements, in priority order."""
    size = order[k].size
    options: list[tuple[int, int]] = []
    partner_set = set(partners)
    for j in partners:
        if j not in conflicts:
            continue  # not alive together: a plain gap covers it
        offset = chosen[j]
        if all(
            chosen[i] + order[i].size <= offset
            or offset + size <= chosen[i]
            or (i in partner_set and chosen[i] == offset)
            for i in conflicts
        ):
            options.append((offset, max(arena, offset + size)))

    occupied = sorted((chosen[i], chosen[i] + order[i].size) for i in conflicts)
    gaps: list[tuple[int, int]] = []  # (slack, offset)
    cursor = 0
    for lo, hi in occupied:
        if lo - cursor >= size:
            gaps.append((lo - cursor - size, cursor))
        cursor = max(cursor, hi)
    if arena - cursor >= size:
        gaps.append((arena - cursor - size, cursor))
    for _, offset in sorted(gaps)[:max_gaps]:
        if (offset, arena) not in options:
            options.append((offset, arena))
    if cursor + size > arena:
        options.append((cursor, cursor + size))
    return options
