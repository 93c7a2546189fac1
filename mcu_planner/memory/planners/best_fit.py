"""`best-fit`: replay the run on a pool allocator that hands out the smallest
free block that fits, and read the offsets off the replay.

Follows the Shenzhen Corerain application on memory management for neural
network models (published 2024-11-18; its text gives no publication number):
a memory pool split into partitions, parameters in the first, the
operators' inputs and outputs in the third.
How its paragraphs map to the code:

- parameters get their own partition (para. 3-4): weights are constants, which
  the lifetimes stage leaves in flash; the problem holds activations only, so
  the pool here is the third partition alone;
- allocation (para. 5): the request is rounded up to the alignment (sizes come
  aligned), the free block list is searched for the smallest block that fits
  (`_smallest_fit`), and the block is split only when the remainder is larger
  than the first threshold (`split_threshold`); otherwise the whole block is
  handed out and its slack stays with it until it is freed;
- growth (para. 6): when no free block fits, the pool takes fresh memory from
  the device, appended at its end, exactly as large as the request (so the
  second threshold's split never has anything to cut off);
- release (para. 7): every buffer carries a reference count, one per op that
  reads it, plus one for whoever holds it to the end of its lifetime when
  that is not a read (graph outputs, outputs nobody reads).  After each op the
  counts of what it touched drop by one; at zero the block goes back to the
  free list.  The text does not merge neighbouring free blocks; `coalesce=True`
  does;
- in-place outputs (para. 8): an output the step may write over an input that
  dies there takes that input's block as it is (`in_place=True`).  Concatenated
  outputs sharing one buffer (para. 9) are done by the lifetimes stage before
  any planner runs.
"""

from __future__ import annotations

from ..problem import Budget, PlannerResult, Problem
from . import register


@register("best-fit", seed="001_b164e948ccc60f32.txt")
def plan_best_fit(
    problem: Problem,
    budget: Budget = Budget(),
    *,
    split_threshold: int = 0,
    coalesce: bool = False,
    in_place: bool = True,
) -> PlannerResult:
    pool = _BestFitPool(split_threshold, coalesce)
    refcount, touched_at = _reference_counts(problem)
    takes_over = in_place_predecessors(problem) if in_place else {}
    starting: dict[int, list[int]] = {}
    for b in problem.buffers:
        starting.setdefault(b.start, []).append(b.id)

    sizes = {b.id: b.size for b in problem.buffers}
    offsets: dict[int, int] = {}
    for step in sorted(set(starting) | set(touched_at)):
        for buffer_id in sorted(starting.get(step, ())):
            source = takes_over.get(buffer_id)
            if source is not None and source in pool.used:
                # The source's count reaches zero at this very step, so its block is
                # the output's now and must not be freed below.
                pool.used[buffer_id] = pool.used.pop(source)
                refcount[source] = -1
            else:
                pool.used[buffer_id] = pool.allocate(sizes[buffer_id])
            offsets[buffer_id] = pool.used[buffer_id][0]
        for buffer_id in touched_at.get(step, ()):
            if refcount[buffer_id] < 0:
                continue
            refcount[buffer_id] -= 1
            if refcount[buffer_id] == 0:
                pool.release(pool.used.pop(buffer_id))
    return PlannerResult(offsets)


class _BestFitPool:
    def __init__(self, split_threshold: int, coalesce: bool):
        self.split_threshold = split_threshold
        self.coalesce = coalesce
        self.free: list[tuple[int, int]] = []  # (offset, size) sorted by offset
        self.used: dict[int, tuple[int, int]] = {}  # buffer id -> its block (offset, size)
        self.end = 0

    def allocate(self, size: int) -> tuple[int, int]:
        index = self._smallest_fit(size)
        if index is None:
            block = (self.end, size)
            self.end += size
            return block
        offset, block_size = self.free.pop(index)
        if block_size - size > self.split_threshold:
            self._insert_free(offset + size, block_size - size)
            return offset, size
        return offset, block_size

    def release(self, block: tuple[int, int]) -> None:
        self._insert_free(*block)

    def _smallest_fit(self, size: int) -> int | None:
        best = None
        for index, (_offset, block_size) in enumerate(self.free):
            if block_size >= size and (best is None or block_size < self.free[best][1]):
                best = index
        return best

    def _insert_free(self, offset: int, size: int) -> None:
        if size == 0:
            return
        index = 0
        while index < len(self.free) and self.free[index][0] < offset:
            index += 1
        self.free.insert(index, (offset, size))
        if not self.coalesce:
            return
        if index + 1 < len(self.free) and offset + size == self.free[index + 1][0]:
            size += self.free.pop(index + 1)[1]
            self.free[index] = (offset, size)
        if index > 0 and self.free[index - 1][0] + self.free[index - 1][1] == offset:
            prev_offset, prev_size = self.free.pop(index - 1)
            self.free[index - 1] = (prev_offset, prev_size + size)


def _reference_counts(problem: Problem) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Each buffer's reference count, and the steps after which counts drop."""
    buffers = problem.by_id()
    readers: dict[int, set[int]] = {b.id: set() for b in problem.buffers}
    for index, step in enumerate(problem.steps):
        for buffer_id in step.inputs:
            b = buffers.get(buffer_id)
            if b is not None and b.start <= index < b.end:
                readers[buffer_id].add(index)
    for b in problem.buffers:
        # Holding the bytes to the end of the lifetime is a reference of its own
        # when no op reads them there; it makes the count reach zero exactly then.
        readers[b.id].add(b.end - 1)
    touched_at: dict[int, list[int]] = {}
    for buffer_id, steps in readers.items():
        for step_index in steps:
            touched_at.setdefault(step_index, []).append(buffer_id)
    return {buffer_id: len(steps) for buffer_id, steps in readers.items()}, touched_at


def in_place_predecessors(problem: Problem) -> dict[int, int]:
    """Output id -> the input whose bytes it may take: the problem lets the
    step write the output over that input, the input dies at that step, and
    the two are one size (an in-place pair's bytes must coincide)."""
    buffers = problem.by_id()
    predecessor: dict[int, int] = {}
    taken: set[int] = set()
    for index, step in enumerate(problem.steps):
        for out_id, in_id in step.in_place:
            out, inp = buffers.get(out_id), buffers.get(in_id)
            if out is None or inp is None or out_id in predecessor or in_id in taken:
                continue
            # An input born at this very step may start a chain, never extend one:
            # its own predecessor would still be alive beside the output.
            chains_on = inp.start < index or in_id not in predecessor
            if out.start == index and inp.end - 1 == index and out.size == inp.size and chains_on:
                predecessor[out_id] = in_id
                taken.add(in_id)
    return predecessor
