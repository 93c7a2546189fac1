"""The README and docs/ as a user reads them: every fenced sh and python
block runs as written (in a scratch directory laid out like the checkout:
examples/, ../shared, .venv/bin/mcu-plan and .venv/bin/python), an output
block shown after a command is what it prints, the README keeps its size
rule, and its install and test commands are setup.sh's and .ci/run's."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, SHARED, needs_cortex_m, needs_shared, needs_tools

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_BYTES = 12_000
README_MAX_LINE = 400
INSTALL = "./setup.sh && "  # the README's first command: setup is test_install's; the rest runs here
TEST_COMMAND = ".venv/bin/python -m pytest -q -n auto"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
# Timings vary from run to run; nothing else in an output may.
_TIMING = re.compile(r"\b\d+(?:\.\d+)? (?:ms|s)\b")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    language: str
    code: str
    output: str | None  # the plain block right after it, if any: what it prints

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def snippets() -> list[Snippet]:
    found = []
    for page in PAGES:
        text = page.read_text()
        blocks = list(_FENCE.finditer(text))
        for index, block in enumerate(blocks):
            if block.group(1) not in ("sh", "python"):
                continue
            output = None
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following is not None and following.group(1) == "" and not text[block.end() : following.start()].strip():
                output = following.group(2)
            line = text[: block.start()].count("\n") + 1
            found.append(Snippet(page, line, block.group(1), block.group(2), output))
    return found


def _marks(snippet: Snippet) -> list:
    code = snippet.code
    marks = []
    if "../shared" in code:
        marks.append(needs_shared)
    runs_qemu = "--target mps" in code or re.search(r"make .*\brun\b", code)
    compiles = runs_qemu or re.search(r"(^|\s)(cc|gcc|make|cmake)\s|\s-o\s|\bcheck\b|--board|\.check\(", code)
    if runs_qemu:
        marks.append(needs_cortex_m)
    if re.search(r"(^|\s)cmake\s", code):
        marks.append(needs_tools("cmake"))
    if compiles or "../shared" in code or "survey" in code:
        marks.append(pytest.mark.slow)
    return marks


def _is_test_command(snippet: Snippet) -> bool:
    return "-m pytest" in snippet.code


def _workspace(tmp_path: Path) -> Path:
    """tmp/work, the checkout as a user has it: examples/, ../shared, .venv/bin/{mcu-plan,python}
    running this interpreter on this checkout."""
    work = tmp_path / "work"
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / "examples").symlink_to(REPO / "examples")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    for name, command in (("mcu-plan", "-m mcu_planner.cli"), ("python", "")):
        script = work / ".venv" / "bin" / name
        script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {command} "$@"\n')
        script.chmod(0o755)
    return work


def _run(snippet: Snippet, work: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = snippet.code
    if snippet.language == "python":
        command = [sys.executable, "-c", code]
    else:
        assert code.count(INSTALL) <= 1
        command = ["bash", "-euo", "pipefail", "-c", code.replace(INSTALL, "")]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)


SNIPPETS = snippets()


@pytest.mark.parametrize(
    "snippet",
    [pytest.param(s, id=s.id, marks=_marks(s)) for s in SNIPPETS if not _is_test_command(s)],
)
def test_every_snippet_runs_as_written(snippet, tmp_path):
    result = _run(snippet, _workspace(tmp_path))
    assert result.returncode == 0, f"{snippet.id}:\n{snippet.code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    if snippet.output is not None:
        assert _TIMING.sub("T", result.stdout) == _TIMING.sub("T", snippet.output), snippet.id


def test_there_are_snippets_on_every_topic():
    pages = {s.page.name for s in SNIPPETS}
    assert {"README.md", "api.md", "boards.md", "check.md", "cli.md", "deploy.md", "formats.md", "memory.md"} <= pages


def test_the_readme_meets_its_size_rule():
    data = (REPO / "README.md").read_bytes()
    assert len(data) <= README_MAX_BYTES, f"README.md is {len(data):,} B, at most {README_MAX_BYTES:,}"
    long = [n for n, line in enumerate(data.decode().splitlines(), 1) if len(line) > README_MAX_LINE]
    assert not long, f"README.md lines over {README_MAX_LINE} characters: {long}"


def test_the_readme_test_command_is_what_ci_runs():
    readme = [s.code.strip() for s in SNIPPETS if s.page.name == "README.md" and _is_test_command(s)]
    assert readme == [TEST_COMMAND]
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1].strip() == TEST_COMMAND
    # The fast tier in docs/testing.md is the same command with a marker expression.
    for snippet in SNIPPETS:
        if _is_test_command(snippet):
            assert snippet.code.strip().startswith(TEST_COMMAND)


def test_the_install_command_is_setup_and_the_example():
    first = next(s for s in SNIPPETS if s.page.name == "README.md" and INSTALL in s.code)
    assert first.code.startswith(INSTALL) and (REPO / "setup.sh").stat().st_mode & 0o111


def test_the_apt_list_in_the_docs_is_setup_sh_s():
    setup = (REPO / "setup.sh").read_text()
    packages = re.search(r"^apt_packages=\(([^)]*)\)", setup, re.M).group(1).split()
    testing = " ".join((REPO / "docs" / "testing.md").read_text().split())
    listed = re.search(r"Debian/Ubuntu packages \(.*?\): `([^`]*)`", testing).group(1).split()
    assert listed == packages


def test_every_option_is_in_the_readme_synopsis():
    from mcu_planner.cli import _check_parser, _plan_parser, survey_parser

    readme = (REPO / "README.md").read_text()
    synopsis = readme[readme.index("## The command") : readme.index("## Exit codes")]
    for parser in (_plan_parser(), _check_parser(), survey_parser()):
        for action in parser._actions:
            names = [o for o in action.option_strings if o not in ("-h", "--help")]
            if names:  # one spelling is enough (-o for --output)
                assert any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", synopsis) for o in names), (
                    f"{parser.prog} {names[-1]} is missing from the README's synopsis"
                )


@pytest.mark.slow
def test_the_fast_tier_count_in_testing_md_is_not_stale():
    """docs/testing.md states the fast tier's size; it must be within 10% of what pytest collects."""
    text = (REPO / "docs" / "testing.md").read_text()
    stated = int(re.search(r"fast tier[^(]*\(about ([0-9,]+) tests", text).group(1).replace(",", ""))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not qemu and not slow", str(REPO / "tests")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = int(re.search(r"(\d+)/\d+ tests collected", result.stdout).group(1))
    assert abs(collected - stated) <= stated // 10, f"docs/testing.md says about {stated}, pytest collects {collected}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in PAGES:
        text = _FENCE.sub("", page.read_text())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and file.suffix == ".md":
                headings = {_anchor(h) for h in re.findall(r"^#+ (.*)$", file.read_text(), re.M)}
                if anchor not in headings:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken
