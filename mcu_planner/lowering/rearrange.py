"""SPACE_TO_DEPTH, DEPTH_TO_SPACE and REVERSE_V2: element rearrangements for
any element type, expressed as the existing strided gathers.

SPACE_TO_DEPTH / DEPTH_TO_SPACE are a TRANSPOSE of a 6-D view of the tensor
(mcu_transpose: output walked row-major, each output dimension with the
input stride it steps by), following reference_ops::SpaceToDepth /
DepthToSpace's index arithmetic.  REVERSE_V2 is a STRIDED_SLICE taking whole
axes with negative steps (mcu_strided_slice).
"""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lowers
from .common import constant_ints, element_bytes, input_tensor, int32_array, output_tensor
from .data_movement import SLICE_RANK, strided_slice_call
from .shape_ops import _check_same_quantization, padded, strides


def _operands(op: Operator, graph: Graph) -> tuple[Tensor, Tensor]:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    if inp.dtype != out.dtype:
        raise NotLowerable(f"{op.opcode} from {inp.dtype} to {out.dtype}")
    _check_same_quantization(op, inp, out)
    return inp, out


def _gather(op: Operator, inp: Tensor, output_dims: list[int], input_strides: list[int]) -> KernelCall:
    return KernelCall(
        function="mcu_transpose",
        params_type="mcu_transpose_params",
        params={
            "element_bytes": element_bytes(op, inp),
            "output_dims": int32_array(padded(output_dims)),
            "input_strides": int32_array(padded(input_strides, fill=0)),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_transpose",),
    )


@lowers("SPACE_TO_DEPTH", "DEPTH_TO_SPACE")
def lower_space_depth(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    block = int(op.options.get("block_size", 0))
    if len(inp.shape) != 4 or block < 1:
        raise NotLowerable(f"{op.opcode} of shape {inp.shape} with block size {block}")
    n, h, w, c = inp.shape
    if op.opcode == "SPACE_TO_DEPTH":
        if h % block or w % block:
            raise NotLowerable(f"SPACE_TO_DEPTH of {h}x{w} by block {block}")
        expected = (n, h // block, w // block, c * block * block)
        # Output (n, oh, ow, by, bx, c) reads input (n, oh*b + by, ow*b + bx, c).
        dims = [n, h // block, w // block, block, block, c]
        steps = [h * w * c, block * w * c, block * c, w * c, c, 1]
    else:
        if c % (block * block):
            raise NotLowerable(f"DEPTH_TO_SPACE of depth {c} by block {block}")
        depth = c // (block * block)
        expected = (n, h * block, w * block, depth)
        # Output (n, h, by, w, bx, d) reads input (n, h, w, (by*b + bx)*depth + d).
        dims = [n, h, block, w, block, depth]
        steps = [h * w * c, w * c, block * depth, c, depth, 1]
    if tuple(out.shape) != expected:
        raise NotLowerable(f"{op.opcode} output {out.shape}, expected {expected}")
    return _gather(op, inp, dims, steps)


@lowers("REVERSE_V2")
def lower_reverse(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    rank = len(inp.shape)
    if tuple(out.shape) != tuple(inp.shape) or not 0 < rank <= SLICE_RANK or inp.num_elements == 0:
        raise NotLowerable(f"REVERSE_V2 of shape {inp.shape} to {out.shape}")
    raw_axes = constant_ints(op, input_tensor(op, graph, 1), "axis")
    if any(not -rank <= a < rank for a in raw_axes):
        raise NotLowerable(f"REVERSE_V2 over axes {raw_axes} of a rank-{rank} tensor")
    axes = {a % rank for a in raw_axes}
    in_strides = strides(list(inp.shape))
    first = sum((inp.shape[a] - 1) * in_strides[a] for a in axes)
    steps = [-s if a in axes else s for a, s in enumerate(in_strides)]
    return strided_slice_call(op, element_bytes(op, inp), first, list(inp.shape), steps)


declare_facts(KernelFacts(), "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "REVERSE_V2")
