"""What the command prints and writes about a plan: summary, memory map,
planner table, the shortfall when a model does not fit, and the plan JSON."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from ..graph import Graph, Tensor
from ..lowering.program import Program
from ..memory.lifetimes import Lifetimes
from ..memory.planning import ArenaPlan, plan_auto
from ..memory.problem import LiveSet, arena_peak, peak_live, sharing_lower_bound
from ..memory.ram_budget import RamBudget, lifetimes_budget
from ..memory.regions import RegionPlans
from ..memory.scratch import scratch_op
from ..memory.scratch_sizes import smaller_scratch_taken
from ..shown import shown
from ..sizes import format_bytes
from .layers import arena_uses, layer_rows

MAP_WIDTH = 64


def _tensor_line(t: Tensor) -> str:
    shape = ",".join(str(d) for d in t.shape)
    text = f"#{t.index} {shown(t.name)}: {t.dtype}[{shape}]"
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


@dataclass(frozen=True)
class Sharing:
    """What a plan takes below the live peak, and how: outputs written over
    the input their op reads for the last time, wholly (in place) or partly
    (overlaps), as the plan placed them."""

    in_place: list[dict[str, int]]  # {"op", "output", "input"} (buffer ids)
    overlaps: list[dict[str, int]]  # {"op", "output", "input", "max_offset", "offset", "shared_bytes"}

    @property
    def shared_bytes(self) -> int:
        return sum(o["shared_bytes"] for o in self.overlaps)


def plan_sharing(lifetimes: Lifetimes, plan: ArenaPlan) -> Sharing:
    problem = lifetimes.problem
    buffers = problem.by_id()
    limits = problem.overlap_limits()
    in_place, overlaps = [], []
    for step_index, step in enumerate(problem.steps):
        for out, inp in step.in_place:
            if plan.offsets.get(out) == plan.offsets.get(inp):
                in_place.append({"op": step_index, "output": out, "input": inp})
        for o in step.overlaps:
            if (o.output, o.input) not in limits:
                continue
            out_lo, in_lo = plan.offsets[o.output], plan.offsets[o.input]
            if out_lo == in_lo and (o.output, o.input) in step.in_place:
                continue  # an elementwise op with a walk, placed in place: counted there
            shared = min(out_lo + buffers[o.output].size, in_lo + buffers[o.input].size) - max(out_lo, in_lo)
            if shared > 0:
                overlaps.append(
                    {
                        "op": step_index,
                        "output": o.output,
                        "input": o.input,
                        "max_offset": o.max_offset,
                        "offset": out_lo - in_lo,
                        "shared_bytes": shared,
                    }
                )
    return Sharing(in_place, overlaps)


def in_place_depthwise_ops(program: Program) -> list[int]:
    """The depthwise convolutions that run channel by channel over their own input."""
    return list(program.in_place_depthwise)


def patches_json(program: Program) -> dict[str, Any] | None:
    """The stage run patch by patch (patches.py), or None."""
    stage = program.patch_stage
    if stage is None:
        return None
    return {
        "ops": list(stage.ops),
        "grid": [stage.rows, stage.cols],
        "strip_rows": stage.strip_rows,
        "patch_cols": stage.patch_cols,
        "extra_macs": stage.extra_macs,
        "model_macs": stage.model_macs,
    }


def patches_line(program: Program) -> str | None:
    """What running the stage patch by patch costs, for the report."""
    stage = program.patch_stage
    if stage is None:
        return None
    share = 100.0 * stage.extra_macs / stage.model_macs if stage.model_macs else 0.0
    if stage.cols == 1:
        cut = f"{stage.rows} strips of {stage.strip_rows} output rows"
    else:
        cut = f"{stage.rows * stage.cols} patches of {stage.strip_rows}x{stage.patch_cols} output pixels"
    return (
        f"patches: ops {', '.join(map(str, stage.ops))} run in {cut} "
        f"(grid {stage.rows}x{stage.cols}), recomputing halos: {stage.extra_macs:+,} MACs ({share:+.2f}% of {stage.model_macs:,})"
        + ("; fewer: the stage skips rows no later op reads" if stage.extra_macs < 0 else "")
    )


def arena_without_overlaps(lifetimes: Lifetimes, time_limit: float) -> ArenaPlan | None:
    """`auto`'s plan of the same lifetimes when no output may start inside
    its input (None when none may anyway): what the overlaps saved."""
    problem = lifetimes.problem
    if not problem.overlap_limits():
        return None
    apart = replace(problem, steps=tuple(replace(step, overlaps=()) for step in problem.steps))
    return plan_auto(apart, time_limit)


def plan_summary(lifetimes: Lifetimes, plan: ArenaPlan, without_overlaps: ArenaPlan | None = None) -> list[str]:
    problem = lifetimes.problem
    live_peak = peak_live(problem).bytes
    bound = sharing_lower_bound(problem)
    how = f"planner {plan.planner}" + (" (picked by auto)" if plan.chosen_by_auto else "")
    proof = ", proven optimal" if plan.proven_optimal else ""
    lines = [f"arena: {format_bytes(plan.arena_bytes)} ({how}{proof}, {plan.seconds * 1000:.1f} ms)"]
    if not problem.may_go_below_live_peak():
        lines.append(f"lower bound: {format_bytes(bound)}, gap {_gap(plan.arena_bytes, bound)}")
        return lines
    # Outputs over their dying inputs may take the arena below the live peak:
    # the bound is then what is left of the peak after all they could share.
    sharing = plan_sharing(lifetimes, plan)
    saved = ""
    if without_overlaps is not None and sharing.overlaps:
        how = "proven optimal" if without_overlaps.proven_optimal else f"planner {without_overlaps.planner}"
        saved = (
            f", saving {format_bytes(without_overlaps.arena_bytes - plan.arena_bytes)} "
            f"(without them: {format_bytes(without_overlaps.arena_bytes)}, {how})"
        )
    lines += [
        f"live peak: {format_bytes(live_peak)} (whole tensors alive at one op step), "
        f"arena {_gap(plan.arena_bytes, live_peak)}",
        f"lower bound: {format_bytes(bound)} (the live peak less all that overlaps and in-place ops could share), "
        f"gap {_gap(plan.arena_bytes, bound)}",
        f"overlaps: {len(sharing.overlaps)} op{'s' if len(sharing.overlaps) != 1 else ''} write partly over "
        f"their dying input ({format_bytes(sharing.shared_bytes)} shared){saved}; "
        f"in place: {len(sharing.in_place)} op{'s' if len(sharing.in_place) != 1 else ''}",
    ]
    return lines


def ram_needed(graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan) -> int:
    """The RAM the plan needs as a library (no board): ram_budget.py's total."""
    return lifetimes_budget(lifetimes, plan.arena_bytes, alignment=lifetimes.problem.alignment).total


def shortfall_message(
    graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan, budget: RamBudget, ram: int, smallest: int | None = None
) -> str:
    """One line: by how much, at which op the arena's peak falls, which
    tensors are live there.  `plan` and `budget`: the plan described and
    its RAM; `smallest`: the smallest budget that fits (`--ram min`), that
    plan being the one made there; without, the plan's own need."""
    needed = budget.total if smallest is None else smallest
    terms = " + ".join(f"{name} {format_bytes(size)}" for name, size in budget.terms() if size)
    return (
        f"does not fit: needs {format_bytes(needed)} ({terms})"
        f"{' (the smallest --ram it fits, as --ram min finds)' if smallest is not None else ''} "
        f"but --ram is {format_bytes(ram)}, {format_bytes(needed - ram)} short; "
        f"the arena's peak is at {_describe_peak(graph, lifetimes, arena_peak(lifetimes.problem, plan.offsets))}"
    )


def _describe_peak(graph: Graph, lifetimes: Lifetimes, peak: LiveSet, most: int = 6) -> str:
    op = graph.operators[peak.step] if peak.step < len(graph.operators) else None
    where = f"op {peak.step} ({op.opcode})" if op else f"step {peak.step}"
    sizes = {b.id: b.size for b in lifetimes.problem.buffers}
    live = sorted(peak.buffer_ids, key=lambda b: -sizes[b])
    names = [f"#{b} {_tensor_name(graph.tensors[b])} {format_bytes(sizes[b])}" for b in live[:most]]
    if len(live) > most:
        names.append(f"and {len(live) - most} more")
    return f"{where}, whose live tensors reach {format_bytes(peak.bytes)}: " + ", ".join(names)


def _tensor_name(t: Tensor) -> str:
    return shown(t.name) if t.name else "(unnamed)"


def memory_map(graph: Graph, lifetimes: Lifetimes, plan: ArenaPlan, regions: RegionPlans | None = None) -> list[str]:
    """One row per tensor; with memory regions the offset column reads REGION+OFFSET."""

    def where(t: int) -> str:
        if regions is None:
            return str(lifetimes.tensor_offset(plan.offsets, t))
        index, offset = regions.tensor_place(lifetimes, t)
        return f"{regions.regions[index].name}+{offset}"

    steps = max(lifetimes.problem.num_steps, 1)
    scale = max(1, -(-steps // MAP_WIDTH))  # op steps per column
    columns = -(-steps // scale)
    lines = [f"memory map ({scale} op step{'s' if scale > 1 else ''} per column):"]
    lines.append(f"{'tensor':>8} {'':{columns}} {'offset':>10} {'bytes':>10}  name")
    scratch_of = scratch_op(graph)
    rows = sorted(lifetimes.placements, key=lambda t: (lifetimes.tensor_offset(plan.offsets, t), t))
    sizes = {b.id: b.size for b in lifetimes.problem.buffers}
    for t in rows:
        first, last = lifetimes.first_op[t], lifetimes.last_op[t]
        bar = "".join("#" if first // scale <= c <= last // scale else "." for c in range(columns))
        alias = f" (alias of #{lifetimes.aliases[t]})" if t in lifetimes.aliases else ""
        if t in scratch_of:
            alias += f" (scratch of op {scratch_of[t]})"
        lines.append(
            f"{'#' + str(t):>8} {bar} {where(t):>10} "
            f"{planned_bytes(graph, lifetimes, t, sizes):>10}  {_tensor_name(graph.tensors[t])}{alias}"
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
    what = (
        "live peak (overlaps and in-place ops may go below it)"
        if lifetimes.problem.may_go_below_live_peak()
        else "lower bound"
    )
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
    without_overlaps: ArenaPlan | None = None,
) -> dict[str, Any]:
    """The plan as JSON; op steps (first_op, last_op, in_place's op, layers'
    step) count in run order, and `op_order` lists the model's op indices in
    that order; `without_overlaps` (arena_without_overlaps) says what the
    overlaps saved."""
    tensors = []
    sizes = {b.id: b.size for b in lifetimes.problem.buffers}
    for t in sorted(lifetimes.placements):
        entry = {
            "index": t,
            "name": graph.tensors[t].name,
            "bytes": planned_bytes(graph, lifetimes, t, sizes),
            "first_op": lifetimes.first_op[t],
            "last_op": lifetimes.last_op[t],
            "offset": lifetimes.tensor_offset(plan.offsets, t),
        }
        if graph.tensors[t].is_scratch:
            entry["scratch"] = True
        if entry["bytes"] != graph.tensors[t].nbytes:
            entry["tensor_bytes"] = graph.tensors[t].nbytes  # held one patch at a time in `bytes`
        if t in lifetimes.aliases:
            root = lifetimes.aliases[t]
            entry["alias_of"] = root
            entry["alias_offset"] = lifetimes.placements[t].offset - lifetimes.placements[root].offset
        tensors.append(entry)
    sharing = plan_sharing(lifetimes, plan)
    live_peak = peak_live(lifetimes.problem).bytes
    return {
        "model": model,
        "planner": plan.planner,
        "chosen_by_auto": plan.chosen_by_auto,
        "align": lifetimes.problem.alignment,
        "alias": alias,
        "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": sharing_lower_bound(lifetimes.problem),
        "live_peak_bytes": live_peak,
        "proven_optimal": plan.proven_optimal,
        "variable_bytes": lifetimes.variable_bytes,
        "in_place": sharing.in_place,
        "overlaps": sharing.overlaps,
        # What took the arena where it is: the op order, and outputs over dying inputs.
        "techniques": {
            "op_order": "memory-aware" if op_order is not None else "model",
            "in_place_ops": len(sharing.in_place),
            "overlap_ops": len(sharing.overlaps),
            "overlap_shared_bytes": sharing.shared_bytes,
            "below_live_peak_bytes": max(0, live_peak - plan.arena_bytes),
            "arena_without_overlaps_bytes": without_overlaps.arena_bytes if without_overlaps else plan.arena_bytes,
            "in_place_depthwise_ops": len(in_place_depthwise_ops(lifetimes.program)),
            # int8 convolutions on their compact columns (memory/scratch_sizes.py).
            "compact_columns_ops": len(smaller_scratch_taken(lifetimes.program)),
            "patches": patches_json(lifetimes.program),
        },
        "op_order": list(op_order) if op_order is not None else list(range(len(graph.operators))),
        "tensors": tensors,
        "layers": [layer.as_json() for layer in layer_rows(graph, lifetimes, plan, op_order)],
    }


def planned_bytes(graph: Graph, lifetimes: Lifetimes, tensor: int, sizes: dict[int, int]) -> int:
    """The arena bytes the generated C keeps for `tensor` (`sizes`: buffer id
    -> size): all of it, or, in a stage run patch by patch, one patch."""
    placement = lifetimes.placements[tensor]
    return min(graph.tensors[tensor].nbytes, max(0, sizes[placement.buffer] - placement.offset))


def region_lines(regions: RegionPlans) -> list[str]:
    """One line per memory region: its arena, the state in the last, its size and margin."""
    lines = []
    for index, region in enumerate(regions.regions):
        used = regions.used_bytes(index)
        count = sum(1 for r in regions.region_of.values() if r == index)
        state = f" + variables {format_bytes(regions.variable_bytes)}" if index == regions.state_region else ""
        state = state if regions.variable_bytes else ""
        section = f" @{region.section}" if region.section else ""
        margin = region.size - used
        lines.append(
            f"region {region.name}{section}: {count} buffers, arena {format_bytes(regions.arena_bytes(index))}"
            f"{state} ({regions.plans[index].planner}) of {format_bytes(region.size)}, margin {margin:+,} B"
            + ("" if margin >= 0 else ": DOES NOT FIT")
        )
    return lines


def add_ram(
    record: dict[str, Any], regions: RegionPlans | None, lifetimes: Lifetimes, budget: RamBudget, ram: int | None
) -> dict[str, Any]:
    """`record` (plan_json) with what holds the RAM: the regions, or the one
    budget's terms (ram_budget.py) against `ram`."""
    if regions is not None:
        return add_regions(record, regions, lifetimes)
    record["ram"] = budget.as_json(ram)
    return record


def add_regions(record: dict[str, Any], regions: RegionPlans, lifetimes: Lifetimes) -> dict[str, Any]:
    """The plan JSON with memory regions: a "regions" list (fastest first) and,
    per tensor, its "region" (name) with "offset" counted inside that region;
    "arena_bytes" is the regions' total."""
    record["regions"] = [
        {
            "name": region.name,
            "size": region.size,
            "section": region.section,
            "arena_bytes": regions.arena_bytes(index),
            "used_bytes": regions.used_bytes(index),
            "planner": regions.plans[index].planner,
        }
        for index, region in enumerate(regions.regions)
    ]
    for entry in record["tensors"]:
        index, offset = regions.tensor_place(lifetimes, entry["index"])
        entry["region"] = regions.regions[index].name
        entry["offset"] = offset
    # Per layer, the regions count back to back, each as large as its arena.
    bases = [sum(regions.arena_bytes(k) for k in range(index)) for index in range(len(regions.regions))]
    addresses = {b.id: bases[regions.region_of[b.id]] + regions.offset_of(b.id) for b in lifetimes.problem.buffers}
    layers = record.get("layers", ())
    steps = max((layer["step"] + 1 for layer in layers), default=0)
    uses = arena_uses(lifetimes.problem.buffers, addresses, steps)
    for layer in layers:
        layer["live_bytes"], layer["arena_top"] = uses[layer["step"]]
    return record


# techniques keys that are figures about the plan, not techniques it uses
_FIGURES = {"overlap_shared_bytes", "below_live_peak_bytes", "arena_without_overlaps_bytes"}
# techniques counts, as technique_names names them (any other key is shown as it is spelt)
_NAMES = {
    "in_place_ops": "in-place",
    "overlap_ops": "overlaps",
    "in_place_depthwise_ops": "in-place depthwise",
    "compact_columns_ops": "compact columns",
}


def technique_names(record: dict[str, Any]) -> list[str]:
    """What took the plan where it is, named from its plan JSON: every
    technique counted in `techniques` (an op count or a non-default op
    order), and the patch grid when the plan has one."""
    used = []
    for key, value in record.get("techniques", {}).items():
        if key in _FIGURES or not value:
            continue
        if key == "op_order":
            if value != "model":
                used.append(f"{value} order")
        elif isinstance(value, bool):
            used.append(key.replace("_", " "))
        elif isinstance(value, int):
            used.append(f"{_NAMES.get(key, key.replace('_', ' '))} {value}")
        elif key != "patches":
            used.append(f"{key.replace('_', ' ')} {value}")
    patches = patch_record(record)
    if patches:
        rows, cols = patches.get("grid", ("?", "?"))
        used.append(f"patches {rows}x{cols} over {len(patches.get('ops', ()))} ops")
    return used


def patch_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """The plan's patch-based execution record (`patches` at the top level
    or inside `techniques`), None without one."""
    for found in (record.get("patches"), record.get("techniques", {}).get("patches")):
        if isinstance(found, dict) and found:
            return found
    return None


def mac_overhead_percent(record: dict[str, Any]) -> float:
    """Extra multiply-accumulates the plan costs, per cent of the model's:
    the patches' recomputed halos; overlaps, in-place ops and the op order
    compute exactly what the model does."""
    patches = patch_record(record)
    if not patches or not patches.get("model_macs"):
        return 0.0
    return float(100.0 * patches.get("extra_macs", 0) / patches["model_macs"])
