"""TFLM's own int16 test suite (../shared/peer-tests/tflm-seanet): single-op
SEANet layers with 16x8 quantization, TFLM's input csv and golden output csv.

Every case runs through the generated C on the host and every output value
must equal TFLM's golden; one case per operator also runs under QEMU on
mps2-an386, and one per operator is checked against LiteRT's reference
kernels on random inputs (the golden files are TFLM's; LiteRT is the target,
and the two agree on every case here)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED, needs_cortex_m

from mcu_planner.emit.c_literals import c_identifier
from mcu_planner.targets.check import check_model, generate_for_model, run_generated

SEANET = SHARED / "peer-tests" / "tflm-seanet"

needs_seanet = pytest.mark.skipif(not SEANET.is_dir(), reason=f"TFLM's SEANet suite is absent (looked for {SEANET})")

CSV_DTYPES = {"int16": np.int16, "int32": np.int32, "int8": np.int8}


def seanet_cases() -> list[Path]:
    return sorted(SEANET.glob("*/*.tflite")) if SEANET.is_dir() else []


def first_case_per_operator() -> list[Path]:
    firsts: dict[str, Path] = {}
    for path in seanet_cases():
        firsts.setdefault(path.parent.name, path)
    return list(firsts.values())


def read_csv(path: Path) -> np.ndarray:
    dtype = CSV_DTYPES[path.stem.rsplit("_", 1)[1]]
    return np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=1).astype(dtype)


def case_inputs(model: Path) -> list[np.ndarray]:
    """The case's OPk_inputN_TYPE.csv files, in graph-input order N."""
    pattern = re.compile(rf"{re.escape(model.stem)}_input(\d+)_\w+")
    found = {int(m.group(1)): p for p in model.parent.glob("*.csv") if (m := pattern.fullmatch(p.stem))}
    return [read_csv(found[i]) for i in range(len(found))]


def run_case(model: Path, target: str = "host", check_build: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(generated C's output, TFLM's golden output) as flat arrays."""
    name = c_identifier(model.stem)
    graph, _plan, files = generate_for_model(model.read_bytes(), name=name, label=str(model))
    inputs = case_inputs(model)
    assert len(inputs) == len(graph.inputs), f"{model.stem}: {len(inputs)} csv inputs for {len(graph.inputs)}"
    arrays = [a.reshape(graph.tensors[t].shape) for a, t in zip(inputs, graph.inputs, strict=True)]
    golden = read_csv(model.parent / f"{model.stem}_golden_int16.csv")
    runs = run_generated(graph, files, name, [arrays], target=target, check_build=check_build)
    (out,) = graph.outputs
    assert graph.tensors[out].dtype == "int16"
    got = np.frombuffer(runs[0].outputs[0][0], dtype="<i2")
    assert got.size == golden.size
    # The -DMCU_PLAN_CHECK build (which also checks the plan) computes the same bytes.
    assert all(run.outputs[0][0] == runs[0].outputs[0][0] for run in runs[1:])
    return got, golden


def assert_matches_golden(model: Path, **kwargs) -> None:
    got, golden = run_case(model, **kwargs)
    differing = np.flatnonzero(got != golden)
    assert differing.size == 0, (
        f"{model.stem}: {differing.size} of {golden.size} values differ from TFLM's golden, first at "
        f"{differing[0]}: expected {golden[differing[0]]}, got {got[differing[0]]}"
    )


@needs_seanet
def test_the_suite_is_complete():
    # 66 cases over the eight operators the README names.
    cases = seanet_cases()
    assert len(cases) == 66
    assert {p.parent.name for p in cases} == {
        "add",
        "sub",
        "conv",
        "transpose_conv",
        "leaky_relu",
        "pad",
        "quantize",
        "strided_slice",
    }


@needs_seanet
@pytest.mark.parametrize("model", seanet_cases() or [None], ids=lambda p: p.stem if p else "none")
def test_case_matches_tflm_golden_on_the_host(model):
    assert_matches_golden(model)


@needs_seanet
@pytest.mark.parametrize("model", first_case_per_operator() or [None], ids=lambda p: p.stem if p else "none")
def test_operator_matches_litert_reference(model):
    report = check_model(model, inputs=3, seed=11, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()


@needs_seanet
@needs_cortex_m
@pytest.mark.parametrize("model", first_case_per_operator() or [None], ids=lambda p: p.stem if p else "none")
def test_case_matches_tflm_golden_on_mps2_an386(model):
    assert_matches_golden(model, target="mps2-an386")
