"""Partial overlap: how far into the input it reads for the last time an op's
output may start (a generalisation of running in place).

A convolution, pooling or FULLY_CONNECTED kernel walks its output pixels in
raster order (lowering/traits.py, `KERNEL_ORDERS`, says so for each kernel
that does, beside the C).  Once a group of pixels is written, the input
bytes below the lowest one any later group reads are dead.  So the output
may start before the input's start, or inside it, by as much as keeps every
group's writes below the lowest input byte that this and every later group
still reads:

    max_offset = min over groups j of (lowest byte read by groups j, j+1, ...)
                                      - (end of group j's writes)

(byte offsets from the input's and the output's starts; group j writes
pixels [j*G, (j+1)*G) of the output, G the kernel's pixels per group).  For
a stride-1 pointwise int8 convolution over P pixels, two at a time, that is
min over j of (2j * C_in - (2j + 2) * C_out): -2 * C_out when it keeps or
narrows the channels (the output starts two output pixels before the
input), about -(P * (C_out - C_in) + 2 * C_in) when it widens them (the
input ends two input pixels before the output ends).  Either way the pair
needs about the larger buffer plus one group, not the sum of both.

A kernel that keeps channels apart (`channel_wise`: a depthwise
convolution with depth multiplier 1, each channel's pixels in raster order)
allows more when every shift a plan can give its output is a whole number
of pixels (the alignment and the tensors' places in their buffers are
multiples of the pixel size): an output byte then lands on the same channel
of the input pixel `shift / pixel` pixels on, which only pixels up to the
writing one may still need:

    max_offset = pixel * min(-1, min over pixels j of (lowest input pixel j reads) - j)

if that is larger.  A stride-2 depthwise convolution may then start its
output one pixel before its input (the groups-of-four bound alone: a group
before it).  Its walk would allow the input's start itself, but the plan
claims channel-wise shifts only from one pixel before the input down (the
exact planner keeps a pair's output at least one alignment unit below its
input, planners/optimal.py; verify.py checks the same claim).
Shifts that split pixels would put a byte over another channel, which a
group may read in any order: they keep the first bound.

The lowest input byte a pixel reads is its window's first in-bounds tap
(rows dominate columns in NHWC); it is computed here per output row and
column in closed form.  verify.py checks plans against the same walk by
enumerating every tap instead.
"""

from __future__ import annotations

import numpy as np

from .graph import DTYPE_BITS, Graph, Operator, Tensor
from .lowering import KernelCall, NotLowerable, lower
from .lowering.traits import kernel_order, raster_walk_is_slower
from .errors import McuPlanError
from .problem import WindowAccess

# Ops whose kernels may declare a raster walk (the rest are never lowered here).
WINDOWED_OPCODES = frozenset(
    {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED", "PAD", "PADV2"}
)


def kernel_access(op: Operator, graph: Graph) -> WindowAccess | None:
    """The walk of the kernel `op` lowers to over its input 0 and output 0,
    or None when the kernel declares none (or the op does not lower)."""
    walk = kernel_walk(op, graph)
    return walk[0] if walk else None


def kernel_walk(op: Operator, graph: Graph) -> tuple[WindowAccess, bool] | None:
    """kernel_access, and whether the walk costs the kernel its faster one
    (traits.raster_walk_is_slower)."""
    call = _lowered(op, graph)
    access = _access(op, graph, call)
    if access is None or call is None:
        return None
    return access, raster_walk_is_slower(call.function, dict(call.params))


# The patch search (pipeline._plan_patched) derives lifetimes for dozens of
# stages of one graph, each asking for every op's walk: lowering a
# convolution (its per-channel multipliers) again each time dominated it.
# Keyed by the op object and its tensors' identities, which every candidate
# graph shares; the entry holds them, so an id is never reused while cached.
_LOWERED: dict[int, tuple[Operator, tuple[Tensor, ...], KernelCall | None]] = {}
_LOWERED_MOST = 4096


def _lowered(op: Operator, graph: Graph) -> KernelCall | None:
    """lower(op, graph), or None when the op does not lower."""
    if op.opcode not in WINDOWED_OPCODES or not op.inputs or len(op.outputs) != 1:
        return None
    tensors = tuple(graph.tensors[t] for t in op.inputs + op.outputs if t >= 0)
    hit = _LOWERED.get(id(op))
    if hit is not None and hit[0] is op and len(hit[1]) == len(tensors):
        if all(a is b for a, b in zip(hit[1], tensors)):
            return hit[2]
    try:
        call: KernelCall | None = lower(op, graph)
    except (NotLowerable, McuPlanError):
        call = None
    if len(_LOWERED) >= _LOWERED_MOST:
        _LOWERED.clear()
    _LOWERED[id(op)] = (op, tensors, call)
    return call


def _access(op: Operator, graph: Graph, call: KernelCall | None) -> WindowAccess | None:
    if call is None:
        return None
    order = kernel_order(call.function)
    if order is None:
        return None
    inp, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_bytes, out_bytes = DTYPE_BITS[inp.dtype] // 8, DTYPE_BITS[out.dtype] // 8
    if in_bytes == 0 or out_bytes == 0:
        return None
    p = call.params

    def number(name: str) -> int:
        value = p[name]
        assert isinstance(value, int), f"{call.function}.{name} is not an int"
        return value

    if order.window == "rows":
        return WindowAccess(
            batches=number("batches"),
            input_h=1,
            input_w=1,
            input_pixel_bytes=number("accum_depth") * in_bytes,
            output_h=1,
            output_w=1,
            output_pixel_bytes=number("output_depth") * out_bytes,
            group=order.pixels_per_group,
        )
    if order.window == "pad":
        return _pad_access(inp.shape, out.shape, number("output_origin"), in_bytes)
    channels_in = number("channels") if order.window == "pool" else number("input_c")
    channels_out = number("channels") if order.window == "pool" else number("output_c")
    dilated = order.window == "conv"
    return WindowAccess(
        batches=number("batches"),
        input_h=number("input_h"),
        input_w=number("input_w"),
        input_pixel_bytes=channels_in * in_bytes,
        output_h=number("output_h"),
        output_w=number("output_w"),
        output_pixel_bytes=channels_out * out_bytes,
        filter_h=number("filter_h"),
        filter_w=number("filter_w"),
        stride_h=number("stride_h"),
        stride_w=number("stride_w"),
        pad_h=number("pad_h"),
        pad_w=number("pad_w"),
        dilation_h=number("dilation_h") if dilated else 1,
        dilation_w=number("dilation_w") if dilated else 1,
        group=order.pixels_per_group,
        channel_wise=order.channel_wise and channels_in * in_bytes == channels_out * out_bytes,
    )


def _pad_access(
    in_shape: tuple[int, ...], out_shape: tuple[int, ...], origin: int, element_bytes: int
) -> WindowAccess | None:
    """A PAD of NHWC along height and width only, as a 1 x 1 window whose
    leading padding is the PAD's (`origin`: the output element where input
    element 0 lands); None for other PADs."""
    if len(in_shape) != 4 or len(out_shape) != 4 or in_shape[0] != out_shape[0] or in_shape[3] != out_shape[3]:
        return None
    batches, _, _, channels = in_shape
    _, out_h, out_w, _ = out_shape
    row = out_w * channels
    if row == 0 or channels == 0:
        return None
    return WindowAccess(
        batches=batches,
        input_h=in_shape[1],
        input_w=in_shape[2],
        input_pixel_bytes=channels * element_bytes,
        output_h=out_h,
        output_w=out_w,
        output_pixel_bytes=channels * element_bytes,
        pad_h=origin // row,
        pad_w=origin % row // channels,
    )


def _first_tap(out_n: int, stride: int, pad: int, dilation: int, taps: int, in_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output coordinate along one axis: the first in-bounds input
    coordinate of its window, and whether there is one."""
    start = np.arange(out_n, dtype=np.int64) * stride - pad
    skipped = np.where(start >= 0, 0, (-start + dilation - 1) // dilation)  # taps in the leading padding
    first = start + skipped * dilation
    return first, (skipped < taps) & (first < in_n)


def max_output_offset(access: WindowAccess, whole_pixels: bool = False) -> int:
    """The most bytes the output may start after the input's start (negative:
    before it) while the kernel's walk never writes a byte it reads later.
    At most the input's size: beyond that the two do not meet anyway.
    `whole_pixels`: every shift the plan can take is a whole number of
    pixels (see the module docstring: a channel-wise walk allows more).

    Bounded: the output's pixels are visited from the last to the first in
    chunks of at most PIXELS_PER_CHUNK (memory independent of the output's
    size: a 736-byte model declaring a huge output took 1.8 GB), and an
    output of more than MOST_PIXELS pixels is kept wholly apart from its
    input (no overlap; a bound every walk allows) rather than walked."""
    a = access
    input_bytes = a.batches * a.input_h * a.input_w * a.input_pixel_bytes
    pixels = a.batches * a.output_h * a.output_w
    if pixels == 0:
        return input_bytes
    if pixels > MOST_PIXELS:
        return -pixels * a.output_pixel_bytes
    group = max(1, a.group)
    chunk = max(group, PIXELS_PER_CHUNK // group * group)
    first_y, rows_ok = _first_tap(a.output_h, a.stride_h, a.pad_h, a.dilation_h, a.filter_h, a.input_h)
    first_x, cols_ok = _first_tap(a.output_w, a.stride_w, a.pad_w, a.dilation_w, a.filter_w, a.input_w)
    bound: int | None = None
    pixels_on: int | None = None  # channel-wise: min over reading pixels of (input pixel read - own index)
    lowest_after = _NONE  # the lowest byte read by the pixels after the current chunk
    # Chunks start at multiples of `chunk` (a multiple of the group), so groups never straddle two.
    for begin in range((pixels - 1) // chunk * chunk, -1, -chunk):
        index = np.arange(begin, min(begin + chunk, pixels), dtype=np.int64)
        reads = _lowest_reads(a, index, first_y, rows_ok, first_x, cols_ok)
        ahead = np.minimum(np.minimum.accumulate(reads[::-1])[::-1], lowest_after)
        lowest_after = int(ahead[0])
        starts = np.arange(0, index.size, group)
        ends = np.minimum(index[starts] + group, pixels) * a.output_pixel_bytes
        lowest = ahead[starts]
        read_any = lowest != _NONE
        if read_any.any():
            here = int((lowest[read_any] - ends[read_any]).min())
            bound = here if bound is None else min(bound, here)
        reading = reads != _NONE
        if reading.any():
            here = int((reads[reading] // a.input_pixel_bytes - index[reading]).min())
            pixels_on = here if pixels_on is None else min(pixels_on, here)
    if bound is None:
        return input_bytes
    bound = min(input_bytes, bound)
    if not (a.channel_wise and whole_pixels and a.input_pixel_bytes == a.output_pixel_bytes):
        return bound
    assert pixels_on is not None
    return max(bound, a.input_pixel_bytes * min(-1, pixels_on))


_NONE = np.iinfo(np.int64).max
# Output pixels walked at a time (about 50 B each while walked).
PIXELS_PER_CHUNK = 1 << 16
# Outputs of more pixels are not walked (a 1024 x 1024 image: far above any microcontroller's).
MOST_PIXELS = 1 << 20


def _lowest_reads(
    a: WindowAccess,
    index: np.ndarray,
    first_y: np.ndarray,
    rows_ok: np.ndarray,
    first_x: np.ndarray,
    cols_ok: np.ndarray,
) -> np.ndarray:
    """Per output pixel `index` (raster order): the lowest input byte its
    window reads (_NONE when the window lies wholly in the padding)."""
    image, rest = np.divmod(index, a.output_h * a.output_w)
    y, x = np.divmod(rest, a.output_w)
    pixel = ((image * a.input_h + first_y[y]) * a.input_w + first_x[x]) * a.input_pixel_bytes
    return np.where(rows_ok[y] & cols_ok[x], pixel, _NONE)
