"""Bench results say which commit measured them and which input bytes they read."""

from __future__ import annotations

import hashlib
import subprocess

from conftest import REPO

from mcu_planner_testing.shared import provenance_lines


def test_provenance_names_the_commit_and_hashes_every_input(tmp_path):
    model = REPO / "examples" / "tiny_kws_int8.tflite"
    other = tmp_path / "instance.csv"
    other.write_bytes(b"id,lower,upper,size\n0,0,2,16\n")
    text = "\n".join(provenance_lines([other, model, model]))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert f"commit `{head}`" in text
    assert "Inputs (2 files, SHA-256)" in text  # the same file once
    assert f"`./examples/tiny_kws_int8.tflite` `{hashlib.sha256(model.read_bytes()).hexdigest()}`" in text
    assert hashlib.sha256(other.read_bytes()).hexdigest() in text


def test_provenance_without_input_files_says_so():
    assert any("none read from files" in line for line in provenance_lines([]))
