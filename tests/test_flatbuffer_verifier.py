"""The flatbuffer verifier (mcu_planner/frontend/flatbuffer_verifier.py) refuses
exactly the bytes LiteRT's loader refuses as "not a valid Flatbuffer buffer",
in time linear in the file size, and mcu-plan turns that into exit 2 with one
line and nothing written."""

from __future__ import annotations

import faulthandler
import inspect
import os
import random
import re
import struct
import time

import flatbuffers
import pytest
import tflite
from conftest import SHARED, needs_shared
from semantic_fuzz import BASE_MODELS

from mcu_planner.cli import main
from mcu_planner.frontend.flatbuffer_verifier import (
    MAX_TABLES,
    TABLE,
    TABLE_VECTOR,
    UNION,
    CorruptFlatbuffer,
    fields_from_binding_source,
    table_fields,
    union_members,
    verify_model_buffer,
)

litert_interpreter = pytest.importorskip("ai_edge_litert.interpreter")

# LiteRT's message when VerifyModelBuffer fails.
LITERT_VERIFIER_MESSAGE = "not a valid Flatbuffer buffer"


def _litert_load(model: bytes) -> str:
    try:
        litert_interpreter.Interpreter(
            model_content=model, experimental_op_resolver_type=litert_interpreter.OpResolverType.BUILTIN_REF
        )
    except ValueError as exc:
        return "refused" if LITERT_VERIFIER_MESSAGE in str(exc) else "other"
    except Exception:
        return "other"
    return "loaded"


def litert_verdicts(models: list[bytes]) -> list[str]:
    """Per model 'refused' (LiteRT's verifier), 'loaded' or 'other' (the
    interpreter builder refused it, or crashed: LiteRT itself crashes on a few
    verified but meaningless models).  Loads run in a child process, one line
    per verdict through a pipe; after a crash a new child takes the rest."""
    verdicts: list[str] = []
    while len(verdicts) < len(models):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read_end)
            os.close(2)
            faulthandler.disable()  # a LiteRT crash here is a verdict, not a trace in the test log
            with os.fdopen(write_end, "w", buffering=1) as out:
                for model in models[len(verdicts) :]:
                    out.write(_litert_load(model) + "\n")
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as lines:
            verdicts.extend(line.strip() for line in lines)
        os.waitpid(pid, 0)
        if len(verdicts) < len(models):
            verdicts.append("other")  # the child died on this one
    return verdicts


def litert_verdict(model: bytes) -> str:
    return litert_verdicts([model])[0]


def ours(model: bytes) -> str:
    try:
        verify_model_buffer(model)
    except CorruptFlatbuffer:
        return "refused"
    return "accepted"


# ---------------------------------------------------------------- the schema


def test_table_layouts_are_litert_schema_layouts():
    """Every table reachable from Model has, field for field, the layout of
    the schema ai_edge_litert ships (the installed `tflite` bindings plus
    NEWER_SCHEMA_FIELDS), and every union the same members."""
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    # One file holds every class; inspect.getsource would parse it per class.
    text = inspect.getsource(schema)
    sources = dict(re.findall(r"^class (\w+)\(object\):\n(.*?)(?=^class |^def |\Z)", text, re.M | re.S))

    def members(enum: str) -> dict[int, str]:
        values = {v: k for k, v in vars(getattr(schema, enum)).items() if not k.startswith("_") and isinstance(v, int)}
        values.pop(0, None)
        return values

    seen: set[str] = set()
    pending = ["Model"]
    while pending:
        table = pending.pop()
        if table in seen:
            continue
        seen.add(table)
        theirs = fields_from_binding_source(table, sources[table])
        assert table_fields(table) == theirs, table
        for field in theirs:
            if field.kind in (TABLE, TABLE_VECTOR):
                pending.append(field.table)
            elif field.kind == UNION:
                assert union_members(field.table) == members(field.table), field.table
                pending.extend(members(field.table).values())
    assert len(seen) > 150


# ---------------------------------------------------------------- agreement with LiteRT


def _mutated(rng: random.Random, data: bytes) -> bytes:
    """One to three word- or byte-sized changes, aimed at offsets, lengths
    and vtable entries; sometimes a cut."""
    words = (0, 1, 2, 3, 4, 8, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFC)
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randint(0, 3)
        position = rng.randrange(len(out) - 4)
        if kind == 0:
            out[position] = rng.randrange(256)
        elif kind == 1:
            struct.pack_into("<I", out, position & ~3, rng.choice(words))
        elif kind == 2:
            struct.pack_into("<H", out, position & ~1, rng.choice((0, 2, 4, 5, 6, 8, 100, 1000, 0xFFFF)))
        else:
            word = struct.unpack_from("<I", out, position & ~3)[0]
            struct.pack_into("<I", out, position & ~3, (word + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8))) % 2**32)
    if rng.random() < 0.05:
        out = out[: rng.randrange(len(out))]
    return bytes(out)


def test_mutated_models_are_refused_exactly_when_litert_refuses_them():
    """Seeded byte mutations of builder-made models: our verdict and LiteRT's
    verifier agree on every one, and both verdicts occur often.  (A 6,000-
    mutation run of the same generator, seeds 1 and 2, agreed on all.)"""
    rng = random.Random(20261127)
    bases = [BASE_MODELS[name]() for name in sorted(BASE_MODELS)]
    models = [_mutated(rng, rng.choice(bases)) for _ in range(1000)]
    verdicts: dict[tuple[str, str], int] = {}
    for k, (model, theirs) in enumerate(zip(models, litert_verdicts(models), strict=True)):
        pair = (ours(model), theirs)
        verdicts[pair] = verdicts.get(pair, 0) + 1
        assert (pair[0] == "refused") == (pair[1] == "refused"), (k, pair)
    assert verdicts.get(("refused", "refused"), 0) > 300
    assert sum(n for (mine, _), n in verdicts.items() if mine == "accepted") > 300


def _root_table(data: bytes) -> int:
    return struct.unpack_from("<I", data, 0)[0]


def _field_position(data: bytes, table: int, vt: int) -> int:
    vtable = table - struct.unpack_from("<i", data, table)[0]
    return table + struct.unpack_from("<H", data, vtable + vt)[0]


def _model_field_target(data: bytes, vt: int) -> tuple[int, int]:
    """(position of Model's offset field at vtable entry `vt`, what it points to)."""
    root = _root_table(data)
    position = _field_position(data, root, vt)
    return position, position + struct.unpack_from("<I", data, position)[0]


def _edited(data: bytes, position: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, position, value)
    return bytes(out)


def _edits() -> dict[str, bytes]:
    """One hand-made corruption per check of the verifier."""
    model = BASE_MODELS["kws"]()
    root = _root_table(model)
    description_field, description = _model_field_target(model, 10)
    _, subgraphs = _model_field_target(model, 8)
    first_subgraph = subgraphs + 4 + struct.unpack_from("<I", model, subgraphs + 4)[0]
    vtable = root - struct.unpack_from("<i", model, root)[0]
    length = struct.unpack_from("<I", model, description)[0]
    return {
        "root offset past the end": _edited(model, 0, "<I", len(model) + 8),
        "misaligned root table": _edited(model, 0, "<I", root + 2),
        "vtable of odd size": _edited(model, vtable, "<H", struct.unpack_from("<H", model, vtable)[0] + 1),
        "vtable past the end": _edited(model, root, "<i", -len(model)),
        "offset field of 0": _edited(model, description_field, "<I", 0),
        "offset field negative": _edited(model, description_field, "<I", 0x80000004),
        "string without its 0 byte": _edited(model, description + 4 + length, "<B", 0x41),
        "vector longer than the file": _edited(model, subgraphs, "<I", 0x10000),
        "vector length that overflows": _edited(model, subgraphs, "<I", 0x7FFFFFFF),
        "misaligned table in a vector": _edited(model, subgraphs + 4, "<I", first_subgraph - subgraphs - 4 + 1),
        "truncated": model[: len(model) // 2],
    }


EDITS = _edits()


@pytest.mark.parametrize("name", sorted(EDITS))
def test_each_check_refuses_what_litert_refuses(name, tmp_path, capsys):
    model = EDITS[name]
    assert litert_verdict(model) == "refused"
    assert ours(model) == "refused"
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    capsys.readouterr()
    code = main([str(path), "-o", str(tmp_path / "out"), "--json", str(tmp_path / "plan.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "corrupt flatbuffer" in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]


def _shared_subtree_model(subgraph_copies: int, operator_copies: int) -> bytes:
    """A model whose subgraphs vector repeats one SubGraph `subgraph_copies`
    times, whose operators vector repeats one Operator `operator_copies`
    times: a few kilobytes that the C++ verifier walks as
    1 + subgraph_copies * (1 + operator_copies) tables."""
    fb = flatbuffers.Builder(1024)
    tflite.OperatorStart(fb)
    operator = tflite.OperatorEnd(fb)
    tflite.SubGraphStartOperatorsVector(fb, operator_copies)
    for _ in range(operator_copies):
        fb.PrependUOffsetTRelative(operator)
    operators = fb.EndVector()
    tflite.SubGraphStart(fb)
    tflite.SubGraphAddOperators(fb, operators)
    subgraph = tflite.SubGraphEnd(fb)
    tflite.ModelStartSubgraphsVector(fb, subgraph_copies)
    for _ in range(subgraph_copies):
        fb.PrependUOffsetTRelative(subgraph)
    subgraphs = fb.EndVector()
    tflite.ModelStart(fb)
    tflite.ModelAddVersion(fb, 3)
    tflite.ModelAddSubgraphs(fb, subgraphs)
    fb.Finish(tflite.ModelEnd(fb), file_identifier=b"TFL3")
    return bytes(fb.Output())


def test_table_visits_are_counted_as_the_cpp_verifier_counts_them_in_linear_time():
    """Shared sub-objects count once per reference, as the C++ verifier walks
    them: just over MAX_TABLES visits are refused (by LiteRT too), just under
    are not; and both take milliseconds, not a million steps."""
    over = _shared_subtree_model(1001, 1000)  # 1 + 1001 * 1001 > 1,000,000
    under = _shared_subtree_model(999, 999)  # 1 + 999 * 1000 <= 1,000,000
    assert 1 + 1001 * 1001 > MAX_TABLES >= 1 + 999 * 1000
    assert litert_verdict(over) == "refused"
    assert litert_verdict(under) != "refused"
    start = time.perf_counter()
    with pytest.raises(CorruptFlatbuffer, match="table visits"):
        verify_model_buffer(over)
    verify_model_buffer(under)
    assert time.perf_counter() - start < 1.0


@needs_shared
def test_every_shared_model_passes_quickly():
    models = sorted(p for root in ("models", "peer-tests") for p in (SHARED / root).rglob("*.tflite"))
    assert len(models) > 20
    start = time.perf_counter()
    for path in models:
        verify_model_buffer(path.read_bytes())
    assert time.perf_counter() - start < 5.0
