"""Code generation as users run it: `mcu-plan MODEL -o OUTDIR` and
`mcu-plan check` in their own processes — byte-identical output run to run,
one-line refusals, and a user's directory never overwritten."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import MODELS_DIR, REPO, UNSUPPORTED_PEER_MODELS, needs_firmware_build, needs_shared
from test_codegen import assert_names_every_unsupported_operator, chain_model

from mcu_planner.emit.output_dir import MANIFEST_NAME
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import plan_auto


def cli(*args) -> list[str]:
    return [sys.executable, "-m", "mcu_planner.cli", *map(str, args)]


# This checkout's package, from whatever directory the command runs in.
CHECKOUT_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def run_cli(*args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*args), capture_output=True, text=True, cwd=cwd, env=CHECKOUT_ENV, timeout=600)


def one_line_error(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def tree_bytes(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- determinism


@pytest.fixture
def shared_or_built_model(tmp_path) -> Path:
    """A shared model when ../shared is there (a real one), else a built one:
    both have in-place pairs, so auto goes on past greedy to `search`."""
    shared = MODELS_DIR / "mlcommons-tiny" / "pretrainedResnet_quant.tflite"
    if shared.is_file():
        return shared
    path = tmp_path / "chain.tflite"
    path.write_bytes(chain_model())
    return path


def test_default_planner_gives_the_same_bytes_in_separate_processes(tmp_path, shared_or_built_model):
    """Two processes at once, each with the default (auto) planner: the load
    one puts on the other must not change a byte of the generated C."""
    lifetimes = compute_lifetimes(read_model(shared_or_built_model), alignment=16, alias=True)
    # Otherwise the test could not notice a clock in the planners past greedy.
    assert "search" in {name for name, _ in plan_auto(lifetimes.problem).tried}
    outdirs = [tmp_path / "first", tmp_path / "second"]
    runs = [
        subprocess.Popen(
            cli(shared_or_built_model, "-o", out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for out in outdirs
    ]
    for run in runs:
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr.decode()
    first, second = (tree_bytes(out) for out in outdirs)
    assert any(name.endswith(".c") for name in first) and MANIFEST_NAME in first
    assert first == second


# ---------------------------------------------------------------- refusals


@needs_shared
@pytest.mark.parametrize("model", UNSUPPORTED_PEER_MODELS, ids=lambda p: p.stem)
def test_shared_models_with_unsupported_operators_exit_4_without_writing(tmp_path, model):
    outdir = tmp_path / "out"
    result = run_cli(model, "--ram", "8M", "-o", outdir)
    assert result.returncode == 4 and "Traceback" not in result.stderr, result.stderr
    assert_names_every_unsupported_operator(result.stderr.strip(), read_model(model))
    assert not outdir.exists()
    assert list(tmp_path.iterdir()) == []


def test_check_with_an_unknown_target_is_bad_input(shared_or_built_model):
    message = one_line_error(run_cli("check", shared_or_built_model, "--target", "foo"), 2)
    assert "unknown target 'foo'" in message and "host" in message


@pytest.mark.parametrize("section", ["a b", '.x"y'])
def test_an_arena_section_the_linker_cannot_take_is_one_line_bad_input(tmp_path, section):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model())
    message = one_line_error(run_cli(model, "-o", tmp_path / "out", "--arena-section", section), 2)
    assert "--arena-section" in message
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- OUTDIR belongs to the user


def user_project(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    (project / "src" / "app.c").write_text("/* the user's */\n")
    return project, tree_bytes(project)


def test_output_into_a_users_directory_is_refused_and_changes_nothing(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model())
    project, before = user_project(tmp_path)
    for outdir, cwd in ((project, REPO), (Path("."), project)):
        message = one_line_error(run_cli(model, "-o", outdir, cwd=cwd), 2)
        assert "did not write" in message and "choose a new or empty directory" in message
        assert tree_bytes(project) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.tflite", "project"]


def test_output_replaces_what_an_earlier_run_wrote(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model())
    outdir = tmp_path / "out"
    assert run_cli(model, "-o", outdir, "--name", "first").returncode == 0
    assert (outdir / "first.c").is_file()
    done = run_cli(model, "-o", outdir, "--name", "second")
    assert done.returncode == 0, done.stderr
    names = {p.name for p in outdir.iterdir()}
    assert "second.c" in names and "first.c" not in names


@needs_firmware_build
def test_firmware_output_into_a_users_directory_is_refused_and_changes_nothing(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model())
    project, before = user_project(tmp_path)
    message = one_line_error(run_cli(model, "--ram", "64K", "-o", project, "--board", "mps2-an386"), 2)
    assert "did not write" in message
    assert tree_bytes(project) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.tflite", "project"]
    # A firmware OUTDIR, built products and all, is mcu-plan's own: it may be replaced.
    outdir = tmp_path / "fw"
    for _ in range(2):
        done = run_cli(model, "--ram", "64K", "-o", outdir, "--board", "mps2-an386")
        assert done.returncode == 0, done.stderr
    assert (outdir / "firmware.elf").is_file() and (outdir / "Makefile").is_file()


# ---------------------------------------------------------------- installing


def test_the_package_builds_without_a_c_compiler(tmp_path):
    """The exact planner's extension is optional: with no working compiler
    the build warns and goes on (optimal.py then says the extension is missing)."""
    if int(version("setuptools").split(".")[0]) < 77:
        pytest.skip("pyproject.toml needs setuptools >= 77 to build")
    done = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            tmp_path / "lib",
            "--build-temp",
            tmp_path / "tmp",
        ],
        cwd=REPO,
        env={**os.environ, "CC": "false", "LDSHARED": "false"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert 'building extension "mcu_planner._solver" failed' in done.stderr
    assert not list((tmp_path / "lib").rglob("_solver*"))
