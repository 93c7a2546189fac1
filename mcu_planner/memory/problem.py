"""What a planner is given and what it gives back.

A planning problem is a set of buffers, each with a size and a half-open range
of op steps [start, end) during which its bytes must be kept, plus the op
structure (which step writes and reads which buffer) for planners that follow
the graph.  Two buffers whose ranges overlap must not share a byte, except an
op output and an op input that the step marks as runnable in place (those may
start at exactly the same offset), and an output that the step lets overlap
the input dying there (`Overlap`: the output may share the input's bytes
when it starts at most `max_offset` bytes after the input's start).

Planners know nothing of flatbuffers, tensors or C: only this module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def align_down(value: int, alignment: int) -> int:
    """The largest multiple of `alignment` not above `value` (also below 0)."""
    return value // alignment * alignment


@dataclass(frozen=True)
class Buffer:
    id: int  # tensor index of the buffer's root tensor; row id for interval sets
    size: int  # bytes reserved, already rounded up to the problem's alignment
    start: int  # first step at which the bytes are held
    end: int  # one past the last step (half-open)

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class WindowAccess:
    """The order in which a kernel reads its input and writes its output,
    in plain numbers: output pixels (batch, row, column) are visited in
    raster order, `group` consecutive pixels at a time (the last group may
    be shorter); a group reads nothing but its own pixels' input windows
    (in-bounds taps of a filter_h x filter_w window at the pixel's stride,
    padding and dilation) and writes nothing but its own pixels' bytes, in
    any order among its reads.  Rows of a matrix (FULLY_CONNECTED) are pixels
    of a 1 x 1 image with a 1 x 1 window.  Pixels are NHWC, `*_pixel_bytes`
    apart.

    `channel_wise`: besides, each output channel is computed from the same
    channel of the input (equal pixel sizes), pixel by pixel in raster order,
    every pixel reading its window's values of that channel before writing
    its own; channels in any order.  So when the output starts a whole
    number of pixels, at least one, before the input (the plan claims no
    more: planners keep a pair's output below its input), an output byte
    lands on the same channel of some input pixel, and writing it is safe
    once no later pixel reads that input pixel, even inside a group."""

    batches: int
    input_h: int
    input_w: int
    input_pixel_bytes: int
    output_h: int
    output_w: int
    output_pixel_bytes: int
    filter_h: int = 1
    filter_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_h: int = 0
    pad_w: int = 0
    dilation_h: int = 1
    dilation_w: int = 1
    group: int = 1
    channel_wise: bool = False


@dataclass(frozen=True)
class Overlap:
    """At its step, `output` (a buffer first written there) may share bytes
    with `input` (a buffer read for the last time there) as long as the
    output buffer starts at most `max_offset` bytes after the input buffer's
    start (negative: before it): every input byte is then read before the
    kernel writes over it.  `access` is the kernel's walk the bound comes
    from; the output tensor lies `output_at` bytes into its buffer and the
    input tensor `input_at` bytes into its own, so that verify.py can derive
    the bound again from the walk alone."""

    output: int
    input: int
    max_offset: int
    access: WindowAccess
    output_at: int = 0
    input_at: int = 0
    # The kernel allows it only through a slower walk (KernelFacts.raster_walk_is_slower):
    # planning takes such overlaps only when the budget needs them.
    slower: bool = False
    # Steps from the output's first write to the input's last read, both
    # included: 1 for one op; a patched stage (patches.py) spans its ops,
    # each strip reading its input before writing its output.
    span: int = 1


@dataclass(frozen=True)
class Step:
    """One operator: the buffers it reads and writes."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # (output id, input id) pairs where the op may write its output over that
    # input (same offset), because the input dies at this step and the kernel
    # reads each element before it writes it.
    in_place: tuple[tuple[int, int], ...] = ()
    # Outputs that may partly overlap an input dying at this step.
    overlaps: tuple[Overlap, ...] = ()


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

    def overlap_limits(self) -> dict[tuple[int, int], int]:
        """(output id, input id) -> the most bytes the output buffer may start
        after the input buffer's start while the two share bytes; only pairs
        whose step writes the output first and reads the input last."""
        buffers = self.by_id()
        limits: dict[tuple[int, int], int] = {}
        for index, step in enumerate(self.steps):
            for o in step.overlaps:
                out, inp = buffers.get(o.output), buffers.get(o.input)
                if out is None or inp is None or o.output == o.input:
                    continue
                if out.start == index and inp.end == index + o.span:
                    limits[(o.output, o.input)] = o.max_offset
        return limits

    def without_slower_overlaps(self, keep: frozenset[int] = frozenset()) -> Problem:
        """The problem without the overlaps that would slow their kernel,
        except at the steps in `keep` (itself when that drops none)."""
        if not any(o.slower for index, step in enumerate(self.steps) if index not in keep for o in step.overlaps):
            return self
        steps = tuple(
            s if index in keep else replace(s, overlaps=tuple(o for o in s.overlaps if not o.slower))
            for index, s in enumerate(self.steps)
        )
        return replace(self, steps=steps)

    def may_go_below_live_peak(self) -> bool:
        """Whether some plan may hold fewer bytes than the live peak: only
        buffers that may share bytes (in place, or overlapping) allow it."""
        return bool(self.in_place_pairs() or self.overlap_limits())


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
    return tuple(Step(tuple(i), tuple(o)) for i, o in zip(inputs, outputs, strict=True))


def problem_from_intervals(buffers: list[Buffer], alignment: int = 1) -> Problem:
    """A problem from bare intervals.  Times are renumbered densely (0, 1, 2 ...
    over the distinct endpoints): every overlap stays as it was, and an
    instance whose lifetimes span a million time units does not become a
    million steps."""
    times = sorted({t for b in buffers for t in (b.start, b.end)})
    rank = {t: i for i, t in enumerate(times)}
    bufs = tuple(Buffer(b.id, align_up(b.size, alignment), rank[b.start], rank[b.end]) for b in buffers)
    return Problem(bufs, alignment, steps_from_intervals(bufs), step_times=tuple(times))


def forbidden_starts(
    b: Buffer, other: Buffer, other_offset: int, limits: dict[tuple[int, int], int], alignment: int
) -> tuple[int, int]:
    """Beside `other` placed at `other_offset` (the two alive at a common
    step), `b` may start at or below the first number or at or above the
    second (none is forbidden when the first is not below the second).  Apart
    from each other's bytes, except where an overlap lets the output start
    inside (or less far before) the input it reads for the last time."""
    low, high = other_offset - b.size, other_offset + other.size
    limit = limits.get((b.id, other.id))
    if limit is not None:  # b is the output: it may start up to `limit` after the input
        low = max(low, other_offset + align_down(limit, alignment))
    limit = limits.get((other.id, b.id))
    if limit is not None:  # b is the input: the output may start up to `limit` after b
        high = min(high, other_offset - align_down(limit, alignment))
    return low, high


def sharing_lower_bound(problem: Problem, in_place: bool = True) -> int:
    """No plan goes below this: at each step the live bytes, less what every
    overlap there could save at most (the smaller of the two buffers, and no
    more than the output's bytes beyond what the overlap's bound keeps apart)
    and, with `in_place`, what every in-place pair could (a whole buffer).
    The live peak when nothing may share bytes."""
    num = max([problem.num_steps] + [b.end for b in problem.buffers])
    delta = [0] * (num + 1)
    for b in problem.buffers:
        delta[b.start] += b.size
        delta[b.end] -= b.size
    buffers = problem.by_id()
    pairs = problem.in_place_pairs() if in_place else set()
    overlapping = set()
    for (out_id, in_id), limit in problem.overlap_limits().items():
        out, inp = buffers[out_id], buffers[in_id]
        kept_apart = max(0, -align_down(limit, problem.alignment))
        saving = max(0, min(out.size - kept_apart, inp.size, out.size))
        if frozenset((out_id, in_id)) in pairs:  # in place too: one saving, the larger
            saving = max(saving, min(out.size, inp.size))
            overlapping.add(frozenset((out_id, in_id)))
        delta[out.start] -= saving
        delta[max(out.start + 1, min(out.end, inp.end))] += saving
    for pair in pairs - overlapping:
        first, second = (buffers[i] for i in pair)
        out = first if first.start > second.start else second
        saving = min(first.size, second.size)
        delta[out.start] -= saving
        delta[out.start + 1] += saving
    best, running = 0, 0
    for step in range(num):
        running += delta[step]
        best = max(best, running)
    return best


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


def arena_peak(problem: Problem, offsets: dict[int, int]) -> LiveSet:
    """The first step at which the placed buffers alive reach the arena's
    highest byte, and the bytes up to there (with overlaps and in-place
    ops, less than those buffers' sum: the live peak is another step's)."""
    top_at: dict[int, int] = {}
    for b in problem.buffers:
        for step in range(b.start, b.end):
            top_at[step] = max(top_at.get(step, 0), offsets[b.id] + b.size)
    if not top_at:
        return LiveSet(0, 0, ())
    step = min(top_at, key=lambda s: (-top_at[s], s))
    alive = tuple(b.id for b in problem.buffers if b.start <= step < b.end)
    return LiveSet(step, top_at[step], alive)


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
    # Solver nodes instead of seconds for the planners bounded by the clock:
    # the same plan on every machine, however busy (None: `time_limit`).
    work_limit: int | None = None


@dataclass
class PlannerResult:
    offsets: dict[int, int]  # buffer id -> byte offset in the arena
    proven_optimal: bool = False  # only exact planners may claim this
    # False when a time limit cut some question short, so that a faster or
    # slower machine may end with other offsets.
    reproducible: bool = True


def arena_bytes(problem: Problem, offsets: dict[int, int]) -> int:
    return max((offsets[b.id] + b.size for b in problem.buffers), default=0)
