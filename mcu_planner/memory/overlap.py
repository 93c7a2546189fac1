"""Partial overlap: how far into the input it reads for the last time an op's
output may start (a generalisation of running in place).

A convolution, pooling or FULLY_CONNECTED kernel walks its output pixels in
raster order (its KernelFacts' `access`, which the lowering module declares
beside the kernel names, says so for each kernel that does).  Once a group of pixels is written, the input
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

from functools import lru_cache

import numpy as np

from ..lowering.program import Program
from .problem import WindowAccess


def kernel_walk(program: Program, index: int) -> tuple[WindowAccess, bool] | None:
    """The walk of op `index`'s kernel over its input 0 and output 0 (its
    facts), and whether the walk costs the kernel its faster one; None when
    the kernel declares none (or the op does not lower)."""
    facts = program.facts(index)
    if facts.access is None:
        return None
    return facts.access, facts.raster_walk_is_slower


def _first_tap(out_n: int, stride: int, pad: int, dilation: int, taps: int, in_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output coordinate along one axis: the first in-bounds input
    coordinate of its window, and whether there is one."""
    start = np.arange(out_n, dtype=np.int64) * stride - pad
    skipped = np.where(start >= 0, 0, (-start + dilation - 1) // dilation)  # taps in the leading padding
    first = start + skipped * dilation
    return first, (skipped < taps) & (first < in_n)


# Cached: planning asks the same op again for every candidate order, budget
# and technique (mobilenet_v2's --ram 256K asked 80,118 times for 35 walks).
@lru_cache(maxsize=4096)
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
