"""Hostile input, second campaign (issue 20): no code runs from a board file,
no file is lost, nothing from a model reaches the terminal raw, and bad input
is exit 2, never exit 1.  One test per class; the class number is in each name."""

from __future__ import annotations

import json
import re

import pytest

from mcu_planner.cli import main
from mcu_planner.codegen import generate
from mcu_planner.errors import InputError
from mcu_planner.firmware_build import build_firmware
from mcu_planner.html_report import render_report
from mcu_planner.lifetimes import compute_lifetimes
from mcu_planner.output_dir import write_output
from mcu_planner.planning import run_planner
from mcu_planner.reader import read_model
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
    from mcu_planner import report

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
    from mcu_planner.output_dir import OutputLock

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
