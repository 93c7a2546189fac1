"""CAST on activations -> mcu_cast (firmware/runtime/mcu_cast.c).

cast.cc converts each element with static_cast; the kernel does the same C
conversion, told the two element types by code.  A float element outside
the destination integer type is undefined behaviour in the reference as in
C, so only in-range floats are promised to match.  Constant CASTs never get
here: folding.py evaluates them.
"""

from __future__ import annotations

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import elementwise_operands, kernel_call

# mcu_cast_type in firmware/runtime/mcu_cast.h.
CAST_TYPE_CODES = {
    "bool": 0,
    "int8": 1,
    "uint8": 2,
    "int16": 3,
    "uint16": 4,
    "int32": 5,
    "uint32": 6,
    "int64": 7,
    "float32": 8,
}


@lowers("CAST")
def lower_cast(op: Operator, graph: Graph) -> KernelCall:
    inp, out = elementwise_operands(op, graph)
    for tensor in (inp, out):
        if tensor.dtype not in CAST_TYPE_CODES:
            raise NotLowerable(f"CAST {inp.dtype}->{out.dtype}")
    params = {
        "size": out.num_elements,
        "input_type": CAST_TYPE_CODES[inp.dtype],
        "output_type": CAST_TYPE_CODES[out.dtype],
    }
    return kernel_call(op, "mcu_cast", "mcu_cast_params", params, ("mcu_cast",))


# Elements may change size, so the output never overwrites its input in place.
declare_facts(KernelFacts(), "CAST")
