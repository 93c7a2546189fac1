"""The installed package (what `pip install .` gives users) works on its own:
console script, Jinja templates, C runtime and the exact planner's extension."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
# setup.sh installs into .venv; the tests run with that interpreter.
INSTALLED_COMMAND = Path(sys.executable).parent / "mcu-plan"

needs_installed_command = pytest.mark.skipif(
    not INSTALLED_COMMAND.exists() and not os.environ.get("CI"),
    reason=f"no installed mcu-plan beside {sys.executable} (run ./setup.sh)",
)


@needs_installed_command
def test_installed_command_plans_generates_and_checks_outside_the_checkout(tmp_path):
    env = dict(os.environ, PYTHONPATH="")  # the installed copy, not this checkout
    model = tmp_path / "model.tflite"
    model.write_bytes(EXAMPLE.read_bytes())

    where = subprocess.run(
        [sys.executable, "-c", "import mcu_planner, mcu_planner._solver; print(mcu_planner.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0, where.stderr
    assert not where.stdout.strip().startswith(str(REPO / "mcu_planner"))

    plan = subprocess.run(
        [str(INSTALLED_COMMAND), str(model), "--ram", "64K", "--planner", "optimal", "-o", "out"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plan.returncode == 0, plan.stderr
    generated = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "model.c" in generated and "model.h" in generated and "mcu_conv.c" in generated

    check = subprocess.run(
        [str(INSTALLED_COMMAND), "check", str(model), "--inputs", "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr
    assert "bit-exact 2/2" in check.stdout
