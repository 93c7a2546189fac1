"""ARG_MAX and ARG_MIN -> mcu_arg_{max,min}_<input>_<index> (firmware/runtime/mcu_arg_min_max.c).

The axis is a constant input (int32 or int64, negative counts from the end)
resolved here into the outer / axis / inner sizes of TFLite's ArgMinMax.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import TYPE_SUFFIX, constant_ints, input_tensor, kernel_call, output_tensor

INPUT_TYPES = ("float32", "int8", "uint8", "int32")
INDEX_TYPES = ("int32", "int64")


def _product(values: Iterable[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


@lowers("ARG_MAX", "ARG_MIN")
def lower_arg_min_max(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype not in INPUT_TYPES or out.dtype not in INDEX_TYPES:
        raise NotLowerable(f"{op.opcode} from {inp.dtype} to {out.dtype}")
    axes = constant_ints(op, input_tensor(op, graph, 1), "axis")
    rank = len(inp.shape)
    if len(axes) != 1 or rank == 0 or not -rank <= axes[0] < rank:
        raise NotLowerable(f"{op.opcode} with axis {axes} of a rank-{rank} input")
    axis = axes[0] % rank
    expected = inp.shape[:axis] + inp.shape[axis + 1 :]
    if tuple(out.shape) != tuple(expected):
        raise NotLowerable(f"{op.opcode} output shape {out.shape} is not {expected}")
    if inp.shape[axis] == 0:
        raise NotLowerable(f"{op.opcode} along an empty axis")
    params = {
        "outer_size": _product(inp.shape[:axis]),
        "axis_size": inp.shape[axis],
        "inner_size": _product(inp.shape[axis + 1 :]),
    }
    stem = "mcu_arg_max" if op.opcode == "ARG_MAX" else "mcu_arg_min"
    function = f"{stem}_{TYPE_SUFFIX[inp.dtype]}_{TYPE_SUFFIX[out.dtype]}"
    return kernel_call(op, function, "mcu_arg_min_max_params", params, ("mcu_arg_min_max",))


declare_facts(KernelFacts(), "ARG_MAX", "ARG_MIN")
