"""TFLite's reference kernels: the bit-exact target of the generated C.

The interpreter runs with BUILTIN_REF: the default (optimized / XNNPACK)
kernels round differently in places and are not what the runtime matches.
"""

from __future__ import annotations

import numpy as np


class ReferenceModel:
    """One interpreter, reused for many input sets."""

    def __init__(self, model_bytes: bytes):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        self._interpreter = Interpreter(
            model_content=bytes(model_bytes),
            experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        )
        self._interpreter.allocate_tensors()
        self.input_details = self._interpreter.get_input_details()
        self.output_details = self._interpreter.get_output_details()

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.input_details):
            raise ValueError(f"model takes {len(self.input_details)} inputs, got {len(inputs)}")
        for detail, value in zip(self.input_details, inputs):
            array = np.asarray(value, dtype=detail["dtype"]).reshape(detail["shape"])
            self._interpreter.set_tensor(detail["index"], array)
        self._interpreter.invoke()
        return [self._interpreter.get_tensor(d["index"]).copy() for d in self.output_details]


def reference_outputs(model_bytes: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The reference interpreter's outputs for one set of inputs (graph input order)."""
    return ReferenceModel(model_bytes).run(inputs)
