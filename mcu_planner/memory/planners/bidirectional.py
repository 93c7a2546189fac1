"""`bidirectional`: plan backwards from the graph's final outputs, on two
stacks that grow left and right of an origin.

Follows patent CN112256441B (memory allocation for neural network
inference).  Its "layers" are feature maps: a layer's
block holds its output (OFM), and the inputs it reads are its IFM layers.
How the claims map to the code:

- claim 2 (initial state): both stacks empty, the left boundary at -1 and the
  right one at 0.  The patent counts the left side by the address of its last
  byte (-1 is the first byte left of the origin); here both sides are kept as
  heights from the origin, so a left block of `size` bytes at height `h`
  occupies [-(h + size), -h), and the left boundary is minus the left
  extent.  Arena = right boundary - left boundary;
- claim 3: the final output layers (buffers no op reads that are held to the
  end) go on the right in ascending ID order;
- claim 4 (which layer next): the side whose most recently placed layer has
  the larger ID is processed, all of that layer's IFMs being placed.  On
  graphs that branch, a layer with a larger ID than both stack tops can sit
  buried inside a stack, and processing it late would let an earlier tensor
  land on bytes still in use.  So the walk goes over the steps strictly
  backwards: at each step, the buffers whose last use it is get placed, then
  the buffers it produces are released.  That is exactly the order claim 4
  produces whenever the latest layer is on a stack top (chains, and most
  real graphs);
- claim 1 (release): once all IFMs of a placed layer are placed, its block is
  released; a stack can only give memory back from its top, so released
  blocks are popped as soon as nothing unreleased lies above them;
- claim 1 (which side, first rule): an IFM goes on the side that lets its
  consumer's block be released, i.e. the side whose top it does not bury;
- claim 6: when both sides would release something and the amounts differ, a
  tensor whose lifetime is one step (read only by the op right after the one
  that wrote it) goes where more is released;
- claim 7, 8: otherwise it goes on the side whose boundary grows less;
  boundaries only ever grow;
- claim 5 (done): all steps walked, both stacks are empty.

Final offsets are shifted so that the left boundary is offset 0.  Buffers
alive for one step only and read by nobody (dead outputs) are placed at that
step like any IFM.  The method overlaps nothing, so in-place pairs go unused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..problem import Budget, Buffer, PlannerResult, Problem
from . import register

LEFT, RIGHT = 0, 1


@dataclass
class _Slot:
    buffer: Buffer
    height: int  # distance of the block's near edge from the origin
    released: bool = False


@dataclass
class _Stack:
    slots: list[_Slot] = field(default_factory=list)
    extent: int = 0  # how far from the origin this side has ever reached

    @property
    def height(self) -> int:
        return self.slots[-1].height + self.slots[-1].buffer.size if self.slots else 0

    def push(self, buffer: Buffer) -> _Slot:
        slot = _Slot(buffer, self.height)
        self.slots.append(slot)
        self.extent = max(self.extent, self.height)
        return slot

    def releasable(self, releasing_now: set[int]) -> int:
        """Bytes popped from the top if the blocks in `releasing_now` were released."""
        freed = 0
        for slot in reversed(self.slots):
            if not (slot.released or slot.buffer.id in releasing_now):
                break
            freed += slot.buffer.size
        return freed

    def pop_released(self) -> None:
        while self.slots and self.slots[-1].released:
            self.slots.pop()


@dataclass
class BidirectionalPlan:
    offsets: dict[int, int]  # relative to the origin: left blocks are negative
    left_boundary: int
    right_boundary: int

    @property
    def arena_bytes(self) -> int:
        return self.right_boundary - self.left_boundary


@register("bidirectional", seed="000_b46a2543c335eee3.txt")
def plan_bidirectional(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    plan = plan_around_origin(problem)
    return PlannerResult({i: off - plan.left_boundary for i, off in plan.offsets.items()})


def plan_around_origin(problem: Problem) -> BidirectionalPlan:
    buffers = problem.by_id()
    horizon = max((b.end for b in problem.buffers), default=0)
    read = {i for step in problem.steps for i in step.inputs}
    stacks = (_Stack(), _Stack())
    side_of: dict[int, int] = {}
    slot_of: dict[int, _Slot] = {}

    def place(buffer: Buffer, side: int) -> None:
        side_of[buffer.id] = side
        slot_of[buffer.id] = stacks[side].push(buffer)

    finals = sorted(b.id for b in problem.buffers if b.end == horizon and b.id not in read)
    for buffer_id in finals:
        place(buffers[buffer_id], RIGHT)

    last_use: dict[int, list[Buffer]] = {}
    born: dict[int, list[Buffer]] = {}
    for b in problem.buffers:
        last_use.setdefault(b.end - 1, []).append(b)
        born.setdefault(b.start, []).append(b)

    for step in sorted(set(last_use) | set(born), reverse=True):
        releasing = {b.id for b in born.get(step, ())}
        for b in sorted(last_use.get(step, ()), key=lambda b: b.id):
            if b.id not in side_of:
                place(b, _choose_side(stacks, b, step, releasing))
        for buffer_id in releasing:
            slot_of[buffer_id].released = True
        for stack in stacks:
            stack.pop_released()

    offsets = {}
    for buffer_id, side in side_of.items():
        slot = slot_of[buffer_id]
        if side == RIGHT:
            offsets[buffer_id] = slot.height
        else:
            offsets[buffer_id] = -(slot.height + slot.buffer.size)
    return BidirectionalPlan(offsets, -stacks[LEFT].extent, stacks[RIGHT].extent)


def _choose_side(stacks: tuple[_Stack, _Stack], b: Buffer, step: int, releasing: set[int]) -> int:
    own_release = [stack.releasable(releasing) for stack in stacks]
    freed = []
    growth = []
    for side in (LEFT, RIGHT):
        other = 1 - side
        # A block pushed on a side buries that side's releasable top, unless
        # it is itself released at this step (then the whole run still pops).
        buried = 0 if b.start == step else own_release[side]
        kept = own_release[side] - buried + (b.size if b.start == step else 0)
        freed.append(own_release[other] + kept)
        growth.append(max(0, stacks[side].height + b.size - stacks[side].extent))

    if (freed[LEFT] > 0) != (freed[RIGHT] > 0):
        return LEFT if freed[LEFT] > 0 else RIGHT  # claim 1: let the consumer go
    one_step = b.end - 1 - b.start <= 1
    if freed[LEFT] != freed[RIGHT] and freed[LEFT] > 0 and one_step:
        return LEFT if freed[LEFT] > freed[RIGHT] else RIGHT  # claim 6
    ranking = {
        side: (growth[side], -freed[side], stacks[side].height + b.size, stacks[side].extent, side)
        for side in (LEFT, RIGHT)
    }
    return min((LEFT, RIGHT), key=lambda side: ranking[side])  # claim 8, then the most freed
