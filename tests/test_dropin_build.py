"""The build files every OUTDIR carries (CMakeLists.txt, NAME.mk) build an
application as the README shows, and the application computes what the
reference computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, needs_arm_gcc, needs_tools

from mcu_planner.frontend.reader import read_model
from mcu_planner.targets.reference import ReferenceModel

EXAMPLE = REPO / "examples" / "tiny_kws_int8.tflite"
APP = REPO / "examples" / "kws_app.c"


@pytest.fixture(scope="module")
def outdir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dropin") / "kws"
    done = subprocess.run(
        [sys.executable, "-m", "mcu_planner.cli", str(EXAMPLE), "--ram", "64K", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return out


def expected_line() -> str:
    """What kws_app prints first, from the reference on the input it writes (silence)."""
    graph = read_model(EXAMPLE)
    inp = graph.tensors[graph.inputs[0]]
    silence = np.full(inp.shape, inp.quantization.zero_points[0], dtype=np.int8)
    scores = ReferenceModel(EXAMPLE.read_bytes()).run([silence])[0].reshape(-1)
    return f"class {int(np.argmax(scores))}, "


def run_app(app: Path) -> str:
    run = subprocess.run([str(app)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


@needs_tools("cmake", "make", "cc")
def test_cmake_drop_in_builds_the_example_application(outdir, tmp_path):
    project = tmp_path / "app"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\n"
        "project(kws_app C)\n"
        "set(CMAKE_C_STANDARD 99)\n"
        f'add_subdirectory("{outdir}" model)\n'
        f'add_executable(kws_app "{APP}")\n'
        "target_compile_options(kws_app PRIVATE -Wall -Wextra -Werror)\n"
        "target_link_libraries(kws_app PRIVATE tiny_kws_int8)\n"
    )
    build = tmp_path / "build"
    for step in (["cmake", "-S", str(project), "-B", str(build)], ["cmake", "--build", str(build)]):
        done = subprocess.run(step, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    assert run_app(build / "kws_app").startswith(expected_line())


@needs_tools("make", "cc")
def test_make_fragment_builds_the_example_application(outdir, tmp_path):
    (tmp_path / "Makefile").write_text(
        f"include {outdir}/tiny_kws_int8.mk\n"
        f"kws_app: {APP} $(TINY_KWS_INT8_SRCS)\n"
        "\t$(CC) $(TINY_KWS_INT8_CFLAGS) -O2 -Wall -Wextra -Werror -pedantic $^ $(TINY_KWS_INT8_LDLIBS) -o $@\n"
    )
    done = subprocess.run(["make", "-C", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_app(tmp_path / "kws_app").startswith(expected_line())


@needs_arm_gcc
@pytest.mark.parametrize("cpu", ["cortex-m0plus", "cortex-m4", "cortex-m55"])
def test_make_fragment_sources_compile_for_cortex_m(outdir, tmp_path, cpu):
    """The fragment's sources and flags are all a cross build needs (objects only: no board)."""
    (tmp_path / "Makefile").write_text(
        f"include {outdir}/tiny_kws_int8.mk\n"
        "OBJS := $(notdir $(TINY_KWS_INT8_SRCS:.c=.o))\n"
        "vpath %.c $(TINY_KWS_INT8_DIR)\n"
        "all: $(OBJS)\n"
        "%.o: %.c\n"
        f"\tarm-none-eabi-gcc -mcpu={cpu} -mthumb -O2 -Wall -Wextra -Werror -ffunction-sections -fdata-sections "
        "$(TINY_KWS_INT8_CFLAGS) -c $< -o $@\n"
    )
    done = subprocess.run(["make", "-C", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "tiny_kws_int8.o").is_file()
