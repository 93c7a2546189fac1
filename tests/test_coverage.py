"""docs/operators.md's operator table against what the lowering accepts today,
so that the table cannot go stale: every variant bench/coverage.py builds a
model for is generated again here (no TFLM needed) and must match its cell.
After adding or removing a variant, regenerate with
`python bench/coverage.py --docs`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_coverage():
    # Not `import coverage`: that name is coverage.py's.
    spec = importlib.util.spec_from_file_location("bench_coverage", REPO / "bench" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_coverage"] = module
    spec.loader.exec_module(module)
    return module


coverage = _load_coverage()


def readme_rows() -> dict[str, dict[str, str]]:
    """{operator: {dtype variant: "yes" or "folded"}} from docs/operators.md's generated table."""
    text = coverage.OPERATORS_PAGE.read_text()
    block = text[text.index(coverage.README_BEGIN) : text.index(coverage.README_END)]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["operator", *coverage.DTYPES]
    rows = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert set(cells[1:]) <= {"yes", "folded", ""}, line
        rows[cells[0]] = {dtype: cell for dtype, cell in zip(coverage.DTYPES, cells[1:], strict=True) if cell}
    return rows


@pytest.fixture(scope="module")
def measured():
    opcodes = sorted(set(coverage.RECIPES) | coverage.ours_opcodes())
    return coverage.measure(opcodes, with_tflm=False)


def test_readme_table_is_what_the_lowering_accepts(measured):
    rows = readme_rows()
    accepted: dict[str, dict[str, str]] = {}
    for (opcode, variant), cell in measured.items():
        if coverage.readme_cell(cell):
            accepted.setdefault(opcode, {})[variant] = coverage.readme_cell(cell)
    stale = {
        opcode: {"README": rows.get(opcode, {}), "measured": accepted.get(opcode, {})}
        for opcode in sorted(set(rows) | set(accepted))
        if rows.get(opcode, {}) != accepted.get(opcode, {})
    }
    assert not stale, f"docs/operators.md's operator table is stale (run python bench/coverage.py --docs): {stale}"


def test_a_refused_variant_is_refused_with_exit_4_naming_the_op(measured):
    """A "-" of ours is the generator's UnsupportedModel naming the operator,
    not some other failure the table would misreport as unsupported."""
    refused = {key: cell for key, cell in measured.items() if not cell["ours"]}
    assert refused
    for (opcode, variant), cell in refused.items():
        assert cell["ours_why"].startswith("UnsupportedModel: ") and opcode in cell["ours_why"], (
            opcode,
            variant,
            cell["ours_why"],
        )


def test_every_lowered_opcode_has_a_recipe():
    """An op we lower or fold but no recipe builds would be missing from the
    table; only those a one-op model cannot show (NOT_MEASURED: resource
    variables, checked against LiteRT in tests/test_kernels_variables.py) have none."""
    assert sorted(coverage.ours_opcodes() - set(coverage.RECIPES) - set(coverage.NOT_MEASURED)) == []


def test_readme_rewrite_replaces_only_the_marked_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{coverage.README_BEGIN}\nSTALE ROW\n{coverage.README_END}\nafter\n")
    cells = {
        ("ADD", "int8"): {"ours": True},
        ("ADD", "uint8"): {"ours": False, "folded": False},
        ("DIV", "int8"): {"ours": False, "folded": False},
        ("SHAPE", "int16"): {"ours": False, "folded": True},
    }
    coverage.rewrite_readme(coverage.readme_table(cells, ["ADD", "DIV", "SHAPE"]), readme)
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "STALE ROW" not in text
    assert "| ADD |  | yes |  |  |  |  |" in text and "| SHAPE |  |  |  | folded |  |  |" in text and "DIV" not in text
