"""`--report PLAN.html`, per-layer costs (MACs, weight, table and arena bytes)
and the model's flash in the text report.

The page is opened in a real headless browser (Debian's chromium, which
setup.sh installs): its own script must run without an error and its
numbers must be the plan JSON's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import MODELS_DIR, REPO, needs_shared
from mcu_planner import flash as flash_module
from mcu_planner_testing.builder import Int8Net
from mcu_planner.cli import main
from mcu_planner.codegen import lower_all
from mcu_planner.flash import counted_flash, measure_flash
from mcu_planner.macs import op_macs
from mcu_planner.pipeline import PlanOptions, plan_model
from mcu_planner.reader import read_model
from test_cli import assert_one_line_error, run_cli

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; setup.sh installs it)"
)


class _Elements(HTMLParser):
    """Every element's tag and attributes, and the text of elements with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: dict[str, str] = {}
        self._open_ids: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes))
        if tag not in ("meta", "line", "br"):
            self._open_ids.append(attributes.get("id"))
            if attributes.get("id"):
                self.text[attributes["id"]] = ""

    def handle_endtag(self, tag):
        if self._open_ids and tag not in ("meta", "line", "br"):
            self._open_ids.pop()

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data):
        for element_id in self._open_ids:
            if element_id:
                self.text[element_id] += data

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def _write_report(model: Path, tmp_path: Path) -> tuple[Path, dict, str]:
    page, plan = tmp_path / "plan.html", tmp_path / "plan.json"
    result = run_cli(model, "--report", page, "--json", plan)
    assert result.returncode == 0, result.stderr
    return page, json.loads(plan.read_text()), result.stdout


def _browser_dom(page: Path) -> _Elements:
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    dom = _Elements()
    dom.feed(done.stdout)
    return dom


def _check_page(page: Path, plan: dict) -> None:
    source = page.read_text()
    # Self-contained: nothing to fetch (the SVG namespace is a name, not a request).
    assert not re.search(r"\b(src|href)\s*=", source)
    assert "<link" not in source and "@import" not in source and "url(" not in source
    dom = _browser_dom(page)
    body = dom.find("body")[0]
    assert dom.text.get("errors", "") == ""
    assert body["data-report-status"] == "done"
    assert body["data-live-mismatches"] == "0"
    assert int(dom.find("dd", id="arena-bytes")[0]["data-bytes"]) == plan["arena_bytes"]
    assert int(dom.find("dd", id="lower-bound")[0]["data-bytes"]) == plan["lower_bound_bytes"]
    rects = {int(a["data-tensor"]): a for a in dom.find("rect") if "data-tensor" in a}
    assert sorted(rects) == sorted(t["index"] for t in plan["tensors"])
    for t in plan["tensors"]:
        rect = rects[t["index"]]
        assert [int(rect[k]) for k in ("data-offset", "data-bytes", "data-first", "data-last")] == [
            t["offset"],
            t["bytes"],
            t["first_op"],
            t["last_op"],
        ]
    titles = re.findall(r"<title>#(\d+) ([^<]*)</title>", source)
    assert sorted(int(i) for i, _ in titles) == sorted(t["index"] for t in plan["tensors"])
    cells = {}
    for a in dom.find("td"):
        if "data-field" in a:
            cells.setdefault(a["data-field"], []).append(a)
    for field in ("macs", "weight_bytes", "table_bytes", "live_bytes", "arena_top"):
        values = [int(c["data-value"]) if c["data-value"] else None for c in cells[field]]
        assert values == [layer[field] for layer in plan["layers"]], field
    # The page's script recomputed each step's live bytes from the tensors alone ...
    assert [int(c["data-js-live"]) for c in cells["live_bytes"]] == [layer["live_bytes"] for layer in plan["layers"]]
    # ... and wrote the totals.
    totals = {a["id"]: int(a["data-value"]) for a in dom.find("td") if a.get("id", "").startswith(("sum-", "max-"))}
    assert totals == {
        "sum-macs": sum(layer["macs"] for layer in plan["layers"]),
        "sum-weights": sum(layer["weight_bytes"] for layer in plan["layers"]),
        "sum-tables": sum(layer["table_bytes"] or 0 for layer in plan["layers"]),
        "max-live": max(layer["live_bytes"] for layer in plan["layers"]),
        "max-top": max(layer["arena_top"] for layer in plan["layers"]),
    }
    assert totals["max-top"] <= plan["arena_bytes"]


@pytest.mark.slow  # each page measures the model's flash (a cross compile)
@needs_chromium
def test_report_opens_in_a_browser_and_matches_the_plan_json(tmp_path):
    page, plan, stdout = _write_report(EXAMPLE, tmp_path)
    assert plan["in_place"] or any("alias_of" in t for t in plan["tensors"])  # the shared-bytes cases are drawn
    _check_page(page, plan)


@pytest.mark.slow
@needs_chromium
@needs_shared
@pytest.mark.parametrize("name", ["mlcommons-tiny/vww_96_int8", "tflite-micro/keyword_scrambled"])
def test_report_of_shared_models(name, tmp_path):
    page, plan, _ = _write_report(MODELS_DIR / f"{name}.tflite", tmp_path)
    _check_page(page, plan)
    if name.endswith("vww_96_int8"):
        # No in-place ops, but outputs partly over their dying inputs: the
        # fullest step's bytes are the lower bound (each overlap at its bound),
        # and the proven optimal arena is 16 B more: the 8 -> 16 pointwise
        # output starts 18,448 B below its input and the stride-2 depthwise
        # output after it 16 B below that, so both cannot start at 0.
        assert max(layer["live_bytes"] for layer in plan["layers"]) == plan["lower_bound_bytes"]
        assert plan["arena_bytes"] == plan["lower_bound_bytes"] + 16 and plan["proven_optimal"]


@pytest.mark.slow
def test_report_is_deterministic(tmp_path, capsys):
    pages = []
    for k in range(2):
        page = tmp_path / f"plan{k}.html"
        assert main([str(EXAMPLE), "--report", str(page)]) == 0
        pages.append(page.read_bytes())
    assert pages[0] == pages[1]


def test_bad_report_paths_are_one_line_and_write_nothing(tmp_path):
    (tmp_path / "dir.html").mkdir()
    assert_one_line_error(run_cli(EXAMPLE, "--report", tmp_path / "dir.html"), 2, "not a regular file")
    assert_one_line_error(run_cli(EXAMPLE, "--report", tmp_path / "no" / "plan.html"), 2, "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.html"]


def test_macs_of_the_dot_product_ops():
    net = Int8Net(0)
    x = net.input((1, 10, 12, 3), -1.0, 1.0)
    c = net.conv2d(x, 8, kernel=(3, 5), strides=(2, 2), padding="VALID")  # 4 x 4 x 8
    d = net.depthwise_conv2d(c, kernel=(3, 3), depth_multiplier=2)  # SAME: 4 x 4 x 16
    f = net.fully_connected(net.reshape(d, (1, 256)), 10)
    graph = read_model(net.build(f))
    by_code = {op.opcode: op_macs(graph, op) for op in graph.operators}
    assert by_code["CONV_2D"] == (4 * 4 * 8) * (3 * 5 * 3)
    assert by_code["DEPTHWISE_CONV_2D"] == (4 * 4 * 16) * (3 * 3)
    assert by_code["FULLY_CONNECTED"] == 10 * 256
    assert by_code["RESHAPE"] == 0


@pytest.mark.slow
def test_flash_is_measured_for_the_core_and_estimated_without_a_cross_compiler(tmp_path, monkeypatch, capsys):
    planned = plan_model(str(EXAMPLE), PlanOptions())
    files = planned.generate("tiny")
    counted = counted_flash(planned.graph, lower_all(planned.graph, planned.lifetimes.elided_ops))
    if shutil.which("arm-none-eabi-gcc"):
        m4 = measure_flash(files, "tiny", counted, None)
        m55 = measure_flash(files, "tiny", counted, "mps3-an547")
        # The linked arrays' symbol sizes are the counted arrays' sizes ...
        assert (m4.weights, m4.tables) == (m55.weights, m55.tables) == counted
        # ... and the code is the core's own.
        assert "cortex-m4" in m4.how and "cortex-m55" in m55.how and m4.code != m55.code
        assert m4.line().startswith(f"flash: {m4.total:,} B = weights {counted[0]:,} B + tables {counted[1]:,} B")
    real_which = shutil.which
    monkeypatch.setattr(
        flash_module.shutil, "which", lambda tool: None if tool.startswith("arm-none-eabi") else real_which(tool)
    )
    estimated = measure_flash(files, "tiny", counted, None)
    assert estimated.how.startswith("estimated") and estimated.code and estimated.code > 0
    assert (estimated.weights, estimated.tables) == counted
    # The text report with -o prints the line.
    assert main([str(EXAMPLE), "-o", str(tmp_path / "out")]) == 0
    assert "flash: " in capsys.readouterr().out
