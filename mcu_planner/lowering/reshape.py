"""RESHAPE, SQUEEZE, EXPAND_DIMS -> mcu_copy (nothing at all when aliased:
their facts below say `reinterprets_input`); ZEROS_LIKE -> mcu_zero_fill."""

from __future__ import annotations

from ..graph import Graph, Operator
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import input_tensor, output_tensor, require_dtype


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


@lowers("ZEROS_LIKE")
def lower_zeros_like(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    # LiteRT's zeros_like.cc registers int32, int64 and float32; TFLM's also
    # int8, filled with stored 0 (not the zero point), as here.
    require_dtype(op, out, "int32", "int64", "float32", "int8")
    if inp.dtype != out.dtype or tuple(inp.shape) != tuple(out.shape):
        raise NotLowerable(f"ZEROS_LIKE from {inp.dtype}{list(inp.shape)} to {out.dtype}{list(out.shape)}")
    return KernelCall(
        function="mcu_zero_fill",
        params_type="mcu_copy_params",
        params={"bytes": out.nbytes},
        args=(op.outputs[0],),
        sources=("mcu_copy",),
    )


# Writes its output without reading the input's values.
declare_facts(KernelFacts(), "ZEROS_LIKE")
