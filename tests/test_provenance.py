"""What a generated directory says about where it came from, and what the
harnesses say about input files of the wrong size."""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest
from conftest import REPO

from mcu_planner import __version__
from mcu_planner.cli import main
from mcu_planner.frontend.reader import read_model
from mcu_planner.targets.check import HostTarget

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"


def _generate(model, outdir, *flags) -> dict[str, bytes]:
    assert main([str(model), "-o", str(outdir), *flags]) == 0
    return {p.name: p.read_bytes() for p in sorted(outdir.iterdir())}


def test_header_carries_the_model_sha256_and_the_tool_version(tmp_path, capsys):
    copy = tmp_path / "elsewhere.tflite"
    shutil.copy(EXAMPLE, copy)
    first = _generate(EXAMPLE, tmp_path / "a")
    again = _generate(copy, tmp_path / "b", "--name", "tiny_kws_int8")
    assert first == again  # same model bytes and flags, wherever the file lies: same output
    header = first["tiny_kws_int8.h"].decode()
    digest = hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert f'#define TINY_KWS_INT8_MODEL_SHA256 "{digest}"' in header
    assert f'#define TINY_KWS_INT8_GENERATOR "mcu-planner {__version__}"' in header
    # Another model, another digest.
    data = bytearray(EXAMPLE.read_bytes())
    changed = tmp_path / "changed.tflite"
    changed.write_bytes(bytes(data) + b"\0" * 16)  # trailing bytes: the same graph, another file
    other = _generate(changed, tmp_path / "c", "--name", "tiny_kws_int8")
    assert hashlib.sha256(changed.read_bytes()).hexdigest() in other["tiny_kws_int8.h"].decode()
    assert other["tiny_kws_int8.c"] == first["tiny_kws_int8.c"]


@pytest.mark.slow
def test_host_harness_says_expected_and_actual_input_bytes(tmp_path, capsys):
    _generate(EXAMPLE, tmp_path / "out")
    graph = read_model(EXAMPLE)
    input_bytes = [graph.tensors[t].nbytes for t in graph.inputs]
    program = HostTarget().build(
        tmp_path / "out", "tiny_kws_int8", input_bytes=input_bytes, check_build=False, workdir=tmp_path / "build"
    )
    per_set = sum(input_bytes)
    done = subprocess.run([str(program), "2"], input=bytes(per_set + 100), capture_output=True, timeout=60)
    assert done.returncode == 3
    message = done.stderr.decode()
    assert f"wrong input size: {per_set + 100} bytes, expected {2 * per_set} (2 sets of {per_set} bytes" in message
