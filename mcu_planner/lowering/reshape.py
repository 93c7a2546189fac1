"""RESHAPE, SQUEEZE, EXPAND_DIMS -> mcu_copy (nothing at all when aliased:
their facts below say `reinterprets_input`)."""

from __future__ import annotations

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import input_tensor, output_tensor


@lowers("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def lower_reshape(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    if inp.dtype != out.dtype or inp.nbytes != out.nbytes:
        raise NotLowerable(f"{op.opcode} from {inp.dtype}{list(inp.shape)} to {out.dtype}{list(out.shape)}")
    # TFLite copies the bytes even if the two tensors' quantization differs,
    # so no check on it here.
    return KernelCall(
        function="mcu_copy",
        params_type="mcu_copy_params",
        params={"bytes": inp.nbytes},
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_copy",),
    )


# mcu_copy: the output is the input's bytes under another shape.
declare_facts(KernelFacts(reinterprets_input=True), "RESHAPE", "SQUEEZE", "EXPAND_DIMS")
