"""float32 <-> int8/uint8/int16 conversions, bit-exact with TFLite's reference
over every value class where float and double arithmetic part ways.

TFLite's reference QUANTIZE divides in float (val / static_cast<float>(scale))
and rounds half away from zero; DEQUANTIZE multiplies in double and narrows.
The sweep feeds every uint8 pixel value through the usual input scalings,
exact .5 ties of x / scale (and the floats beside them), saturation far
outside the output range, infinities, signed zeros, subnormals and random
floats, at tiny, ordinary and huge scales and at the extreme zero points;
every quantized value is also dequantized back, and DEQUANTIZE also reads every
integer of each input type directly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import needs_cortex_m
from kernel_models import assert_matches_reference

from mcu_planner.quant import INT_RANGES
from mcu_planner_testing.builder import ModelBuilder

F32 = np.float32
PIXELS = np.arange(256, dtype=np.float32)

# (output dtype, scale, zero point): the scalings of image inputs, powers of
# two, tiny and huge scales, and the ends of each zero-point range.  int16
# zero points are 0 (TFLite requires it).
QUANTIZE_CASES = [
    ("int8", 1 / 255, -128),
    ("int8", 1 / 255, 127),
    ("int8", 2 / 255, -1),
    ("int8", 1 / 127.5, 0),
    ("int8", 1 / 128, 0),
    ("int8", 0.0078125, -128),
    ("int8", 0.02352941, 3),
    ("int8", 0.1037, -47),
    ("int8", 3.7e-9, 12),
    ("int8", 1.2e-38, -5),  # subnormal-range quotients become huge
    ("int8", 6.5e4, 100),
    ("int8", 3.0e37, -100),
    ("uint8", 1 / 255, 0),
    ("uint8", 1 / 255, 255),
    ("uint8", 1 / 127.5, 128),
    ("uint8", 0.0039215689, 128),
    ("uint8", 0.05, 77),
    ("uint8", 2.5e-7, 200),
    ("int16", 1 / 32768, 0),
    ("int16", 1 / 255, 0),
    ("int16", 3.0517578e-05, 0),
    ("int16", 0.000123, 0),
    ("int16", 1e-6, 0),
    ("int16", 25.0, 0),
]

# Input scales of DEQUANTIZE read directly over every integer of the type.
DEQUANTIZE_CASES = [
    ("int8", 1 / 255, -128),
    ("int8", 0.1037, 127),
    ("int8", 1.1e-38, 0),  # products in the subnormal range
    ("int8", 3.0e36, -7),  # products overflowing to infinity
    ("uint8", 1 / 255, 0),
    ("uint8", 0.0078125, 128),
    ("uint8", 0.377, 255),
    ("int16", 1 / 32768, 0),
    ("int16", 0.000123, 0),
    ("int16", 7.3e-41, 0),  # subnormal scale
]


def pixel_scalings() -> np.ndarray:
    """Every uint8 pixel value through the usual input normalisations, each
    computed as the usual float32 code computes it (and its double-precision
    variant narrowed)."""
    variants = [
        PIXELS / F32(255),
        PIXELS * (F32(1) / F32(255)),
        (np.arange(256) / 255.0).astype(np.float32),
        PIXELS / F32(127.5) - F32(1),
        (np.arange(256) / 127.5 - 1.0).astype(np.float32),
        (PIXELS - F32(128)) / F32(128),
        (PIXELS - F32(127.5)) / F32(127.5),
    ]
    return np.concatenate(variants).astype(np.float32)


def ties(dtype: str, scale: float, zero_point: int, rng: np.random.Generator, count: int = 600) -> np.ndarray:
    """Floats x with x / scale exactly k + 0.5 in float arithmetic (as far as
    such floats exist), and their float neighbours, over the output range
    and a little beyond it."""
    q_min, q_max = INT_RANGES[dtype]
    low, high = q_min - zero_point - 3, q_max - zero_point + 3
    ks = np.arange(low, high) if high - low <= count else rng.integers(low, high, size=count)
    s = F32(scale)
    with np.errstate(over="ignore", under="ignore"):
        centre = ((ks.astype(np.float64) + 0.5) * float(s)).astype(np.float32)
        # The floats within two ulps of (k + 0.5) * scale: among them are those
        # whose float quotient is exactly the tie, and their neighbours.
        up = np.nextafter(centre, F32(np.inf))
        down = np.nextafter(centre, F32(-np.inf))
        values = [centre, up, down, np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))]
    return np.concatenate(values)


def specials(scale: float) -> np.ndarray:
    s = F32(scale)
    with np.errstate(over="ignore"):
        return np.array(
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                -np.nan,
                np.finfo(np.float32).max,
                -np.finfo(np.float32).max,
                np.finfo(np.float32).tiny,
                -np.finfo(np.float32).tiny,
                1e-45,
                -1e-45,
                s * F32(1e6),
                -s * F32(1e6),
                s * F32(40000.5),
                -s * F32(40000.5),
                s * F32(2.0**31),
                -s * F32(2.0**31),
                s * F32(2.0**32),
                0.782353,
                -0.782353,
                1.0,
                -1.0,
            ],
            dtype=np.float32,
        )


def sweep_values(dtype: str, scale: float, zero_point: int, rng: np.random.Generator, size: int) -> np.ndarray:
    q_min, q_max = INT_RANGES[dtype]
    lo, hi = float(F32(scale)) * (q_min - zero_point - 4), float(F32(scale)) * (q_max - zero_point + 4)
    with np.errstate(over="ignore"):
        fixed = np.concatenate([pixel_scalings(), ties(dtype, scale, zero_point, rng), specials(scale)])
        rest = size - fixed.size
        assert rest > 0, "sweep tensor too small for the fixed values"
        uniform = rng.uniform(lo, hi, size=rest // 2)
        log_magnitude = np.exp(rng.uniform(np.log(1e-12), np.log(1e12), size=rest - rest // 2))
        log_magnitude *= rng.choice([-1.0, 1.0], size=log_magnitude.size)
        values = np.concatenate([fixed, uniform.astype(np.float32), log_magnitude.astype(np.float32)])
    return values.astype(np.float32)


def conversion_model(quantize_cases, dequantize_cases, size: int) -> bytes:
    """Per quantize case a float input of `size` values -> QUANTIZE ->
    DEQUANTIZE (both outputs kept); per dequantize case an input holding every
    integer of its type -> DEQUANTIZE."""
    mb = ModelBuilder("float <-> int conversions")
    inputs, outputs = [], []
    for dtype, scale, zero_point in quantize_cases:
        x = mb.add_tensor((size,), "float32")
        q = mb.add_tensor((size,), dtype, (scale, zero_point))
        back = mb.add_tensor((size,), "float32")
        mb.add_op("QUANTIZE", (x,), (q,))
        mb.add_op("DEQUANTIZE", (q,), (back,))
        inputs.append(x)
        outputs += [q, back]
    for dtype, scale, zero_point in dequantize_cases:
        q_min, q_max = INT_RANGES[dtype]
        x = mb.add_tensor((q_max - q_min + 1,), dtype, (scale, zero_point))
        y = mb.add_tensor((q_max - q_min + 1,), "float32")
        mb.add_op("DEQUANTIZE", (x,), (y,))
        inputs.append(x)
        outputs.append(y)
    mb.set_io(inputs, outputs)
    return mb.build()


def sweep_model(quantize_cases, dequantize_cases, size: int, seed: int = 0):
    """The conversion model and its one input set: the sweep values of each
    quantize case, every integer of each dequantize case's type."""
    rng = np.random.default_rng(seed)
    arrays = [sweep_values(dtype, scale, zero_point, rng, size) for dtype, scale, zero_point in quantize_cases]
    for dtype, _, _ in dequantize_cases:
        q_min, q_max = INT_RANGES[dtype]
        arrays.append(np.arange(q_min, q_max + 1).astype(dtype))
    return conversion_model(quantize_cases, dequantize_cases, size), [arrays]


SWEEP_SIZE = 6144


@pytest.fixture
def int16_activations(monkeypatch):
    """The sweep models hold int16 tensors only between QUANTIZE and
    DEQUANTIZE, whose int16 kernels exist; let codegen accept them even where
    int16 activations in general are not yet enabled."""
    from mcu_planner.emit import codegen

    monkeypatch.setattr(codegen, "ACTIVATION_DTYPES", codegen.ACTIVATION_DTYPES | {"int16"})


def test_sweep_values_hit_the_double_float_difference():
    """The sweep contains values whose quotient rounds differently in float
    and in double (a 1-LSB error when the division is done in the wrong
    precision), so the C test below can fail."""
    differing = 0
    for dtype, scale, zero_point in QUANTIZE_CASES:
        values = sweep_values(dtype, scale, zero_point, np.random.default_rng(0), SWEEP_SIZE)
        s = F32(scale)
        with np.errstate(all="ignore"):
            in_float = (values / s).astype(np.float64)
            in_double = values.astype(np.float64) / float(s)
        finite = np.isfinite(in_float) & np.isfinite(in_double)
        away = lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)  # noqa: E731
        differing += int(np.count_nonzero(away(in_float[finite]) != away(in_double[finite])))
    assert differing > 50


def test_quantize_dequantize_sweep_is_bit_exact_on_host(int16_activations):
    model, input_sets = sweep_model(QUANTIZE_CASES, DEQUANTIZE_CASES, SWEEP_SIZE)
    assert_matches_reference(model, input_sets=input_sets)


def test_nan_quantizes_as_the_reference(int16_activations):
    """NaN input: the reference's float -> int32 cast gives INT32_MIN on
    x86-64, which the zero point then moves (wrapping when negative) before
    the clamp; the kernel does the same on every target."""
    cases = [("int8", 0.1, -128), ("int8", 0.1, 5), ("uint8", 0.1, 200), ("uint8", 0.1, 0), ("int16", 0.001, 0)]
    model = conversion_model(cases, [], 8)
    values = np.array([np.nan, -np.nan, 1.0, np.nan, 0.5, np.nan, -3.0, np.nan], dtype=np.float32)
    assert_matches_reference(model, input_sets=[[values] * len(cases)])


@needs_cortex_m
def test_quantize_dequantize_sweep_is_bit_exact_on_cortex_m4(int16_activations):
    """QEMU mps2-an386 (Cortex-M4F, single-precision FPU): a representative
    subset of the sweep -- each output type, image scalings, extreme zero
    points, tiny and huge scales -- over the same value classes."""
    subset = [QUANTIZE_CASES[i] for i in (0, 1, 3, 9, 11, 13, 14, 18, 22)]
    dequantize = [DEQUANTIZE_CASES[i] for i in (0, 2, 3, 6, 7, 9)]
    model, input_sets = sweep_model(subset, dequantize, 5120, seed=1)
    assert_matches_reference(model, input_sets=input_sets, target="mps2-an386")


def test_every_build_of_float_kernels_turns_off_fp_contraction(tmp_path):
    """The generated source says why it needs -ffp-contract=off near its top;
    the build files of OUTDIR (NAME.mk, CMakeLists.txt), the board Makefile
    and every compiler command in the README and docs/ pass it (a fused multiply-add
    would change float results)."""
    from mcu_planner.emit.output_dir import write_output
    from mcu_planner.emit.resources import templates_dir
    from mcu_planner.targets.check import generate_for_model
    from mcu_planner.targets.firmware_build import build_firmware

    model = conversion_model([("int8", 1 / 255, -128)], [], 16)
    _, _, files = generate_for_model(model, name="fp_model")
    outdir = write_output(files, tmp_path / "out")
    header_comment = (outdir / "fp_model.c").read_text().split("*/")[0]
    assert "-ffp-contract=off" in header_comment
    make_fragment = (outdir / "fp_model.mk").read_text()
    assert "-ffp-contract=off" in make_fragment.split("FP_MODEL_CFLAGS :=")[1].splitlines()[0]
    assert "-ffp-contract=off" in (outdir / "CMakeLists.txt").read_text()
    build_firmware(outdir, model=files.interface, ram_bytes=1 << 20, run_make=False)
    makefile = (outdir / "Makefile").read_text()
    cflags = makefile.split("\nCFLAGS :=")[1].split("\n\n")[0]
    # The flags may come through a variable the CFLAGS line names.
    named = {line.split(":=")[0].strip(): line for line in makefile.splitlines() if ":=" in line}
    assert "-ffp-contract=off" in cflags or any(
        "-ffp-contract=off" in named.get(v, "") for v in re.findall(r"\$\((\w+)\)", cflags)
    )
    root = templates_dir().parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    lines = [line for page in pages for line in page.read_text().splitlines()]
    commands = [line for line in lines if line.startswith(("cc ", "gcc ", "arm-none-eabi-gcc "))]
    assert commands and all("-ffp-contract=off" in line for line in commands)
