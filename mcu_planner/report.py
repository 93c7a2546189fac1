"""What the command prints and writes about a plan: summary, memory map,
planner table, the shortfall when a model does not fit, and the plan JSON."""

from __future__ import annotations

from collections import Counter

from .graph import Graph, Tensor
from .layers import layer_rows
from .lifetimes import Lifetimes
from .planning import ArenaPlan
from .problem import LiveSet, peak_live
from .scratch import scratch_op
from .sizes import format_bytes

MAP_WIDTH = 64


def _tensor_line(t: Tensor) -> str:
    shape = ",".join(str(d) for d in t.shape)
    text = f"#{t.index} {t.name}: {t.dtype}[{shape}]"
    q = t.quantization
    if q and q.scales:
        if q.per_channel:
            text += f" per-channel scales ({len(q.scales)}, axis {q.axis})"
        else:
            text += f" scale {q.scales[0]:.9g} zero point {q.zero_points[0] if q.zero_points else 0}"
    return text


def model_summary(graph: Graph, lifetimes: Lifetimes) -> list[str]:
    counts = Counter(op.opcode for op in graph.operators)
    ops = ", ".join(f"{name} x{n}" for name, n in sorted(counts.items()))
    weights = sum(t.nbytes for t in graph.tensors if t.is_constant)
    scratch = sum(1 for t in lifetimes.placements if graph.tensors[t].is_scratch)
    lines = [
        f"ops: {len(graph.operators)} ({ops})",
        f"activation tensors: {len(lifetimes.placements)} in {len(lifetimes.problem.buffers)} buffers"
        + (f" ({len(lifetimes.aliases)} aliased)" if lifetimes.aliases else "")
        + (f", {scratch} of them kernels' scratch" if scratch else ""),
    ]
    lines += ["input " + _tensor_line(graph.tensors[i]) for i in graph.inputs]
    lines += ["output " + _tensor_line(graph.tensors[i]) for i in graph.outputs]
    lines.append(f"weights (flash): {format_bytes(weights)}")
    if lifetimes.variable_tensors:
        lines.append(
            f"variables (persistent RAM): {format_bytes(lifetimes.variable_bytes)} "
            f"in {len(lifetimes.variable_tensors)} tensors"
        )
    lines += [f"note: {n}" for n in graph.notes]
    return lines


def _gap(plan_bytes: int, bound: int) -> str:
    gap = plan_bytes - bound
    pct = 100.0 * gap / bound if bound else 0.0
    return f"{gap:+,} B ({pct:+.1f}%)"


def plan_summary(lifetimes: Lifetimes, plan: ArenaPlan) -> list[str]:
    bound = peak_live(lifetimes.problem).bytes
    how = f"planner {plan.planner}" + (" (picked by auto)" if plan.chosen_by_auto else "")
    proof = ", proven optimal" if plan.proven_optimal else ""
    # Ops running in place may take the arena below the live peak, which is
    # then no bound at all.
    what = "live peak (no bound with in-place ops)" if lifetimes.problem.in_place_pairs() else "lower bound"
    return [
        f"arena: {format_bytes(plan.arena_bytes)} ({how}{proof}, {plan.seconds * 1000:.1f} ms)",
        f"{what}: {format_bytes(bound)}, gap {_gap(plan.arena_bytes, bound)}",
    ]


def ram_needed(lifetimes: Lifetimes, plan: ArenaPlan) -> int:
    from .pipeline import ram_needed as needed

    return needed(plan.arena_bytes, lifetimes.variable_bytes)


def budget_lines(lifetimes: Lifetimes, plan: ArenaPlan, budget: int) -> list[str]:
    needed = ram_needed(lifetimes, plan)
    margin = budget - needed
    verdict = "fits" if margin >= 0 else "DOES NOT FIT"
    return [f"budget: {format_bytes(budget)}, needed {format_bytes(needed)}, margin {margin:+,} B: {verdict}"]


def shortfall_message(graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan, budget: int) -> str:
    """One line: by how much, at which op the peak falls, which tensors are live there."""
    needed = ram_needed(lifetimes, plan)
    peak = peak_live(lifetimes.problem)
    parts = f" (arena {format_bytes(plan.arena_bytes)} + variables {format_bytes(lifetimes.variable_bytes)})"
    return (
        f"does not fit: needs {format_bytes(needed)}{parts if lifetimes.variable_bytes else ''} "
        f"but --ram is {format_bytes(budget)}, {format_bytes(needed - budget)} short; "
        f"the arena's peak is at {_describe_peak(graph, lifetimes, peak)}"
    )


def _describe_peak(graph: Graph, lifetimes: Lifetimes, peak: LiveSet, most: int = 6) -> str:
    op = graph.operators[peak.step] if peak.step < len(graph.operators) else None
    where = f"op {peak.step} ({op.opcode})" if op else f"step {peak.step}"
    sizes = {b.id: b.size for b in lifetimes.problem.buffers}
    live = sorted(peak.buffer_ids, key=lambda b: -sizes[b])
    names = [f"#{b} {_tensor_name(graph.tensors[b])} {format_bytes(sizes[b])}" for b in live[:most]]
    if len(live) > most:
        names.append(f"and {len(live) - most} more")
    return f"{where} with {format_bytes(peak.bytes)} live: " + ", ".join(names)


def _tensor_name(t: Tensor) -> str:
    return t.name or "(unnamed)"


def memory_map(graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan) -> list[str]:
    steps = max(lifetimes.problem.num_steps, 1)
    scale = max(1, -(-steps // MAP_WIDTH))  # op steps per column
    columns = -(-steps // scale)
    lines = [f"memory map ({scale} op step{'s' if scale > 1 else ''} per column):"]
    lines.append(f"{'tensor':>8} {'':{columns}} {'offset':>10} {'bytes':>10}  name")
    scratch_of = scratch_op(graph)
    rows = sorted(lifetimes.placements, key=lambda t: (lifetimes.tensor_offset(plan.offsets, t), t))
    for t in rows:
        first, last = lifetimes.first_op[t], lifetimes.last_op[t]
        bar = "".join("#" if first // scale <= c <= last // scale else "." for c in range(columns))
        alias = f" (alias of #{lifetimes.aliases[t]})" if t in lifetimes.aliases else ""
        if t in scratch_of:
            alias += f" (scratch of op {scratch_of[t]})"
        lines.append(
            f"{'#' + str(t):>8} {bar} {lifetimes.tensor_offset(plan.offsets, t):>10} "
            f"{graph.tensors[t].nbytes:>10}  {_tensor_name(graph.tensors[t])}{alias}"
        )
    return lines


def planner_table(lifetimes: Lifetimes, plans: list[tuple[str, ArenaPlan | str]]) -> list[str]:
    bound = peak_live(lifetimes.problem).bytes
    lines = [f"{'planner':<14} {'arena B':>12} {'over bound':>11} {'optimal':>8} {'time ms':>10}"]
    for name, plan in plans:
        if isinstance(plan, str):
            lines.append(f"{name:<14} {'failed: ' + plan}")
            continue
        over = 100.0 * (plan.arena_bytes - bound) / bound if bound else 0.0
        lines.append(
            f"{name + ('*' if plan.chosen_by_auto else ''):<14} {plan.arena_bytes:>12,} {over:>10.1f}% "
            f"{'yes' if plan.proven_optimal else 'no':>8} {plan.seconds * 1000:>10.1f}"
        )
    what = "live peak (no bound with in-place ops)" if lifetimes.problem.in_place_pairs() else "lower bound"
    lines.append(
        f"{what} {bound:,} B"
        + ("; * = auto's pick" if any(not isinstance(p, str) and p.chosen_by_auto for _, p in plans) else "")
    )
    return lines


def plan_json(
    model: str,
    graph: Graph,
    lifetimes: Lifetimes,
    plan: ArenaPlan,
    alias: bool,
    op_order: tuple[int, ...] | None = None,
) -> dict:
    """The plan as JSON; op steps (first_op, last_op, in_place's op, layers'
    step) count in run order, and `op_order` lists the model's op indices in
    that order."""
    tensors = []
    for t in sorted(lifetimes.placements):
        entry = {
            "index": t,
            "name": graph.tensors[t].name,
            "bytes": graph.tensors[t].nbytes,
            "first_op": lifetimes.first_op[t],
            "last_op": lifetimes.last_op[t],
            "offset": lifetimes.tensor_offset(plan.offsets, t),
        }
        if graph.tensors[t].is_scratch:
            entry["scratch"] = True
        if t in lifetimes.aliases:
            root = lifetimes.aliases[t]
            entry["alias_of"] = root
            entry["alias_offset"] = lifetimes.placements[t].offset - lifetimes.placements[root].offset
        tensors.append(entry)
    in_place = [
        {"op": i, "output": out, "input": inp}
        for i, step in enumerate(lifetimes.problem.steps)
        for out, inp in step.in_place
        if plan.offsets.get(out) == plan.offsets.get(inp)
    ]
    return {
        "model": model,
        "planner": plan.planner,
        "chosen_by_auto": plan.chosen_by_auto,
        "align": lifetimes.problem.alignment,
        "alias": alias,
        "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": peak_live(lifetimes.problem).bytes,
        "proven_optimal": plan.proven_optimal,
        "variable_bytes": lifetimes.variable_bytes,
        "in_place": in_place,
        "op_order": list(op_order) if op_order is not None else list(range(len(graph.operators))),
        "tensors": tensors,
        "layers": [layer.as_json() for layer in layer_rows(graph, lifetimes, plan, op_order)],
    }
