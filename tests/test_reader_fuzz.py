"""Damaged model bytes end as InputError or UnsupportedModel, never as any
other exception, and whatever the reader does accept is self-consistent."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_planner.errors import MAX_UNSUPPORTED_LINES, InputError, UnsupportedModel
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import DTYPE_BITS, Graph
from mcu_planner_testing.builder import ModelBuilder

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
SMALL_SHARED = [
    "tflite-micro/hello_world_int8.tflite",
    "tflite-micro/simple_add_model.tflite",
    "tflite-micro/model_runner_codegen_model.tflite",
    "tflite-micro/trained_lstm_int8.tflite",
]


def _seeds() -> dict[str, bytes]:
    seeds = {"tiny_kws_int8": EXAMPLE.read_bytes()}
    for name in SMALL_SHARED:
        path = MODELS_DIR / name
        if path.is_file():
            seeds[Path(name).stem] = path.read_bytes()
    return seeds


SEEDS = _seeds()
# Values that make offsets and lengths point somewhere interesting.
INTERESTING_WORDS = [0, 1, 2, 4, 8, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFC]


def assert_consistent(graph: Graph) -> None:
    """What the reader promises later stages about any Graph it returns."""
    n = len(graph.tensors)
    for t in graph.tensors:
        assert all(d >= 0 for d in t.shape)
        if t.dtype in DTYPE_BITS and t.data is not None:
            assert len(t.data) == t.nbytes
    for op in graph.operators:
        assert all(-1 <= i < n for i in op.inputs)
        assert all(0 <= i < n for i in op.outputs)
        for i in op.inputs + op.outputs:
            assert i < 0 or graph.tensors[i].dtype in DTYPE_BITS
    assert all(0 <= i < n for i in graph.inputs + graph.outputs)
    if graph.offline_offsets is not None:
        assert len(graph.offline_offsets) == n


def read_or_refuse(data: bytes) -> None:
    try:
        graph = read_model(data, label="fuzz.tflite")
    except (InputError, UnsupportedModel) as exc:
        message = str(exc)
        assert message.startswith("fuzz.tflite: ")
        if isinstance(exc, InputError):
            assert "\n" not in message
        else:
            # A head line, then at most MAX_UNSUPPORTED_LINES + 1 short lines.
            lines = message.splitlines()
            assert len(lines) <= MAX_UNSUPPORTED_LINES + 2 and all(len(line) <= 300 for line in lines)
        return
    assert_consistent(graph)


@st.composite
def damaged_models(draw) -> bytes:
    data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        size = len(data)
        kind = draw(st.sampled_from(["byte", "word", "truncate", "splice", "insert"]))
        if kind == "byte":
            data[draw(st.integers(0, size - 1))] = draw(st.integers(0, 255))
        elif kind == "word" and size >= 4:
            at = draw(st.integers(0, size // 4 - 1)) * 4
            data[at : at + 4] = struct.pack("<I", draw(st.sampled_from(INTERESTING_WORDS)))
        elif kind == "truncate":
            data = data[: draw(st.integers(0, size))]
        elif kind == "splice":
            start = draw(st.integers(0, size - 1))
            chunk = data[start : start + draw(st.integers(1, 64))]
            at = draw(st.integers(0, size - 1))
            data[at : at + len(chunk)] = chunk
        else:
            at = draw(st.integers(0, size))
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_models())
def test_damaged_models_never_escape_as_other_exceptions(data):
    read_or_refuse(data)


def test_every_metadata_word_of_the_example_overwritten():
    """Deterministic sweep: each 4-byte word outside the weight data replaced by
    values that break offsets and lengths."""
    model = EXAMPLE.read_bytes()
    graph = read_model(model)
    blobs = [
        (start, start + len(t.data))
        for t in graph.tensors
        if t.data and len(t.data) >= 64
        for start in [model.find(t.data)]
    ]
    positions = [p for p in range(0, len(model) - 3, 4) if not any(a <= p < b for a, b in blobs)]
    rng = np.random.default_rng(0)
    for p in rng.permutation(positions)[:400]:
        damaged = bytearray(model)
        damaged[p : p + 4] = struct.pack("<I", int(rng.choice(INTERESTING_WORDS)))
        read_or_refuse(bytes(damaged))


# -- explicit cases -------------------------------------------------------------------


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tflite"
    path.write_bytes(b"")
    with pytest.raises(InputError, match=r"empty.tflite: empty file"):
        read_model(path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"gone.tflite: no such file"):
        read_model(tmp_path / "gone.tflite")


def test_text_file(tmp_path):
    path = tmp_path / "notes.tflite"
    path.write_text("this is not a model, just some text\n")
    with pytest.raises(InputError, match=r"notes.tflite: not a TFLite file \(no TFL3 identifier\)"):
        read_model(path)


def test_identifier_followed_by_garbage():
    rng = np.random.default_rng(1)
    for _ in range(50):
        data = (
            rng.integers(0, 256, 4, dtype=np.uint8).tobytes()
            + b"TFL3"
            + rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
        )
        read_or_refuse(data)


@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999])
def test_truncated(fraction):
    model = EXAMPLE.read_bytes()
    cut = model[: int(len(model) * fraction)]
    with pytest.raises(InputError):
        read_model(cut, label="cut.tflite")


def test_huge_dimensions_overflow():
    mb = ModelBuilder()
    x = mb.add_tensor((2**20, 2**20, 2**10), "int32", name="huge")
    y = mb.add_tensor((1,), "int32")
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    with pytest.raises(InputError, match=r"tensor 0 \(huge\) has shape .* bytes is beyond any microcontroller"):
        read_model(mb.build())


def test_negative_dimension():
    mb = ModelBuilder()
    x = mb.add_tensor((1, -5), "int8", name="neg")
    y = mb.add_tensor((1,), "int8")
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    with pytest.raises(InputError, match=r"tensor 0 \(neg\) has a negative dimension"):
        read_model(mb.build())
