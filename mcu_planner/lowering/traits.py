"""What the memory plan may assume about each operator, beside the kernels
whose loop order makes it safe: the one table lifetimes.py (aliasing, in-place
pairs) and codegen (calls left out when aliased) read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpTraits:
    # The output is the input's bytes under another shape (the kernel is a
    # copy): when the plan gives both the same bytes, no code runs at all.
    reinterprets_input: bool = False
    # The kernel reads element i of every input before it writes element i of
    # the output (and no other element after it), so the output may take the
    # bytes of an input that dies at this op.
    may_run_in_place: bool = False
    # The output is the inputs laid end to end along an axis: inputs that are
    # contiguous slices of it may be written there by their producers.
    concatenates_inputs: bool = False
    # The outputs are consecutive runs of the input along one axis: when each
    # is contiguous (slicing.contiguous_pieces) it may be the input's bytes.
    cuts_input_into_pieces: bool = False


_NONE = OpTraits()
_RESHAPING = OpTraits(reinterprets_input=True)  # mcu_copy (lowering/reshape.py)
# mcu_elementwise.c and mcu_math.c (broadcasting binary ops through
# mcu_for_each_broadcast_row, unary ops in one pass), mcu_activations.c (one pass,
# element by element, or a lookup table), mcu_quantize.c (element by element).
_ELEMENTWISE = OpTraits(may_run_in_place=True)

OP_TRAITS: dict[str, OpTraits] = {
    "RESHAPE": _RESHAPING,
    "SQUEEZE": _RESHAPING,
    "EXPAND_DIMS": _RESHAPING,
    "ADD": _ELEMENTWISE,
    "SUB": _ELEMENTWISE,
    "MUL": _ELEMENTWISE,
    "RELU": _ELEMENTWISE,
    "RELU6": _ELEMENTWISE,
    "RELU_N1_TO_1": _ELEMENTWISE,
    "LEAKY_RELU": _ELEMENTWISE,
    "LOGISTIC": _ELEMENTWISE,
    "TANH": _ELEMENTWISE,
    "HARD_SWISH": _ELEMENTWISE,
    "QUANTIZE": _ELEMENTWISE,
    "DIV": _ELEMENTWISE,
    "POW": _ELEMENTWISE,
    "SQUARED_DIFFERENCE": _ELEMENTWISE,
    "MAXIMUM": _ELEMENTWISE,
    "MINIMUM": _ELEMENTWISE,
    "PRELU": _ELEMENTWISE,
    "EXP": _ELEMENTWISE,
    "LOG": _ELEMENTWISE,
    "SQRT": _ELEMENTWISE,
    "RSQRT": _ELEMENTWISE,
    "SQUARE": _ELEMENTWISE,
    "ABS": _ELEMENTWISE,
    "NEG": _ELEMENTWISE,
    "GELU": _ELEMENTWISE,
    "CONCATENATION": OpTraits(concatenates_inputs=True),  # mcu_concat.c
    "PACK": OpTraits(concatenates_inputs=True),  # mcu_concat.c, along a new axis (lowering/split_gather.py)
    # mcu_split.c, mcu_slice.c: each piece a copy of its run of the input.
    "SPLIT": OpTraits(cuts_input_into_pieces=True),
    "SPLIT_V": OpTraits(cuts_input_into_pieces=True),
    "UNPACK": OpTraits(cuts_input_into_pieces=True),
    "SLICE": OpTraits(cuts_input_into_pieces=True),
}


def op_traits(opcode: str) -> OpTraits:
    """The opcode's traits; an op not in the table may assume nothing."""
    return OP_TRAITS.get(opcode, _NONE)
