"""`mcu-plan survey`: one CSV row per model, each what a single run says;
a failing model is a row with its exit code; the same on a Dask cluster."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import shutil

import pytest
from conftest import MODELS_DIR, REPO, needs_shared, shared_model_paths
from test_cli import run_main

from mcu_planner.survey import COLUMNS

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"


def _models(tmp_path):
    """The example twice (one under a subdirectory), a file that is not a model, and a non-.tflite file (skipped)."""
    (tmp_path / "more").mkdir(parents=True)
    shutil.copy(EXAMPLE, tmp_path / "kws.tflite")
    shutil.copy(EXAMPLE, tmp_path / "more" / "kws_copy.tflite")
    (tmp_path / "broken.tflite").write_bytes(b"TFL3 but not a flatbuffer")
    (tmp_path / "notes.txt").write_text("not a model")
    return tmp_path


def _rows(text: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames or ()) == COLUMNS
    return list(reader)


def _assert_rows_are_single_runs(capsys, rows, ram):
    for row in rows:
        single = run_main(capsys, row["file"], "--ram", ram)
        assert int(row["exit_code"]) == single.returncode, row
        if single.returncode:
            assert f"mcu-plan: error: {row['message']}" == single.stderr.strip()
        if row["arena_bytes"]:
            # The single run's own report: its arena, lower bound and exit (3: does not fit).
            arena = re.search(r"^arena: ([0-9,]+) B", single.stdout, re.M)
            bound = re.search(r"^lower bound: ([0-9,]+) B", single.stdout, re.M)
            assert arena and bound, single.stdout
            assert int(row["arena_bytes"]) == int(arena.group(1).replace(",", ""))
            assert int(row["lower_bound_bytes"]) == int(bound.group(1).replace(",", ""))
            assert row["fits"] == ("yes" if single.returncode == 0 else "no")
            assert row["sha256"] == hashlib.sha256(open(row["file"], "rb").read()).hexdigest()


@pytest.mark.parametrize("ram, fits", [("64K", "yes"), ("2K", "no")])
def test_survey_in_two_processes_writes_one_row_per_model(tmp_path, capsys, ram, fits):
    root = _models(tmp_path / "models")
    out = tmp_path / "out.csv"
    result = run_main(capsys, "survey", root, "--ram", ram, "--jobs", "2", "--csv", out)
    assert result.returncode == 0, result.stderr
    assert "survey: 3 models" in result.stdout
    rows = _rows(out.read_text())
    assert [r["file"] for r in rows] == sorted(str(p) for p in root.rglob("*.tflite"))
    broken, kws, copy = rows
    assert broken["exit_code"] == "2" and "broken.tflite" in broken["message"] and broken["arena_bytes"] == ""
    assert kws["fits"] == copy["fits"] == fits and kws["sha256"] == copy["sha256"]
    assert kws["arena_bytes"] == copy["arena_bytes"] and int(kws["ops"]) == 12
    _assert_rows_are_single_runs(capsys, rows, ram)


def test_survey_bad_usage_is_one_line(tmp_path, capsys):
    assert run_main(capsys, "survey", tmp_path / "absent", "--ram", "64K").returncode == 2
    assert run_main(capsys, "survey", tmp_path, "--ram", "64K").returncode == 2  # no models there
    assert run_main(capsys, "survey", tmp_path).returncode == 2  # --ram missing


def test_survey_on_a_dask_local_cluster(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    root = _models(tmp_path / "models")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        result = run_main(capsys, "survey", root, "--ram", "64K", "--dask", cluster.scheduler_address)
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)  # no --csv: the rows on standard output, the summary on stderr
    assert "survey: 3 models" in result.stderr
    local = run_main(capsys, "survey", root, "--ram", "64K", "--jobs", "1")
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(rows) == strip(_rows(local.stdout))


@needs_shared
@pytest.mark.slow
def test_survey_of_the_shared_models_matches_single_runs(tmp_path, capsys):
    out = tmp_path / "out.csv"
    result = run_main(capsys, "survey", MODELS_DIR, "--ram", "256K", "--jobs", "2", "--csv", out)
    assert result.returncode == 0, result.stderr
    rows = _rows(out.read_text())
    assert [r["file"] for r in rows] == [str(p) for p in sorted(MODELS_DIR.rglob("*.tflite"))]
    assert len(rows) == len(shared_model_paths())
    _assert_rows_are_single_runs(capsys, rows, "256K")
