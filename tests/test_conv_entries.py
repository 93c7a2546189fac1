"""The int8 convolutions' entries (mcu_conv.c), one per family of layers: the
generator picks each layer's (lowering/conv.py conv_2d_s8_entry,
depthwise_conv_2d_s8_entry), so that a firmware links only the variants its
layers can take (issue 23, "Flash": before, one dispatcher per op linked
every variant of every core's path).
"""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import needs_cortex_m
from kernel_models import assert_firmware_matches_reference

from mcu_planner.emit.output_dir import write_output
from mcu_planner.emit.resources import firmware_dir
from mcu_planner.lowering.conv import (
    BLOCK_MIN_CHANNELS,
    CONV_2D_S8_ANY_LAYER,
    CONV_2D_S8_FIRST_LAYER,
    CONV_2D_S8_FIRST_LAYER_LONG,
    CONV_2D_S8_FIRST_POINTWISE,
    CONV_2D_S8_LONG_WINDOWS,
    CONV_2D_S8_POINTWISE,
    CONV_2D_S8_POINTWISE_BLOCKS,
    CONV_2D_S8_WIDE_WINDOWS,
    CONV_2D_S8_WINDOWS,
    CONV_COLUMN_MAX,
    DEPTHWISE_S8_3X3,
    DEPTHWISE_S8_PER_TAP_OFFSET,
    DEPTHWISE_S8_WINDOWS,
    FEW_BLOCK_TAPS_MAX,
    FIRST_VECTORS_MAX,
    HELIUM_COLUMNS,
    ROWS_UNROLLED_MAX,
    block_bytes,
    conv_2d_s8_entry,
    conv_columns_bytes,
    depthwise_conv_2d_s8_entry,
    helium_first_variant,
    helium_rows_variant,
)
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.firmware_build import build_firmware
from mcu_planner_testing.builder import Int8Net


def _layer(kh: int, kw: int, in_c: int, pad: int = 0, per_filter: int | None = None) -> dict[str, int]:
    return {
        "filter_h": kh,
        "filter_w": kw,
        "input_c": in_c,
        "pad_h": pad,
        "pad_w": pad,
        "filter_in_c_or_multiplier": in_c if per_filter is None else per_filter,
    }


def _conv_entry(kh: int, kw: int, in_c: int, pad: int = 0, per_filter: int | None = None, terms: bool = True):
    """The entry with the columns conv_columns_bytes plans for the layer."""
    layer = {**_layer(kh, kw, in_c, pad, per_filter), "stride_h": 1, "stride_w": 1, "dilation_w": 1, "output_c": 8}
    return conv_2d_s8_entry(layer, terms, conv_columns_bytes(layer))


def test_each_layer_takes_its_family_entry():
    assert _conv_entry(3, 3, 16, 1, terms=False) == CONV_2D_S8_ANY_LAYER
    assert _conv_entry(3, 3, 16, 1, per_filter=8) == CONV_2D_S8_ANY_LAYER  # groups
    assert _conv_entry(1, 1, 16) == CONV_2D_S8_POINTWISE_BLOCKS
    assert _conv_entry(1, 1, 577) == CONV_2D_S8_POINTWISE  # past BLOCK_TAPS_MAX: no blocks planned
    # The compact columns (a tight budget's): the other pointwise entry.
    compact = {**_layer(1, 1, 16, 0, None), "stride_h": 1, "stride_w": 1, "dilation_w": 1, "output_c": 8}
    assert conv_2d_s8_entry(compact, True, conv_columns_bytes(compact, blocks=False)) == CONV_2D_S8_POINTWISE
    assert _conv_entry(1, 1, 3) == CONV_2D_S8_FIRST_POINTWISE
    assert _conv_entry(1, 1, 16, 1) == CONV_2D_S8_WINDOWS  # padded 1x1: windows
    assert _conv_entry(3, 3, 3, 1) == CONV_2D_S8_FIRST_LAYER  # 27 values
    assert _conv_entry(3, 3, 4, 1) == CONV_2D_S8_FIRST_LAYER_LONG  # 36
    assert _conv_entry(10, 4, 1, 1) == CONV_2D_S8_FIRST_LAYER_LONG
    assert _conv_entry(2, 2, 64, 1) == CONV_2D_S8_WINDOWS  # 256 values
    assert _conv_entry(3, 3, 29, 1) == CONV_2D_S8_WIDE_WINDOWS  # 261
    assert _conv_entry(3, 3, 113, 1) == CONV_2D_S8_WIDE_WINDOWS  # 1,017 values
    # Helium runs those as one chunk, four windows rounded up to vectors of 16.
    assert conv_columns_bytes(_layer(3, 3, 113, 1), blocks=False) == 4 * 1024
    assert _conv_entry(3, 3, 114, 1) == CONV_2D_S8_LONG_WINDOWS  # 1,026
    assert _conv_entry(32, 33, 1) == CONV_2D_S8_LONG_WINDOWS  # past any first-layer path
    # Columns for fewer than four windows (never planned so): read in place.
    assert conv_2d_s8_entry(_layer(3, 3, 16, 1), True, 4 * 144 - 1) == CONV_2D_S8_LONG_WINDOWS
    assert depthwise_conv_2d_s8_entry(_layer(3, 3, 8), False) == DEPTHWISE_S8_PER_TAP_OFFSET
    assert depthwise_conv_2d_s8_entry(_layer(3, 3, 8), True) == DEPTHWISE_S8_3X3
    assert depthwise_conv_2d_s8_entry(_layer(1, 3, 8), True) == DEPTHWISE_S8_WINDOWS


def mcu_conv_rows_s8_defined() -> set[tuple[str, str]]:
    """The (vectors, tail) of every UNROLLED_ROWS(v, t) mcu_conv_helium_rows.c defines."""
    text = (firmware_dir() / "runtime" / "mcu_conv_helium_rows.c").read_text()
    return set(re.findall(r"^UNROLLED_ROWS\((\d+), ([01])\)$", text, re.M))


def _rows_layer(kh: int, kw: int, in_c: int, pad: int = 0, output_c: int = 8, pixels: int = 4) -> dict[str, int]:
    layer = {**_layer(kh, kw, in_c, pad), "batches": 1, "output_h": 1, "output_w": pixels, "output_c": output_c}
    return {**layer, "dilation_w": 1}


def test_helium_rows_take_the_loop_unrolled_for_their_length():
    """Rows of a pixel's input channels or of a window, 2 to 8 vectors of 16,
    the last partial or not; one vector, longer rows, the depthwise and
    reference entries, windows read in place and layers of fewer than four
    channels or pixels name none, nor first layers the first-layer passes
    take."""
    assert helium_rows_variant(_rows_layer(1, 1, 64), CONV_2D_S8_POINTWISE_BLOCKS) == "MCU_CONV_ROWS_S8(4, 0)"
    assert helium_rows_variant(_rows_layer(1, 1, 17), CONV_2D_S8_POINTWISE) == "MCU_CONV_ROWS_S8(2, 1)"
    assert helium_rows_variant(_rows_layer(3, 3, 12, 1), CONV_2D_S8_WINDOWS) == "MCU_CONV_ROWS_S8(7, 1)"  # 108
    assert helium_rows_variant(_rows_layer(2, 2, 32, 1), CONV_2D_S8_WINDOWS) == "MCU_CONV_ROWS_S8(8, 0)"  # 128
    assert helium_rows_variant(_rows_layer(7, 7, 1, 2), CONV_2D_S8_FIRST_LAYER_LONG) == "MCU_CONV_ROWS_S8(4, 1)"
    assert helium_rows_variant(_rows_layer(5, 5, 1, 2), CONV_2D_S8_FIRST_LAYER_LONG) == "NULL"  # a first pass
    assert helium_rows_variant(_rows_layer(1, 1, 16), CONV_2D_S8_POINTWISE) == "NULL"  # in registers
    assert helium_rows_variant(_rows_layer(1, 1, 129), CONV_2D_S8_POINTWISE) == "NULL"
    assert helium_rows_variant(_rows_layer(3, 3, 8, 1), CONV_2D_S8_ANY_LAYER) == "NULL"
    assert helium_rows_variant(_rows_layer(3, 3, 8, 1), CONV_2D_S8_LONG_WINDOWS) == "NULL"
    assert helium_rows_variant(_rows_layer(3, 3, 8, 1), DEPTHWISE_S8_3X3) == "NULL"
    assert helium_rows_variant(_rows_layer(1, 1, 64, output_c=3), CONV_2D_S8_POINTWISE) == "NULL"
    assert helium_rows_variant(_rows_layer(1, 1, 64, pixels=3), CONV_2D_S8_POINTWISE) == "NULL"


def test_helium_windows_of_whole_vectors_take_the_interleaved_columns():
    """Windows of input_c a multiple of 16, dilation_w 1, past the unrolled
    rows (3x3x16 = 144 values ...): interleaved columns, whatever the
    channel and pixel counts (its passes store 1 to 4 of each); other
    windows and entries keep their loops."""
    interleaved = "MCU_CONV_INTERLEAVED_S8(4, 2)"
    for kh, kw, in_c in ((3, 3, 16), (3, 3, 32), (3, 3, 64), (1, 9, 16), (3, 3, 112)):
        for output_c, pixels in ((16, 4), (3, 1)):
            layer = _rows_layer(kh, kw, in_c, 1, output_c=output_c, pixels=pixels)
            assert helium_rows_variant(layer, CONV_2D_S8_WINDOWS) == interleaved
    assert helium_rows_variant(_rows_layer(2, 2, 32, 1), CONV_2D_S8_WINDOWS) == "MCU_CONV_ROWS_S8(8, 0)"  # 128
    assert helium_rows_variant(_rows_layer(3, 3, 20, 1), CONV_2D_S8_WINDOWS) == "NULL"  # 180: a tail
    assert helium_rows_variant({**_rows_layer(3, 3, 16, 1), "dilation_w": 2}, CONV_2D_S8_WINDOWS) == "NULL"
    assert helium_rows_variant(_rows_layer(3, 3, 16, 1), CONV_2D_S8_LONG_WINDOWS) == "NULL"


def test_helium_first_layers_take_the_pass_compiled_for_their_vectors():
    """First-layer entries (1-4 input channels) of 1 to FIRST_VECTORS_MAX
    vectors of 16 name Helium's first-layer pass (pretrainedResnet_quant's
    3x3x3 no longer links the rows it never ran); longer windows and the other
    entries name none, and the columns hold four windows of whole vectors."""
    assert helium_first_variant(_rows_layer(3, 3, 3, 1), CONV_2D_S8_FIRST_LAYER) == "MCU_CONV_FIRST_S8(2)"
    assert helium_first_variant(_rows_layer(4, 1, 1, 1), CONV_2D_S8_FIRST_LAYER) == "MCU_CONV_FIRST_S8(1)"
    assert helium_first_variant(_rows_layer(5, 5, 1, 1), CONV_2D_S8_FIRST_LAYER) == "MCU_CONV_FIRST_S8(2)"
    # 10x4x1 (3 vectors): Helium's rows, which requantize four channels at once, are faster there.
    assert helium_first_variant(_rows_layer(10, 4, 1, 1), CONV_2D_S8_FIRST_LAYER_LONG) == "NULL"
    assert helium_first_variant(_rows_layer(1, 1, 3), CONV_2D_S8_FIRST_POINTWISE) == "NULL"
    assert helium_first_variant(_rows_layer(3, 3, 5, 1), CONV_2D_S8_WINDOWS) == "NULL"
    for kh, kw, in_c in ((4, 1, 1), (3, 3, 3), (5, 5, 1), (2, 2, 4)):
        layer = {**_rows_layer(kh, kw, in_c, 1), "stride_h": 1, "stride_w": 1, "dilation_w": 1}
        vectors = -(-kh * kw * in_c // 16)
        for blocks in (True, False):
            assert conv_columns_bytes(layer, blocks=blocks) >= HELIUM_COLUMNS * 16 * vectors
    header = (firmware_dir() / "runtime" / "mcu_conv.h").read_text()
    declared = {int(v) for v in re.findall(r"\bmcu_conv_first_s8_(\d+)\b", header)}
    assert declared == set(range(1, FIRST_VECTORS_MAX + 1))
    assert FIRST_VECTORS_MAX == _c_define("mcu_conv.h", "MCU_CONV_FIRST_VECTORS_MAX")


def _c_define(file: str, name: str) -> int:
    text = (firmware_dir() / "runtime" / file).read_text()
    return int(re.search(rf"^#define {name} (\d+)$", text, re.M).group(1))


def test_the_choice_reads_the_runtime_limits():
    """The limits conv_2d_s8_entry reads are the C's: a family's variants
    then take every layer the generator gives them."""
    assert CONV_COLUMN_MAX == _c_define("mcu_conv_internal.h", "MCU_CONV_COLUMN_MAX")
    assert BLOCK_MIN_CHANNELS == _c_define("mcu_conv_dsp_block.h", "MCU_CONV_BLOCK_MIN_CHANNELS")
    assert FEW_BLOCK_TAPS_MAX == _c_define("mcu_conv_few_channels_dsp.c", "FEW_BLOCK_WINDOW_MAX")
    assert ROWS_UNROLLED_MAX == _c_define("mcu_conv.h", "MCU_CONV_ROWS_UNROLLED_MAX")
    # Every variant helium_rows_variant may name is one mcu_conv.h declares.
    header = (firmware_dir() / "runtime" / "mcu_conv.h").read_text()
    declared = set(re.findall(r"\bmcu_conv_rows_s8_(\d+)_([01])\b", header))
    rows = mcu_conv_rows_s8_defined()
    named = {
        re.fullmatch(r"MCU_CONV_ROWS_S8\((\d+), ([01])\)", variant).groups()
        for n in range(1, 200)
        if (variant := helium_rows_variant(_rows_layer(1, 1, n), CONV_2D_S8_POINTWISE)) != "NULL"
    }
    assert named == declared == rows
    block = (firmware_dir() / "runtime" / "mcu_conv_dsp_block.h").read_text()
    macro = re.search(r"^#define MCU_CONV_BLOCK_BYTES\(n\) (.*)$", block, re.M).group(1)
    assert all(eval(macro.replace("/", "//"), {"n": n}) == block_bytes(n) for n in range(1, 700))
    internal = (firmware_dir() / "runtime" / "mcu_conv_internal.h").read_text()
    per_core = [int(n) for n in re.findall(r"^#define MCU_CONV_COLUMNS (\d+)$", internal, re.M)]
    assert len(per_core) == 2 and HELIUM_COLUMNS == max(per_core)


def _pointwise_model() -> bytes:
    """Pointwise layers and a 1 x 3 depthwise one: none of them a first
    layer, a window of a convolution or a 3 x 3 depthwise filter."""
    net = Int8Net(41)
    x = net.input((1, 6, 5, 13), -1.0, 2.0)
    x = net.conv2d(x, 9, kernel=(1, 1), activation="RELU")
    x = net.depthwise_conv2d(x, kernel=(1, 3), padding="SAME", depth_multiplier=2)
    return net.build(net.conv2d(x, 7, kernel=(1, 1), strides=(2, 1)))


# Variants no layer of _pointwise_model takes, per board: each would weigh
# hundreds of bytes to kilobytes of flash.  (The M4's pointwise DSP blocks
# keep the reference loops as their net: mcu_conv_2d_s8_per_tap_offset.)
NOT_LINKED = {
    "mps2-an386": (
        "mcu_conv_1x1_s8",  # the DSP blocks take both pointwise layers
        "mcu_conv_few_channels_block_s8",
        "mcu_conv_2d_s8_few_channels",
        "mcu_conv_window_block_s8",
        "mcu_conv_2d_s8_columns",
        "mcu_conv_2d_s8_one_group",
        "mcu_depthwise_3x3_s8",
        "mcu_depthwise_conv_2d_s8_per_tap_offset",
    ),
    "mps3-an547": (
        "mcu_conv_2d_s8_first_helium",
        "mcu_conv_2d_s8_columns_helium",
        "mcu_conv_2d_s8_chunks_helium",
        "mcu_helium_dot4x2_s8",
        "mcu_conv_2d_s8_long_windows_helium",
        "mcu_conv_2d_s8_one_group",
        "mcu_conv_2d_s8_per_tap_offset",
        "mcu_depthwise_conv_2d_s8_per_tap_offset",
    ),
}
# ... and the ones its layers do take (so that the check above reads real symbols).
LINKED = {
    "mps2-an386": ("mcu_conv_1x1_block_s8", "mcu_depthwise_conv_2d_s8_windows"),
    "mps3-an547": ("mcu_conv_1x1_s8", "mcu_conv_1x1_helium_s8", "mcu_depthwise_conv_2d_s8_windows"),
}


@needs_cortex_m
@pytest.mark.parametrize("board", sorted(NOT_LINKED))
def test_pointwise_firmware_links_no_window_variants_and_stays_exact(board, tmp_path):
    model = _pointwise_model()
    graph, _, files = generate_for_model(model, name="pw")
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board=board, ram_bytes=64 * 1024)
    symbols = set(
        subprocess.run(["arm-none-eabi-nm", str(report.elf)], capture_output=True, text=True, check=True).stdout.split()
    )
    assert set(LINKED[board]) <= symbols, set(LINKED[board]) - symbols
    assert not set(NOT_LINKED[board]) & symbols, set(NOT_LINKED[board]) & symbols
    assert_firmware_matches_reference(report.elf, model, graph, board)


def _wide_pointwise_model() -> bytes:
    """Pointwise layers on 64 input channels only: Helium's rows of four
    whole vectors."""
    net = Int8Net(43)
    x = net.input((1, 3, 5, 64), -1.0, 2.0)
    x = net.conv2d(x, 64, kernel=(1, 1), activation="RELU")
    return net.build(net.conv2d(x, 6, kernel=(1, 1)))


@needs_cortex_m
def test_helium_firmware_links_only_the_rows_its_layers_take(tmp_path):
    """Of the Cortex-M55's rows unrolled per number of vectors, a firmware
    links the one its layers name (issue 23: all fourteen weigh about
    18 KB) and stays exact (15 pixels: passes of four and a lone one)."""
    model = _wide_pointwise_model()
    graph, _, files = generate_for_model(model, name="wide")
    outdir = write_output(files, tmp_path / "out")
    report = build_firmware(outdir, model=files.interface, board="mps3-an547", ram_bytes=64 * 1024)
    names = subprocess.run(["arm-none-eabi-nm", str(report.elf)], capture_output=True, text=True, check=True).stdout
    linked = set(re.findall(r"\bmcu_conv_rows_s8_(\d+)_([01])\b", names))
    unrolled = set(re.findall(r"\bunrolled_rows_(\d+)_([01])\b", names))
    assert linked == unrolled == {("4", "0")}, (linked, unrolled)
    assert_firmware_matches_reference(report.elf, model, graph, "mps3-an547")
