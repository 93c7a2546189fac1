"""The model as the reader hands it on: tensors and operators in execution order.

Nothing here knows about flatbuffers; later stages read only these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .shown import shown

# Bits per element; int4 is packed two to a byte, as TFLite stores it.
DTYPE_BITS = {
    "bool": 8,
    "int4": 4,
    "int8": 8,
    "uint8": 8,
    "int16": 16,
    "float16": 16,
    "int32": 32,
    "float32": 32,
    "int64": 64,
    # Types no kernel reads; sized so that a model holding them still plans,
    # and generation names them (exit 4).
    "bfloat16": 16,
    "uint16": 16,
    "uint32": 32,
    "uint64": 64,
    "float64": 64,
    "complex64": 64,
    "complex128": 128,
}

# C type of one element, for the dtypes the generated code can touch.
DTYPE_C_TYPE = {
    "bool": "uint8_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float32": "float",
}


def unpack_int4(packed: bytes, count: int) -> np.ndarray:
    """`count` signed 4-bit values from `packed`, low nibble first, as int8."""
    raw = np.frombuffer(packed, dtype=np.uint8, count=(count + 1) // 2)
    nibbles = np.empty(raw.size * 2, dtype=np.uint8)
    nibbles[0::2] = raw & 0x0F
    nibbles[1::2] = raw >> 4
    # Sign-extend: nibbles 8..15 are -8..-1.
    values: np.ndarray = (nibbles[:count] ^ 8).astype(np.int8) - np.int8(8)
    return values


@dataclass(frozen=True)
class Quantization:
    scales: tuple[float, ...]  # float32 values widened to Python floats
    zero_points: tuple[int, ...]
    axis: int = 0  # quantized dimension when len(scales) > 1 (per-channel)

    @property
    def per_channel(self) -> bool:
        return len(self.scales) > 1


@dataclass(frozen=True)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str  # a key of DTYPE_BITS
    quantization: Quantization | None = None
    data: bytes | None = None  # constant contents (little-endian, as stored); None for activations
    is_variable: bool = False
    # Per-op working memory added by scratch.py (not in the flatbuffer): alive
    # only at the step of the op that lists it in `Operator.scratch`.
    is_scratch: bool = False

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return (self.num_elements * DTYPE_BITS[self.dtype] + 7) // 8

    @property
    def is_constant(self) -> bool:
        return self.data is not None and not self.is_variable

    def same_quantization(self, other: Tensor) -> bool:
        """Whether equal stored values mean equal real values in both tensors:
        same dtype, scales and zero points (and axis, when per channel), or
        both unquantized."""
        qa, qb = self.quantization, other.quantization
        if self.dtype != other.dtype:
            return False
        if qa is None or qb is None:
            return qa is None and qb is None
        return (
            qa.scales == qb.scales and qa.zero_points == qb.zero_points and (not qa.per_channel or qa.axis == qb.axis)
        )


@dataclass(frozen=True)
class Operator:
    index: int  # position in execution order
    opcode: str  # builtin name as in the schema, e.g. "CONV_2D"; "CUSTOM" for custom ops
    version: int
    inputs: tuple[int, ...]  # tensor indices; -1 marks an absent optional input
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    # Builtin options as plain values: schema field names in snake_case, enums by
    # their schema names ("SAME", "RELU6", ...), vectors as tuples.
    options: dict[str, Any] = field(default_factory=dict)
    custom_code: str | None = None
    # Names of the options tables the model wrote for this op (builtin_options,
    # builtin_options_2), so the validator can refuse one that is not the opcode's.
    options_tables: tuple[str, ...] = ()
    # Scratch tensors (Tensor.is_scratch) the kernel works in during this op
    # alone; added by scratch.py, passed to the kernel like outputs.
    scratch: tuple[int, ...] = ()


# Custom op names in messages are cut to this many characters.
MAX_CUSTOM_CODE_CHARS = 60


def operator_name(op: Operator) -> str:
    if op.opcode != "CUSTOM":
        return op.opcode
    return f"CUSTOM({shown(op.custom_code or '', MAX_CUSTOM_CODE_CHARS)})"


def operator_dtype_key(op: Operator, tensors: tuple[Tensor, ...] | list[Tensor]) -> str:
    """ "OPCODE dtype" for messages: the dtype of the op's first non-constant
    input (its first input where all are constant), "in->out" when the first
    output's differs."""
    present = [t for t in op.inputs if t >= 0]
    data_inputs = [t for t in present if not tensors[t].is_constant] or present
    outputs = [t for t in op.outputs if t >= 0]
    dtype_in = tensors[data_inputs[0]].dtype if data_inputs else None
    dtype_out = tensors[outputs[0]].dtype if outputs else None
    if dtype_in is None or dtype_out is None or dtype_in == dtype_out:
        return f"{operator_name(op)} {dtype_in or dtype_out or 'no tensors'}"
    return f"{operator_name(op)} {dtype_in}->{dtype_out}"


@dataclass(frozen=True)
class PatchWindow:
    """One op of a patched stage in one patch: the rows [in_first, in_end)
    of its input it reads, the rows [out_first, out_end) of its output it
    computes, and its padding above the window (the op's own padding less
    the window's offset: nonzero only at the tensor's top border)."""

    in_first: int
    in_end: int
    out_first: int
    out_end: int
    pad_h: int
    # In a grid of patches (PatchStage.cols > 1): the same along the width
    # (its pad_h is the padding left of the window); None for a full-width strip.
    columns: PatchWindow | None = None


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
    input_w: int
    output_w: int

    @property
    def rows(self) -> RowGeometry:
        return RowGeometry(self.input_h, self.output_h, self.filter_h, self.stride_h, self.dilation_h, self.pad_h)

    @property
    def columns(self) -> RowGeometry:
        """The geometry along the width: the same arithmetic as along the rows."""
        return RowGeometry(self.input_w, self.output_w, self.filter_w, self.stride_w, self.dilation_w, self.pad_w)


@dataclass(frozen=True)
class PatchStage:
    """A run of spatially local ops (patches.py) computed patch by patch:
    each patch runs every op of the stage on the rows (and columns) it
    needs, the tensors in between holding one patch.  Full-width strips
    (cols == 1) of a batch-1 NHWC tensor are contiguous: the first op reads
    straight from the whole stage input and the last writes straight into
    the whole stage output.  In a grid (cols > 1) each patch's input window
    is gathered into the scratch tensor `gather` of the first op and its
    output scattered from the scratch tensor `scatter` of the last op."""

    ops: tuple[int, ...]  # op indices, consecutive steps
    input: int  # tensor read whole
    output: int  # tensor written whole
    intermediates: tuple[int, ...]  # tensors between the ops, one patch at a time
    rows: int  # rows of patches (horizontal strips when cols == 1)
    strip_rows: int  # stage output rows per row of patches (the last may have fewer)
    # [patch][position of the op in `ops`], patches row by row, left to right in a row
    windows: tuple[tuple[PatchWindow, ...], ...]
    patch_bytes: tuple[int, ...]  # per intermediate: bytes of its largest patch
    extra_macs: int  # multiply-accumulates the halos recompute
    model_macs: int  # of the whole model, unpatched
    cols: int = 1  # patches per row of patches
    patch_cols: int = 0  # stage output columns per patch (the last may have fewer); 0: the full width
    copy_bytes: tuple[int, int] = (0, 0)  # cols > 1: bytes of the largest gathered window and scattered patch
    gather: int = -1  # cols > 1: scratch tensor of the first op holding a patch's input window (with_stage)
    scatter: int = -1  # cols > 1: scratch tensor of the last op holding a patch's output
    op_extra_macs: tuple[int, ...] = ()  # per op of `ops`: its share of extra_macs


@dataclass(frozen=True)
class Graph:
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # OfflineMemoryAllocation metadata: one offset per tensor, -1 = planner decides.
    offline_offsets: tuple[int, ...] | None = None
    # Things the reader changed or assumed that the user should hear once
    # (e.g. a -1 batch planned as 1).
    notes: tuple[str, ...] = ()
    description: str = ""

    def consumers(self) -> dict[int, list[int]]:
        """Tensor index -> indices of the operators that read it, in execution order."""
        readers: dict[int, list[int]] = {}
        for op in self.operators:
            for t in op.inputs:
                if t >= 0 and (not readers.get(t) or readers[t][-1] != op.index):
                    readers.setdefault(t, []).append(op.index)
        return readers
