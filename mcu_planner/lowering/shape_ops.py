"""TRANSPOSE, PAD / PADV2 and MIRROR_PAD: data movement only, for any element type."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Operator, Tensor
from . import CArray, KernelCall, KernelFacts, NotLowerable, declare_facts, facts_for, lowers
from .common import MAX_RANK, constant_ints, element_bytes, input_tensor, int32_array, output_tensor, zero_point
from .walks import pad_facts


def strides(dims: list[int]) -> list[int]:
    out, step = [0] * len(dims), 1
    for k in range(len(dims) - 1, -1, -1):
        out[k] = step
        step *= dims[k]
    return out


def padded(dims: list[int], fill: int = 1) -> list[int]:
    return [fill] * (MAX_RANK - len(dims)) + list(dims)


def _check_same_quantization(op: Operator, inp: Tensor, out: Tensor) -> None:
    # These ops move quantized values unchanged, which is only what TFLite
    # computes when both tensors share quantization (its Prepare checks this).
    both_quantized = inp.quantization is not None and out.quantization is not None
    if both_quantized and not inp.same_quantization(out):
        raise NotLowerable(f"{op.opcode} whose output quantization differs from its input's")


@lowers("TRANSPOSE")
def lower_transpose(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    rank = len(inp.shape)
    if rank > MAX_RANK:
        raise NotLowerable(f"TRANSPOSE of rank {rank}")
    perm = [int(p) + rank if p < 0 else int(p) for p in constant_ints(op, input_tensor(op, graph, 1), "permutation")]
    if sorted(perm) != list(range(rank)):
        raise NotLowerable(f"TRANSPOSE with permutation {perm} for rank {rank}")
    if out.shape != tuple(inp.shape[p] for p in perm) or out.dtype != inp.dtype:
        raise NotLowerable(f"TRANSPOSE output {out.shape} is not input {inp.shape} permuted by {perm}")
    _check_same_quantization(op, inp, out)
    in_strides = strides(list(inp.shape))
    return KernelCall(
        function="mcu_transpose",
        params_type="mcu_transpose_params",
        params={
            "element_bytes": element_bytes(op, inp),
            "output_dims": int32_array(padded([inp.shape[p] for p in perm])),
            "input_strides": int32_array(padded([in_strides[p] for p in perm], fill=0)),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_transpose",),
    )


@lowers("PAD", "PADV2")
def lower_pad(op: Operator, graph: Graph) -> KernelCall:
    inp = input_tensor(op, graph, 0)
    out = output_tensor(op, graph)
    rank = len(inp.shape)
    if rank > MAX_RANK or rank == 0:
        raise NotLowerable(f"{op.opcode} of rank {rank}")
    paddings = np.array(constant_ints(op, input_tensor(op, graph, 1), "paddings"), dtype=np.int64)
    if paddings.size != 2 * rank:
        raise NotLowerable(f"{op.opcode} with {paddings.size} padding values for rank {rank}")
    paddings = paddings.reshape(rank, 2)
    if (paddings < 0).any():
        raise NotLowerable(f"{op.opcode} with negative padding")
    expected = tuple(int(d + b + a) for d, (b, a) in zip(inp.shape, paddings, strict=True))
    if out.shape != expected or out.dtype != inp.dtype:
        raise NotLowerable(f"{op.opcode} output {out.shape} is not {expected}")
    _check_same_quantization(op, inp, out)
    eb = element_bytes(op, inp)

    constant = input_tensor(op, graph, 2, optional=True) if op.opcode == "PADV2" else None
    if constant is not None:
        if constant.data is None or constant.is_variable or constant.dtype != inp.dtype:
            raise NotLowerable("PADV2 whose padding value is not a constant of the input's type")
        pad_value = constant.data[:eb]
    elif inp.dtype in ("int8", "uint8", "int16"):
        # Quantized tensors pad with the zero point: the real value 0.
        pad_value = np.array([zero_point(out)], dtype=np.dtype(inp.dtype).newbyteorder("<")).tobytes()
    else:
        pad_value = bytes(eb)

    out_strides = strides(list(out.shape))
    origin = sum(int(b) * s for (b, _), s in zip(paddings, out_strides, strict=True))
    return KernelCall(
        function="mcu_pad",
        params_type="mcu_pad_params",
        params={
            "element_bytes": eb,
            "output_elements": out.num_elements,
            "input_dims": int32_array(padded(list(inp.shape))),
            "output_strides": int32_array(padded(out_strides, fill=0)),
            "output_origin": origin,
            "pad_value": CArray("uint8_t", tuple(pad_value)),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_pad",),
    )


def mirrored_index(i: int, before: int, size: int, offset: int) -> int:
    """mirror_pad.cc's GetInputDimension: the input index output index `i`
    copies; offset 1 (REFLECT) leaves the edge out of the mirror, 0 (SYMMETRIC)
    repeats it."""
    if i < before:
        original = before + offset - 1
        return original - min(i, original - offset)
    i -= before
    if i >= size:
        i -= size
        original = size - (1 + offset)
        return original - min(i, original)
    return i


@lowers("MIRROR_PAD")
def lower_mirror_pad(op: Operator, graph: Graph) -> KernelCall:
    inp, out = input_tensor(op, graph, 0), output_tensor(op, graph)
    rank = len(inp.shape)
    if not 0 < rank <= MAX_RANK or inp.num_elements == 0:
        raise NotLowerable(f"MIRROR_PAD of shape {inp.shape}")
    paddings = constant_ints(op, input_tensor(op, graph, 1), "paddings")
    if len(paddings) != 2 * rank or min(paddings) < 0:
        raise NotLowerable(f"MIRROR_PAD with paddings {paddings} for rank {rank}")
    mode = op.options.get("mode", "REFLECT")
    offset = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode)
    if offset is None:
        raise NotLowerable(f"MIRROR_PAD mode {mode}")
    pairs = list(zip(paddings[0::2], paddings[1::2], strict=True))
    # Prepare: each padding at most the dimension (less one for REFLECT).
    if any(max(b, a) > d - offset for d, (b, a) in zip(inp.shape, pairs, strict=True)):
        raise NotLowerable(f"MIRROR_PAD {mode} padding {pairs} wider than {inp.shape}")
    expected = tuple(d + b + a for d, (b, a) in zip(inp.shape, pairs, strict=True))
    if tuple(out.shape) != expected or out.dtype != inp.dtype:
        raise NotLowerable(f"MIRROR_PAD output {out.shape} is not {expected}")
    _check_same_quantization(op, inp, out)
    in_strides = strides(list(inp.shape))
    starts: list[int] = []
    offsets: list[int] = []
    for size, (before, _), stride, out_size in zip(inp.shape, pairs, in_strides, out.shape, strict=True):
        starts.append(len(offsets))
        offsets += [mirrored_index(i, before, size, offset) * stride for i in range(out_size)]
    lead = MAX_RANK - rank
    return KernelCall(
        function="mcu_gather_axes",
        params_type="mcu_gather_axes_params",
        params={
            "element_bytes": element_bytes(op, inp),
            "output_dims": int32_array(padded(list(out.shape))),
            # Leading dimensions of size 1 read offset 0: one shared zero entry.
            "axis_starts": int32_array([len(offsets)] * lead + starts),
            "axis_offsets": int32_array(offsets + [0]),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_gather",),
    )


declare_facts(KernelFacts(), "MIRROR_PAD")
declare_facts(KernelFacts(), "TRANSPOSE")  # mcu_transpose.c reads in the output's order: no walk the plan may use


@facts_for("PAD", "PADV2")
def pad_op_facts(op: Operator, graph: Graph, call: KernelCall) -> KernelFacts:
    return pad_facts(op, graph, call)
