"""Quantization arithmetic: quant.py's constants and mcu_quant.h's fixed point."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from kernel_models import fp16_tables_header

from mcu_planner import gemmlowp16, quant
from mcu_planner.emit.resources import firmware_dir
from mcu_planner.graph import Quantization, Tensor
from mcu_planner.lowering.common import compute_out_size, compute_padding
from mcu_planner.targets.c_flags import STRICT_WARNING_FLAGS


def test_tflite_round_ties_away_from_zero():
    for value, expected in [(0.5, 1), (-0.5, -1), (2.5, 3), (-2.5, -3), (1.4999999, 1), (-7.5000001, -8), (3.0, 3)]:
        assert quant.tflite_round(value) == expected


@pytest.mark.parametrize("seed", [0, 1])
def test_quantize_multiplier_represents_the_real_value(seed):
    rng = np.random.default_rng(seed)
    for real in np.exp(rng.uniform(math.log(1e-9), math.log(1e4), 500)):
        multiplier, shift = quant.quantize_multiplier(float(real))
        assert (1 << 30) <= multiplier < (1 << 31)
        represented = Fraction(multiplier) * Fraction(2) ** (shift - 31)
        # Rounding the Q31 mantissa costs at most half a unit in its last place.
        assert abs(represented - Fraction(float(real))) <= Fraction(2) ** (shift - 32)


def test_quantize_multiplier_edges():
    assert quant.quantize_multiplier(0.0) == (0, 0)
    assert quant.quantize_multiplier(1e-12) == (0, 0)  # shift below -31 flushes to zero
    # A mantissa that rounds up to 2^31 becomes 2^30 with the exponent one higher.
    assert quant.quantize_multiplier(1.0 - 2.0**-40) == (1 << 30, 1)
    assert quant.quantize_multiplier(0.75) == (3 << 29, 0)


def test_quantized_activation_ranges():
    out = Tensor(0, "y", (1,), "int8", Quantization((float(np.float32(6.0 / 255)),), (-128,)))
    assert quant.activation_range_quantized("NONE", out) == (-128, 127)
    assert quant.activation_range_quantized("RELU", out) == (-128, 127)
    assert quant.activation_range_quantized("RELU6", out) == (-128, 127)
    wide = Tensor(0, "y", (1,), "int8", Quantization((0.1,), (3,)))
    assert quant.activation_range_quantized("RELU6", wide) == (3, 63)
    assert quant.activation_range_quantized("RELU_N1_TO_1", wide) == (-7, 13)


def test_padding_matches_the_output_size():
    for in_size, k, stride, dilation in [(9, 3, 2, 1), (10, 4, 3, 2), (7, 1, 1, 1), (5, 5, 2, 1)]:
        out = compute_out_size("SAME", in_size, k, stride, dilation)
        pad = compute_padding(stride, dilation, in_size, k, out)
        # The last window may hang over by at most one more than the first.
        last_end = (out - 1) * stride - pad + (k - 1) * dilation + 1
        assert 0 <= last_end - in_size - pad <= 1
        assert (
            compute_out_size("VALID", in_size, k, stride, dilation) == (in_size - (k - 1) * dilation - 1) // stride + 1
        )


HARNESS = r"""
#include <stdio.h>
#include "mcu_quant.h"
int main(void) {
    long long x, m; int s; char op;
    while (scanf(" %c %lld %lld %d", &op, &x, &m, &s) == 4) {
        int n = 0;
        switch (op) {
        case 'd': printf("%ld\n", (long)mcu_mul_by_quantized_mul((int32_t)x, (int32_t)m, s)); break;
        case 's': printf("%ld\n", (long)mcu_mul_by_quantized_mul_single_round((int32_t)x, (int32_t)m, s)); break;
        case 'w': printf("%ld\n", (long)mcu_mul_by_quantized_mul_s64((int64_t)x, (int32_t)m, s)); break;
        case 'v': {
            mcu_accumulated_mul a;
            if (mcu_prepare_accumulated_mul((int32_t)m, s, &a)) {
                printf("%ld\n", (long)mcu_apply_accumulated_mul((int32_t)x, &a));
            } else {
                printf("none\n");
            }
            break;
        }
        case 'b': printf("%ld\n", (long)mcu_rounding_divide_by_pot_bounded((int32_t)x, s)); break;
        case 'e': printf("%ld\n", (long)mcu_fp_exp_on_negative_values((int32_t)x, s)); break;
        case 'h': printf("%d\n", mcu_sat_round_doubling_high_mul_s16((int16_t)x, (int16_t)m)); break;
        case 'n': printf("%d\n", mcu_fp16_one_over_one_plus_x_f2((int16_t)x)); break;
        case 'p': printf("%d\n", mcu_fp16_exp_on_interval_between_negative_one_quarter_and_0_excl((int16_t)x)); break;
        case 'r': {
            const int32_t r = mcu_fp_reciprocal((int32_t)x, s, &n);
            printf("%ld %d\n", (long)r, n);
            break;
        }
        case 't': printf("%d\n", mcu_fp16_tanh((int16_t)x, s)); break;
        case 'l': printf("%d\n", mcu_fp16_logistic((int16_t)x, s)); break;
        case 'q': {
            int32_t r;
            mcu_inv_sqrt_quantized_multiplier_exp((int32_t)x, -1, &r, &n);
            printf("%ld %d\n", (long)r, n);
            break;
        }
        }
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def quant_harness(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        if os.environ.get("CI"):
            pytest.fail("no C compiler, and CI must run the fixed-point checks")
        pytest.skip("no C compiler")
    work = tmp_path_factory.mktemp("quant")
    (work / "main.c").write_text(HARNESS)
    exe = work / "quant"
    subprocess.run(
        [
            cc,
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{firmware_dir() / 'runtime'}",
            str(work / "main.c"),
            "-o",
            str(exe),
        ],
        check=True,
    )

    def run(lines: list[str]) -> list[str]:
        return subprocess.run(
            [str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
        ).stdout.split("\n")

    return run


def test_c_multiplier_matches_python(quant_harness):
    rng = np.random.default_rng(5)
    cases = [
        (int(x), int(m), int(s))
        for x, m, s in zip(
            rng.integers(-(1 << 24), 1 << 24, 400),
            rng.integers(1 << 30, 1 << 31, 400),
            rng.integers(-31, 3, 400),
            strict=True,
        )
    ]
    cases += [(-(1 << 31), (1 << 31) - 1, 0), (1 << 20, 1 << 30, -31), (-5, 1 << 30, -1), (5, 1 << 30, -1)]
    out = quant_harness([f"d {x} {m} {s}" for x, m, s in cases] + [f"s {x} {m} {s}" for x, m, s in cases])
    n = len(cases)
    for i, (x, m, s) in enumerate(cases):
        assert int(out[i]) == quant.multiply_by_quantized_multiplier(x, m, s), (x, m, s)
        assert int(out[n + i]) == quant.multiply_by_quantized_multiplier_single_round(x, m, s), (x, m, s)
        # Single rounding is the exact product rounded half up.
        exact = Fraction(x * m, 1 << (31 - s))
        assert int(out[n + i]) == math.floor(exact + Fraction(1, 2))


def test_c_accumulated_multiplier_equals_tflite(quant_harness):
    """The one multiply-accumulate form (rounding term by the sign of x) for
    every right shift 1 .. 31 against TFLite's two roundings: x at the int32
    ends and around 0, products at the first rounding's ties (x * 2^30 for odd
    x) and just past them, the -2^30 .. 0 band where the sign of x decides,
    and random pairs; left shifts and negative multipliers are refused."""
    rng = np.random.default_rng(21)
    multipliers = [0, 1 << 30, (1 << 30) + 1, 1518500250, (1 << 31) - 1]
    xs = [-(1 << 31), -(1 << 31) + 1, -(1 << 16), -3, -2, -1, 0, 1, 2, 3, 1 << 16, (1 << 31) - 1]
    xs += list(range(-9, 10))
    cases = [(x, m, s) for s in range(-31, 0) for x in xs for m in multipliers]
    cases += [
        (int(x), int(m), int(s))
        for x, m, s in zip(
            rng.integers(-(1 << 31), 1 << 31, 3000),
            rng.integers(0, 1 << 31, 3000),
            rng.integers(-31, 0, 3000),
            strict=True,
        )
    ]
    out = quant_harness([f"v {x} {m} {s}" for x, m, s in cases] + ["v 5 1073741824 0", "v 5 -1073741824 -3"])
    for i, (x, m, s) in enumerate(cases):
        assert int(out[i]) == quant.multiply_by_quantized_multiplier(x, m, s), (x, m, s)
    assert out[len(cases) : len(cases) + 2] == ["none", "none"]


def test_c_bounded_rounding_divide_equals_the_general_one(quant_harness):
    """mcu_rounding_divide_by_pot_bounded on its domain (|x| + 2^(e-1) <
    2^31, e = 1 .. 30): ties of both signs, one off them, products of two
    int16 extremes, and random values, against TFLite's RoundingDivideByPOT."""
    rng = np.random.default_rng(22)
    cases = []
    for e in range(1, 31):
        half = 1 << (e - 1)
        limit = (1 << 31) - half - 1
        near = [k * half + d for k in range(-5, 6) for d in (-1, 0, 1)]
        extremes = [-32768 * 32767, 32768 * 32768, -32767 * 32767, limit, -limit]
        cases += [(x, e) for x in near + extremes if abs(x) <= limit]
        cases += [(int(x), e) for x in rng.integers(-limit, limit + 1, 60)]
    out = quant_harness([f"b {x} 0 {e}" for x, e in cases])
    for i, (x, e) in enumerate(cases):
        assert int(out[i]) == quant.rounding_divide_by_pot(x, e), (x, e)


def test_c_and_python_multiplier_agree_on_left_shifts_of_32_and_more(quant_harness):
    """A tiny output scale gives left shifts past 31: both shift by the count
    mod 32 (x86's SHL, which the reference runs on), wrapping to int32."""
    cases = [
        (x, m, s) for x in (3, -7, 1 << 20, -(1 << 30)) for m in (1 << 30, (1 << 31) - 1) for s in (31, 32, 33, 40)
    ]
    out = quant_harness([f"d {x} {m} {s}" for x, m, s in cases])
    for i, (x, m, s) in enumerate(cases):
        assert int(out[i]) == quant.multiply_by_quantized_multiplier(x, m, s), (x, m, s)
    assert quant.multiply_by_quantized_multiplier(3, 1 << 30, 33) == quant.multiply_by_quantized_multiplier(
        3, 1 << 30, 1
    )


SWEEP = r"""
#include <stdio.h>
#include "mcu_quant.h"
/* xorshift: a fixed sequence of 32-bit values, no libc rand. */
static uint32_t next(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}
static long checked, wrong;
static void check(int32_t x, int32_t m, int s)
{
    const int32_t fast = mcu_mul_by_quantized_mul(x, m, s);
    const int32_t slow = mcu_mul_by_quantized_mul_two_roundings(x, m, s);
    const mcu_prepared_mul prepared = mcu_prepare_mul(m, s);
    const int32_t per_channel = mcu_apply_prepared_mul(x, &prepared);
    ++checked;
    if ((fast != slow || per_channel != slow) && wrong++ < 5) {
        printf("x=%ld m=%ld s=%d fast=%ld prepared=%ld two_roundings=%ld\n", (long)x, (long)m, s, (long)fast,
               (long)per_channel, (long)slow);
    }
}
int main(void)
{
    /* Multipliers with many trailing zero bits make the products land on
     * exact ties of both roundings; the rest are the range's ends and
     * arbitrary values. */
    static const int32_t multipliers[] = {0, 1, 3, 1 << 30, (1 << 30) + (1 << 29), (1 << 30) + 1, 0x50000000,
                                          0x60000000, 0x7FFF0000, INT32_MAX, INT32_MIN, -1, -(1 << 30),
                                          1518500250, 1140850688, 2004318071};
    static const int32_t edges[] = {INT32_MIN, INT32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -(1 << 30) + 1,
                                    -1, 0, 1, (1 << 30) - 1, 1 << 30, INT32_MAX - 1, INT32_MAX};
    uint32_t state = 2463534242u;
    size_t mi, ei;
    int s;
    int32_t x;
    /* Left shifts past 31 (tiny output scales) shift by the count mod 32. */
    for (s = -31; s <= 40; ++s) {
        for (mi = 0; mi < sizeof multipliers / sizeof multipliers[0]; ++mi) {
            const int32_t m = multipliers[mi];
            for (x = -70000; x <= 70000; ++x) {
                check(x, m, s);
            }
            for (ei = 0; ei < sizeof edges / sizeof edges[0]; ++ei) {
                check(edges[ei], m, s);
            }
            for (x = 0; x < 20000; ++x) {
                check((int32_t)next(&state), m, s);
                check((int32_t)next(&state), (int32_t)next(&state), s);
            }
        }
    }
    printf("%ld checked, %ld wrong\n", checked, wrong);
    return 0;
}
"""


def test_c_one_rounding_multiplier_equals_two_roundings(tmp_path):
    """mcu_mul_by_quantized_mul (one 64-bit sum and shift) and its per-channel
    prepared form against TFLite's two roundings written out, over every shift: all x in a band around 0,
    the int32 edges, ties, and arbitrary values and multipliers."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "sweep.c").write_text(SWEEP)
    exe = tmp_path / "sweep"
    subprocess.run(
        [
            cc,
            "-std=c99",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{firmware_dir() / 'runtime'}",
            str(tmp_path / "sweep.c"),
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith(" 0 wrong"), out
    assert int(out.split()[-4]) > 100_000_000


def test_c_fixed_point_exp_and_reciprocal(quant_harness):
    diffs = [0.0, -0.001, -0.124, -0.25, -0.7, -1.0, -3.3, -8.0, -15.9, -31.0]
    integer_bits = 5
    exp_lines = [f"e {round(d * 2 ** (31 - integer_bits))} 0 {integer_bits}" for d in diffs]
    sums = [1.0, 1.5, 2.999, 17.25, 1000.0]
    rec_lines = [f"r {round(v * 2 ** (31 - 12))} 0 12" for v in sums]
    out = quant_harness(exp_lines + rec_lines)
    for line, d in zip(out[: len(diffs)], diffs, strict=True):
        # gemmlowp's polynomial is good to a few 1e-7.
        assert abs(int(line) / 2**31 - math.exp(d)) < 1e-6
    for line, v in zip(out[len(diffs) : len(diffs) + len(sums)], sums, strict=True):
        raw, bits_over_unit = (int(t) for t in line.split())
        assert abs(raw / 2**31 / 2**bits_over_unit * v - 1) < 1e-6


def test_c_int16_fixed_point_tanh_and_logistic(quant_harness):
    """gemmlowp's int16 tanh (0..6 integer bits in) and logistic (3 integer
    bits in, as the integer LSTM's gates): Q0.15 results within gemmlowp's
    int16 accuracy (13 and 7 units of the last place) of the real functions
    over the whole int16 range, odd (tanh) and exact at 0."""
    raws = np.concatenate([np.arange(-32768, 32768, 5), [-1, 0, 1, 32767]])
    for bits in range(7):
        out = quant_harness([f"t {x} 0 {bits}" for x in raws])
        got = np.array([int(v) for v in out[: len(raws)]])
        assert np.max(np.abs(got - np.tanh(raws / 2.0 ** (15 - bits)) * 32768)) <= 13, bits
        assert got[raws == 0][0] == 0
        positive = np.arange(1, 32768, 5)
        out = quant_harness([f"t {x} 0 {bits}" for x in positive] + [f"t {-x} 0 {bits}" for x in positive])
        assert out[: len(positive)] == [str(-int(v)) for v in out[len(positive) : 2 * len(positive)]]
    out = quant_harness([f"l {x} 0 3" for x in raws])
    got = np.array([int(v) for v in out[: len(raws)]])
    assert np.max(np.abs(got - 32768 / (1 + np.exp(-raws / 4096.0)))) <= 7
    assert got[raws == 0][0] == 16384


def test_c_inverse_square_root_multiplier(quant_harness):
    """GetInvSqrtQuantizedMultiplierExp: multiplier x 2^shift / 2^31 is
    1 / sqrt(x) to 2e-6 for x from 2 to 2^31 - 1; x <= 1 gives the largest
    multiplier and shift 0."""
    values = [2, 3, 7, 100, 12345, 1 << 20, (1 << 29) - 1, 1 << 29, 1 << 30, (1 << 31) - 1]
    out = quant_harness([f"q {v} 0 0" for v in values] + ["q 1 0 0", "q 0 0 0"])
    for line, v in zip(out[: len(values)], values, strict=True):
        multiplier, shift = (int(t) for t in line.split())
        assert abs(multiplier * 2.0 ** (shift - 31) * math.sqrt(v) - 1) < 2e-6, v
    assert out[len(values)].split() == [str((1 << 31) - 1), "0"]
    assert out[len(values) + 1].split() == [str((1 << 31) - 1), "0"]


def test_c_int64_multiplier_matches_python(quant_harness):
    # The 16x8 kernels' requantization of int64 accumulators: random values
    # over the whole +-2^47 input range, ties (x * reduced multiplier exactly
    # halfway), multipliers at and above the Q15 saturation point 0x7FFF0000.
    rng = np.random.default_rng(9)
    cases = [
        (int(x), int(m), int(s))
        for x, m, s in zip(
            rng.integers(-(1 << 47), 1 << 47, 300),
            rng.integers(1 << 30, 1 << 31, 300),
            rng.integers(-31, 8, 300),
            strict=True,
        )
    ]
    cases += [
        (int(x), int(m), int(s))
        for x, m, s in zip(
            rng.integers(-(1 << 30), 1 << 30, 300),
            rng.integers(1 << 30, 1 << 31, 300),
            rng.integers(-31, -10, 300),
            strict=True,
        )
    ]
    half = 1 << 14  # reduced multiplier 0x4000 = 0.5: x = odd -> a tie at shift 0 becomes +0.5
    cases += [
        (3, half << 16, 0),
        (-3, half << 16, 0),
        (1, half << 16, -1),
        (-1, half << 16, -1),
        (5, 0x7FFF0000, 0),
        (-5, 0x7FFFFFFF, 0),
        (-(1 << 47), 0x7FFFFFFF, -31),
        ((1 << 47) - 1, 1 << 30, -31),
    ]
    out = quant_harness([f"w {x} {m} {s}" for x, m, s in cases])
    for line, (x, m, s) in zip(out[: len(cases)], cases, strict=True):
        assert int(line) == quant.multiply_by_quantized_multiplier_int64(x, m, s), (x, m, s)
        reduced = min((m + (1 << 15)) >> 16, 0x7FFF)
        exact = Fraction(x * reduced, 1 << (15 - s))
        assert int(line) == quant.wrap_int32(math.floor(exact + Fraction(1, 2)))


def _saturate_int32(x: int) -> int:
    return max(-(1 << 31), min((1 << 31) - 1, x))


def _helium_mul_by_quantized_mul(x: int, multiplier: int, shift: int) -> int:
    """mcu_mul_by_quantized_mul_x4's instruction sequence on one lane, each
    instruction as the Arm ARM's pseudocode defines it (VSHL, VQRDMULH, VAND,
    VSHR, VQADD, VRSHL on 32-bit lanes)."""
    right = min(shift, 0)  # VMIN with 0: -e
    shifted = quant.wrap_int32(x << (max(shift, 0) & 31))  # VAND 31, VSHL: no saturation
    high = _saturate_int32((2 * shifted * multiplier + (1 << 31)) >> 32)  # VQRDMULH
    ties_away = -1 if (high & right & 0xFFFFFFFF) >> 31 else 0  # VAND, VSHR #31
    fixed = _saturate_int32(high + ties_away)  # VQADD
    if right == 0:
        return fixed  # VRSHL by 0
    return (fixed + (1 << (-right - 1))) >> -right  # VRSHL by -e: rounded, no overflow


def test_helium_requantization_sequence_equals_tflite():
    """The Helium lane sequence (Cortex-M55) against TFLite's two roundings:
    ties of both roundings on either sign, the int32 ends, every shift.  The
    QEMU kernel tests run the instructions themselves on models."""
    rng = np.random.default_rng(13)
    multipliers = [0, 1, 1 << 30, (1 << 30) + (1 << 29), 0x60000000, (1 << 31) - 1, -(1 << 31), 1518500250]
    xs = list(range(-40, 41)) + [-(1 << 31), -(1 << 31) + 1, (1 << 31) - 1, -(1 << 30), 1 << 30, -(3 << 28), 3 << 28]
    xs += [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 40)]
    checked = 0
    for shift in range(-31, 31):
        for multiplier in multipliers:
            for x in xs:  # small x against 2^30-style multipliers land on exact ties
                expected = quant.multiply_by_quantized_multiplier(x, multiplier, shift)
                assert _helium_mul_by_quantized_mul(x, multiplier, shift) == expected, (x, multiplier, shift)
                checked += 1
    assert checked > 50_000


def _helium_single_round(x: int, multiplier: int, shift: int) -> int:
    """mcu_mul_by_quantized_mul_single_round_n_x4 on one lane, each
    instruction as the Arm ARM defines it (VQRDMULH, VRMULH, VMULH, VRSHL)."""
    if shift == 0:
        return _saturate_int32((2 * x * multiplier + (1 << 31)) >> 32)  # VQRDMULH
    if shift == -1:
        return (x * multiplier + (1 << 31)) >> 32  # VRMULH
    high = (x * multiplier) >> 32  # VMULH
    right = -(shift + 1)
    return (high + (1 << (right - 1))) >> right  # VRSHL by -right: rounded, no overflow


def test_helium_single_rounding_sequence_equals_ruy():
    """The Helium lanes of the int8 FULLY_CONNECTED rescale (one rounding, as
    ruy) against the exact product rounded half up, for every shift <= 0:
    ties on either sign and the int32 ends."""
    rng = np.random.default_rng(14)
    multipliers = [0, 1, 1 << 30, (1 << 30) + (1 << 29), 0x60000000, (1 << 31) - 1, 1518500250]
    xs = list(range(-40, 41)) + [-(1 << 31), -(1 << 31) + 1, (1 << 31) - 1, -(1 << 30), 1 << 30, -(3 << 28), 3 << 28]
    xs += [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 40)]
    for shift in range(-31, 1):
        for multiplier in multipliers:
            for x in xs:
                expected = quant.multiply_by_quantized_multiplier_single_round(x, multiplier, shift)
                assert _helium_single_round(x, multiplier, shift) == expected, (x, multiplier, shift)


def _gemmlowp_srdhm_s16(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul<int16_t>, as written there."""
    if a == b == -32768:
        return 32767
    ab = a * b
    nudge = (1 << 14) if ab >= 0 else 1 - (1 << 14)
    return int((ab + nudge) / (1 << 15)) if ab + nudge >= 0 else -((-(ab + nudge)) // (1 << 15))


def test_c_int16_doubling_high_mul_equals_gemmlowp(quant_harness):
    """The one-shift form against gemmlowp's nudge-and-truncate: the int16
    ends, exact ties of either sign (products of +-2^14 and odd multiples),
    and random pairs."""
    rng = np.random.default_rng(16)
    edges = [-32768, -32767, -16385, -16384, -16383, -3, -1, 0, 1, 3, 16383, 16384, 16385, 32767]
    pairs = [(a, b) for a in edges for b in edges]
    pairs += [(int(a), int(b)) for a, b in rng.integers(-32768, 32768, size=(3000, 2))]
    pairs += [(k, 16384) for k in range(-9, 10)] + [(k * 3, -(1 << 13)) for k in range(-9, 10)]
    out = quant_harness([f"h {a} {b} 0" for a, b in pairs])
    for i, (a, b) in enumerate(pairs):
        assert int(out[i]) == _gemmlowp_srdhm_s16(a, b), (a, b)


def _wrap_int16(value: int) -> int:
    return ((value + 32768) & 0xFFFF) - 32768


def test_c_int16_exp_polynomial_equals_gemmlowp_on_its_whole_domain(quant_harness):
    """exp on [-1/4, 0) at int16 (every input exp_on_negative_values can pass
    it: -8192 .. -1) against gemmlowp's steps with its general rounding
    divides, which the C replaces by add-and-shift on operands it shows are
    never negative."""
    constant_term = quant.rounding_divide_by_pot(1895147668, 16)
    constant_1_over_3 = quant.rounding_divide_by_pot(715827883, 16)

    def high_mul(a: int, b: int) -> int:
        return min(_gemmlowp_srdhm_s16(a, b), 32767)

    def reference(a: int) -> int:
        x = _wrap_int16(a + (1 << 12))
        x2 = high_mul(x, x)
        x3 = high_mul(x2, x)
        x4 = high_mul(x2, x2)
        x4_over_4 = quant.rounding_divide_by_pot(x4, 2)
        poly = quant.rounding_divide_by_pot(
            _wrap_int16(high_mul(_wrap_int16(x4_over_4 + x3), constant_1_over_3) + x2), 1
        )
        return max(-32768, min(32767, constant_term + high_mul(constant_term, _wrap_int16(x + poly))))

    inputs = range(-8192, 0)
    out = quant_harness([f"p {a} 0 0" for a in inputs])
    assert [int(v) for v in out[: len(inputs)]] == [reference(a) for a in inputs]


def test_c_int16_reciprocal_iterate_equals_gemmlowp_on_its_whole_domain(quant_harness):
    """1 / (1 + a) at int16 for every a in [0, 1) (0 .. 32767, what exp of a
    non-positive value gives) against gemmlowp's Newton-Raphson steps with
    their saturating multiply by 4, which the C does without saturation."""

    def high_mul(a: int, b: int) -> int:
        return min(_gemmlowp_srdhm_s16(a, b), 32767)

    def times_4_saturating(value: int) -> int:
        return max(-32768, min(32767, value * 4))

    def reference(a: int) -> int:
        total = a + 32767
        half_denominator = (total + 1) // 2
        x = _wrap_int16(
            quant.rounding_divide_by_pot(1515870810, 16)
            + high_mul(half_denominator, quant.rounding_divide_by_pot(-1010580540, 16))
        )
        for _ in range(3):
            one_minus = _wrap_int16((1 << 13) - high_mul(half_denominator, x))
            x = _wrap_int16(x + times_4_saturating(high_mul(x, one_minus)))
        return x

    inputs = range(32768)
    out = quant_harness([f"n {a} 0 0" for a in inputs])
    got = [int(v) for v in out[: len(inputs)]]
    assert got == [reference(a) for a in inputs]
    # The range the logistic and tanh rescales rely on (saturation at the top only).
    assert 8190 <= min(got) and max(got) <= 16384


def test_python_int16_logistic_and_tanh_equal_the_c_on_every_input(quant_harness):
    """mcu_planner.gemmlowp16, which builds the LSTM's tables, against
    mcu_fp16_logistic (3 integer bits, the gates') and mcu_fp16_tanh (0 .. 6
    integer bits, the cell gate's and the cell state's) on all 65,536 int16
    inputs."""
    inputs = np.arange(-32768, 32768, dtype=np.int64)
    runs = [("l", 3, gemmlowp16.logistic)] + [("t", bits, gemmlowp16.tanh) for bits in range(7)]
    for op, bits, model in runs:
        out = quant_harness([f"{op} {a} 0 {bits}" for a in inputs])
        assert np.array_equal(np.array(out[: len(inputs)], dtype=np.int64), model(inputs, bits)), (op, bits)


TABLE_HARNESS = r"""
#include <stdio.h>
#include "mcu_quant.h"
#include "tables.h"
int main(void) {
    int32_t a;
    for (a = INT16_MIN; a <= INT16_MAX; ++a) {
        printf("%d %d %d\n", mcu_fp16_table_logistic(&logistic_table, (int16_t)a),
               mcu_fp16_table_tanh(&tanh_table, (int16_t)a), mcu_fp16_table_tanh(&tanh_halved_table, (int16_t)a));
    }
    return 0;
}
"""


@pytest.mark.parametrize("bits", [0, 3, 6])
def test_c_table_logistic_and_tanh_equal_gemmlowp_on_every_input(tmp_path, bits):
    """The kernels' table reads (mcu_fp16_table_logistic / _tanh, built with
    the strict warnings) on all 65,536 int16 inputs against gemmlowp's steps
    (the Python model above): logistic from the table of R_bits, tanh from
    that of R_(bits + 1), of its own and reading R_bits's below its first
    magnitude (as the LSTM's cell gate does), for the ends and the gates' 3
    integer bits (tables hold 1/2 at 0, where gemmlowp returns 1/2 and 0
    without computing R); both tanh tables also read back exactly in Python."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    specs = {
        "logistic_table": (bits, None),
        "tanh_table": (bits + 1, None),
        "tanh_halved_table": (bits + 1, "logistic_table"),
    }
    (tmp_path / "tables.h").write_text(fp16_tables_header(specs))
    (tmp_path / "main.c").write_text(TABLE_HARNESS)
    exe = tmp_path / "tables"
    include = [f"-I{firmware_dir() / 'runtime'}", f"-I{tmp_path}"]
    subprocess.run([cc, *STRICT_WARNING_FLAGS, "-O1", *include, str(tmp_path / "main.c"), "-o", str(exe)], check=True)
    got = np.loadtxt(
        subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines(), dtype=np.int64
    )
    inputs = np.arange(-32768, 32768, dtype=np.int64)
    assert np.array_equal(got[:, 0], gemmlowp16.logistic(inputs, bits))
    assert np.array_equal(got[:, 1], gemmlowp16.tanh(inputs, bits))
    assert np.array_equal(got[:, 2], gemmlowp16.tanh(inputs, bits))
    magnitudes = np.arange(32769, dtype=np.int64)
    expected = gemmlowp16.reciprocal_of_exp(magnitudes, bits + 1)
    expected[0] = gemmlowp16.ZERO_INPUT_VALUE
    own, halved = gemmlowp16.reciprocal_table(bits), gemmlowp16.reciprocal_table(bits + 1)
    assert np.array_equal(halved.lookup(magnitudes), expected)
    shared = gemmlowp16.reciprocal_table(bits + 1, halved=own)
    assert shared.first > 0 and len(shared.residuals) < len(halved.residuals)
    assert np.array_equal(shared.lookup(magnitudes, own), expected)
