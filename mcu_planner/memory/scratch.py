"""Scratch buffers: per-op working memory planned in the arena.

Some kernels (SVDF, LSTM, TRANSPOSE_CONV ...) need memory that is neither an
input nor an output and is dead once the op returns.  Rather than teach every
stage about it, this pass (run by the reader, before lifetimes) turns each
op's needs into ordinary tensors of the graph:

- a lowering module registers, next to the op's lowering,
  `@scratch_for("OPCODE") def f(op, graph) -> tuple[ScratchNeed, ...]`
  (lowering/__init__.py): name, dtype and element count of each buffer;
- `with_scratch_tensors(graph)` appends one Tensor per need
  (`is_scratch=True`, no data) and lists their indices, in the order of the
  needs, in that op's `Operator.scratch`;
- lifetimes makes each scratch tensor an activation alive at its op's step
  only and counts it among the buffers the step writes, so every planner,
  the verifier and the -DMCU_PLAN_CHECK build treat it like any other
  short-lived tensor;
- the op's lowering passes `op.scratch[i]` in `KernelCall.args`; the kernel
  receives a non-const pointer of the dtype's C type into the arena;
- the plan JSON marks such tensors `"scratch": true` and `--map` says
  "(scratch of op N)".

An op whose scratch function raises NotLowerable (a variant the runtime does
not implement) gets none; its lowering raises the same and the model exits 4.
"""

from __future__ import annotations

from dataclasses import replace

from ..graph import Graph, Tensor
from ..lowering import SCRATCH_NEEDS, NotLowerable, ScratchNeed, load_all


def with_scratch_tensors(graph: Graph) -> Graph:
    """`graph` with every op's scratch needs added as scratch tensors."""
    load_all()
    tensors = list(graph.tensors)
    operators = []
    for op in graph.operators:
        need_fn = SCRATCH_NEEDS.get(op.opcode)
        needs: tuple[ScratchNeed, ...] = ()
        if need_fn is not None and not op.scratch:
            try:
                needs = need_fn(op, graph)
            except NotLowerable:
                needs = ()
        indices = []
        for need in needs:
            index = len(tensors)
            name = f"op{op.index}_{op.opcode.lower()}_scratch_{need.name}"
            tensors.append(Tensor(index, name, (need.elements,), need.dtype, is_scratch=True))
            indices.append(index)
        operators.append(replace(op, scratch=tuple(indices)) if indices else op)
    if len(tensors) == len(graph.tensors):
        return graph
    return replace(graph, tensors=tuple(tensors), operators=tuple(operators))


def scratch_op(graph: Graph) -> dict[int, int]:
    """Scratch tensor -> the op whose scratch it is."""
    return {t: op.index for op in graph.operators for t in op.scratch}
