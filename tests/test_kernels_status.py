"""Kernels that can fail: where TFLite's interpreter fails the invoke on an
input (a GATHER index outside its axis, an int8 DIV by a zero divisor), the
kernel returns a status other than MCU_STATUS_OK and NAME_invoke() returns
NAME_KERNEL_FAILED; on the next input that is valid the model runs bit-exact
again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mcu_planner.errors import McuPlanError
from mcu_planner.lowering.runtime_contract import runtime_declarations
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.check import run_generated
from mcu_planner.targets.reference import ReferenceModel
from mcu_planner_testing.builder import ModelBuilder

# NAME_KERNEL_FAILED (templates/model.h.j2), as the host harness reports it.
KERNEL_FAILED = "invoke returned 1"


def _gather_model() -> bytes:
    mb = ModelBuilder()
    x = mb.add_tensor((5, 3), "float32")
    indices = mb.add_tensor((2,), "int32")
    y = mb.add_tensor((2, 3), "float32")
    mb.add_op("GATHER", (x, indices), (y,), {"axis": 0, "batch_dims": 0})
    mb.set_io([x, indices], [y])
    return mb.build()


def _div_model() -> bytes:
    mb = ModelBuilder()
    a = mb.add_tensor((2, 4), "int8", (0.1, -3))
    b = mb.add_tensor((1, 4), "int8", (0.05, 7))  # broadcast over the rows
    y = mb.add_tensor((2, 4), "int8", (0.4, 2))
    mb.add_op("DIV", (a, b), (y,), {"fused_activation_function": "NONE"})
    mb.set_io([a, b], [y])
    return mb.build()


def _gather_nd_model() -> bytes:
    mb = ModelBuilder()
    x = mb.add_tensor((3, 4), "int8")
    indices = mb.add_tensor((2, 2), "int32")
    y = mb.add_tensor((2,), "int8")
    mb.add_op("GATHER_ND", (x, indices), (y,), None)
    mb.set_io([x, indices], [y])
    return mb.build()


def _floor_div_model(dtype: str) -> Callable[[], bytes]:
    def make() -> bytes:
        mb = ModelBuilder()
        a, b, y = (mb.add_tensor((4,), dtype) for _ in range(3))
        mb.add_op("FLOOR_DIV", (a, b), (y,), None)
        mb.set_io([a, b], [y])
        return mb.build()

    return make


X34 = np.arange(12, dtype=np.int8).reshape(3, 4)

CASES = {
    # model, an input set the reference runs, one it fails on
    "gather": (
        _gather_model,
        [np.arange(15, dtype=np.float32).reshape(5, 3), np.array([4, 0], np.int32)],
        [np.arange(15, dtype=np.float32).reshape(5, 3), np.array([1, 5], np.int32)],
    ),
    "gather-negative": (
        _gather_model,
        [np.arange(15, dtype=np.float32).reshape(5, 3), np.array([2, 3], np.int32)],
        [np.arange(15, dtype=np.float32).reshape(5, 3), np.array([-1, 3], np.int32)],
    ),
    # Flat position 5 lies inside the input, index 5 outside its dimension of 4: LiteRT refuses it.
    "gather-nd": (
        _gather_nd_model,
        [X34, np.array([[2, 3], [0, 0]], np.int32)],
        [X34, np.array([[0, 5], [1, 1]], np.int32)],
    ),
    "gather-nd-negative": (
        _gather_nd_model,
        [X34, np.array([[1, 3], [2, 0]], np.int32)],
        [X34, np.array([[1, 3], [-1, 0]], np.int32)],
    ),
    "floor-div-s32": (
        _floor_div_model("int32"),
        [np.array([7, -7, 0, 9], np.int32), np.array([2, 2, -3, -1], np.int32)],
        [np.array([7, -7, 0, 9], np.int32), np.array([2, 0, -3, -1], np.int32)],
    ),
    "floor-div-f32": (
        _floor_div_model("float32"),
        [np.array([7, -7, 0, 9], np.float32), np.array([2, 2, -3, -0.5], np.float32)],
        [np.array([7, -7, 0, 9], np.float32), np.array([2, 2, -3, 0], np.float32)],
    ),
    "div-s8": (
        _div_model,
        [np.array([[1, -50, 100, 127], [-128, 0, 3, 9]], np.int8), np.array([[-8, 20, -128, 127]], np.int8)],
        [np.array([[1, -50, 100, 127], [-128, 0, 3, 9]], np.int8), np.array([[-8, 20, 7, 127]], np.int8)],
    ),
}


def test_the_kernels_with_a_failure_mode_return_a_status():
    failing = {f.name for f in runtime_declarations().functions.values() if f.returns_status}
    assert {"mcu_gather", "mcu_gather_nd", "mcu_div_s8", "mcu_floor_div_s32", "mcu_floor_div_f32"} <= failing
    assert not runtime_declarations().functions["mcu_div_f32"].returns_status  # x / 0 is inf, as in TFLite


@pytest.mark.parametrize("case", sorted(CASES))
def test_invoke_fails_where_the_reference_fails(case):
    make, good, bad = CASES[case]
    model = make()
    reference = ReferenceModel(model)
    with pytest.raises(RuntimeError):
        reference.run(bad)
    graph, _plan, files = generate_for_model(model, name="model")
    with pytest.raises(McuPlanError, match=KERNEL_FAILED):
        run_generated(graph, files, "model", [good, bad], check_build=False)
    # The same model, given inputs the reference runs, is bit-exact (plain and check build).
    want = ReferenceModel(model).run(good)
    for run in run_generated(graph, files, "model", [good, good]):
        for sample in run.outputs:
            got = np.frombuffer(sample[0], dtype=want[0].dtype).reshape(want[0].shape)
            assert np.array_equal(got, want[0])
