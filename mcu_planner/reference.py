"""TFLite's reference kernels: the bit-exact target of the generated C.

The interpreter runs with BUILTIN_REF: the default (optimized / XNNPACK)
kernels round differently in places and are not what the runtime matches.
"""

from __future__ import annotations

import struct

import numpy as np

# Field slot of QuantizationParameters.quantized_dimension in the schema's vtable.
_QUANTIZED_DIMENSION_SLOT = 16


def _interpreter_classes():
    """ai-edge-litert's interpreter, or tflite-runtime's where only that is
    installed (both ship the BUILTIN_REF resolver)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        try:
            from tflite_runtime.interpreter import Interpreter, OpResolverType
        except ImportError:
            raise ImportError(
                "the reference interpreter needs ai-edge-litert (pip install ai-edge-litert) or tflite-runtime"
            ) from None
    return Interpreter, OpResolverType


class ReferenceModel:
    """One interpreter, reused for many input sets."""

    def __init__(self, model_bytes: bytes):
        Interpreter, OpResolverType = _interpreter_classes()
        self._interpreter = Interpreter(
            model_content=with_valid_quantized_dimensions(bytes(model_bytes)),
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


def with_valid_quantized_dimensions(model_bytes: bytes) -> bytes:
    """The model with `quantized_dimension` zeroed wherever it names a
    dimension the tensor does not have.

    person_detect's rank-1 biases say dimension 3: TFLM ignores the field for
    biases and so does the generated code, but the interpreter refuses the
    model.  Dimension 0 is the only one such a tensor has, so the reference
    computes the same numbers with the field made valid.
    """
    import tflite

    model = tflite.Model.GetRootAsModel(model_bytes, 0)
    patched: bytearray | None = None
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        for t in range(subgraph.TensorsLength()):
            tensor = subgraph.Tensors(t)
            quantization = tensor.Quantization()
            if quantization is None:
                continue
            dimension = quantization.QuantizedDimension()
            if dimension != 0 and dimension >= max(tensor.ShapeLength(), 1):
                field = quantization._tab.Offset(_QUANTIZED_DIMENSION_SLOT)
                if patched is None:
                    patched = bytearray(model_bytes)
                struct.pack_into("<i", patched, quantization._tab.Pos + field, 0)
    return bytes(patched) if patched is not None else model_bytes
