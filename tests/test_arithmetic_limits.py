"""Extreme scales TFLite accepts (issue 14): a tiny output scale gives rescale
exponents far above 31, a tiny input scale far below -31.  The generated C
must match the reference interpreter there without undefined behaviour (the
sanitized host build proves the latter), on the host and on a Cortex-M."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_cortex_m

from mcu_planner.frontend.validate import InvalidModel
from mcu_planner.graph import Quantization
from mcu_planner.quant import f32, quantize_multiplier
from mcu_planner.targets.check import check_model
from mcu_planner_testing.builder import ModelBuilder
from mcu_planner_testing.shared import SHARED

BIAS_SCALE = 0.25  # input scale 0.5 x filter scale 0.5


def weighted_model(opcode: str, output_scale: float, output_zero_point: int = 0) -> bytes:
    b = ModelBuilder()
    if opcode == "FULLY_CONNECTED":
        x = b.add_tensor((1, 8), "int8", (0.5, 3))
        w = b.add_tensor((2, 8), "int8", Quantization((0.5,), (0,)), data=np.arange(-8, 8, dtype=np.int8).reshape(2, 8))
        y = b.add_tensor((1, 2), "int8", (output_scale, output_zero_point))
    else:
        x = b.add_tensor((1, 3, 3, 2), "int8", (0.5, 3))
        w = b.add_tensor(
            (2, 1, 1, 2),
            "int8",
            Quantization((0.5, 0.5), (0, 0), 0),
            data=np.array([1, -2, 3, 4], np.int8).reshape(2, 1, 1, 2),
        )
        y = b.add_tensor((1, 3, 3, 2), "int8", (output_scale, output_zero_point))
    bias = b.add_tensor((2,), "int32", (BIAS_SCALE, 0), data=np.array([3, -5], np.int32))
    options = {} if opcode == "FULLY_CONNECTED" else {"padding": "VALID", "stride_h": 1, "stride_w": 1}
    b.add_op(opcode, [x, w, bias], [y], options)
    b.set_io([x], [y])
    return b.build()


def scale_for_shift(shift: int) -> float:
    """An output scale whose rescale factor BIAS_SCALE / scale has exponent `shift`."""
    scale = f32(BIAS_SCALE / (0.7 * 2.0**shift))
    assert quantize_multiplier(BIAS_SCALE / scale)[1] == shift or shift < -31
    return scale


@pytest.mark.parametrize("shift", [-40, -31, 31, 32, 47, 129])
def test_conv_rescale_exponents_beyond_31_match_the_reference_sanitized(shift):
    report = check_model(weighted_model("CONV_2D", scale_for_shift(shift), -7), inputs=2, sanitize=True, extremes=True)
    assert report.passed and report.total == 5


@needs_cortex_m
@pytest.mark.parametrize("shift", [33, 100])
def test_conv_rescale_exponents_beyond_31_match_the_reference_on_a_cortex_m(shift):
    report = check_model(weighted_model("CONV_2D", scale_for_shift(shift)), target="mps2-an386", inputs=3)
    assert report.passed


@pytest.mark.parametrize("shift", [31, 40, 129])
def test_fully_connected_rescale_leaving_int32_is_refused(shift):
    with pytest.raises(InvalidModel, match="fc-rescale-range"):
        check_model(weighted_model("FULLY_CONNECTED", scale_for_shift(shift)))


@pytest.mark.parametrize("shift", [-40, 0, 10])
def test_fully_connected_rescale_inside_int32_matches_sanitized(shift):
    report = check_model(
        weighted_model("FULLY_CONNECTED", scale_for_shift(shift), 5), inputs=4, sanitize=True, extremes=True
    )
    assert report.passed


# ---------------------------------------------------------------- shared models, sanitized

import os  # noqa: E402

from conftest import model_param, needs_shared, supported_shared_model_paths  # noqa: E402

# A sample that covers every kernel family the shared models use in a modest
# time; MCU_PLAN_SANITIZE_ALL=1 (the CI sanitizer stage) runs every model.
SANITIZE_SAMPLE = {
    "ad01_int8",
    "hello_world_float",
    "micro_speech_quantized",
    "simple_add_model",
    "str_ww_ref_model",
    # the stateful kernels: SVDF (its int32 sums wrap on extreme inputs) and LSTM
    "keyword_scrambled",
    "trained_lstm_int8",
}


def _sanitize_models():
    paths = supported_shared_model_paths()
    if not os.environ.get("MCU_PLAN_SANITIZE_ALL"):
        return [model_param(p) for p in paths if p.stem in SANITIZE_SAMPLE]
    # Every run: the peer tests' models too (SEANet's int16 layers, Coral's
    # uint8 models, microWakeWord's streaming models).
    peer = sorted((SHARED / "peer-tests").rglob("*.tflite")) if (SHARED / "peer-tests").is_dir() else []
    return [model_param(p) for p in paths] + [pytest.param(p, id=f"peer-{p.stem}") for p in peer]


@needs_shared
@pytest.mark.parametrize("path", _sanitize_models())
def test_shared_model_is_sanitizer_clean_on_extreme_inputs(path):
    report = check_model(path, inputs=1, sanitize=True, extremes=True)
    assert report.passed and report.total == 4
