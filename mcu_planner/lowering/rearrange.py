"""SPACE_TO_DEPTH, DEPTH_TO_SPACE, REVERSE_V2, TILE, BROADCAST_TO and
SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND: element
rearrangements for any element type, expressed as the existing strided gathers.

TILE and BROADCAST_TO are gathers too: a tiled dimension of n elements
repeated m times is walked as (m, n) with input strides (0, stride), a
broadcast one with stride 0 (reference_ops::Tile / BroadcastTo copy the
stored values, no rescale).

SPACE_TO_DEPTH / DEPTH_TO_SPACE are a TRANSPOSE of a 6-D view of the tensor
(mcu_transpose: output walked row-major, each output dimension with the
input stride it steps by), following reference_ops::SpaceToDepth /
DepthToSpace's index arithmetic.  REVERSE_V2 is a STRIDED_SLICE taking whole
axes with negative steps (mcu_strided_slice).
"""

from __future__ import annotations

from ..graph import Graph, Operator, Tensor
from . import KernelCall, KernelFacts, NotLowerable, ParamValue, declare_facts, lowers
from .common import MAX_RANK, constant_ints, element_bytes, input_tensor, int32_array, output_tensor, zero_point
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


def _merged(op: Operator, dims: list[int], steps: list[int]) -> tuple[list[int], list[int]]:
    """The same walk in as few dimensions as mcu_transpose takes: size-1
    dimensions dropped, a dimension merged into the next inner one where it
    steps by exactly that one's whole extent."""
    kept = [(d, s) for d, s in zip(dims, steps, strict=True) if d > 1] or [(1, 0)]
    merged = [kept[-1]]
    for d, s in reversed(kept[:-1]):
        inner_d, inner_s = merged[0]
        if s == inner_s * inner_d:
            merged[0] = (d * inner_d, inner_s)
        else:
            merged.insert(0, (d, s))
    if len(merged) > MAX_RANK:
        raise NotLowerable(f"{op.opcode} walking {len(merged)} dimensions (at most {MAX_RANK})")
    return [d for d, _ in merged], [s for _, s in merged]


@lowers("TILE")
def lower_tile(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    multiples = constant_ints(op, input_tensor(op, graph, 1), "multiples")
    if len(multiples) != len(inp.shape) or any(m < 1 for m in multiples):
        raise NotLowerable(f"TILE of shape {inp.shape} by {multiples}")
    if tuple(out.shape) != tuple(d * m for d, m in zip(inp.shape, multiples, strict=True)) or inp.num_elements == 0:
        raise NotLowerable(f"TILE of shape {inp.shape} by {multiples} into {out.shape}")
    dims, steps = [], []
    for d, m, s in zip(inp.shape, multiples, strides(list(inp.shape)), strict=True):
        dims += [m, d]
        steps += [0, s]
    return _gather(op, inp, *_merged(op, dims, steps))


@lowers("BROADCAST_TO")
def lower_broadcast_to(op: Operator, graph: Graph) -> KernelCall:
    inp, out = _operands(op, graph)
    rank = len(out.shape)
    shape = (1,) * (rank - len(inp.shape)) + tuple(inp.shape)
    if (
        len(shape) != rank
        or any(d not in (1, o) for d, o in zip(shape, out.shape, strict=True))
        or out.num_elements == 0
    ):
        raise NotLowerable(f"BROADCAST_TO of shape {inp.shape} to {out.shape}")
    steps = [s if d > 1 else 0 for d, s in zip(shape, strides(list(shape)), strict=True)]
    return _gather(op, inp, *_merged(op, list(out.shape), steps))


def _space_batch_geometry(
    op: Operator, graph: Graph, what: str
) -> tuple[Tensor, Tensor, tuple[int, int, int, int], tuple[int, int], tuple[tuple[int, int], tuple[int, int]]]:
    """(input, output, (batch, h, w, depth), (block_h, block_w), ((top, bottom), (left, right))):
    the 4-D view the reference takes (a 3-D tensor gets width 1, block 1, no padding)."""
    inp, out = _operands(op, graph)
    block = constant_ints(op, input_tensor(op, graph, 1), "block shape")
    amounts = constant_ints(op, input_tensor(op, graph, 2), what)
    rank = len(inp.shape)
    if rank not in (3, 4) or len(block) != rank - 2 or len(amounts) != 2 * (rank - 2):
        raise NotLowerable(f"{op.opcode} of shape {inp.shape} with block {block} and {what} {amounts}")
    if min(block) < 1 or min(amounts) < 0:
        raise NotLowerable(f"{op.opcode} with block {block} and {what} {amounts}")
    if rank == 3:
        block, amounts = block + [1], amounts + [0, 0]
    n, h = inp.shape[0], inp.shape[1]
    w = inp.shape[2] if rank == 4 else 1
    depth = inp.shape[-1] * element_bytes(op, inp)
    pairs = ((amounts[0], amounts[1]), (amounts[2], amounts[3]))
    return inp, out, (n, h, w, depth), (block[0], block[1]), pairs


@lowers("SPACE_TO_BATCH_ND")
def lower_space_to_batch(op: Operator, graph: Graph) -> KernelCall:
    inp, out, (n, h, w, depth), (bh, bw), ((top, bottom), (left, right)) = _space_batch_geometry(op, graph, "paddings")
    if (h + top + bottom) % bh or (w + left + right) % bw:
        raise NotLowerable(f"SPACE_TO_BATCH_ND of {h}x{w} padded by {top + bottom}x{left + right}, block {bh}x{bw}")
    out_h, out_w = (h + top + bottom) // bh, (w + left + right) // bw
    expected = (n * bh * bw, out_h) + ((out_w,) if len(inp.shape) == 4 else ()) + (inp.shape[-1],)
    if tuple(out.shape) != expected or inp.num_elements == 0:
        raise NotLowerable(f"SPACE_TO_BATCH_ND output {out.shape} is not {expected}")
    # The reference memsets padding with output_offset: the zero point for
    # int8 / uint8 (its low byte), 0 for the other types.
    pad = zero_point(out) if out.dtype in ("int8", "uint8") else 0
    if out.dtype not in ("int8", "uint8") and zero_point(out):
        raise NotLowerable(f"{out.dtype} SPACE_TO_BATCH_ND with a non-zero zero point")
    params: dict[str, ParamValue] = {
        "batch": n,
        "input_h": h,
        "input_w": w,
        "output_batch": n * bh * bw,
        "output_h": out_h,
        "output_w": out_w,
        "block_h": bh,
        "block_w": bw,
        "pad_top": top,
        "pad_left": left,
        "depth_bytes": depth,
        "pad_byte": pad & 0xFF,
    }
    return KernelCall(
        "mcu_space_to_batch", "mcu_space_to_batch_params", params, (op.inputs[0], op.outputs[0]), ("mcu_pad",)
    )


@lowers("BATCH_TO_SPACE_ND")
def lower_batch_to_space(op: Operator, graph: Graph) -> KernelCall:
    """reference_ops::BatchToSpaceND as a gather: output (b, oh, ow, c) reads
    input batch ((oh + top) % bh * bw + (ow + left) % bw) * batch + b at
    ((oh + top) // bh, (ow + left) // bw), one term per output dimension."""
    inp, out, (n, h, w, depth), (bh, bw), ((top, bottom), (left, right)) = _space_batch_geometry(op, graph, "crops")
    if n % (bh * bw):
        raise NotLowerable(f"BATCH_TO_SPACE_ND of batch {n} by block {bh}x{bw}")
    batch, out_h, out_w = n // (bh * bw), h * bh - top - bottom, w * bw - left - right
    expected = (batch, out_h) + ((out_w,) if len(inp.shape) == 4 else ()) + (inp.shape[-1],)
    if tuple(out.shape) != expected or min(out_h, out_w, batch) < 1:
        raise NotLowerable(f"BATCH_TO_SPACE_ND output {out.shape} is not {expected}")
    channels = inp.shape[-1]
    image = h * w * channels  # elements of one input batch
    batch_offsets = [b * image for b in range(batch)]
    h_offsets = [((y + top) % bh) * bw * batch * image + ((y + top) // bh) * w * channels for y in range(out_h)]
    w_offsets = [((x + left) % bw) * batch * image + ((x + left) // bw) * channels for x in range(out_w)]
    c_offsets = list(range(channels))
    axes = [batch_offsets, h_offsets] + ([w_offsets] if len(inp.shape) == 4 else []) + [c_offsets]
    starts: list[int] = []
    offsets: list[int] = []
    for axis in axes:
        starts.append(len(offsets))
        offsets += axis
    lead = MAX_RANK - len(axes)
    return KernelCall(
        function="mcu_gather_axes",
        params_type="mcu_gather_axes_params",
        params={
            "element_bytes": element_bytes(op, inp),
            "output_dims": int32_array(padded(list(out.shape))),
            "axis_starts": int32_array([len(offsets)] * lead + starts),
            "axis_offsets": int32_array(offsets + [0]),
        },
        args=(op.inputs[0], op.outputs[0]),
        sources=("mcu_gather",),
    )


declare_facts(
    KernelFacts(),
    "SPACE_TO_DEPTH",
    "DEPTH_TO_SPACE",
    "REVERSE_V2",
    "TILE",
    "BROADCAST_TO",
    "SPACE_TO_BATCH_ND",
    "BATCH_TO_SPACE_ND",
)
