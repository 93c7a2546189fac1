"""READ_VARIABLE and ASSIGN_VARIABLE -> mcu_copy between a variable tensor
in the state region and an activation (resource_variables.py has made each
resource variable a variable tensor when the model was read)."""

from __future__ import annotations

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import input_tensor, output_tensor


@lowers("READ_VARIABLE")
def lower_read_variable(op: Operator, graph: Graph) -> KernelCall:
    variable = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    if not variable.is_variable or variable.dtype != out.dtype or variable.nbytes != out.nbytes:
        raise NotLowerable(f"READ_VARIABLE of {variable.dtype}{list(variable.shape)} into {out.dtype}{list(out.shape)}")
    # TFLite copies the bytes whatever the two tensors' quantization.
    return KernelCall(
        function="mcu_copy",
        params_type="mcu_copy_params",
        params={"bytes": out.nbytes},
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_copy",),
    )


@lowers("ASSIGN_VARIABLE")
def lower_assign_variable(op: Operator, graph: Graph) -> KernelCall:
    variable = input_tensor(op, graph, 0)
    value = input_tensor(op, graph, 1)
    if not variable.is_variable or variable.dtype != value.dtype or variable.nbytes != value.nbytes:
        raise NotLowerable(
            f"ASSIGN_VARIABLE of {value.dtype}{list(value.shape)} to {variable.dtype}{list(variable.shape)}"
        )
    return KernelCall(
        function="mcu_copy",
        params_type="mcu_copy_params",
        params={"bytes": value.nbytes},
        args=(op.inputs[1], op.inputs[0]),
        sources=("mcu_copy",),
    )


# Copies between the state region and the arena: the variable never shares an
# activation's bytes, so the plan may assume nothing more of either op.
declare_facts(KernelFacts(), "READ_VARIABLE", "ASSIGN_VARIABLE")
