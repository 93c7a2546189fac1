"""Output files (issue 14): --json / --out replace only regular files and never
follow symlinks; nothing is written before everything that can fail has
succeeded; interruptions and failures leave no staging, .old or parent
directories behind and OUTDIR never goes missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from mcu_planner.cli import main
from mcu_planner.emit import output_dir
from mcu_planner.emit.output_dir import replace_output_dir, write_output

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"


def run(args, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err.strip().splitlines()


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_json_refuses_to_replace_a_symlink(tmp_path, capsys):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    code, err = run([EXAMPLE, "--ram", "64K", "--json", link], capsys)
    assert code == 2 and len(err) == 1 and "symbolic link" in err[0], err
    assert link.is_symlink() and target.read_text() == "keep me"


def test_json_refuses_a_fifo_and_a_device(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, err = run([EXAMPLE, "--ram", "64K", "--json", fifo], capsys)
    assert code == 2 and len(err) == 1 and "FIFO" in err[0], err
    code, err = run([EXAMPLE, "--ram", "64K", "--json", "/dev/null"], capsys)
    assert code == 2 and len(err) == 1 and "character device" in err[0], err
    assert Path("/dev/null").is_char_device()


def test_intervals_out_refuses_a_symlink(tmp_path, capsys):
    csv = tmp_path / "i.csv"
    csv.write_text("id,lower,upper,size\n0,0,1,16\n1,1,2,16\n")
    target = tmp_path / "t.csv"
    target.write_text("x")
    link = tmp_path / "out.csv"
    link.symlink_to(target)
    code, err = run(["--intervals", csv, "--out", link], capsys)
    assert code == 2 and "symbolic link" in err[0], err
    assert target.read_text() == "x"


def test_outdir_is_not_written_when_the_json_path_is_bad(tmp_path, capsys):
    outdir = tmp_path / "out"
    code, err = run([EXAMPLE, "--ram", "64K", "-o", outdir, "--json", tmp_path / "missing" / "plan.json"], capsys)
    assert code == 2 and len(err) == 1, err
    assert not outdir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_json_is_not_written_when_outdir_fails(tmp_path, capsys, monkeypatch):
    plan = tmp_path / "plan.json"
    plan.write_text("old plan")

    def failing(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output_dir, "write_manifest", failing)
    code, err = run([EXAMPLE, "--ram", "64K", "-o", tmp_path / "a" / "b" / "out", "--json", plan], capsys)
    assert code != 0 and len(err) == 1, err
    assert plan.read_text() == "old plan"
    # no staged JSON, no staging directory, no parents the run created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_a_failed_replace_restores_outdir_and_leaves_no_old_directory(tmp_path):
    outdir = write_output({"a.c": b"old"}, tmp_path / "out")
    with pytest.raises(OSError):
        replace_output_dir(tmp_path / "no-such-staging", outdir)
    assert (outdir / "a.c").read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_interruption_while_writing_removes_staging_and_created_parents(tmp_path, monkeypatch):
    from mcu_planner.cli import Terminated

    def interrupted(*args, **kwargs):
        raise Terminated()

    monkeypatch.setattr(output_dir, "write_manifest", interrupted)
    with pytest.raises(Terminated):
        write_output({"a.c": b"x"}, tmp_path / "p" / "q" / "out")
    assert list(tmp_path.iterdir()) == []


def test_sigterm_never_leaves_outdir_missing_or_staging_behind(tmp_path):
    """SIGTERM at spread-out moments of `-o OUTDIR` over an existing OUTDIR:
    afterwards OUTDIR is whole (old or new) and nothing hidden is left."""
    outdir = tmp_path / "out"
    assert main([str(EXAMPLE), "--ram", "64K", "-o", str(outdir)]) == 0
    reference = sorted(p.name for p in outdir.iterdir())
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5, 2.0):
        process = subprocess.Popen(
            [sys.executable, "-m", "mcu_planner.cli", str(EXAMPLE), "--ram", "64K", "-o", str(outdir)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode in (0, 143, -signal.SIGTERM), stderr
        assert "Traceback" not in stderr
        assert sorted(p.name for p in outdir.iterdir()) == reference
        assert leftovers(tmp_path) == []


def test_a_board_build_failure_leaves_no_parent_directories(tmp_path, capsys, monkeypatch):
    from mcu_planner.errors import InputError
    from mcu_planner.targets import firmware_build

    def failing_build(*args, **kwargs):
        raise InputError("firmware build failed: arm-none-eabi-gcc exploded")

    monkeypatch.setattr(firmware_build, "build_firmware", failing_build)
    code, err = run([EXAMPLE, "--ram", "64K", "-o", tmp_path / "a" / "b" / "out", "--board", "mps2-an386"], capsys)
    assert code == 2 and len(err) == 1, err
    assert list(tmp_path.iterdir()) == []
