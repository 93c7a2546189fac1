"""What a planner is given and what it gives back.

A planning problem is a set of buffers, each with a size and a half-open range
of op steps [start, end) during which its bytes must be kept, plus the op
structure (which step writes and reads which buffer) for planners that follow
the graph.  Two buffers whose ranges overlap must not share a byte, except an
op output and an op input that the step marks as runnable in place: those may
start at exactly the same offset.

Planners know nothing of flatbuffers, tensors or C: only this module.
"""

from __future__ import annotations

from dataclasses import dataclass


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class Buffer:
    id: int  # tensor index of the buffer's root tensor; row id for interval sets
    size: int  # bytes reserved, already rounded up to the problem's alignment
    start: int  # first step at which the bytes are held
    end: int  # one past the last step (half-open)

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Step:
    """One operator: the buffers it reads and writes."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # (output id, input id) pairs where the op may write its output over that
    # input (same offset), because the input dies at this step and the kernel
    # reads each element before it writes it.
    in_place: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Problem:
    buffers: tuple[Buffer, ...]
    alignment: int
    steps: tuple[Step, ...]
    # For interval sets renumbered densely: the source's own time at each step
    # index (a buffer spans step_times[start] .. step_times[end]).  Planners may
    # use it to rank lifetimes by their real widths; None for models.
    step_times: tuple[int, ...] | None = None

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    def by_id(self) -> dict[int, Buffer]:
        return {b.id: b for b in self.buffers}

    def in_place_pairs(self) -> set[frozenset[int]]:
        """Pairs that may share bytes: declared by the step that writes the
        output and reads the input for the last time (verify.py checks the
        same rule on its own)."""
        buffers = self.by_id()
        pairs = set()
        for index, step in enumerate(self.steps):
            for out, inp in step.in_place:
                if out in buffers and inp in buffers:
                    if buffers[out].start == index and buffers[inp].end == index + 1:
                        pairs.add(frozenset((out, inp)))
        return pairs


def steps_from_intervals(buffers: tuple[Buffer, ...]) -> tuple[Step, ...]:
    """Op structure implied by bare intervals: each buffer is written at its
    first step and read at its last."""
    num_steps = max((b.end for b in buffers), default=0)
    outputs: list[list[int]] = [[] for _ in range(num_steps)]
    inputs: list[list[int]] = [[] for _ in range(num_steps)]
    for b in buffers:
        outputs[b.start].append(b.id)
        if b.end - 1 > b.start:
            inputs[b.end - 1].append(b.id)
    return tuple(Step(tuple(i), tuple(o)) for i, o in zip(inputs, outputs))


def problem_from_intervals(buffers: list[Buffer], alignment: int = 1) -> Problem:
    """A problem from bare intervals.  Times are renumbered densely (0, 1, 2 ...
    over the distinct endpoints): every overlap stays as it was, and an
    instance whose lifetimes span a million time units does not become a
    million steps."""
    times = sorted({t for b in buffers for t in (b.start, b.end)})
    rank = {t: i for i, t in enumerate(times)}
    bufs = tuple(Buffer(b.id, align_up(b.size, alignment), rank[b.start], rank[b.end]) for b in buffers)
    return Problem(bufs, alignment, steps_from_intervals(bufs), step_times=tuple(times))


@dataclass(frozen=True)
class LiveSet:
    step: int
    bytes: int
    buffer_ids: tuple[int, ...]


def peak_live(problem: Problem) -> LiveSet:
    """The step where the most bytes are alive: no plan (without in-place) goes below it."""
    num = max([problem.num_steps] + [b.end for b in problem.buffers])
    delta = [0] * (num + 1)
    for b in problem.buffers:
        delta[b.start] += b.size
        delta[b.end] -= b.size
    best_step, best, running = 0, 0, 0
    for step in range(num):
        running += delta[step]
        if running > best:
            best, best_step = running, step
    alive = tuple(b.id for b in problem.buffers if b.start <= best_step < b.end)
    return LiveSet(best_step, best, alive)


@dataclass(frozen=True)
class Budget:
    """What a planner may spend and must meet: `time_limit` seconds for
    planners bounded by the clock (None: their own default), `capacity` bytes
    the arena should fit (None: as small as the planner can), and
    `stop_at_fit`: with a capacity, the first plan within it is the answer
    (no tightening below it afterwards).  Planners use what applies to them
    and ignore the rest."""

    time_limit: float | None = None
    capacity: int | None = None
    stop_at_fit: bool = False


@dataclass
class PlannerResult:
    offsets: dict[int, int]  # buffer id -> byte offset in the arena
    proven_optimal: bool = False  # only exact planners may claim this
    # False when a time limit cut some question short, so that a faster or
    # slower machine may end with other offsets.
    reproducible: bool = True


def arena_bytes(problem: Problem, offsets: dict[int, int]) -> int:
    return max((offsets[b.id] + b.size for b in problem.buffers), default=0)
