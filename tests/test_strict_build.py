"""The generated model and the runtime files it copies compile without a
warning under the strict flag set (mcu_planner/targets/c_flags.py) on the host and for
the Cortex-M4F and Cortex-M55 boards, plain, as a check build and as a
profile build: one model
per dtype family, each with the kernels of that family that widen pointers
(float, int16 and int32 tensors in the arena) and use quantized arithmetic."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import needs_arm_gcc

from mcu_planner.emit.output_dir import write_output
from mcu_planner.emit.resources import firmware_dir
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.c_flags import FLOAT_FLAGS, STRICT_WARNING_FLAGS
from mcu_planner.targets.firmware_build import load_board
from mcu_planner_testing.builder import FloatNet, Int8Net, Int16x8Net, Uint8Net


def _quantized(net: Int8Net) -> bytes:
    x = net.input((1, 8, 8, 3))
    y = net.conv2d(x, 8, activation="RELU")
    y = net.depthwise_conv2d(y, activation="RELU6")
    y = net.average_pool2d(y)
    y = net.add(y, net.max_pool2d(net.conv2d(x, 8), pool=(2, 2)))
    y = net.fully_connected(net.reshape(y, (1, 128)), 10)
    return net.build(net.softmax(y), net.logistic(y))


def _float() -> bytes:
    net = FloatNet(seed=1)
    x = net.input((1, 6, 6, 3))
    w = net.const((4, 3, 3, 3), 0.4)
    b = net.const((4,), 0.2)
    conv = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
    y = net.op("CONV_2D", (x, w, b), (1, 6, 6, 4), conv)
    y = net.div(net.exp(y), net.maximum(y, net.scalar(0.5)))
    return net.build(net.gelu(y), net.op("SOFTMAX", (y,), (1, 6, 6, 4), {"beta": 1.0}))


def _hybrid() -> bytes:
    net = Int8Net(seed=2)
    x = net.float_input((1, 6, 6, 3))
    rows = net.float_input((2, 20))
    conv = net.hybrid_conv2d(x, 4, activation="RELU")
    depthwise = net.hybrid_depthwise_conv2d(x, activation="RELU6")
    return net.build(conv, depthwise, net.hybrid_fully_connected(rows, 5, asymmetric_quantize_inputs=True))


FAMILIES = {
    "int8": lambda: _quantized(Int8Net(seed=3)),
    "uint8": lambda: _quantized(Uint8Net(seed=4)),
    "int16": lambda: _quantized(Int16x8Net(seed=5)),
    "float32": _float,
    "hybrid": _hybrid,
}
TARGETS = {
    "host": ("gcc", ()),
    "cortex-m4": ("arm-none-eabi-gcc", load_board("mps2-an386").cpu_flags),
    "cortex-m55": ("arm-none-eabi-gcc", load_board("mps3-an547").cpu_flags),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def generated(request, tmp_path_factory) -> Path:
    _, _, files = generate_for_model(FAMILIES[request.param](), name="strict_model")
    return write_output(files, tmp_path_factory.mktemp(request.param) / "out")


@pytest.mark.parametrize("target", sorted(TARGETS))
@needs_arm_gcc
def test_generated_c_compiles_clean_under_the_strict_flags(generated, target):
    compiler, cpu_flags = TARGETS[target]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed")
    sources = sorted(str(p) for p in generated.glob("*.c"))
    assert any(Path(s).name == "strict_model.c" for s in sources)
    check_flags = ["-DMCU_PLAN_CHECK"]
    if target != "host":  # the board harness reports plan violations over semihosting
        check_flags += ["-include", str(firmware_dir() / "harness" / "plan_check.h")]
    for extra in ([], check_flags, ["-DMCU_PROFILE"]):
        for source in sources:
            command = [compiler, *cpu_flags, *STRICT_WARNING_FLAGS, *FLOAT_FLAGS, "-O2", *extra]
            command += ["-I", str(generated), "-c", source, "-o", str(generated / "object.o")]
            done = subprocess.run(command, capture_output=True, text=True)
            assert done.returncode == 0, f"{Path(source).name} {' '.join(extra)}:\n{done.stderr[:2000]}"
