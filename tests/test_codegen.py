"""Codegen: deterministic, self-contained C that honours the plan, a header
applications build against, a check build that catches a broken plan, and
one-line refusals for what the runtime cannot run."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import UNSUPPORTED_PEER_MODELS, needs_arm_gcc, needs_shared

from mcu_planner.emit.c_literals import c_float, c_identifier, c_int, validate_section_name
from mcu_planner.emit.codegen import generate
from mcu_planner.emit.output_dir import MANIFEST_NAME, read_interface, replace_output_dir, write_output
from mcu_planner.errors import InputError, UnsupportedModel
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph
from mcu_planner.lowering import load_all
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import ArenaPlan, run_planner
from mcu_planner.memory.verify import verify
from mcu_planner.targets.c_flags import STRICT_WARNING_FLAGS
from mcu_planner.targets.check import HostTarget, random_inputs
from mcu_planner.targets.firmware_build import build_firmware
from mcu_planner.targets.reference import ReferenceModel
from mcu_planner_testing.builder import Int8Net, ModelBuilder

WARNINGS = list(STRICT_WARNING_FLAGS)


# ---------------------------------------------------------------- models


def chain_model() -> bytes:
    """conv -> reshape -> fully connected -> logistic: the reshape is aliased away."""
    net = Int8Net(seed=3)
    x = net.input((1, 6, 6, 2))
    y = net.conv2d(x, 4, activation="RELU")
    y = net.reshape(y, (1, 6 * 6 * 4))
    y = net.fully_connected(y, 10)
    return net.build(net.logistic(y))


def concat_model() -> bytes:
    """Two branches concatenated on the last axis: the concatenation is aliased
    away (both branches write straight into its output)."""
    net = Int8Net(seed=4)
    x = net.input((1, 12))
    # Requantized alike, as TFLite's int8 concatenation needs.
    a = net.quantize(net.fully_connected(x, 8, activation="RELU"), -2.0, 2.0)
    b = net.quantize(net.fully_connected(x, 8), -2.0, 2.0)
    y = net.concatenation(a, b, axis=-1)
    return net.build(net.fully_connected(y, 5))


def in_place_model() -> bytes:
    """fully connected -> logistic -> fully connected: logistic may run in place."""
    net = Int8Net(seed=5)
    x = net.input((1, 16))
    a = net.fully_connected(x, 16)
    b = net.logistic(a)
    return net.build(net.fully_connected(b, 4))


def planned(model: bytes, *, alias: bool = True, planner: str = "greedy"):
    graph = read_model(model)
    lifetimes = compute_lifetimes(graph, alignment=16, alias=alias)
    return graph, lifetimes, run_planner(lifetimes.problem, planner)


def write_generated(tmp_path: Path, model: bytes, name: str = "net", **options) -> tuple[Path, object, object]:
    graph, lifetimes, plan = planned(model)
    out = write_output(generate(graph, lifetimes, plan, name=name, **options), tmp_path / "gen")
    return out, graph, lifetimes


def run_host(generated: Path, name: str, graph, samples, *, check_build: bool, workdir: Path):
    return HostTarget().run(
        generated,
        name,
        samples,
        input_bytes=[graph.tensors[t].nbytes for t in graph.inputs],
        output_bytes=[graph.tensors[t].nbytes for t in graph.outputs],
        check_build=check_build,
        workdir=workdir,
    )


def seeded_inputs(graph, model: bytes, count: int = 2, seed: int = 11):
    rng = np.random.default_rng(seed)
    sets = [random_inputs(graph, rng) for _ in range(count)]
    reference = ReferenceModel(model)
    expected = [[a.tobytes() for a in reference.run(arrays)] for arrays in sets]
    return [[a.tobytes() for a in arrays] for arrays in sets], expected


# ---------------------------------------------------------------- literals and names


def test_float_literals_read_back_as_the_same_float32():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.standard_normal(200).astype(np.float32),
            (rng.standard_normal(50) * 1e-40).astype(np.float32),  # subnormals
            np.array([0.0, -0.0, 1.0, 3.0, 1e30, np.finfo(np.float32).max, np.finfo(np.float32).tiny], np.float32),
        ]
    )
    for v in values:
        text = c_float(float(v))
        assert text.endswith("f") and re.fullmatch(r"-?[0-9.]+(e[-+][0-9]+)?f", text), text
        assert np.float32(float(text[:-1])) == v and np.signbit(np.float32(float(text[:-1]))) == np.signbit(v)


def test_integer_literals_stay_in_range_of_their_c_type():
    assert c_int(-(2**31)) == "(-2147483647 - 1)"
    assert eval(c_int(-(2**31)).replace("LL", "")) == -(2**31)
    assert c_int(2**31).endswith("LL") and c_int(-(2**63)).startswith("(")


@pytest.mark.parametrize(
    "stem, expected",
    [
        ("hello_world_int8", "hello_world_int8"),
        ("My-Model.v2", "my_model_v2"),
        ("3dnet", "m_3dnet"),
        ("ü", "m__"),
        ("_private", "m__private"),
    ],
)
def test_model_names_become_c_identifiers(stem, expected):
    assert c_identifier(stem) == expected
    # Never a name C reserves: `__x`, or `_X` (the header's NAME_ARENA_SIZE...).
    assert re.fullmatch(r"[a-z][a-z0-9_]*", c_identifier(stem))


def test_a_name_c_reserves_is_refused_as_bad_input():
    with pytest.raises(InputError, match="not a C identifier.*'m__net'"):
        generate(*planned(chain_model()), name="_net")


@pytest.mark.parametrize("section", [".model_arena", "ram2", ".bss.arena$1"])
def test_section_names_the_linker_takes_are_accepted(section):
    assert validate_section_name(section) == section


@pytest.mark.parametrize("section", ["a b", "", "1abc", '.x"y', ".x)", "sec\\n"])
def test_section_names_the_linker_cannot_take_are_one_line_input_errors(section):
    with pytest.raises(InputError) as caught:
        validate_section_name(section)
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError):
        generate(*planned(chain_model()), name="net", arena_section=section)


# ---------------------------------------------------------------- determinism and self-containment


def test_same_model_and_flags_give_the_same_bytes():
    model = chain_model()
    first = generate(*planned(model), name="net", arena_section=".ram2")
    second = generate(*planned(bytes(model)), name="net", arena_section=".ram2")
    assert first == second
    assert list(first) == sorted(first)


def test_directory_holds_every_runtime_file_its_includes_name(tmp_path):
    out, _, _ = write_generated(tmp_path, chain_model())
    names = {p.name for p in out.iterdir()}
    for path in out.iterdir():
        for included in re.findall(r'#\s*include\s+"([^"]+)"', path.read_text()):
            assert included in names, f"{path.name} includes {included}, which is not in the directory"
    # Every kernel the model calls is defined in the directory: it links.
    app = tmp_path / "app.c"
    app.write_text('#include "net.h"\nint main(void) { return net_invoke(); }\n')
    subprocess.run(
        [
            "cc",
            *WARNINGS,
            "-I",
            str(out),
            *map(str, sorted(out.glob("*.c"))),
            str(app),
            "-lm",
            "-o",
            str(tmp_path / "a"),
        ],
        check=True,
    )


@needs_arm_gcc
@pytest.mark.parametrize("check_build", [False, True], ids=["normal", "check"])
def test_generated_sources_compile_cleanly_for_cortex_m(tmp_path, check_build):
    out, _, _ = write_generated(tmp_path, concat_model(), arena_section=".sram")
    flags = ["-mcpu=cortex-m4", "-mthumb", "-O2", *WARNINGS] + (["-DMCU_PLAN_CHECK"] if check_build else [])
    for source in sorted(out.glob("*.c")):
        subprocess.run(
            [
                "arm-none-eabi-gcc",
                *flags,
                "-I",
                str(out),
                "-c",
                str(source),
                "-o",
                str(tmp_path / (source.stem + ".o")),
            ],
            check=True,
        )


# ---------------------------------------------------------------- the header contract

APP = r"""
#include <stdio.h>
#include <string.h>
#include "net.h"

uint8_t net_arena[NET_ARENA_SIZE] __attribute__((aligned(16)));

static int inside_arena(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    return b >= net_arena && b + n <= net_arena + NET_ARENA_SIZE;
}

int main(void)
{
    static const int in_shape[] = NET_INPUT0_SHAPE;
    static const int out_shape[] = NET_OUTPUT0_SHAPE;
    size_t elements = 1;
    int i;
    if (NET_NUM_INPUTS != 1 || NET_NUM_OUTPUTS != 1) return 10;
    for (i = 0; i < NET_INPUT0_RANK; ++i) elements *= (size_t)in_shape[i];
    if (elements != NET_INPUT0_ELEMENTS) return 11;
    if (net_input_bytes(0) != NET_INPUT0_BYTES || NET_INPUT0_BYTES != elements * sizeof(NET_INPUT0_TYPE)) return 12;
    elements = 1;
    for (i = 0; i < NET_OUTPUT0_RANK; ++i) elements *= (size_t)out_shape[i];
    if (net_output_bytes(0) != elements * sizeof(NET_OUTPUT0_TYPE)) return 13;
    if (!inside_arena(net_input(0), net_input_bytes(0)) || !inside_arena(net_output(0), net_output_bytes(0))) return 14;
    if (net_input(1) != NULL || net_output(-1) != NULL || net_input_bytes(5) != 0u) return 15;
    if (strcmp(NET_INPUT0_DTYPE, "int8") != 0 || !(NET_INPUT0_SCALE > 0.0f)) return 16;
    printf("%d %.9g\n", NET_INPUT0_ZERO_POINT, (double)NET_INPUT0_SCALE);
    if (fread(net_input(0), 1, net_input_bytes(0), stdin) != net_input_bytes(0)) return 17;
    if (net_invoke() != 0) return 18;
    fwrite(net_output(0), 1, net_output_bytes(0), stdout);
    return 0;
}
"""


def test_application_builds_against_the_header_with_its_own_arena(tmp_path):
    model = chain_model()
    out, graph, _ = write_generated(tmp_path, model, extern_arena=True)
    assert "extern uint8_t net_arena[NET_ARENA_SIZE];" in (out / "net.h").read_text()
    app = tmp_path / "app.c"
    app.write_text(APP)
    program = tmp_path / "app"
    subprocess.run(
        ["cc", *WARNINGS, "-I", str(out), *map(str, sorted(out.glob("*.c"))), str(app), "-lm", "-o", str(program)],
        check=True,
    )
    samples, expected = seeded_inputs(graph, model, count=1)
    done = subprocess.run([str(program)], input=samples[0][0], capture_output=True, check=True)
    first_line, outputs = done.stdout.split(b"\n", 1)
    zero_point, scale = first_line.split()
    q = graph.tensors[graph.inputs[0]].quantization
    assert int(zero_point) == q.zero_points[0] and np.float32(float(scale)) == np.float32(q.scales[0])
    assert outputs == expected[0][0]


def test_arena_goes_into_the_named_section(tmp_path):
    out, _, _ = write_generated(tmp_path, chain_model(), arena_section=".mcu_arena")
    obj = tmp_path / "net.o"
    subprocess.run(["cc", *WARNINGS, "-I", str(out), "-c", str(out / "net.c"), "-o", str(obj)], check=True)
    symbols = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True, check=True).stdout
    line = next(line for line in symbols.splitlines() if line.endswith(" net_arena"))
    assert ".mcu_arena" in line.split()


# ---------------------------------------------------------------- the plan, honoured and checked


def test_aliased_reshape_and_concatenation_run_no_code_and_stay_exact(tmp_path):
    for index, model in enumerate((chain_model(), concat_model())):
        out, graph, lifetimes = write_generated(tmp_path / str(index), model)
        elided = {graph.operators[i].opcode for i in lifetimes.elided_ops}
        assert elided == ({"RESHAPE"} if index == 0 else {"CONCATENATION"})
        source = (out / "net.c").read_text()
        assert source.count("(aliased: no code)") == len(lifetimes.elided_ops)
        samples, expected = seeded_inputs(graph, model)
        for check_build in (False, True):
            run = run_host(
                out, "net", graph, samples, check_build=check_build, workdir=tmp_path / f"b{index}{check_build}"
            )
            assert run.outputs == expected


def test_in_place_plan_passes_the_check_build(tmp_path):
    model = in_place_model()
    graph = read_model(model)
    lifetimes = compute_lifetimes(graph, alignment=16, alias=True)
    logistic = next(op for op in graph.operators if op.opcode == "LOGISTIC")
    ((out_id, in_id),) = lifetimes.problem.steps[logistic.index].in_place
    # Give every buffer its own bytes, except the logistic's output, which
    # takes its input's: the plan the in-place pair allows.
    offsets, at = {}, 0
    for buffer in lifetimes.problem.buffers:
        if buffer.id != out_id:
            offsets[buffer.id], at = at, at + buffer.size
    offsets[out_id] = offsets[in_id]
    assert verify(lifetimes.problem, offsets) == []
    plan = ArenaPlan("by hand", offsets, at, False, 0.0)
    out = write_output(generate(graph, lifetimes, plan, name="net"), tmp_path / "gen")
    samples, expected = seeded_inputs(graph, model, count=3)
    run = run_host(out, "net", graph, samples, check_build=True, workdir=tmp_path / "check")
    assert run.outputs == expected


def test_check_build_catches_a_corrupted_offset(tmp_path):
    model = chain_model()
    out, graph, lifetimes = write_generated(tmp_path, model)
    source = (out / "net.c").read_text()
    table = dict(
        (int(k), (int(offset), int(tensor)))
        for offset, k, tensor in re.findall(r"^    (\d+)u, /\* buffer (\d+): tensor (\d+),", source, re.M)
    )
    by_id = lifetimes.problem.by_id()
    slot_of = {tensor: k for k, (_, tensor) in table.items()}
    arena = int(re.search(r"#define NET_ARENA_SIZE (\d+)u", (out / "net.h").read_text()).group(1))
    # A buffer that starts while another one lives, moved onto that one.
    victim, target = next(
        (b, a)
        for b in lifetimes.problem.buffers
        for a in lifetimes.problem.buffers
        if a.start < b.start < a.end and table[slot_of[a.id]][0] + b.size <= arena
    )
    samples, expected = seeded_inputs(graph, model, count=1)
    assert run_host(out, "net", graph, samples, check_build=True, workdir=tmp_path / "good").outputs == expected

    k = slot_of[victim.id]
    corrupted = source.replace(
        f"    {table[k][0]}u, /* buffer {k}: tensor {victim.id},",
        f"    {table[slot_of[target.id]][0]}u, /* buffer {k}: tensor {victim.id},",
    )
    assert corrupted != source
    (out / "net.c").write_text(corrupted)
    from mcu_planner.errors import CheckMismatch

    with pytest.raises(CheckMismatch) as caught:
        run_host(out, "net", graph, samples, check_build=True, workdir=tmp_path / "bad")
    found = re.search(r"op (\d+) \((\w+)\) writes tensor (\d+):.* over live tensor (\d+):", str(caught.value))
    assert found, str(caught.value)
    op, opcode, tensor, other = int(found[1]), found[2], int(found[3]), int(found[4])
    assert (op, opcode, tensor) == (victim.start, graph.operators[victim.start].opcode, victim.id)
    other_buffer = by_id[other]
    assert other_buffer.start <= op < other_buffer.end  # it really was alive then


# ---------------------------------------------------------------- refusals


def unsupported_model() -> bytes:
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "float32", name="x")
    y = mb.add_tensor((1, 4), "float32", name="y")
    z = mb.add_tensor((1, 4), "float32", name="z")
    keys = mb.add_tensor((4,), "int32", data=np.arange(4, dtype=np.int32), name="keys")
    w = mb.add_tensor((1, 4), "float32", name="w")
    out = mb.add_tensor((1, 4), "float32", name="out")
    mb.add_op("CUSTOM", (x,), (y,), custom_code="TestOnlyOp")
    mb.add_op("HASHTABLE_LOOKUP", (keys, y), (z,))
    mb.add_op("CUSTOM", (z,), (w,), custom_code="TestOnlyOp")
    mb.add_op("RELU", (w,), (out,))
    mb.set_io([x], [out])
    return mb.build()


def expected_unsupported(graph) -> dict[str, int]:
    lowerings = load_all()
    names = Counter(
        f"CUSTOM({op.custom_code})" if op.opcode == "CUSTOM" else op.opcode
        for op in graph.operators
        if op.opcode not in lowerings
    )
    return dict(names)


UNSUPPORTED_LINE = re.compile(r"^  (\S+) (\S+): (\d+) ops?(?: \((.*)\))?$")


def unsupported_lines(message: str) -> dict[tuple[str, str], int]:
    """The (operator, dtype) -> op count lines of an unsupported-model
    message, after checking its shape: a head line ending in ':', at most
    MAX_UNSUPPORTED_LINES entry lines (each short) and an "and N more" line."""
    from mcu_planner.errors import MAX_UNSUPPORTED_LINES

    head, *lines = message.splitlines()
    assert head.endswith(":"), message
    if lines and re.fullmatch(r"  and \d+ more", lines[-1]):
        lines = lines[:-1]
    assert len(lines) <= MAX_UNSUPPORTED_LINES, message
    assert all(len(line) <= 200 for line in [head, *lines]), message
    found = {}
    for line in lines:
        if line.startswith("  tensor type "):
            continue
        match = UNSUPPORTED_LINE.match(line)
        assert match, line
        assert (match[1], match[2]) not in found, f"{match[1]} {match[2]} listed twice: {message}"
        found[match[1], match[2]] = int(match[3])
    return found


def assert_names_every_unsupported_operator(message: str, graph) -> None:
    expected = expected_unsupported(graph)
    assert expected, "the model was meant to hold operators without a lowering"
    by_name: Counter[str] = Counter()
    for (name, _), count in unsupported_lines(message).items():
        by_name[name] += count
    for name, count in expected.items():
        assert by_name[name] == count, message


def test_unsupported_operators_are_named_with_their_counts():
    model = unsupported_model()
    graph, lifetimes, plan = planned(model)
    with pytest.raises(UnsupportedModel) as caught:
        generate(graph, lifetimes, plan, name="net")
    assert_names_every_unsupported_operator(str(caught.value), graph)
    assert unsupported_lines(str(caught.value)) == {
        ("CUSTOM(TestOnlyOp)", "float32"): 2,
        ("HASHTABLE_LOOKUP", "float32"): 1,
    }


@needs_shared
@pytest.mark.parametrize("path", UNSUPPORTED_PEER_MODELS, ids=lambda p: p.stem)
def test_shared_models_with_unsupported_operators_are_refused(path):
    graph, lifetimes, plan = planned(path)
    with pytest.raises(UnsupportedModel) as caught:
        generate(graph, lifetimes, plan, name="model")
    assert_names_every_unsupported_operator(str(caught.value), graph)


def test_nothing_is_written_when_generation_fails(tmp_path):
    model_path = tmp_path / "bad.tflite"
    model_path.write_bytes(unsupported_model())
    outdir = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", str(model_path), "-o", str(outdir)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    assert unsupported_lines(done.stderr.strip())[("CUSTOM(TestOnlyOp)", "float32")] == 2
    assert not outdir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tflite"]


def test_write_output_replaces_its_own_directory_whole_or_not_at_all(tmp_path):
    outdir = tmp_path / "out"
    write_output({"old.c": b"old", "old.h": b"h"}, outdir)
    with pytest.raises(ValueError):
        write_output({"a.c": b"new", "../escape.c": b"x"}, outdir)
    assert sorted(p.name for p in outdir.iterdir()) == sorted([MANIFEST_NAME, "old.c", "old.h"])
    write_output({"a.c": b"new", "a.h": b"h"}, outdir)
    assert sorted(p.name for p in outdir.iterdir()) == sorted([MANIFEST_NAME, "a.c", "a.h"])
    assert (outdir / "a.c").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging left behind


def test_only_a_firmware_outdir_claims_what_make_builds(tmp_path):
    """A plain OUTDIR owns its sources only: a firmware.elf found there is
    someone else's.  A firmware OUTDIR owns what its Makefile makes."""
    files = generate(*planned(chain_model()), name="net")
    plain = write_output(files, tmp_path / "plain")
    (plain / "firmware.elf").write_bytes(b"elf")
    with pytest.raises(InputError, match="firmware.elf"):
        write_output(files, plain)

    firmware = write_output(files, tmp_path / "firmware")
    build_firmware(firmware, model=files.interface, ram_bytes=1 << 20, run_make=False)
    (firmware / "build").mkdir()
    (firmware / "firmware.elf").write_bytes(b"elf")
    (firmware / "firmware.map").write_bytes(b"map")
    write_output(files, firmware)
    assert sorted(p.name for p in firmware.iterdir()) == sorted([MANIFEST_NAME, *files])


def test_a_directory_holding_files_mcu_plan_did_not_write_is_left_alone(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    with pytest.raises(InputError, match=r"contains files mcu-plan did not write \(e.g. main.c\)"):
        write_output({"a.c": b"new"}, project)
    assert [p.name for p in project.iterdir()] == ["main.c"]
    # A user's file added to an OUTDIR mcu-plan wrote protects it as well.
    outdir = tmp_path / "out"
    write_output({"a.c": b"a"}, outdir)
    (outdir / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="notes.txt"):
        write_output({"a.c": b"b"}, outdir)
    assert (outdir / "a.c").read_bytes() == b"a" and (outdir / "notes.txt").read_text() == "mine"
    # The finished staging directory of the --board path: same rule.
    staging = tmp_path / "staging"
    write_output({"a.c": b"c"}, staging)
    with pytest.raises(InputError, match="notes.txt"):
        replace_output_dir(staging, outdir)
    assert (outdir / "a.c").read_bytes() == b"a" and (staging / "a.c").read_bytes() == b"c"
    (outdir / "notes.txt").unlink()
    replace_output_dir(staging, outdir)
    assert (outdir / "a.c").read_bytes() == b"c" and not staging.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "project"]
    # An empty directory is free to use; a file in OUTDIR's place is not.
    empty = tmp_path / "empty"
    empty.mkdir()
    write_output({"a.c": b"a"}, empty)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        write_output({"a.c": b"a"}, tmp_path / "file")


def test_output_directory_records_the_model_interface(tmp_path):
    files = generate(*planned(in_place_model()), name="net", arena_section=".ram2")
    out = write_output(files, tmp_path / "gen")
    interface = read_interface(out)
    assert interface == files.interface
    header = (out / "net.h").read_text()
    assert f"#define NET_ARENA_SIZE {interface.arena_bytes}u" in header
    assert f"#define NET_NUM_INPUTS {interface.num_inputs}" in header
    assert (interface.name, interface.arena_section, interface.extern_arena) == ("net", ".ram2", False)


@pytest.mark.parametrize(
    "change",
    [
        {"colour": "red"},  # a key this version does not know
        {"name": None},  # missing key below
        {"arena_bytes": "big"},
        {"name": "not an identifier"},
    ],
    ids=["unknown-key", "missing-key", "wrong-type", "bad-name"],
)
def test_a_manifest_not_describing_a_model_counts_as_absent(tmp_path, change):
    import json

    files = generate(*planned(chain_model()), name="net")
    out = write_output(files, tmp_path / "gen")
    record = json.loads((out / MANIFEST_NAME).read_text())
    record["model"].update(change)
    if record["model"]["name"] is None:
        del record["model"]["name"]
    (out / MANIFEST_NAME).write_text(json.dumps(record))
    assert read_interface(out) is None


def test_check_build_poisons_a_buffer_released_too_early(tmp_path):
    model = chain_model()
    out, graph, lifetimes = write_generated(tmp_path, model)
    source = (out / "net.c").read_text()
    # The buffer the fully connected layer reads: count one read too few, so
    # it is released before that read.
    fc = next(op for op in graph.operators if op.opcode == "FULLY_CONNECTED")
    buffer = lifetimes.placements[fc.inputs[0]].buffer
    slot = sorted(b.id for b in lifetimes.problem.buffers).index(buffer)
    counts = re.search(r"_consumers\[NET_NUM_BUFFERS\] = \{\n(.*?)\};", source, re.S)
    lines = counts.group(1).splitlines()
    assert int(lines[slot].strip().rstrip("u,")) >= 2
    lines[slot] = f"    {int(lines[slot].strip().rstrip('u,')) - 1}u,"
    (out / "net.c").write_text(source.replace(counts.group(1), "\n".join(lines) + "\n"))

    samples, expected = seeded_inputs(graph, model)
    normal = run_host(out, "net", graph, samples, check_build=False, workdir=tmp_path / "normal")
    assert normal.outputs == expected  # a release costs nothing in a normal build
    checked = run_host(out, "net", graph, samples, check_build=True, workdir=tmp_path / "check")
    assert checked.outputs != expected  # the check build read poison


# ---------------------------------------------------------------- degenerate graphs


def no_op_model() -> bytes:
    """An input that is also the output: no operators at all."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", (0.1, 0), name="x")
    mb.set_io([x], [x])
    return mb.build()


def reshape_only_model() -> bytes:
    """One RESHAPE, aliased away: operators, but none claims a buffer."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 4), "int8", (0.1, 0), name="x")
    shape = mb.add_tensor((1,), "int32", data=np.array([4], np.int32), name="shape")
    y = mb.add_tensor((4,), "int8", (0.1, 0), name="y")
    mb.add_op("RESHAPE", (x, shape), (y,))
    mb.set_io([x], [y])
    return mb.build()


def zero_byte_model() -> bytes:
    """RELU on tensors with no elements: the inputs hold zero bytes."""
    mb = ModelBuilder()
    x = mb.add_tensor((1, 0), "int8", (0.1, 0), name="x")
    y = mb.add_tensor((1, 0), "int8", (0.1, 0), name="y")
    mb.add_op("RELU", (x,), (y,))
    mb.set_io([x], [y])
    return mb.build()


@pytest.mark.parametrize("model", [no_op_model, reshape_only_model, zero_byte_model])
def test_degenerate_graphs_build_cleanly_and_match_the_reference(tmp_path, model):
    data = model()
    out, graph, _ = write_generated(tmp_path, data)
    samples, expected = seeded_inputs(graph, data)
    # HostTarget builds with -Wall -Wextra -Werror -pedantic, normally and with the plan check.
    for check_build in (False, True):
        run = run_host(out, "net", graph, samples, check_build=check_build, workdir=tmp_path / str(check_build))
        assert run.outputs == expected


def test_a_plan_without_buffers_builds_cleanly_and_runs(tmp_path):
    """Zero planned buffers (built as a Graph: the reader refuses a model
    without outputs): the per-buffer tables must still be valid C."""
    graph = Graph(tensors=(), operators=(), inputs=(), outputs=())
    lifetimes = compute_lifetimes(graph)
    assert not lifetimes.problem.buffers
    plan = run_planner(lifetimes.problem, "greedy")
    out = write_output(generate(graph, lifetimes, plan, name="net"), tmp_path / "gen")
    for check_build in (False, True):
        run = run_host(out, "net", graph, [[]], check_build=check_build, workdir=tmp_path / str(check_build))
        assert run.outputs == [[]]


# ---------------------------------------------------------------- several models in one program

TWO_MODELS_APP = r"""
#include <stdio.h>
#include "first.h"
#include "second.h"

int main(void)
{
    if (fread(first_input(0), 1, first_input_bytes(0), stdin) != first_input_bytes(0)) return 10;
    if (fread(second_input(0), 1, second_input_bytes(0), stdin) != second_input_bytes(0)) return 11;
    if (first_invoke() != 0 || second_invoke() != 0) return 12;
    fwrite(first_output(0), 1, first_output_bytes(0), stdout);
    fwrite(second_output(0), 1, second_output_bytes(0), stdout);
    return 0;
}
"""


def test_two_generated_models_link_into_one_program_with_one_runtime_copy(tmp_path):
    """The runtime files are the same in every OUTDIR: a program with two
    models compiles each model's own C and each runtime file once."""
    models = {"first": chain_model(), "second": in_place_model()}
    dirs, graphs = {}, {}
    for name, data in models.items():
        dirs[name], graphs[name], _ = write_generated(tmp_path / name, data, name=name)
    runtime: dict[str, Path] = {}
    for name, out in dirs.items():
        for source in sorted(out.glob("*.c")):
            if source.stem == name:
                continue
            if source.name in runtime:
                assert source.read_bytes() == runtime[source.name].read_bytes()
            else:
                runtime[source.name] = source
    assert runtime, "the models were meant to share runtime files"
    app = tmp_path / "app.c"
    app.write_text(TWO_MODELS_APP)
    program = tmp_path / "app"
    sources = [str(dirs[n] / f"{n}.c") for n in dirs] + [str(p) for p in runtime.values()] + [str(app)]
    includes = [arg for out in dirs.values() for arg in ("-I", str(out))]
    subprocess.run(["cc", *WARNINGS, *includes, *sources, "-lm", "-o", str(program)], check=True)
    stdin, want = b"", b""
    for name, data in models.items():
        samples, expected = seeded_inputs(graphs[name], data, count=1)
        stdin += samples[0][0]
        want += expected[0][0]
    done = subprocess.run([str(program)], input=stdin, capture_output=True, check=True)
    assert done.stdout == want
