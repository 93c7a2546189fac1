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

Ops that touch the same variable tensor keep their model order (state is read
and written in place); so do ops whose relative order the data flow fixes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .graph import Graph
from .problem import align_up

# Sets of executed ops kept per layer; beyond it the search is a beam search.
DEFAULT_MAX_STATES = 1024


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
        self.preds = [0] * self.n
        for i, op in enumerate(ops):
            for t in op.inputs:
                if t in producer and producer[t] != i:
                    self.preds[i] |= 1 << producer[t]
        # Ops on one variable tensor keep their model order.
        last_on_variable: dict[int, int] = {}
        for i, op in enumerate(ops):
            for t in set(op.inputs) | set(op.outputs):
                if t >= 0 and tensors[t].is_variable:
                    if t in last_on_variable:
                        self.preds[i] |= 1 << last_on_variable[t]
                    last_on_variable[t] = i
        everything = set(producer) | set(consumers) | set(graph.inputs) | graph_outputs
        for t in everything:
            if activation(t):
                self.size[t] = align_up(tensors[t].nbytes, alignment)
        self.outputs = [tuple(sorted({t for t in op.outputs if activation(t)})) for op in ops]
        self.inputs = [tuple(sorted({t for t in op.inputs if activation(t)})) for op in ops]
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
        new = sum(self.size[t] for t in self.outputs[op])
        during = live + new + self.scratch[op]
        after_done = done | (1 << op)
        after = live + sum(self.size[t] for t in self.outputs[op] if self.needed_after(t, after_done))
        after -= sum(self.size[t] for t in self.inputs[op] if not self.needed_after(t, after_done))
        return during, after

    def peak_of(self, order: list[int] | tuple[int, ...]) -> int:
        done, live, peak = 0, self.initial_live, self.initial_live
        for op in order:
            during, live = self.step(done, live, op)
            done |= 1 << op
            peak = max(peak, during)
        return peak


def best_order(graph: Graph, alignment: int = 16, max_states: int = DEFAULT_MAX_STATES) -> OrderSearch:
    """The topological order of `graph`'s ops with the smallest peak of live bytes."""
    costs = _Costs(graph, alignment)
    n = costs.n
    model_order = tuple(range(n))
    model_peak = costs.peak_of(model_order)
    successors: list[list[int]] = [[] for _ in range(n)]
    for op in range(n):
        for before in range(n):
            if costs.preds[op] >> before & 1:
                successors[before].append(op)
    first_ready = tuple(op for op in range(n) if not costs.preds[op])
    # layer: executed set -> (peak so far, live bytes now, order so far, ops ready to run)
    layer: dict[int, tuple[int, int, tuple[int, ...], tuple[int, ...]]] = {
        0: (costs.initial_live, costs.initial_live, (), first_ready)
    }
    exact = True
    for _ in range(n):
        following: dict[int, tuple[int, int, tuple[int, ...], tuple[int, ...]]] = {}
        for done, (peak, live, order, ready) in layer.items():
            for op in ready:
                key = done | (1 << op)
                during, after = costs.step(done, live, op)
                known = following.get(key)
                candidate_order = order + (op,)
                # Same executed set, same bytes alive: the lower peak wins, then the earlier order.
                if known is None or (max(peak, during), candidate_order) < (known[0], known[2]):
                    now_ready = tuple(
                        sorted([r for r in ready if r != op] + [s for s in successors[op] if not costs.preds[s] & ~key])
                    )
                    following[key] = (max(peak, during), after, candidate_order, now_ready)
        if len(following) > max_states:
            exact = False
            kept = sorted(following.items(), key=lambda item: (item[1][0], item[1][1], item[1][2]))[:max_states]
            following = dict(kept)
        layer = following
    peak, _, order, _ = next(iter(layer.values()))
    if peak >= model_peak:  # never trade the model's order for an equal one
        order, peak = model_order, model_peak
    return OrderSearch(tuple(order), peak, model_peak, exact)


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
