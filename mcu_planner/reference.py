"""TFLite's reference kernels: the bit-exact target of the generated C.

The interpreter runs with BUILTIN_REF: the default (optimized / XNNPACK)
kernels round differently in places and are not what the runtime matches.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .errors import InputError

# Generous: the largest shared model runs a few input sets in seconds.
REFERENCE_TIMEOUT_SECONDS = 600.0
# Exit status of the child when the interpreter refused the model (its reason on stderr).
_REFUSED = 3

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


class ReferenceRefused(InputError):
    """The reference interpreter refused or could not run the model."""


def run_isolated(model_bytes: bytes, input_sets: list[list[np.ndarray]], timeout: float = REFERENCE_TIMEOUT_SECONDS
                 ) -> list[list[np.ndarray]]:
    """The reference outputs for each input set, computed in a child process,
    so that a model the interpreter aborts on (TFLITE_CHECK, SIGABRT, a crash)
    ends as one ReferenceRefused line instead of ending mcu-plan."""
    with tempfile.TemporaryDirectory(prefix="mcu-plan-reference-") as work:
        request, answer = Path(work) / "in.npz", Path(work) / "out.npz"
        arrays = {"model": np.frombuffer(bytes(model_bytes), dtype=np.uint8)}
        for s, arrays_of_set in enumerate(input_sets):
            for i, a in enumerate(arrays_of_set):
                arrays[f"in_{s}_{i}"] = np.asarray(a)
        np.savez(request, **arrays)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "mcu_planner.reference", str(request), str(answer), str(len(input_sets))],
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))},
            )
        except subprocess.TimeoutExpired:
            raise ReferenceRefused(f"the reference interpreter did not finish within {timeout:g} s") from None
        if done.returncode < 0:
            name = signal.Signals(-done.returncode).name if -done.returncode in signal.valid_signals() else str(-done.returncode)
            detail = _last_line(done.stderr)
            raise ReferenceRefused(f"the reference interpreter aborted ({name}) on this model" + (f": {detail}" if detail else ""))
        if done.returncode != 0:
            raise ReferenceRefused(f"the reference interpreter refuses this model: {_last_line(done.stderr) or f'exit status {done.returncode}'}")
        with np.load(answer) as outputs:
            count = int(outputs["outputs_per_set"])
            return [[outputs[f"out_{s}_{o}"] for o in range(count)] for s in range(len(input_sets))]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:300] if lines else ""


def _serve(request: str, answer: str, sets: int) -> int:
    with np.load(request) as data:
        model = data["model"].tobytes()
        keys = set(data.files)
        input_sets = []
        for s in range(sets):
            arrays, i = [], 0
            while f"in_{s}_{i}" in keys:
                arrays.append(data[f"in_{s}_{i}"])
                i += 1
            input_sets.append(arrays)
    try:
        reference = ReferenceModel(model)
        results = [reference.run(arrays) for arrays in input_sets]
    except Exception as exc:  # the interpreter's refusal, in its own words, on one line
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(text, file=sys.stderr)
        return _REFUSED
    out = {"outputs_per_set": np.array(len(results[0]) if results else 0)}
    for s, outputs in enumerate(results):
        for o, value in enumerate(outputs):
            out[f"out_{s}_{o}"] = value
    np.savez(answer, **out)
    return 0


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1], sys.argv[2], int(sys.argv[3])))
