"""`first-fit`: replay the run on a pool kept as a doubly linked list of
blocks, taking the first free block from the head that fits.

Follows patent application CN113127181A (memory management for a deep
learning network by groups of layers that reuse memory).  How its claims map
to the code:

- claim 1, 7 (layer groups and their reuse value): layers that may run in
  place chain into a group (`_reuse_groups`: an output and the input it may
  overwrite, the input dying at that step, the two of one size); a group's
  reuse value is the largest memory any of its layers needs.  A layer that
  runs in place on nothing is a group of its own;
- claim 1 (reference threshold): a group whose reuse value exceeds
  `reference_threshold` takes, at its first layer, memory that is not part of
  the network's pool (a second list placed after the pool), sized by the reuse
  value, and every layer of the group uses it; the other groups are served
  from the pool layer by layer, each layer by its own size;
- claim 2 (minimum allocation unit): every request is a whole number of
  `min_unit` bytes (rounded up to a multiple of the alignment as well);
- claim 3, 4 (doubly linked list, first fit from the head): `_Block` nodes
  in address order, each with its state, size and neighbours; the walk from
  the head takes the first free node that is large enough.  The pool has no
  fixed size here: the tail node is free and unbounded, so it always fits and
  the pool's high-water mark is the arena it needs;
- claim 5 (split): when the node is larger than the request, a new node after
  it keeps the remainder;
- claim 6 (release and merge): a released node becomes free and merges with
  free neighbours on either side.

A layer of a group in the pool takes over the node of the input it runs in
place on (same offset, that input dying at the step).  Buffers are allocated
at their first step and released after their last, before the next step's
allocations.
"""

from __future__ import annotations

from math import lcm

from ..problem import Budget, PlannerResult, Problem, align_up
from . import register
from .best_fit import in_place_predecessors


@register("first-fit", seed="002_22935ac4cabf340a.txt")
def plan_first_fit(
    problem: Problem,
    budget: Budget = Budget(),
    *,
    min_unit: int | None = None,
    reference_threshold: int | None = None,
    in_place: bool = True,
) -> PlannerResult:
    unit = lcm(problem.alignment, min_unit or problem.alignment)
    predecessor = in_place_predecessors(problem) if in_place else {}
    group_of, group_value = _reuse_groups(problem, predecessor, unit)
    sizes = {b.id: align_up(b.size, unit) for b in problem.buffers}

    pool, outside = _BlockList(), _BlockList()
    pool_offsets: dict[int, int] = {}
    outside_offsets: dict[int, int] = {}
    held: dict[int, _Block] = {}  # buffer id -> pool node it holds until it dies
    group_node: dict[int, _Block] = {}  # group served outside the pool -> its node
    group_left: dict[int, int] = {}  # such a group -> members still alive or to come
    for root in group_of.values():
        group_left[root] = group_left.get(root, 0) + 1

    starting: dict[int, list[int]] = {}
    dying: dict[int, list[int]] = {}
    for b in problem.buffers:
        starting.setdefault(b.start, []).append(b.id)
        dying.setdefault(b.end - 1, []).append(b.id)

    def outside_pool(root: int) -> bool:
        return reference_threshold is not None and group_value[root] > reference_threshold

    for step in sorted(set(starting) | set(dying)):
        for buffer_id in sorted(starting.get(step, ())):
            root = group_of[buffer_id]
            if outside_pool(root):
                if root not in group_node:  # the group's first layer
                    group_node[root] = outside.allocate(group_value[root])
                outside_offsets[buffer_id] = group_node[root].offset
                continue
            source = predecessor.get(buffer_id)
            # Running in place: the output takes the node of the input dying here.
            node = held.pop(source) if source in held else pool.allocate(sizes[buffer_id])
            held[buffer_id] = node
            pool_offsets[buffer_id] = node.offset
        for buffer_id in dying.get(step, ()):
            root = group_of[buffer_id]
            if outside_pool(root):
                group_left[root] -= 1
                if group_left[root] == 0:
                    outside.release(group_node[root])
            elif buffer_id in held:
                pool.release(held.pop(buffer_id))

    offsets = dict(pool_offsets)
    for buffer_id, offset in outside_offsets.items():
        offsets[buffer_id] = pool.high_water + offset
    return PlannerResult(offsets)


def _reuse_groups(problem: Problem, predecessor: dict[int, int], unit: int) -> tuple[dict[int, int], dict[int, int]]:
    """Buffer id -> its group's first layer, and each group's reuse value."""
    group_of: dict[int, int] = {}
    for b in sorted(problem.buffers, key=lambda b: b.start):
        source = predecessor.get(b.id)
        group_of[b.id] = group_of[source] if source is not None else b.id
    group_value: dict[int, int] = {}
    for b in problem.buffers:
        root = group_of[b.id]
        group_value[root] = max(group_value.get(root, 0), align_up(b.size, unit))
    return group_of, group_value


class _Block:
    __slots__ = ("offset", "size", "free", "prev", "next")

    def __init__(self, offset: int, size: int | None, free: bool):
        self.offset = offset
        self.size = size  # None: the unbounded free tail
        self.free = free
        self.prev: _Block | None = None
        self.next: _Block | None = None


class _BlockList:
    """Address-ordered doubly linked list of blocks ending in an unbounded free tail."""

    def __init__(self) -> None:
        self.head = _Block(0, None, True)
        self.high_water = 0

    def allocate(self, size: int) -> _Block:
        node = self.head
        while not (node.free and (node.size is None or node.size >= size)):
            assert node.next is not None, "the list ends in an unbounded free block"
            node = node.next
        if node.size is None or node.size > size:
            rest = _Block(node.offset + size, None if node.size is None else node.size - size, True)
            rest.prev, rest.next = node, node.next
            if node.next is not None:
                node.next.prev = rest
            node.next = rest
            node.size = size
        node.free = False
        self.high_water = max(self.high_water, node.offset + node.size)
        return node

    def release(self, node: _Block) -> None:
        node.free = True
        if node.next is not None and node.next.free:
            self._absorb_next(node)
        if node.prev is not None and node.prev.free:
            self._absorb_next(node.prev)

    @staticmethod
    def _absorb_next(node: _Block) -> None:
        gone = node.next
        assert gone is not None and node.size is not None, "only a bounded block absorbs its successor"
        node.size = None if gone.size is None else node.size + gone.size
        node.next = gone.next
        if gone.next is not None:
            gone.next.prev = node
