"""TFLite's reference kernels: the bit-exact target of the generated C.

The interpreter runs with BUILTIN_REF: the default (optimized / XNNPACK)
kernels round differently in places and are not what the runtime matches.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import struct
import tempfile
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError

# Generous: the largest shared model runs a few input sets in seconds.
REFERENCE_TIMEOUT_SECONDS = 600.0

# Field slot of QuantizationParameters.quantized_dimension in the schema's vtable.
_QUANTIZED_DIMENSION_SLOT = 16


def _interpreter_classes() -> tuple[Any, Any]:
    """ai-edge-litert's interpreter, or tflite-runtime's where only that is
    installed (both ship the BUILTIN_REF resolver): its Interpreter and
    OpResolverType classes (the bindings carry no types)."""
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
        self.input_details: list[dict[str, Any]] = self._interpreter.get_input_details()
        self.output_details: list[dict[str, Any]] = self._interpreter.get_output_details()

    def run(self, inputs: list[npt.NDArray[Any]]) -> list[npt.NDArray[Any]]:
        if len(inputs) != len(self.input_details):
            raise ValueError(f"model takes {len(self.input_details)} inputs, got {len(inputs)}")
        for detail, value in zip(self.input_details, inputs, strict=True):
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


def run_isolated(
    model_bytes: bytes, input_sets: list[list[npt.NDArray[Any]]], timeout: float = REFERENCE_TIMEOUT_SECONDS
) -> list[list[npt.NDArray[Any]]]:
    """The reference outputs for each input set, computed in a forked child
    process, so that a model the interpreter aborts on (TFLITE_CHECK, SIGABRT,
    a crash) ends as one ReferenceRefused line instead of ending mcu-plan.
    The child shares the parent's modules as they are (tests may patch
    ReferenceModel); its stderr, where TFLite writes its own messages, is
    kept apart and only its last line is reported."""
    with tempfile.TemporaryFile() as child_stderr:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            status = 1
            try:
                os.close(read_end)
                os.dup2(child_stderr.fileno(), 2)
                # A fatal-error dump (pytest, PYTHONFAULTHANDLER) would go to
                # the parent's stderr, not the child's.
                faulthandler.disable()
                answer: tuple[str, list[list[npt.NDArray[Any]]] | str]
                try:
                    reference = ReferenceModel(model_bytes)
                    answer = ("ok", [reference.run(arrays) for arrays in input_sets])
                except Exception as exc:  # the interpreter's refusal, in its own words
                    answer = ("refused", " ".join(str(exc).split()) or type(exc).__name__)
                data = pickle.dumps(answer)
                with os.fdopen(write_end, "wb") as pipe:
                    pipe.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        chunks = []
        deadline = time.monotonic() + timeout
        with os.fdopen(read_end, "rb") as pipe:
            while True:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([pipe], [], [], max(left, 0))
                if not ready:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    raise ReferenceRefused(f"the reference interpreter did not finish within {timeout:g} s")
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        _, wait_status = os.waitpid(pid, 0)
        child_stderr.seek(0)
        detail = _last_line(child_stderr.read().decode("utf-8", "replace"))
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
        raise ReferenceRefused(
            f"the reference interpreter aborted ({name}) on this model" + (f": {detail}" if detail else "")
        )
    if not chunks:
        raise ReferenceRefused(f"the reference interpreter ended without an answer ({detail or 'no message'})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind != "ok":
        raise ReferenceRefused(f"the reference interpreter refuses this model: {value}"[:400])
    # The child sends ("ok", its outputs per input set) or ("refused", message).
    outputs: list[list[npt.NDArray[Any]]] = value
    return outputs


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:300] if lines else ""
