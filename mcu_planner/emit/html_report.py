"""`--report PLAN.html`: the plan as one self-contained page (inline CSS, SVG
and script; nothing fetched): the arena as an address-by-op-step picture,
the live bytes per op step, and per layer MACs, weight, table and arena
bytes.  The page's script recomputes every step's live bytes from the plan
JSON it embeds and marks the page (`data-report-status`) when it has run.
The same plan gives the same bytes: no dates, no timings, fixed order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import __version__
from .resources import template_environment

MAP_WIDTH, MAP_HEIGHT = 960, 420
LIVE_HEIGHT = 160
LEFT, TOP, BOTTOM = 80, 10, 30


@dataclass(frozen=True)
class Tick:
    label: str
    x: float = 0.0
    y: float = 0.0


def _round(value: float) -> float:
    return round(value, 2)


def _ticks(limit: int, count: int) -> list[int]:
    if limit <= 0:
        return [0]
    step = max(1, -(-limit // count))
    return list(range(0, limit + 1, step))


def _fill(index: int) -> str:
    return f"hsl({(index * 47) % 360}, 55%, 62%)"


def region_bases(plan: dict[str, Any]) -> dict[str | None, int]:
    """Where each memory region starts in the picture: the regions back to
    back, each as tall as its arena (one arena: None -> 0)."""
    bases: dict[str | None, int] = {None: 0}
    base = 0
    for region in plan.get("regions", ()):
        bases[region["name"]] = base
        base += region["arena_bytes"]
    return bases


def _map(plan: dict[str, Any], num_steps: int, scratch_of: dict[int, int]) -> dict[str, Any]:
    plot_w, plot_h = MAP_WIDTH - LEFT - 10, MAP_HEIGHT - TOP - BOTTOM
    steps = max(num_steps, 1)
    arena = max(plan["arena_bytes"], 1)
    bases = region_bases(plan)

    def x(step: float) -> float:
        return _round(LEFT + step * plot_w / steps)

    def y(address: float) -> float:
        return _round(TOP + address * plot_h / arena)

    opcodes = [layer["opcode"] for layer in plan["layers"]]

    def op_name(step: int) -> str:
        return f"{step} ({opcodes[step]})" if 0 <= step < len(opcodes) else str(step)

    # Outputs the plan wrote over the dying input they read, wholly or in part.
    written_over = {o["output"]: (o["input"], o["shared_bytes"]) for o in plan.get("overlaps", ())}
    written_over.update({p["output"]: (p["input"], None) for p in plan.get("in_place", ())})

    rects = []
    for t in plan["tensors"]:
        address = bases[t.get("region")] + t["offset"]
        classes = ""
        if "alias_of" in t:
            classes += " alias"
        if t.get("scratch"):
            classes += " scratch"
        owner = f", scratch of op step {scratch_of[t['index']]}" if t["index"] in scratch_of else ""
        shares = f", shares the bytes of tensor {t['alias_of']}" if "alias_of" in t else ""
        if t["index"] in written_over:
            source, shared = written_over[t["index"]]
            shares += f", written over tensor {source} as it is read" + (
                f" ({shared:,} B shared)" if shared is not None else " (in place)"
            )
        rects.append(
            dict(
                index=t["index"],
                offset=t["offset"],
                bytes=t["bytes"],
                first=t["first_op"],
                last=t["last_op"],
                classes=classes,
                x=x(t["first_op"]),
                y=y(address),
                w=_round(max(x(t["last_op"] + 1) - x(t["first_op"]), 0.5)),
                h=_round(max(y(address + t["bytes"]) - y(address), 0.5)),
                fill=_fill(t["index"]),
                title=f"#{t['index']} {t['name'] or '(unnamed)'}: {t['bytes']:,} B at offset {t['offset']:,}"
                + (f" of region {t['region']}" if "region" in t else "")
                + ", "
                f"first op {op_name(t['first_op'])}, last op {op_name(t['last_op'])}{shares}{owner}",
            )
        )
    return dict(
        width=MAP_WIDTH,
        height=MAP_HEIGHT,
        left=LEFT,
        top=TOP,
        plot_width=plot_w,
        plot_height=plot_h,
        x_ticks=[Tick(str(s), x=_round(x(s + 0.5))) for s in _ticks(num_steps - 1, 16)],
        y_ticks=[Tick(f"{a:,}", y=y(a)) for a in _ticks(plan["arena_bytes"], 8)],
        rects=rects,
        regions=[
            dict(
                name=region["name"],
                y=y(bases[region["name"]]),
                label_y=_round(y(bases[region["name"]]) + 12),
                label=f"region {region['name']}: arena {region['arena_bytes']:,} B of {region['size']:,} B"
                + (f" in {region['section']}" if region.get("section") else ""),
            )
            for region in plan.get("regions", ())
        ],
    )


def _live(plan: dict[str, Any], layers: list[dict[str, Any]]) -> dict[str, Any]:
    plot_w, plot_h = MAP_WIDTH - LEFT - 10, LIVE_HEIGHT - TOP - 10
    steps = max(len(layers), 1)
    top = max([plan["arena_bytes"], 1] + [layer["live_bytes"] for layer in layers])
    bars = []
    for layer in layers:
        h = layer["live_bytes"] * plot_h / top
        bars.append(
            dict(
                step=layer["step"],
                live=layer["live_bytes"],
                x=_round(LEFT + layer["step"] * plot_w / steps),
                y=_round(TOP + plot_h - h),
                w=_round(max(plot_w / steps - 1, 0.5)),
                h=_round(h),
                title=f"op step {layer['step']} ({layer['opcode']}): {layer['live_bytes']:,} B live",
            )
        )
    return dict(
        width=MAP_WIDTH,
        height=LIVE_HEIGHT,
        left=LEFT,
        top=TOP,
        plot_width=plot_w,
        plot_height=plot_h,
        y_ticks=[Tick(f"{b:,}", y=_round(TOP + plot_h - b * plot_h / top)) for b in _ticks(top, 4)],
        arena_y=_round(TOP + plot_h - plan["arena_bytes"] * plot_h / top),
        bars=bars,
    )


def _ram_terms(ram: dict[str, Any] | None) -> str:
    """The RAM's terms as the printed report lists them (ram_budget.py), for the summary."""
    if ram is None:
        return ""
    names = (
        ("arena_bytes", "arena"),
        ("state_bytes", "state"),
        ("counter_bytes", "counters"),
        ("kernel_static_bytes", "static kernel buffers"),
        ("libc_state_bytes", "C library state"),
        ("harness_bytes", "harness"),
        ("stack_bytes", "stack reserve"),
    )
    terms = [f"{name} {ram[key]:,} B" for key, name in names if ram.get(key)]
    padding = ram["total_bytes"] - sum(ram.get(key, 0) for key, _ in names)
    return " + ".join(terms + ([f"alignment {padding:,} B"] if padding else []))


# Characters a string in the embedded JSON must not carry raw: "<" and ">"
# could end the <script> element or open a comment ("<!--" changes how the
# HTML parser finds "</script>"), "&" keeps the text free of references, and
# U+2028/U+2029 end a line in older JavaScript.  JSON's \uXXXX escapes keep
# the value the same.
_SCRIPT_UNSAFE = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


def _script_json(value: dict[str, Any]) -> str:
    """JSON safe inside <script>: no tensor name can end the element or open a
    script context (see _SCRIPT_UNSAFE)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text.translate(_SCRIPT_UNSAFE)


def render_report(plan: dict[str, Any], model_name: str, flash_line: str, scratch_of: dict[int, int]) -> bytes:
    """The page for `plan` (report.plan_json's dict, with its `layers`)."""
    from markupsafe import Markup

    layers = plan["layers"]
    reordered = plan["op_order"] != list(range(len(plan["op_order"])))
    page = (
        template_environment(autoescape=True)
        .get_template("report.html.j2")
        .render(
            version=__version__,
            model_name=model_name,
            plan=plan,
            layers=layers,
            reordered=reordered,
            total_macs=sum(layer["macs"] for layer in layers),
            ram_terms=_ram_terms(plan.get("ram")),
            flash_line=flash_line,
            map=_map(plan, len(layers), scratch_of),
            live=_live(plan, layers),
            plan_json=Markup(_script_json(plan)),
        )
    )
    return page.encode("utf-8")
