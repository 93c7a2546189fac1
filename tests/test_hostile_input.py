"""Hostile input, second campaign (issue 20): no code runs from a board file,
no file is lost, nothing from a model reaches the terminal raw, and bad input
is exit 2, never exit 1.  One test per class; the class number is in each name."""

from __future__ import annotations

import json
import re

import pytest
from conftest import needs_cortex_m

from mcu_planner.cli import main
from mcu_planner.emit.codegen import generate
from mcu_planner.emit.html_report import render_report
from mcu_planner.emit.output_dir import write_output
from mcu_planner.errors import InputError
from mcu_planner.frontend.reader import read_model
from mcu_planner.memory.lifetimes import compute_lifetimes
from mcu_planner.memory.planning import run_planner
from mcu_planner.targets.firmware_build import build_firmware
from mcu_planner_testing.builder import ModelBuilder

# A name that, printed raw, colours the terminal, returns the carriage, holds
# a NUL and forges a success line.
FORGING_NAME = "a\x1b[31mred\r\x00\u202e\nmcu-plan: wrote forged/ (9 files)"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def relu_model(input_name="x", output_name="y", custom_code=None, duplicate_input=False) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor((1, 4, 4, 2), "int8", (0.5, 0), name=input_name)
    y = b.add_tensor((1, 4, 4, 2), "int8", (0.5, 0), name=output_name)
    if custom_code is not None:
        b.add_op("CUSTOM", [x], [y], custom_code=custom_code)
    else:
        b.add_op("RELU", [x], [y])
    b.set_io([x, x] if duplicate_input else [x], [y])
    return b.build()


def run(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- class 2


@pytest.mark.parametrize("where", ["tensor", "custom"])
def test_class2_model_strings_reach_the_terminal_escaped_and_cut(tmp_path, capsys, where):
    """Tensor names in the summary and --map, custom op codes in the exit-4
    list: escaped (no control byte, no forged line) and cut."""
    if where == "tensor":
        model = relu_model(FORGING_NAME, "y" * 600)
        args = ["--map", "--ram", "1K"]
    else:
        model = relu_model(custom_code=FORGING_NAME + "z" * 600)
        args = ["-o", tmp_path / "out"]
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    code, out, err = run(capsys, path, *args)
    assert code == (0 if where == "tensor" else 4), err
    for text in (out, err):
        assert not CONTROL.search(text), repr(text)
        assert not any(line.startswith("mcu-plan: wrote") for line in text.splitlines())
        assert all(len(line) < 200 for line in text.splitlines())
    assert "\\x1b[31mred\\r\\x00\\u202e\\nmcu-plan: wrote forged" in out + err


# ---------------------------------------------------------------- class 3


@pytest.mark.parametrize("name", ["<!--<script>", "</script><script>alert(1)//", "a\u2028b\u2029c&amp;<b>"])
def test_class3_the_html_report_embeds_any_tensor_name_as_data(name):
    graph = read_model(relu_model(name, name + "2"))
    lifetimes = compute_lifetimes(graph, alignment=16)
    plan = run_planner(lifetimes.problem, "greedy")
    from mcu_planner.emit import report

    record = report.plan_json("m.tflite", graph, lifetimes, plan, True, None)
    page = render_report(record, "m.tflite", "weights 0 B", {}).decode()
    head = '<script type="application/json" id="plan-data">'
    start = page.index(head) + len(head)
    embedded = page[start : page.index("</script>", start)]
    assert not set(embedded) & set("<>&\u2028\u2029"), embedded
    assert json.loads(embedded) == json.loads(json.dumps(record, sort_keys=True))
    # The page's own scripts are all still there after the data.
    assert page.count("<script") == page.count("</script>")


# ---------------------------------------------------------------- class 4


@pytest.mark.parametrize("how", ["same path", "dot path", "hard link", "symlinked directory"])
@pytest.mark.parametrize("flag", ["--json", "--report", "--tflm-plan"])
def test_class4_an_output_never_replaces_the_model(tmp_path, capsys, flag, how):
    model = tmp_path / "m.tflite"
    data = relu_model()
    model.write_bytes(data)
    if how == "same path":
        target = model
    elif how == "dot path":
        target = tmp_path / "." / "m.tflite"
    elif how == "hard link":
        target = tmp_path / "link.tflite"
        target.hardlink_to(model)
    else:
        (tmp_path / "alias").symlink_to(tmp_path)
        target = tmp_path / "alias" / "m.tflite"
    code, out, err = run(capsys, model, "--ram", "1K", flag, target)
    assert code == 2 and "replace the input" in one_error_line(err)
    assert model.read_bytes() == data and not out


def test_class4_two_outputs_with_one_path_are_refused_before_writing(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    (tmp_path / "sub").mkdir()
    for first, second in (("plan.out", "plan.out"), ("plan.out", "sub/../plan.out")):
        code, _, err = run(capsys, model, "--ram", "1K", "--json", tmp_path / first, "--report", tmp_path / second)
        assert code == 2 and "name one file" in one_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite", "sub"]


# ---------------------------------------------------------------- class 5


@pytest.mark.parametrize("user_file", ["board/notes.txt", "build/keep.c", "build-profile/x/y.txt", "build/board/z.o"])
def test_class5_regeneration_keeps_user_files_in_owned_subfolders(tmp_path, user_file):
    graph = read_model(relu_model())
    lifetimes = compute_lifetimes(graph, alignment=16)
    files = generate(graph, lifetimes, run_planner(lifetimes.problem, "greedy"), name="net")
    outdir = write_output(files, tmp_path / "out")
    build_firmware(outdir, model=files.interface, ram_bytes=1 << 20, run_make=False)
    # What make itself writes there is mcu-plan's own ...
    for built in ("build/net.o", "build/net.d", "build/board/startup.o", "build-profile/board/semihost.d"):
        (outdir / built).parent.mkdir(parents=True, exist_ok=True)
        (outdir / built).write_bytes(b"object")
    # ... a file the user put beside it is not.
    (outdir / user_file).parent.mkdir(parents=True, exist_ok=True)
    (outdir / user_file).write_text("mine")
    with pytest.raises(InputError, match=re.escape(user_file)):
        write_output(files, outdir)
    assert (outdir / user_file).read_text() == "mine"
    (outdir / user_file).unlink()
    write_output(files, outdir)  # without it: replaced
    assert not (outdir / "board").exists()


# ---------------------------------------------------------------- class 1

GOOD_BOARD = {
    "core": "cortex-m4",
    "code": {"name": "FLASH", "origin": 0, "length": "0x100000"},
    "ram": [{"name": "SRAM", "origin": "0x20000000", "length": 262144}],
}


@pytest.mark.parametrize(
    "field, value",
    [
        ("description", "$(shell touch PWNED)"),
        ("description", "ok\n$(shell touch PWNED)"),
        ("description", "ends in a backslash \\"),
        ("description", "closes */ a comment"),
        ("qemu_machine", "mps2-an386 $(shell touch PWNED)"),
        ("qemu_machine", "`touch PWNED`"),
        ("cpu_flags", ["-mcpu=cortex-m4", "-mthumb;touch PWNED"]),
        ("cpu_flags", ["-mcpu=cortex-m4", "$(shell touch PWNED)"]),
        ("cpu_flags", ["-mcpu=cortex-m4 -DX=1"]),
    ],
)
def test_class1_board_strings_are_data_never_make_or_shell_code(tmp_path, capsys, field, value):
    board = dict(GOOD_BOARD, **{field: value})
    if field == "cpu_flags":
        del board["core"]
    path = tmp_path / "b" / "board.json"
    path.parent.mkdir()
    path.write_text(json.dumps(board))
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    code, _, err = run(capsys, model, "--ram", "64K", "-o", tmp_path / "out", "--board", path)
    assert code == 2 and f"{field}:" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("PWNED"))


def test_class1_a_board_directory_name_reaches_the_makefile_as_a_plain_word(tmp_path):
    path = tmp_path / "$(shell touch PWNED)" / "board.json"
    path.parent.mkdir()
    path.write_text(json.dumps(GOOD_BOARD))
    graph = read_model(relu_model())
    lifetimes = compute_lifetimes(graph, alignment=16)
    files = generate(graph, lifetimes, run_planner(lifetimes.problem, "greedy"), name="net")
    outdir = write_output(files, tmp_path / "out")
    build_firmware(outdir, model=files.interface, board=str(path), ram_bytes=64 * 1024, run_make=False)
    for generated in (outdir / "Makefile", outdir / "board" / "linker.ld"):
        text = generated.read_text()
        assert "$(shell" not in text and "_shell_touch_PWNED_" in text


# ---------------------------------------------------------------- class 6


def test_class6_a_second_run_on_one_outdir_is_refused_while_the_first_writes(tmp_path, capsys):
    from mcu_planner.emit.output_dir import OutputLock

    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    outdir = tmp_path / "new" / "out"
    with OutputLock(outdir):  # a first run, still writing
        code, _, err = run(capsys, model, "-o", outdir)
        assert code == 2 and "another mcu-plan run is writing OUTDIR" in one_error_line(err)
        assert not outdir.exists()
    code, out, err = run(capsys, model, "-o", outdir)
    assert code == 0 and (outdir / "m.h").is_file(), err
    assert sorted(p.name for p in outdir.parent.iterdir()) == ["out"]  # the lock is gone with the run
    # A failed run leaves neither its lock nor the directories it made.
    code, _, _ = run(capsys, model, "--ram", "8", "-o", tmp_path / "other" / "out")
    assert code == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite", "new"]


# ---------------------------------------------------------------- class 8


def test_class8_bad_values_are_exit_2_with_one_line(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    huge = tmp_path / "huge.csv"
    huge.write_text(f"id,lower,upper,size\n0,0,2,{2**48 + 1}\n1,1,3,8\n")
    far = tmp_path / "far.csv"
    far.write_text(f"id,lower,upper,size\n0,0,{2**60},8\n")
    no_qemu = tmp_path / "plain" / "board.json"
    no_qemu.parent.mkdir()
    no_qemu.write_text(json.dumps(GOOD_BOARD))
    cases = [
        ((model, "-o", tmp_path / "out", "--name", "n" * 300), "at most 64"),
        (("--intervals", huge), "2**48"),
        (("--intervals", far), "2**48"),
        ((model, "--time-limit", "-5"), "--time-limit"),
        ((model, "--time-limit", "nan"), "--time-limit"),
        ((model, "--time-limit", "inf"), "--time-limit"),
        (("check", model, "--target", no_qemu), "names no qemu_machine"),
    ]
    for args, words in cases:
        code, out, err = run(capsys, *args)
        assert code == 2 and words in one_error_line(err), (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["far.csv", "huge.csv", "m.tflite", "plain"]


def test_class8_check_takes_a_legal_long_file_name(tmp_path, capsys):
    """A 240-character stem (a legal file name) is cut to a 64-character prefix."""
    model = tmp_path / ("n" * 240 + ".tflite")
    model.write_bytes(relu_model())
    code, out, err = run(capsys, "check", model, "--inputs", "1")
    assert code == 0 and "bit-exact 1/1" in out, err


# ---------------------------------------------------------------- class 9


def test_class9_limits_the_c_cannot_hold_are_refused_before_compiling(tmp_path, capsys):
    b = ModelBuilder()
    x, y, z = (b.add_tensor((1, 1 << 30), "int8", (0.5, 0), name=n) for n in "xyz")
    b.add_op("RELU", [x], [y])
    b.add_op("RELU", [y], [z])
    b.set_io([x], [z])
    huge = tmp_path / "huge.tflite"
    huge.write_bytes(b.build())  # 2 GiB of arena: no 32-bit array holds it
    small = tmp_path / "m.tflite"
    small.write_bytes(relu_model())
    for args, words in (
        ((huge, "--alias", "off", "-o", tmp_path / "out"), "2,147,483,647 B"),
        ((small, "--align", str(2**29), "-o", tmp_path / "out"), "power of two from 1 to 65536"),
        ((small, "--align", "3", "-o", tmp_path / "out"), "power of two"),
    ):
        code, _, err = run(capsys, *args)
        assert code == 2 and words in one_error_line(err), err
        assert not (tmp_path / "out").exists()


def test_class9_a_failed_compile_is_never_success(tmp_path, capsys, monkeypatch):
    from mcu_planner.targets import flash

    def failing_link(*args, **kwargs):
        raise flash.CompileFailed("m.c:1:1: error: size of array 'm_arena' is too large")

    monkeypatch.setattr(flash, "_link", failing_link)
    monkeypatch.setattr(flash.shutil, "which", lambda name: "/usr/bin/" + name)
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    code, out, err = run(capsys, model, "-o", tmp_path / "out")
    assert code != 0 and "does not compile" in one_error_line(err) and "too large" in err
    assert not (tmp_path / "out").exists() and "wrote" not in out


# ---------------------------------------------------------------- class 10


def test_class10_prefixes_stay_out_of_the_runtime_namespace(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model())
    for name in ("mcu_depthwise_conv_2d_s8", "MCU_plan"):
        code, _, err = run(capsys, model, "-o", tmp_path / "out", "--name", name)
        assert code == 2 and "reserved" in one_error_line(err)
    # A model file named like a runtime symbol gets a prefix of its own.
    runtime_named = tmp_path / "mcu_depthwise_conv_2d_s8.tflite"
    runtime_named.write_bytes(relu_model())
    code, out, err = run(capsys, runtime_named, "-o", tmp_path / "out")
    assert code == 0 and "prefix m_mcu_depthwise_conv_2d_s8_" in out, err
    assert (tmp_path / "out" / "m_mcu_depthwise_conv_2d_s8.h").is_file()
    # A name that is not a C identifier becomes one, with a note saying so.
    code, out, err = run(capsys, model, "-o", tmp_path / "out2", "--name", "My-Net")
    assert code == 0 and "note: --name 'My-Net' becomes the C prefix 'my_net'" in out, err


def test_class10_long_tensor_names_keep_the_strict_check_build_clean(tmp_path):
    import shutil
    import subprocess

    from mcu_planner.targets.c_flags import FLOAT_FLAGS, STRICT_WARNING_FLAGS

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no host C compiler")
    graph = read_model(relu_model("x" * 5000, "\u00e9" * 4100))
    lifetimes = compute_lifetimes(graph, alignment=16)
    files = generate(graph, lifetimes, run_planner(lifetimes.problem, "greedy"), name="net")
    outdir = write_output(files, tmp_path / "out")
    done = subprocess.run(
        [compiler, *STRICT_WARNING_FLAGS, *FLOAT_FLAGS, "-DMCU_PLAN_CHECK", "-c", "net.c", "-o", str(tmp_path / "n.o")],
        cwd=outdir,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in (outdir / "net.c").read_text().splitlines()) < 1000


# ---------------------------------------------------------------- class 12


def test_class12_a_tensor_listed_twice_as_graph_input_is_refused(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(relu_model(duplicate_input=True))
    for args in ((model,), (model, "-o", tmp_path / "out"), ("check", model)):
        code, _, err = run(capsys, *args)
        assert code == 2 and "graph-input-once" in one_error_line(err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]


# ---------------------------------------------------------------- class 13


def _pointwise_depthwise_pointwise() -> bytes:
    from mcu_planner_testing.builder import Int8Net

    net = Int8Net(seed=2)
    y = net.conv2d(net.input((1, 8, 8, 4)), 4, (1, 1))
    return net.build(net.conv2d(net.depthwise_conv2d(y), 4, (1, 1)))


def _overlap_rows(source: str) -> list[str]:
    table = re.search(r"net_overlaps\[\d+\] = \{(.*?)\};", source, re.S).group(1)
    return [row.strip() for row in table.strip().splitlines() if not row.strip().startswith("-1")]


def test_class13_the_check_table_allows_only_the_compiled_walks_overlaps():
    graph = read_model(_pointwise_depthwise_pointwise())
    lifetimes = compute_lifetimes(graph, alignment=16)
    slower = [o for step in lifetimes.problem.steps for o in step.overlaps if o.slower]
    assert len(slower) == 3  # every op's overlap needs its raster walk
    # A plan that takes them: raster walks compiled, their bounds listed.
    overlapped = generate(graph, lifetimes, run_planner(lifetimes.problem, "optimal"), name="net")["net.c"].decode()
    assert overlapped.count(".raster_walk = 1,") == 3 and len(_overlap_rows(overlapped)) == 3
    # A plan that does not: fast walks compiled, and no overlap allowed.
    apart = generate(graph, lifetimes, run_planner(lifetimes.problem, "greedy"), name="net")["net.c"].decode()
    assert ".raster_walk = 1," not in apart and _overlap_rows(apart) == []


@pytest.mark.slow  # a host build and run (about 6 s)
def test_class13_a_check_build_catches_an_overlap_the_fast_walk_cannot_take(tmp_path):
    """Lifetimes with the raster walks' overlaps (as planned for a tight
    --ram) but a plan that keeps every buffer apart: the kernels keep their
    fast walks.  Moving the depthwise output 36 bytes before its input (what
    only the raster walk would allow) must stop the check build."""
    import numpy as np

    from mcu_planner.targets.check import CheckMismatch, HostTarget

    graph = read_model(_pointwise_depthwise_pointwise())
    lifetimes = compute_lifetimes(graph, alignment=16)
    plan = run_planner(lifetimes.problem, "greedy")
    # The activations (the convolutions' columns scratch lies elsewhere):
    assert {t: plan.offsets[t] for t in (0, 3, 6, 9)} == {0: 0, 3: 256, 6: 0, 9: 256}
    files = generate(graph, lifetimes, plan, name="net")
    source = files["net.c"].decode()
    table = re.search(r"net_buffer_offset\[NET_NUM_BUFFERS\] = \{\n(.*?)\n\};", source, re.S)
    rows = table.group(1).split("\n")
    moved = {6: 220, 9: 204}  # tensor -> offset: each output starts before its input
    new_rows = []
    for row in rows:
        tensor = int(re.search(r"tensor (\d+)", row).group(1))
        new_rows.append(re.sub(r"^\s*\d+u", f"    {moved[tensor]}u", row) if tensor in moved else row)
    edited = source.replace(table.group(1), "\n".join(new_rows)).replace(
        "static const uint32_t net_buffer_offset[", "static uint32_t net_buffer_offset["
    )
    generated = write_output(dict(files, **{"net.c": edited.encode()}), tmp_path / "gen")
    size = graph.tensors[graph.inputs[0]].nbytes
    with pytest.raises(CheckMismatch, match=r"op 1 \(DEPTHWISE_CONV_2D\) writes tensor 6.* over live tensor 3"):
        HostTarget().run(
            generated,
            "net",
            [[np.arange(size, dtype=np.uint8).tobytes()]],
            input_bytes=[size],
            output_bytes=[graph.tensors[graph.outputs[0]].nbytes],
            check_build=True,
            workdir=tmp_path / "work",
        )


@needs_cortex_m
def test_class8_a_stack_overflow_is_exit_5_naming_the_reserve_that_fits(tmp_path):
    """A firmware built with too small a stack reserve: exit 5 (CheckMismatch),
    naming the overflow and a reserve measured to fit."""
    import numpy as np

    from mcu_planner.targets.check import CheckMismatch
    from mcu_planner.targets.qemu import QemuTarget

    graph = read_model(relu_model())
    lifetimes = compute_lifetimes(graph, alignment=16)
    files = generate(graph, lifetimes, run_planner(lifetimes.problem, "greedy"), name="net")
    generated = write_output(files, tmp_path / "gen")
    size = graph.tensors[graph.inputs[0]].nbytes
    target = QemuTarget("mps2-an386", ram_bytes=64 * 1024, stack_bytes=64)
    with pytest.raises(CheckMismatch, match=r"overflowed its stack reserve of 64 B") as caught:
        target.run(
            generated,
            "net",
            [[bytes(size)]],
            input_bytes=[size],
            output_bytes=[size],
            check_build=False,
            workdir=tmp_path / "work",
        )
    assert caught.value.exit_code == 5
    used, fits = map(int, re.search(r"it uses (\d+) B: a stack reserve of (\d+) B fits", str(caught.value)).groups())
    assert 64 <= used < fits <= used + 64 and fits % 8 == 0
    # The reserve named does fit.
    run = QemuTarget("mps2-an386", ram_bytes=64 * 1024, stack_bytes=fits).run(
        generated,
        "net",
        [[np.arange(size, dtype=np.int8).tobytes()]],
        input_bytes=[size],
        output_bytes=[size],
        check_build=False,
        workdir=tmp_path / "fits",
    )
    assert list(np.frombuffer(run.outputs[0][0], np.int8)) == [max(v, 0) for v in range(size)]
