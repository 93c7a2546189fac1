"""Helpers for the kernel tests: float models built op by op, and the one
assertion every kernel test makes (generated C == TFLite reference)."""

from __future__ import annotations

import numpy as np

from mcu_planner.builder import ModelBuilder
from mcu_planner.check import check_model


def assert_matches_reference(model: bytes, inputs: int = 3, seed: int = 0) -> None:
    """Generated C agrees with the reference interpreter on every output of
    `inputs` random input sets: byte for byte for integer outputs, and for
    float outputs exactly too (same operations in the same order)."""
    report = check_model(model, target="host", inputs=inputs, seed=seed, raise_on_mismatch=False)
    assert report.passed, report.mismatch_message()
    assert report.max_float_error == 0.0, f"float outputs differ by up to {report.max_float_error:g}"


class FloatNet:
    """A float32 graph: one input, layers added by opcode, seeded random weights."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.mb = ModelBuilder("float kernel test")
        self.inputs: list[int] = []

    def input(self, shape) -> int:
        t = self.mb.add_tensor(shape, "float32", name=f"input_{len(self.inputs)}")
        self.inputs.append(t)
        return t

    def shape(self, t: int) -> tuple[int, ...]:
        return self.mb.tensors[t].shape

    def const(self, shape, scale: float = 1.0) -> int:
        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.mb.add_tensor(shape, "float32", data=values)

    def int32_const(self, values) -> int:
        values = np.asarray(values, dtype=np.int32)
        return self.mb.add_tensor(values.shape, "int32", data=values)

    def op(self, opcode: str, inputs, out_shape, options=None) -> int:
        y = self.mb.add_tensor(out_shape, "float32")
        self.mb.add_op(opcode, inputs, (y,), options or {})
        return y

    def build(self, *outputs: int) -> bytes:
        self.mb.set_io(self.inputs, outputs)
        return self.mb.build()
