"""`mcu-plan check` reports, never crashes (issue 14): the reference runs in a
child process, so a model it refuses or aborts on is one line and exit 2;
NaN equals NaN and an infinity the same infinity."""

from __future__ import annotations

import numpy as np
import pytest

from mcu_planner.cli import main
from mcu_planner.targets.check import _compare, check_model
from mcu_planner_testing.builder import ModelBuilder


def _tiny_output_add() -> bytes:
    """int8 ADD whose output scale makes TFLite's Prepare fail a TFLITE_CHECK (abort)."""
    b = ModelBuilder()
    x, z = b.add_tensor((1, 4), "int8", (0.1, 0)), b.add_tensor((1, 4), "int8", (0.1, 0))
    y = b.add_tensor((1, 4), "int8", (1e-30, 0))
    b.add_op("ADD", [x, z], [y])
    b.set_io([x, z], [y])
    return b.build()


def test_a_reference_abort_is_reported_not_fatal():
    from mcu_planner.targets.reference import ReferenceRefused, run_isolated

    with pytest.raises(ReferenceRefused, match="aborted \\(SIGABRT\\)"):
        run_isolated(_tiny_output_add(), [[np.zeros((1, 4), np.int8)] * 2])


def test_check_of_a_model_the_reference_refuses_exits_2_with_its_reason(tmp_path, capsys, monkeypatch):
    """The plan refuses what LiteRT's loader and Prepare refuse (issue 20), so
    a refusal that reaches check stands in here: the reference interpreter,
    patched, refuses in its own words, and check says so in one line."""
    from mcu_planner.targets import reference

    class Refusing:
        def __init__(self, model_bytes: bytes) -> None:
            raise RuntimeError("Node number 0 (ADD) failed to prepare.")

    monkeypatch.setattr(reference, "ReferenceModel", Refusing)
    b = ModelBuilder()
    x, z, y = (b.add_tensor((1, 4), "int8", (0.1, 0)) for _ in range(3))
    b.add_op("ADD", [x, z], [y])
    b.set_io([x, z], [y])
    path = tmp_path / "add.tflite"
    path.write_bytes(b.build())
    capsys.readouterr()
    code = main(["check", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and "reference interpreter" in err[0] and "failed to prepare" in err[0], err


def test_nan_equals_nan_and_infinities_equal_themselves():
    values = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert _compare(values, values.tobytes()) is None
    other = np.array([np.nan, -np.inf, -np.inf, 1.0], np.float32)
    assert _compare(values, other.tobytes())[0] == 1
    assert _compare(values, np.array([0.0, np.inf, -np.inf, 1.0], np.float32).tobytes())[0] == 0


def test_check_of_a_float_model_with_nan_and_inf_outputs_is_exact():
    b = ModelBuilder()
    x = b.add_tensor((1, 4), "float32")
    c = b.add_tensor((1, 4), "float32", data=np.array([[np.inf, -np.inf, np.nan, 1.0]], np.float32))
    y = b.add_tensor((1, 4), "float32")
    b.add_op("ADD", [x, c], [y])
    b.set_io([x], [y])
    assert check_model(b.build(), inputs=2).passed
