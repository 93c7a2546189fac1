"""`mcu-plan survey PATH... --ram SIZE`: plan every .tflite under the paths,
in parallel (processes, or a Dask cluster with --dask), one CSV row per
model.  Each row holds what `mcu-plan MODEL --ram SIZE` would say: its exit
code and, when not 0, its one-line message; a model that fails is a row,
never the end of the survey."""

from __future__ import annotations

import csv
import io
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import InputError, McuPlanError, one_line

COLUMNS = (
    "file",
    "sha256",
    "ops",
    "fits",
    "arena_bytes",
    "lower_bound_bytes",
    "live_peak_bytes",
    "flash_bytes",
    "techniques",
    "exit_code",
    "message",
    "seconds",
)


@dataclass
class SurveyRow:
    file: str
    sha256: str = ""
    ops: int | None = None
    fits: bool | None = None
    arena_bytes: int | None = None
    lower_bound_bytes: int | None = None
    live_peak_bytes: int | None = None
    flash_bytes: int | None = None  # weights + tables (+ code with --board)
    techniques: str = ""  # "; "-separated, as --ram min names them
    exit_code: int = 0
    message: str = ""
    seconds: float = 0.0

    def cells(self) -> list[str]:
        values = asdict(self)
        cells = []
        for column in COLUMNS:
            value = values[column]
            if value is None:
                cells.append("")
            elif isinstance(value, bool):
                cells.append("yes" if value else "no")
            elif column == "seconds":
                cells.append(f"{value:.3f}")
            else:
                cells.append(str(value))
        return cells


def survey_model(path: str, ram: int, board: str | None = None, time_limit: float | None = None) -> SurveyRow:
    """One row: `path` planned as `mcu-plan PATH --ram RAM` plans it.  Runs
    in a worker process (or a Dask worker): nothing escapes but the row."""
    started = time.perf_counter()
    row = SurveyRow(file=path)
    try:
        import hashlib

        from .api import plan

        with open(path, "rb") as f:
            data = f.read()
        row.sha256 = hashlib.sha256(data).hexdigest()
        planned = plan(path, ram=ram, time_limit=time_limit)
        row.ops = planned.ops
        row.fits = planned.fits
        row.arena_bytes = planned.arena_bytes
        row.lower_bound_bytes = planned.lower_bound_bytes
        row.live_peak_bytes = planned.live_peak_bytes
        row.techniques = "; ".join(planned.techniques)
        if not planned.fits:
            row.exit_code = 3
            row.message = planned.shortfall()
        else:
            try:
                if board:
                    report = planned.measure_flash(board)
                    row.flash_bytes = report.total
                else:
                    row.flash_bytes = planned.flash.total
            except McuPlanError as exc:  # e.g. an op without a kernel: planning still works
                row.message = f"note: -o would stop with exit {exc.exit_code}: {one_line(exc)}"
    except McuPlanError as exc:
        row.exit_code = exc.exit_code
        row.message = one_line(exc)
    except OSError as exc:
        row.exit_code = 2
        row.message = f"cannot read {path}: {exc.strerror or exc}"
    except Exception as exc:  # a bug in mcu-planner: the row says so, the survey goes on
        row.exit_code = 1
        row.message = f"internal error: {type(exc).__name__}: {one_line(exc)}"
    row.seconds = time.perf_counter() - started
    return row


def find_models(paths: Iterable[str]) -> list[str]:
    """Every .tflite file named or under a named directory, sorted, each once."""
    found: dict[str, None] = {}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for model in sorted(path.rglob("*.tflite")):
                if model.is_file():
                    found.setdefault(str(model), None)
        elif path.is_file():
            found.setdefault(str(path), None)
        else:
            raise InputError(f"cannot read {given}: no such file or directory")
    return list(found)


def run_in_processes(models: list[str], work: Callable[[str], SurveyRow], jobs: int) -> Iterator[SurveyRow]:
    """Rows as they finish; one worker process per job (jobs 1: in this process)."""
    if jobs == 1:
        for model in models:
            yield work(model)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(work, model) for model in models]
        for future in as_completed(futures):
            yield future.result()


def run_on_dask(
    models: list[str], ram: int, board: str | None, time_limit: float | None, address: Any
) -> Iterator[SurveyRow]:
    """Rows as they finish on a dask.distributed cluster (`address`: a
    scheduler's address, or a Client/LocalCluster to use as it is)."""
    try:
        import dask.distributed
    except ImportError:
        raise InputError("--dask needs dask.distributed: pip install 'mcu-planner[dask]'") from None
    # dask.distributed's functions carry no annotations (untyped calls to mypy): used as Any, like untyped bindings.
    distributed: Any = dask.distributed
    Client, as_completed = distributed.Client, distributed.as_completed
    own = isinstance(address, str)
    try:
        client = Client(address) if own else (address if isinstance(address, Client) else Client(address))
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address}: {one_line(exc)}") from None
    try:
        futures = client.map(survey_model, models, ram=ram, board=board, time_limit=time_limit, pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        if own:
            client.close()


def survey(
    paths: Iterable[str],
    ram: int,
    *,
    board: str | None = None,
    jobs: int = 1,
    dask: Any = None,
    time_limit: float | None = None,
    progress: bool = False,
) -> list[SurveyRow]:
    """Rows for every model under `paths`, sorted by file."""
    from functools import partial

    models = find_models(paths)
    if not models:
        raise InputError("no .tflite models under " + ", ".join(map(str, paths)))
    if dask is not None:
        rows_as_done = run_on_dask(models, ram, board, time_limit, dask)
    else:
        work = partial(survey_model, ram=ram, board=board, time_limit=time_limit)
        rows_as_done = run_in_processes(models, work, jobs)
    rows = []
    from tqdm import tqdm

    with tqdm(total=len(models), unit="model", disable=not progress, file=sys.stderr) as bar:
        for row in rows_as_done:
            rows.append(row)
            bar.update(1)
    return sorted(rows, key=lambda r: r.file)


def to_csv(rows: list[SurveyRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(row.cells())
    return out.getvalue()
