"""QUANTIZE and DEQUANTIZE against TFLite's reference kernels."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import MODELS_DIR, needs_shared
from kernel_models import Branches, assert_matches_reference, random_int8_quant, random_scale

from mcu_planner.graph import Graph, Operator, Quantization, Tensor
from mcu_planner.lowering import NotLowerable, lower

SHAPE = (2, 300)


def quantize_model(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    model = Branches(f"quantize seed {seed}")
    # float32 -> int8 / uint8: check_model draws float inputs over the range
    # the QUANTIZE can represent, so rounding and both clamps are hit.
    for dtype, zp_range in (("int8", (-128, 128)), ("uint8", (0, 256))):
        x = model.input(SHAPE, "float32")
        model.op("QUANTIZE", (x,), SHAPE, dtype, (random_scale(rng, 1e-3, 0.1), int(rng.integers(*zp_range))))
    # Integer requantization between the pairs TFLite takes.
    for in_dtype, out_dtype in (("int8", "int8"), ("int8", "int8"), ("int8", "uint8"), ("uint8", "int8")):
        in_zp = int(rng.integers(0, 256)) if in_dtype == "uint8" else int(rng.integers(-128, 128))
        out_zp = int(rng.integers(0, 256)) if out_dtype == "uint8" else int(rng.integers(-128, 128))
        x = model.input(SHAPE, in_dtype, (random_scale(rng, 1e-3, 0.2), in_zp))
        model.op("QUANTIZE", (x,), SHAPE, out_dtype, (random_scale(rng, 1e-3, 0.2), out_zp))
    # (The int16 pairs are checked in tests/test_kernels_s16.py.)
    for dtype in ("int8", "uint8"):
        zp = int(rng.integers(-128, 128)) if dtype == "int8" else int(rng.integers(0, 256))
        x = model.input(SHAPE, dtype, (random_scale(rng, 1e-4, 0.5), zp))
        model.op("DEQUANTIZE", (x,), SHAPE, "float32")
    return model.build()


@pytest.mark.parametrize("seed", range(4))
def test_quantize_and_dequantize_match_reference(seed):
    assert_matches_reference(quantize_model(seed), inputs=3, seed=seed)


def test_float_round_trip_through_int8():
    """float -> int8 -> int8 (new scale) -> float: the QUANTIZE output takes
    its float input's bytes in place when the planner allows it."""
    model = Branches("round trip")
    x = model.input((1, 5, 5, 8), "float32")
    q = model.mb.add_tensor((1, 5, 5, 8), "int8", (float(np.float32(2 / 255)), -1))
    model.mb.add_op("QUANTIZE", (x,), (q,))
    r = model.mb.add_tensor((1, 5, 5, 8), "int8", (float(np.float32(1 / 255)), 3))
    model.mb.add_op("QUANTIZE", (q,), (r,))
    model.op("DEQUANTIZE", (r,), (1, 5, 5, 8), "float32")
    assert_matches_reference(model.build(), inputs=3)


@needs_shared
def test_shared_keyword_scrambled_quantize_ops_lower():
    """The int16 QUANTIZE ops of a shared model lower (the model's other ops
    belong to other kernel families)."""
    from mcu_planner.frontend.reader import read_model

    graph = read_model(MODELS_DIR / "tflite-micro" / "keyword_scrambled.tflite")
    quantize_ops = [op for op in graph.operators if op.opcode == "QUANTIZE"]
    assert quantize_ops
    for op in quantize_ops:
        call = lower(op, graph)
        source = graph.tensors[op.inputs[0]]
        assert call.function.startswith("mcu_requantize_s16_")
        assert call.params["size"] == source.num_elements


def _unary(opcode, in_dtype, in_q, out_dtype, out_q, per_channel=False) -> tuple[Operator, Graph]:
    def quant(q):
        if q is None:
            return None
        if per_channel:
            return Quantization((q[0], q[0] * 2), (q[1], q[1]), axis=1)
        return Quantization((q[0],), (q[1],))

    tensors = (Tensor(0, "x", (1, 2), in_dtype, quant(in_q)), Tensor(1, "y", (1, 2), out_dtype, quant(out_q)))
    op = Operator(0, opcode, 1, (0,), (1,))
    return op, Graph(tensors, (op,), (0,), (1,))


@pytest.mark.parametrize(
    "opcode, in_dtype, in_q, out_dtype, out_q, per_channel",
    [
        ("QUANTIZE", "float32", None, "int8", (0.1, 0), True),
        ("QUANTIZE", "float32", None, "int32", (0.1, 0), False),
        # LiteRT takes int8 -> int16 (tests/test_kernels_s16.py) but not int8 -> int32.
        ("QUANTIZE", "int8", (0.1, 0), "int32", (0.1, 0), False),
        ("DEQUANTIZE", "int32", (0.1, 0), "float32", None, False),
    ],
)
def test_unsupported_variants_are_not_lowerable(opcode, in_dtype, in_q, out_dtype, out_q, per_channel):
    op, graph = _unary(opcode, in_dtype, in_q, out_dtype, out_q, per_channel)
    with pytest.raises(NotLowerable):
        lower(op, graph)


def test_int8_requantize_multiplier_is_the_scale_ratio():
    """The kernel multiplies by multiplier * 2^(shift - 31): that must be the
    input/output scale ratio to within the Q31 rounding."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        in_q, out_q = random_int8_quant(rng), random_int8_quant(rng)
        op, graph = _unary("QUANTIZE", "int8", in_q, "int8", out_q)
        p = lower(op, graph).params
        realized = p["multiplier"] * 2.0 ** (p["shift"] - 31)
        assert realized == pytest.approx(in_q[0] / out_q[0], rel=2**-30)


@pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc",
)
def test_quantize_is_exact_on_cortex_m4():
    """The float conversions run on the Cortex-M4F's single-precision FPU
    (no software double); the emulated board must still match the reference
    byte for byte."""
    assert_matches_reference(quantize_model(0), inputs=2, target="mps2-an386")
