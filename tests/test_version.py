"""`mcu-plan --version`: the version and the runtime+templates digest the generated header carries."""

from __future__ import annotations

import hashlib
import re
import shutil

from conftest import REPO
from test_cli import run_cli

from mcu_planner import __version__
from mcu_planner.emit.identity import _tree_digest, sources_sha256


def test_version_prints_the_version_and_the_sources_digest():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stderr == ""
    found = re.fullmatch(r"mcu-planner (\S+) \(runtime\+templates sha256 ([0-9a-f]{16})\)\n", result.stdout)
    assert found, result.stdout
    assert found.group(1) == __version__
    assert sources_sha256().startswith(found.group(2))


def test_the_header_carries_the_same_digest():
    from mcu_planner.pipeline import PlanOptions, plan_model

    files = plan_model(str(REPO / "examples" / "tiny_kws_int8.tflite"), PlanOptions()).generate("kws")
    header = files["kws.h"].decode()
    assert f'#define KWS_SOURCES_SHA256 "{sources_sha256()}"' in header
    assert f'#define KWS_GENERATOR "mcu-planner {__version__}"' in header


def test_the_digest_follows_every_byte_and_name(tmp_path):
    runtime = tmp_path / "runtime"
    shutil.copytree(REPO / "firmware" / "runtime", runtime)
    before = _tree_digest(runtime)
    assert before == _tree_digest(REPO / "firmware" / "runtime")
    target = sorted(runtime.glob("*.c"))[0]
    target.write_bytes(target.read_bytes() + b"\n")
    changed = _tree_digest(runtime)
    target.rename(target.with_name("renamed.c"))
    assert len({before, changed, _tree_digest(runtime)}) == 3
    assert before != hashlib.sha256(b"").hexdigest()
