"""`shared-blocks`: outputs share a few memory blocks identified by number.

Follows the "method for pre-allocating memory" application (its text gives
no publication number): a list of idle block identifiers, a mapping table
from outputs to block identifiers, and a general list of every block
identifier created.  How the abstract maps to the code:

- "for each successive layer from the first": the walk goes forward over the
  steps at which some buffer starts or dies, in time order;
- "attempting, for each output of the current layer, to obtain a block
  identifier from the list of idle block identifiers ... if obtained, store the
  mapping and delete it from the idle list": `_take_idle_block`; which idle
  block to take the text leaves open, so the one that has to grow least (then
  the smallest, then the oldest) is taken;
- "if not obtained, create a new block identifier and put it into the general
  list": `block_sizes.append`;
- "for each input of the current layer, put its block identifier into the idle
  list if that input is not used by a subsequent layer": after the step's
  outputs are mapped, every buffer whose last step is this one gives its block
  back.  Releasing after the outputs are mapped is what keeps a layer's output
  off its own inputs;
- "creating, according to the general list, the memory blocks required": a
  block is as large as the largest buffer it ever held, and the blocks are
  laid end to end in the order they were created.

Buffers that no step writes (graph inputs) are mapped at their first step like
outputs; buffers that no step reads are released after their last step.  The
method never overlaps an output with an input, so in-place pairs go unused.
"""

from __future__ import annotations

from ..problem import Budget, Buffer, PlannerResult, Problem
from . import register


@register("shared-blocks", seed="004_87fad44022dab626.txt")
def plan_shared_blocks(problem: Problem, budget: Budget = Budget()) -> PlannerResult:
    block_of, block_sizes = assign_blocks(problem)
    block_offsets = []
    running = 0
    for size in block_sizes:
        block_offsets.append(running)
        running += size
    return PlannerResult({buffer_id: block_offsets[block] for buffer_id, block in block_of.items()})


def assign_blocks(problem: Problem) -> tuple[dict[int, int], list[int]]:
    """Buffer id -> block number, and each block's size (largest buffer it held)."""
    starting: dict[int, list[Buffer]] = {}
    dying: dict[int, list[Buffer]] = {}
    for b in problem.buffers:
        starting.setdefault(b.start, []).append(b)
        dying.setdefault(b.end - 1, []).append(b)
    output_rank = _output_rank(problem)

    block_of: dict[int, int] = {}
    block_sizes: list[int] = []
    idle: list[int] = []
    for step in sorted(set(starting) | set(dying)):
        for b in sorted(starting.get(step, ()), key=lambda b: (output_rank.get((step, b.id), len(output_rank)), b.id)):
            block = _take_idle_block(idle, block_sizes, b.size)
            if block is None:
                block = len(block_sizes)
                block_sizes.append(b.size)
            block_sizes[block] = max(block_sizes[block], b.size)
            block_of[b.id] = block
        for b in dying.get(step, ()):
            idle.append(block_of[b.id])
    return block_of, block_sizes


def _take_idle_block(idle: list[int], block_sizes: list[int], size: int) -> int | None:
    if not idle:
        return None
    best = min(idle, key=lambda block: (max(0, size - block_sizes[block]), block_sizes[block], block))
    idle.remove(best)
    return best


def _output_rank(problem: Problem) -> dict[tuple[int, int], int]:
    """(step, buffer id) -> position among that step's outputs: the layer's own output order."""
    rank: dict[tuple[int, int], int] = {}
    for index, step in enumerate(problem.steps):
        for position, buffer_id in enumerate(step.outputs):
            rank.setdefault((index, buffer_id), position)
    return rank
