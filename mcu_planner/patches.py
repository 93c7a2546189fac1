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

Strips run top to bottom, so strip j of the stage output may overwrite
input rows that no later strip reads: lifetimes.py gives the stage input
and output a partial overlap whose walk (`stage_access`) is the stage's
receptive field, one group of pixels per strip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .errors import McuPlanError
from .graph import DTYPE_BITS, Graph, PatchStage, PatchWindow
from .lowering import CArray, KernelCall, NotLowerable, lower
from .lowering.traits import IN_PLACE_DEPTHWISE
from .macs import op_macs
from .problem import WindowAccess

# Unary elementwise ops whose kernels walk `size` elements one by one (mcu_activations.c, mcu_math.c).
ELEMENTWISE_OPCODES = frozenset(
    {
        "LOGISTIC",
        "TANH",
        "EXP",
        "GELU",
        "ABS",
        "LOG",
        "SQRT",
        "RSQRT",
        "NEG",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "LEAKY_RELU",
        "HARD_SWISH",
    }
)
ELEMENTWISE_SOURCES = frozenset({"mcu_activations", "mcu_math"})
PATCHABLE_OPCODES = (
    frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "PAD", "PADV2"}) | ELEMENTWISE_OPCODES
)
# The kernels whose every read goes through their geometry fields (so that a
# window of rows is an ordinary call).  The hybrid kernels are not among
# them: they quantize their whole input with one scale from its largest value.
PATCHABLE_KERNELS = frozenset(
    {
        "mcu_conv_2d_s8",
        "mcu_conv_2d_f32",
        "mcu_conv_2d_u8",
        "mcu_conv_2d_s16",
        "mcu_depthwise_conv_2d_s8",
        "mcu_depthwise_conv_2d_f32",
        "mcu_depthwise_conv_2d_u8",
        "mcu_depthwise_conv_2d_s16",
        "mcu_average_pool_2d_s8",
        "mcu_average_pool_2d_u8",
        "mcu_average_pool_2d_f32",
        "mcu_average_pool_2d_s16",
        "mcu_max_pool_2d_s8",
        "mcu_max_pool_2d_u8",
        "mcu_max_pool_2d_f32",
        "mcu_max_pool_2d_s16",
        "mcu_pad",
    }
)
# mcu_pad's input_dims and output_strides: NHWC padded to its rank of six.
PAD_ROW_DIM = 3
# Most strips a stage is cut into when the planner searches (a forced grid may ask for more).
MAX_SEARCHED_STRIPS = 16


@dataclass(frozen=True)
class RowGeometry:
    """An op's geometry along the rows, as its kernel call states it."""

    input_h: int
    output_h: int
    filter_h: int
    stride_h: int
    dilation_h: int
    pad_h: int

    def input_rows(self, first: int, end: int) -> tuple[int, int]:
        """The rows from the first to the last input row that output rows
        [first, end) read (taps in the padding read nothing; a dilated
        window may skip rows at the border); empty when all are padding."""
        low, high = self.input_h, 0
        for row in range(first, end):
            start = row * self.stride_h - self.pad_h
            lead = -(start // self.dilation_h) if start < 0 else 0  # taps above row 0
            last = min(self.filter_h - 1, (self.input_h - 1 - start) // self.dilation_h)
            if lead <= last:
                low = min(low, start + lead * self.dilation_h)
                high = max(high, start + last * self.dilation_h + 1)
        if low >= high:
            return 0, 0
        return low, high

    def window(self, first: int, end: int) -> PatchWindow:
        """Output rows [first, end) as a patch: the input rows they read and
        the padding above them (row y of the input is row y - in_first of
        the window, so the pad is the op's pad plus in_first, less the
        strip's first row times the stride)."""
        in_first, in_end = self.input_rows(first, end)
        if in_first == in_end:  # all padding (below a PAD's input, say): no tap lands, any pad will do
            return PatchWindow(0, 0, first, end, 0)
        return PatchWindow(in_first, in_end, first, end, self.pad_h + in_first - first * self.stride_h)


@dataclass(frozen=True)
class Window:
    """An op's window along both axes, as its kernel call states it (a PAD
    of height and width is a 1 x 1 window whose padding is the PAD's top
    rows and left columns)."""

    input_h: int
    output_h: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_h: int
    pad_w: int

    @property
    def rows(self) -> RowGeometry:
        return RowGeometry(self.input_h, self.output_h, self.filter_h, self.stride_h, self.dilation_h, self.pad_h)


def _ints(call: KernelCall) -> dict[str, int]:
    return {k: v for k, v in call.params.items() if isinstance(v, int)}


def _pad_row_and_column(call: KernelCall) -> tuple[int, int]:
    """A PAD's output row in elements (W x C), and the elements before its first input element in a row."""
    strides = call.params["output_strides"]
    assert isinstance(strides, CArray)
    row = int(strides.values[PAD_ROW_DIM])
    return row, _ints(call)["output_origin"] % row


def call_window(call: KernelCall, height: int) -> Window:
    """The window of `call`, whose output has `height` rows."""
    p = _ints(call)
    if is_elementwise(call):
        return Window(height, height, 1, 1, 1, 1, 1, 1, 0, 0)
    if call.function == "mcu_pad":
        dims = call.params["input_dims"]
        assert isinstance(dims, CArray)
        row, before = _pad_row_and_column(call)
        channels = int(dims.values[-1])
        input_h = int(dims.values[PAD_ROW_DIM])
        output_h = p["output_elements"] // (row * int(dims.values[PAD_ROW_DIM - 1]))
        return Window(input_h, output_h, 1, 1, 1, 1, 1, 1, p["output_origin"] // row, before // channels)
    return Window(
        p["input_h"],
        p["output_h"],
        p["filter_h"],
        p["filter_w"],
        p["stride_h"],
        p["stride_w"],
        p.get("dilation_h", 1),
        p.get("dilation_w", 1),
        p["pad_h"],
        p["pad_w"],
    )


def is_elementwise(call: KernelCall) -> bool:
    return bool(ELEMENTWISE_SOURCES & set(call.sources)) and "size" in call.params


def patchable_call(op_index: int, graph: Graph) -> KernelCall | None:
    """The op's kernel call when the op may be part of a stage, else None."""
    op = graph.operators[op_index]
    if op.opcode not in PATCHABLE_OPCODES or op.scratch or op.options.get(IN_PLACE_DEPTHWISE):
        return None
    if not op.inputs or op.inputs[0] < 0 or len(op.outputs) != 1:
        return None
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(inp.shape) != 4 or len(out.shape) != 4 or inp.shape[0] != 1 or inp.is_constant or inp.is_variable:
        return None
    if out.shape[0] != 1 or (op.opcode in ("PAD", "PADV2") and inp.shape[3] != out.shape[3]):
        return None  # a PAD of height and width only
    try:
        call = lower(op, graph)
    except (NotLowerable, McuPlanError):
        return None
    if op.opcode in ELEMENTWISE_OPCODES:
        elementwise = is_elementwise(call) and call.params["size"] == inp.num_elements and inp.shape == out.shape
        return call if elementwise else None
    return call if call.function in PATCHABLE_KERNELS else None


def stage_runs(graph: Graph) -> list[tuple[int, ...]]:
    """Every maximal run of consecutive patchable ops in which each op reads
    only its predecessor's output (which nothing else reads and is no graph
    output); runs of one op are left out (nothing to keep small)."""
    consumers = graph.consumers()
    outputs = set(graph.outputs)
    runs: list[tuple[int, ...]] = []
    current: list[int] = []
    for op in graph.operators:
        call = patchable_call(op.index, graph)
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


def candidate_stages(graph: Graph) -> list[tuple[int, ...]]:
    """The stages worth trying: every prefix (of two ops or more) of each of
    the first SEARCHED_RUNS runs (a stage starts where a run does: its input
    is then whole anyway)."""
    return [run[:n] for run in stage_runs(graph)[:SEARCHED_RUNS] for n in range(2, len(run) + 1)]


def strip_options(graph: Graph, ops: tuple[int, ...], most: int = MAX_SEARCHED_STRIPS) -> list[int]:
    """Rows per strip giving each number of strips from 2 to `most` once."""
    height = graph.tensors[graph.operators[ops[-1]].outputs[0]].shape[1]
    seen: list[int] = []
    for n in range(2, min(most, height) + 1):
        rows = math.ceil(height / n)
        if rows not in seen and math.ceil(height / rows) > 1:
            seen.append(rows)
    return seen


def make_stage(graph: Graph, ops: tuple[int, ...], strip_rows: int) -> PatchStage:
    """The stage `ops` cut into strips of `strip_rows` output rows."""
    calls = [patchable_call(index, graph) for index in ops]
    geometry = [call_window(call, _height(graph, index)).rows for call, index in zip(calls, ops) if call is not None]
    if len(geometry) != len(ops):
        raise ValueError(f"ops {ops} cannot run patch by patch")
    first_op, last_op = graph.operators[ops[0]], graph.operators[ops[-1]]
    height = geometry[-1].output_h
    windows = []
    for first in range(0, height, strip_rows):
        rows = (first, min(height, first + strip_rows))
        per_op: list[PatchWindow] = []
        for g in reversed(geometry):
            window = g.window(*rows)
            per_op.append(window)
            rows = (window.in_first, window.in_end)
        windows.append(tuple(reversed(per_op)))
    intermediates = tuple(graph.operators[index].outputs[0] for index in ops[:-1])
    patch_bytes = []
    for position, t in enumerate(intermediates):
        patch_bytes.append(max(w[position].out_end - w[position].out_first for w in windows) * row_bytes(graph, t))
    extra = 0
    for position, index in enumerate(ops):
        op = graph.operators[index]
        computed = sum(w[position].out_end - w[position].out_first for w in windows)
        extra += op_macs(graph, op) * (computed - geometry[position].output_h) // max(1, geometry[position].output_h)
    return PatchStage(
        ops=tuple(ops),
        input=first_op.inputs[0],
        output=last_op.outputs[0],
        intermediates=intermediates,
        rows=len(windows),
        strip_rows=strip_rows,
        windows=tuple(windows),
        patch_bytes=tuple(patch_bytes),
        extra_macs=extra,
        model_macs=sum(op_macs(graph, op) for op in graph.operators),
    )


def with_stage(graph: Graph, stage: PatchStage) -> Graph:
    return replace(graph, patch_stage=stage)


def stage_access(graph: Graph, stage: PatchStage) -> WindowAccess:
    """The stage as one windowed kernel over its input and output: its
    receptive field (the composition of every op's window, unclipped: a
    superset of the rows a strip reads) and one group of pixels per strip,
    strips in order.  Each strip reads all of its input (first op) before it
    writes any of its output (last op)."""
    filter_h = filter_w = 1
    pad_h = pad_w = 0
    stride_h = stride_w = 1
    for index in stage.ops:
        call = patchable_call(index, graph)
        assert call is not None
        w = call_window(call, _height(graph, index))
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


def _height(graph: Graph, op_index: int) -> int:
    return graph.tensors[graph.operators[op_index].outputs[0]].shape[1]


def patch_call(call: KernelCall, window: PatchWindow, height: int) -> KernelCall:
    """The op's kernel call (its output `height` rows) for one patch: its rows only."""
    rows_in, rows_out = window.in_end - window.in_first, window.out_end - window.out_first
    if is_elementwise(call):
        size = call.params["size"]
        assert isinstance(size, int)
        return replace(call, params={**call.params, "size": size // height * rows_out})
    if call.function == "mcu_pad":
        dims = call.params["input_dims"]
        assert isinstance(dims, CArray)
        row, before = _pad_row_and_column(call)
        values = list(dims.values)
        values[PAD_ROW_DIM] = rows_in
        return replace(
            call,
            params={
                **call.params,
                "input_dims": CArray(dims.c_type, tuple(values)),
                "output_elements": rows_out * row,
                "output_origin": window.pad_h * row + before,
            },
        )
    return replace(
        call,
        params={
            **call.params,
            "input_h": window.in_end - window.in_first,
            "output_h": window.out_end - window.out_first,
            "pad_h": window.pad_h,
        },
    )


def row_bytes(graph: Graph, tensor: int) -> int:
    t = graph.tensors[tensor]
    return t.shape[2] * t.shape[3] * DTYPE_BITS[t.dtype] // 8
