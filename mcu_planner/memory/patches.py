"""Patch-based execution of a stage (MCUNetV2's method, Lin et al. 2021).

A stage is a run of spatially local single-input ops (convolutions,
depthwise convolutions, pooling), each consuming only its predecessor's
output, from a stage input to a stage output.  Run whole, every tensor of
the stage is alive at full size in turn; run patch by patch, only the stage
input and output are whole, and each tensor in between holds one patch.

The patches here are horizontal strips of the stage output: strip j covers
output rows [j * R, (j + 1) * R).  Walking backwards through the stage, each
op's output rows need the input rows of their windows, clipped to the
tensor (rows of the padding are not computed, they are the kernel's
padding): row y of a window at output row r is r * stride - pad + tap *
dilation.  The rows shared by neighbouring strips (the halo) are computed
once per strip: the extra multiply-accumulates this costs are counted.

A strip of a batch-1 NHWC tensor is a contiguous run of bytes, so the first
op reads its window straight out of the stage input and the last writes
straight into the stage output: every op is the ordinary kernel with the
patch's geometry (input_h = the window's rows, output_h = the strip's rows,
pad_h = the op's padding less the window's offset, which is nonzero only at
the tensor's top border; the kernels bound-check every tap against input_h,
mcu_conv_geometry.h, mcu_pool.c).

A grid of R x C patches (C > 1) cuts the strips into columns too: the
windows along the width come from the same backward computation, and every
op of a patch is the ordinary kernel on a rows x columns tensor (input_w,
output_w and pad_w as input_h, output_h and pad_h).  Such a window is not
contiguous in the whole tensor, so the first op's input window is gathered
into a patch buffer and the last op's patch scattered out of another, with
mcu_copy_window (rows of bytes at two pitches).  Copies rather than a row
pitch in every kernel: the kernels (and their Helium and DSP paths, which
treat a tensor as rows of input_w * channels bytes) stay as they are, and
the copies move only the stage input and output once per patch, a small
share of a stage's multiply-accumulates.  The two patch buffers are scratch
tensors of the first and last op, planned and checked like any other.

Patches run row of patches by row of patches, left to right, so rows of
the stage output may overwrite input rows that no later patch reads:
lifetimes.py gives the stage input and output a partial overlap whose walk
(`stage_access`) is the stage's receptive field, one group of pixels per
row of patches (a group reads and writes in any order among its pixels, so
the patches of a row, in any order, are within the same walk).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..graph import DTYPE_BITS, Graph, PatchStage, PatchWindow, RowGeometry, Tensor, Window
from ..lowering import KernelCall, ParamValue
from ..lowering.conv import COLUMNS_SCRATCH
from ..lowering.program import Program
from .problem import WindowAccess

__all__ = ["RowGeometry", "Window"]  # patch geometry, kept in graph.py beside PatchWindow

# Most strips a stage is cut into when the planner searches (a forced grid may ask for more).
MAX_SEARCHED_STRIPS = 16
# Most patches per side of the n x n grids the planner searches.
MAX_SEARCHED_GRID = 6


def patchable_call(op_index: int, program: Program) -> KernelCall | None:
    """The op's kernel call when the op may be part of a stage (its facts
    give it a window), else None."""
    graph = program.graph
    op = graph.operators[op_index]
    lowered = program.ops[op_index]
    stage = program.patch_stage
    patch_buffers = {stage.gather, stage.scatter} if stage is not None else set()
    # A kernel's own working scratch (the convolution's columns) does not
    # depend on the patch geometry; any other scratch keeps the op whole.
    own_scratch = {t for t in op.scratch if graph.tensors[t].name.endswith(f"_scratch_{COLUMNS_SCRATCH}")}
    if lowered.call is None or lowered.facts.window is None or set(op.scratch) - patch_buffers - own_scratch:
        return None
    if not op.inputs or op.inputs[0] < 0 or len(op.outputs) != 1:
        return None
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(inp.shape) != 4 or len(out.shape) != 4 or inp.shape[0] != 1 or inp.is_constant or inp.is_variable:
        return None
    if out.shape[0] != 1:
        return None
    return lowered.call


def op_window(program: Program, op_index: int) -> Window:
    """The window of a patchable op (its facts)."""
    window = program.facts(op_index).window
    assert window is not None, f"op {op_index} has no window"
    return window


def stage_runs(program: Program) -> list[tuple[int, ...]]:
    """Every maximal run of consecutive patchable ops in which each op reads
    only its predecessor's output (which nothing else reads and is no graph
    output); runs of one op are left out (nothing to keep small)."""
    graph = program.graph
    consumers = graph.consumers()
    outputs = set(graph.outputs)
    runs: list[tuple[int, ...]] = []
    current: list[int] = []
    for op in graph.operators:
        call = patchable_call(op.index, program)
        if call is not None and current:
            prev = graph.operators[current[-1]]
            link = prev.outputs[0]
            chained = (
                op.index == prev.index + 1
                and op.inputs[0] == link
                and consumers.get(link, []) == [op.index]
                and link not in outputs
                and link not in op.inputs[1:]
            )
            if chained:
                current.append(op.index)
                continue
        if len(current) > 1:
            runs.append(tuple(current))
        current = [op.index] if call is not None else []
    if len(current) > 1:
        runs.append(tuple(current))
    return runs


# Runs, from the model's start, whose prefixes the planner tries as stages:
# the early, high-resolution layers are where whole tensors are largest.
SEARCHED_RUNS = 3


def candidate_stages(program: Program) -> list[tuple[int, ...]]:
    """The stages worth trying: every prefix (of two ops or more) of each of
    the first SEARCHED_RUNS runs (a stage starts where a run does: its input
    is then whole anyway)."""
    return [run[:n] for run in stage_runs(program)[:SEARCHED_RUNS] for n in range(2, len(run) + 1)]


def strip_options(graph: Graph, ops: tuple[int, ...], most: int = MAX_SEARCHED_STRIPS) -> list[int]:
    """Rows per strip giving each number of strips from 2 to `most` once."""
    return _cuts(_shape(graph, ops[-1])[0], most)


def grid_options(graph: Graph, ops: tuple[int, ...], most: int = MAX_SEARCHED_GRID) -> list[tuple[int, int]]:
    """(rows, columns) per patch giving each n x n grid from 2 x 2 to `most` x `most` once."""
    height, width = _shape(graph, ops[-1])
    options: list[tuple[int, int]] = []
    for n in range(2, most + 1):
        rows, cols = _cut(height, n), _cut(width, n)
        if rows and cols and (rows, cols) not in options:
            options.append((rows, cols))
    return options


def _cut(length: int, parts: int) -> int:
    """The size of `parts` equal pieces of `length` (the last may be shorter), 0 when fewer pieces than 2 result."""
    if parts > length:
        return 0
    size = math.ceil(length / parts)
    return size if math.ceil(length / size) > 1 else 0


def _cuts(length: int, most: int) -> list[int]:
    seen: list[int] = []
    for n in range(2, min(most, length) + 1):
        size = _cut(length, n)
        if size and size not in seen:
            seen.append(size)
    return seen


def _backward(geometry: list[RowGeometry], first: int, end: int) -> list[PatchWindow]:
    """Each op's window along one axis for output [first, end) of the last op, in stage order."""
    per_op: list[PatchWindow] = []
    for g in reversed(geometry):
        window = g.window(first, end)
        per_op.append(window)
        first, end = window.in_first, window.in_end
    return per_op[::-1]


def make_stage(program: Program, ops: tuple[int, ...], strip_rows: int, patch_cols: int = 0) -> PatchStage:
    """The stage `ops` cut into rows of patches of `strip_rows` output rows,
    each row cut into patches of `patch_cols` output columns (0: full-width
    strips, as when that gives one patch per row)."""
    graph = program.graph
    if any(patchable_call(index, program) is None for index in ops):
        raise ValueError(f"ops {ops} cannot run patch by patch")
    windows_of = [op_window(program, index) for index in ops]
    first_op, last_op = graph.operators[ops[0]], graph.operators[ops[-1]]
    height, width = windows_of[-1].output_h, windows_of[-1].output_w
    if patch_cols >= width:
        patch_cols = 0
    row_windows = [
        _backward([w.rows for w in windows_of], first, min(height, first + strip_rows))
        for first in range(0, height, strip_rows)
    ]
    if patch_cols:
        column_windows = [
            _backward([w.columns for w in windows_of], first, min(width, first + patch_cols))
            for first in range(0, width, patch_cols)
        ]
        windows = [
            tuple(replace(r, columns=c) for r, c in zip(rows, columns, strict=True))
            for rows in row_windows
            for columns in column_windows
        ]
    else:
        windows = [tuple(rows) for rows in row_windows]
    intermediates = tuple(graph.operators[index].outputs[0] for index in ops[:-1])
    patch_bytes = tuple(
        max(output_pixels(w[position], windows_of[position]) for w in windows) * pixel_bytes(graph, t)
        for position, t in enumerate(intermediates)
    )
    copy_bytes = (0, 0)
    if patch_cols:  # the largest input window the first op reads, and the largest patch the last writes
        gather = max(input_pixels(w[0], windows_of[0]) for w in windows)
        scatter = max(output_pixels(w[-1], windows_of[-1]) for w in windows)
        copy_bytes = (gather * pixel_bytes(graph, first_op.inputs[0]), scatter * pixel_bytes(graph, last_op.outputs[0]))
    op_extra = []
    for position, index in enumerate(ops):
        whole = windows_of[position].output_h * windows_of[position].output_w
        computed = sum(output_pixels(w[position], windows_of[position]) for w in windows)
        op_extra.append(program.facts(index).macs * (computed - whole) // max(1, whole))
    extra = sum(op_extra)
    return PatchStage(
        ops=tuple(ops),
        input=first_op.inputs[0],
        output=last_op.outputs[0],
        intermediates=intermediates,
        rows=len(row_windows),
        strip_rows=strip_rows,
        windows=tuple(windows),
        patch_bytes=patch_bytes,
        extra_macs=extra,
        model_macs=program.model_macs,
        cols=len(windows) // len(row_windows),
        patch_cols=patch_cols,
        copy_bytes=copy_bytes,
        op_extra_macs=tuple(op_extra),
    )


def output_pixels(window: PatchWindow, whole: Window) -> int:
    """Pixels of the op's output a patch computes."""
    columns = whole.output_w if window.columns is None else window.columns.out_end - window.columns.out_first
    return (window.out_end - window.out_first) * columns


def input_pixels(window: PatchWindow, whole: Window) -> int:
    """Pixels of the op's input a patch reads (its window)."""
    columns = whole.input_w if window.columns is None else window.columns.in_end - window.columns.in_first
    return (window.in_end - window.in_first) * columns


def with_stage(program: Program, stage: PatchStage) -> Program:
    """`program` running `stage` patch by patch; a grid's two patch buffers
    become scratch tensors of the stage's first and last op (scratch.py).
    The ops' calls stay as lowered: codegen runs each on every patch's
    window (its facts' `for_window`)."""
    if stage.cols == 1:
        return replace(program, patch_stage=stage)
    graph = program.graph
    first, last = stage.ops[0], stage.ops[-1]
    tensors = list(graph.tensors)
    indices = []
    for op, tensor, nbytes, role in (
        (first, stage.input, stage.copy_bytes[0], "gather"),
        (last, stage.output, stage.copy_bytes[1], "scatter"),
    ):
        dtype = graph.tensors[tensor].dtype
        index = len(tensors)
        name = f"op{op}_{graph.operators[op].opcode.lower()}_scratch_{role}"
        tensors.append(Tensor(index, name, (max(1, nbytes * 8 // DTYPE_BITS[dtype]),), dtype, is_scratch=True))
        indices.append(index)
    operators = list(graph.operators)
    operators[first] = replace(operators[first], scratch=operators[first].scratch + (indices[0],))
    operators[last] = replace(operators[last], scratch=operators[last].scratch + (indices[1],))
    stage = replace(stage, gather=indices[0], scatter=indices[1])
    patched = replace(graph, tensors=tuple(tensors), operators=tuple(operators))
    return replace(program, graph=patched, patch_stage=stage)


def stage_access(program: Program, stage: PatchStage) -> WindowAccess:
    """The stage as one windowed kernel over its input and output: its
    receptive field (the composition of every op's window, unclipped: a
    superset of the pixels a patch reads) and one group of pixels per row of
    patches, in order.  Each patch reads all of its input (first op) before
    it writes any of its output (last op); the patches of one row interleave
    their reads and writes, which a group of the walk allows."""
    filter_h = filter_w = 1
    pad_h = pad_w = 0
    stride_h = stride_w = 1
    graph = program.graph
    for index in stage.ops:
        w = op_window(program, index)
        filter_h += (w.filter_h - 1) * w.dilation_h * stride_h
        filter_w += (w.filter_w - 1) * w.dilation_w * stride_w
        pad_h += w.pad_h * stride_h
        pad_w += w.pad_w * stride_w
        stride_h *= w.stride_h
        stride_w *= w.stride_w
    inp, out = graph.tensors[stage.input], graph.tensors[stage.output]
    return WindowAccess(
        batches=1,
        input_h=inp.shape[1],
        input_w=inp.shape[2],
        input_pixel_bytes=inp.shape[3] * DTYPE_BITS[inp.dtype] // 8,
        output_h=out.shape[1],
        output_w=out.shape[2],
        output_pixel_bytes=out.shape[3] * DTYPE_BITS[out.dtype] // 8,
        filter_h=filter_h,
        filter_w=filter_w,
        stride_h=stride_h,
        stride_w=stride_w,
        pad_h=pad_h,
        pad_w=pad_w,
        group=stage.strip_rows * out.shape[2],
    )


def _shape(graph: Graph, op_index: int) -> tuple[int, int]:
    """The op's output rows and columns."""
    shape = graph.tensors[graph.operators[op_index].outputs[0]].shape
    return shape[1], shape[2]


def patch_call(program: Program, op_index: int, window: PatchWindow) -> KernelCall:
    """The op's kernel call for one patch: its window only (its facts' `for_window`)."""
    for_window = program.facts(op_index).for_window
    assert for_window is not None, f"op {op_index} has no window"
    return for_window(window)


def window_copy_calls(graph: Graph, stage: PatchStage, gather: bool) -> list[KernelCall]:
    """Per patch of a grid (with_stage's graph): the mcu_copy_window call
    gathering the first op's input window from the stage input (`gather`)
    or scattering the last op's patch into the stage output, each from or
    to the patch's first pixel (the caller offsets the whole tensor)."""
    whole = stage.input if gather else stage.output
    pixel = pixel_bytes(graph, whole)
    pitch = graph.tensors[whole].shape[2] * pixel
    calls = []
    for windows in stage.windows:
        w = windows[0] if gather else windows[-1]
        assert w.columns is not None, "strips need no copies"
        if gather:
            rows, cols = w.in_end - w.in_first, w.columns.in_end - w.columns.in_first
        else:
            rows, cols = w.out_end - w.out_first, w.columns.out_end - w.columns.out_first
        params: dict[str, ParamValue] = {
            "rows": rows,
            "row_bytes": cols * pixel,
            "input_pitch": pitch if gather else cols * pixel,
            "output_pitch": cols * pixel if gather else pitch,
        }
        args = (stage.input, stage.gather) if gather else (stage.scatter, stage.output)
        calls.append(KernelCall("mcu_copy_window", "mcu_copy_window_params", params, args, ("mcu_copy",)))
    return calls


def pixel_bytes(graph: Graph, tensor: int) -> int:
    t = graph.tensors[tensor]
    return t.shape[3] * DTYPE_BITS[t.dtype] // 8


def row_bytes(graph: Graph, tensor: int) -> int:
    t = graph.tensors[tensor]
    return t.shape[2] * t.shape[3] * DTYPE_BITS[t.dtype] // 8
