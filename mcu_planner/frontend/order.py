"""Memory-aware op order: among the orders that respect the data flow, the one
whose peak of live bytes is smallest (Serenity's method for branchy graphs).

The reader gives the ops in model order.  This pass runs between the reader
and lifetimes: it takes a Graph and returns the same Graph with its operators
permuted (and renumbered), so every later stage sees one order and nothing
flows back.

The cost of an order is counted on whole activation tensors, each rounded up
to the alignment: while op v runs, every tensor produced earlier (or a graph
input) that some op still to run reads, or that is a graph output, is alive,
plus v's outputs and scratch.  Which tensors are alive after a set S of
executed ops depends on S alone, so a dynamic programme over the sets of
executed ops (one layer per count of ops run) finds the order with the
smallest peak.  The layers of a graph of modest width are small; a layer with
more than `max_states` sets keeps the `max_states` best (a beam search: then
the order is good, not proven best).  Aliasing and in-place reuse are not
counted here: the caller compares real plans of both orders before using one.

Bounded: the search extends at most `work` (set, op) pairs over all layers
(each costs time in the op's tensors, not in the model's size), so a wide or
long graph keeps fewer sets per layer, down to one: a greedy order, linear in
the model.  Past the command's deadline every remaining layer keeps one.

Ops that touch the same variable tensor keep their model order (state is read
and written in place); so do ops whose relative order the data flow fixes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..deadline import Deadline
from ..graph import Graph
from ..memory.problem import align_up

# Sets of executed ops kept per layer; beyond it the search is a beam search.
DEFAULT_MAX_STATES = 1024
# (Set, op) pairs the search extends in all: about a second.  Beyond it the
# layers keep fewer sets (the 693-op unrolled LSTM took 23 s without it).
DEFAULT_WORK = 200_000


@dataclass(frozen=True)
class OrderSearch:
    order: tuple[int, ...]  # model op indices in the order to run them
    peak_bytes: int  # the peak of live whole tensors in that order
    model_order_peak: int  # the same count for the model's own order
    exact: bool  # no layer was cut: no topological order has a smaller peak


class _Costs:
    """Per-op facts in bit masks over op indices."""

    def __init__(self, graph: Graph, alignment: int):
        ops = graph.operators
        self.n = len(ops)
        tensors = graph.tensors

        def activation(t: int) -> bool:
            return t >= 0 and not tensors[t].is_constant and not tensors[t].is_variable

        self.size = {}
        producer: dict[int, int] = {}
        consumers: dict[int, int] = {}
        for i, op in enumerate(ops):
            for t in op.outputs:
                if activation(t):
                    producer.setdefault(t, i)
            for t in op.inputs:
                if activation(t):
                    consumers[t] = consumers.get(t, 0) | (1 << i)
        graph_outputs = set(graph.outputs)
        self.keep_forever = graph_outputs
        self.consumers = consumers
        self.preds = [0] * self.n  # as a bit mask over op indices
        self.successors: list[list[int]] = [[] for _ in range(self.n)]

        def must_follow(later: int, earlier: int) -> None:
            if not self.preds[later] >> earlier & 1:
                self.preds[later] |= 1 << earlier
                self.successors[earlier].append(later)

        for i, op in enumerate(ops):
            for t in op.inputs:
                if t in producer and producer[t] != i:
                    must_follow(i, producer[t])
        # Ops on one variable tensor keep their model order.
        last_on_variable: dict[int, int] = {}
        for i, op in enumerate(ops):
            for t in sorted(set(op.inputs) | set(op.outputs)):
                if t >= 0 and tensors[t].is_variable:
                    if t in last_on_variable:
                        must_follow(i, last_on_variable[t])
                    last_on_variable[t] = i
        for later in self.successors:
            later.sort()
        everything = set(producer) | set(consumers) | set(graph.inputs) | graph_outputs
        for t in everything:
            if activation(t):
                self.size[t] = align_up(tensors[t].nbytes, alignment)
        self.outputs = [tuple(sorted({t for t in op.outputs if activation(t)})) for op in ops]
        self.inputs = [tuple(sorted({t for t in op.inputs if activation(t)})) for op in ops]
        self.output_bytes = [sum(self.size[t] for t in outputs) for outputs in self.outputs]
        self.scratch = [sum(align_up(tensors[t].nbytes, alignment) for t in op.scratch) for op in ops]
        produced = set(producer)
        # Alive before any op: graph inputs and tensors read but produced by nobody.
        self.initial_live = sum(
            self.size[t] for t in self.size if t not in produced and (t in consumers or t in graph_outputs)
        )

    def needed_after(self, t: int, done: int) -> bool:
        return t in self.keep_forever or bool(self.consumers.get(t, 0) & ~done)

    def step(self, done: int, live: int, op: int) -> tuple[int, int]:
        """(bytes alive while `op` runs after the set `done`, bytes alive after it)."""
        not_done = ~(done | (1 << op))
        keep, consumers, size = self.keep_forever, self.consumers, self.size
        during = live + self.output_bytes[op] + self.scratch[op]
        after = live
        for t in self.outputs[op]:
            if t in keep or consumers.get(t, 0) & not_done:
                after += size[t]
        for t in self.inputs[op]:
            if not (t in keep or consumers.get(t, 0) & not_done):
                after -= size[t]
        return during, after

    def peak_of(self, order: list[int] | tuple[int, ...]) -> int:
        done, live, peak = 0, self.initial_live, self.initial_live
        for op in order:
            during, live = self.step(done, live, op)
            done |= 1 << op
            peak = max(peak, during)
        return peak


# An order of ops as a linked list from its last op: (op, the order before it).
_Path = tuple[int, "_Path"] | None
# One set of executed ops in a layer: (peak so far, live bytes now, its
# order's rank in the layer, the order, ops ready to run).
_State = tuple[int, int, int, _Path, tuple[int, ...]]


def best_order(
    graph: Graph,
    alignment: int = 16,
    max_states: int = DEFAULT_MAX_STATES,
    deadline: Deadline | None = None,
    work: int = DEFAULT_WORK,
) -> OrderSearch:
    """The topological order of `graph`'s ops with the smallest peak of live bytes
    (within the `work` and `deadline` bounds: see the module docstring)."""
    costs = _Costs(graph, alignment)
    n = costs.n
    model_order = tuple(range(n))
    model_peak = costs.peak_of(model_order)
    first_ready = tuple(op for op in range(n) if not costs.preds[op])
    layer: dict[int, _State] = {0: (costs.initial_live, costs.initial_live, 0, None, first_ready)}
    exact = True
    work_left = work
    for depth in range(n):
        width = max(len(state[4]) for state in layer.values())
        keep = min(max_states, max(1, work_left // max(1, (n - depth) * width)))
        if deadline is not None:
            deadline.progress("op order search", depth, n)
            if deadline.expired():
                keep = 1
                deadline.cut("op order search")
        # executed set -> (peak, live after, (parent's rank, op), the order, the parent's state)
        following: dict[int, tuple[int, int, tuple[int, int], _Path, _State]] = {}
        for done, state in layer.items():
            peak, live, rank, path, ready = state
            for op in ready:
                key = done | (1 << op)
                during, after = costs.step(done, live, op)
                known = following.get(key)
                # Same executed set, same bytes alive: the lower peak wins, then the
                # earlier order (ranks follow the orders' lexicographic order).
                candidate = (max(peak, during), (rank, op))
                if known is None or candidate < (known[0], known[2]):
                    following[key] = (candidate[0], after, (rank, op), (op, path), state)
            work_left -= len(ready)
        items = list(following.items())
        if len(items) > keep:
            exact = False
            items = sorted(items, key=lambda item: (item[1][0], item[1][1], item[1][2]))[:keep]
        # Ranks of the kept orders, lexicographically: by the parent's rank, then the op.
        items.sort(key=lambda item: item[1][2])
        layer = {}
        for new_rank, (key, (peak, after, (_, op), path, parent)) in enumerate(items):
            ready = parent[4]
            now_ready = [r for r in ready if r != op]
            now_ready += [s for s in costs.successors[op] if not costs.preds[s] & ~key]
            layer[key] = (peak, after, new_rank, path, tuple(sorted(now_ready)))
    if deadline is not None:
        deadline.end_progress()
    peak, _, _, path, _ = next(iter(layer.values()))
    reversed_order: list[int] = []
    while path is not None:
        op, path = path
        reversed_order.append(op)
    order = tuple(reversed(reversed_order))
    if peak >= model_peak:  # never trade the model's order for an equal one
        order, peak = model_order, model_peak
    return OrderSearch(order, peak, model_peak, exact)


def reorder(graph: Graph, order: tuple[int, ...]) -> Graph:
    """`graph` with its ops run in `order` (model op indices), renumbered 0..n-1.
    Raises ValueError when `order` is not an order the data flow allows."""
    if tuple(order) == tuple(range(len(graph.operators))):
        return graph
    if sorted(order) != list(range(len(graph.operators))):
        raise ValueError("an op order must list every op once")
    preds = _Costs(graph, 1).preds
    done = 0
    for op in order:
        if preds[op] & ~done:
            raise ValueError(f"op {op} cannot run before the ops whose results it reads")
        done |= 1 << op
    ops = tuple(replace(graph.operators[old], index=new) for new, old in enumerate(order))
    return replace(graph, operators=ops)
