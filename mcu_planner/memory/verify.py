"""An independent check of any plan.

It shares no code with the planners: it re-derives every constraint from the
problem alone.  A plan is valid when every buffer is placed at a non-negative
multiple of the alignment, inside the arena, and no two buffers alive at a
common step share a byte, except an in-place pair that the problem allows to
start at exactly the same offset, and an output over the input its step reads
for the last time when the kernel's walk (`Overlap.access`) never writes a
byte it reads later: that is checked here by enumerating every tap of every
output pixel's window, not from the bound the problem states.  A patched
stage's output and input (patches.py) are such a pair across the stage's
steps (`Overlap.span`): the output is first written at the stage's first
step and the input last read at its last.  In a grid of patches the walk is
the same as for full-width strips of the same rows: its group (a row of
patches) may read and write in any order, which covers the patches of the
row in turn.
"""

from __future__ import annotations

import functools

import numpy as np

from .problem import Buffer, Overlap, Problem, WindowAccess


class PlanInvalid(Exception):
    """A planner produced a plan that breaks the problem's constraints (a planner bug)."""


def verify(problem: Problem, offsets: dict[int, int], arena_bytes: int | None = None) -> list[str]:
    errors: list[str] = []
    placed = []
    for b in problem.buffers:
        if b.id not in offsets:
            errors.append(f"buffer {b.id} is not placed")
            continue
        off = offsets[b.id]
        if not isinstance(off, int) or off < 0:
            errors.append(f"buffer {b.id} has offset {off!r}")
            continue
        if off % problem.alignment:
            errors.append(f"buffer {b.id} offset {off} is not a multiple of {problem.alignment}")
        if arena_bytes is not None and off + b.size > arena_bytes:
            errors.append(f"buffer {b.id} [{off}, {off + b.size}) ends past the arena of {arena_bytes} bytes")
        if b.end < b.start:
            errors.append(f"buffer {b.id} has an inverted lifetime [{b.start}, {b.end})")
        elif b.size > 0 and b.end > b.start:
            placed.append(b)

    # An output may start exactly on an input only at the op that declares the
    # pair, where the input is read for the last time.
    by_id = problem.by_id()
    in_place = {
        frozenset(pair)
        for step_index, step in enumerate(problem.steps)
        for pair in step.in_place
        if pair[0] in by_id
        and pair[1] in by_id
        and by_id[pair[0]].start == step_index
        and by_id[pair[1]].end == step_index + 1
    }
    overlaps = {
        (o.output, o.input): o
        for step_index, step in enumerate(problem.steps)
        for o in step.overlaps
        if o.output in by_id
        and o.input in by_id
        and o.output != o.input
        and by_id[o.output].start == step_index
        and by_id[o.input].end == step_index + o.span
    }
    # Sweep in time: any two buffers alive together meet when the later one starts.
    placed.sort(key=lambda b: (b.start, b.id))
    active: list[Buffer] = []
    for b in placed:
        active = [a for a in active if a.end > b.start]
        lo, hi = offsets[b.id], offsets[b.id] + b.size
        for a in active:
            a_lo, a_hi = offsets[a.id], offsets[a.id] + a.size
            if a_lo < hi and lo < a_hi:
                if frozenset((a.id, b.id)) in in_place and a_lo == lo and a.size == b.size:
                    continue
                pair = overlaps.get((a.id, b.id)) or overlaps.get((b.id, a.id))
                if pair is not None and _walk_allows(pair, offsets[pair.output] - offsets[pair.input]):
                    continue
                step = max(a.start, b.start)
                errors.append(
                    f"buffers {a.id} and {b.id} share bytes [{max(lo, a_lo)}, {min(hi, a_hi)}) "
                    f"while both alive at step {step}"
                )
        active.append(b)
    return errors


def _walk_allows(overlap: Overlap, buffer_shift: int) -> bool:
    """Whether the kernel, its output tensor starting `shift` bytes after its
    input tensor, writes no input byte that it (or a later pixel group of
    it) still has to read."""
    shift = buffer_shift + overlap.output_at - overlap.input_at
    lowest_ahead = _lowest_reads_ahead(overlap.access)
    a = overlap.access
    group = max(1, a.group)
    for first in range(0, len(lowest_ahead), group):
        last_written = shift + min(first + group, len(lowest_ahead)) * a.output_pixel_bytes - 1
        if last_written >= lowest_ahead[first]:
            pixel = a.input_pixel_bytes
            whole = a.channel_wise and pixel == a.output_pixel_bytes and pixel > 0 and shift % pixel == 0
            return whole and shift <= -pixel and _channels_allow(a, shift // pixel)
    return True


@functools.lru_cache(maxsize=256)
def _channels_allow(a: WindowAccess, pixels: int) -> bool:
    """For a channel-wise walk whose output starts `pixels` whole pixels
    after its input: output pixel k writes over input pixel k + pixels, the
    same channels, which is safe unless a later output pixel reads it.  Every
    tap of every window is enumerated."""
    ys = np.arange(a.output_h)[:, None] * a.stride_h - a.pad_h + np.arange(a.filter_h)[None, :] * a.dilation_h
    xs = np.arange(a.output_w)[:, None] * a.stride_w - a.pad_w + np.arange(a.filter_w)[None, :] * a.dilation_w
    inside = ((ys >= 0) & (ys < a.input_h))[:, None, :, None] & ((xs >= 0) & (xs < a.input_w))[None, :, None, :]
    tapped = (ys[:, None, :, None] * a.input_w + xs[None, :, None, :]).astype(np.int64)
    reader = np.arange(a.output_h * a.output_w, dtype=np.int64).reshape(a.output_h, a.output_w, 1, 1)
    for b in range(a.batches):
        read = (tapped + b * a.input_h * a.input_w)[np.broadcast_to(inside, tapped.shape)]
        by = np.broadcast_to(reader + b * a.output_h * a.output_w, tapped.shape)[np.broadcast_to(inside, tapped.shape)]
        writer = read - pixels  # the output pixel that writes over the input pixel read
        if np.any((writer >= 0) & (writer < by)):
            return False
    return True


@functools.lru_cache(maxsize=256)
def _lowest_reads_ahead(a: WindowAccess) -> tuple[int, ...]:
    """Per output pixel in raster order: the lowest input byte read by it or
    any pixel after it (a huge number when none reads anything), by
    enumerating every tap of every window."""
    ys = np.arange(a.output_h)[:, None] * a.stride_h - a.pad_h + np.arange(a.filter_h)[None, :] * a.dilation_h
    xs = np.arange(a.output_w)[:, None] * a.stride_w - a.pad_w + np.arange(a.filter_w)[None, :] * a.dilation_w
    none = np.iinfo(np.int64).max
    # tap (oy, ox, fy, fx) -> input pixel index within an image, or none when in the padding
    inside = ((ys >= 0) & (ys < a.input_h))[:, None, :, None] & ((xs >= 0) & (xs < a.input_w))[None, :, None, :]
    index = ys[:, None, :, None].astype(np.int64) * a.input_w + xs[None, :, None, :]
    per_pixel = np.where(inside, index, none).reshape(a.output_h * a.output_w, -1).min(axis=1)
    lowest: list[int] = []
    image_pixels = a.input_h * a.input_w
    for b in range(a.batches):
        for p in per_pixel:
            lowest.append(none if p == none else int((b * image_pixels + int(p)) * a.input_pixel_bytes))
    for i in range(len(lowest) - 2, -1, -1):
        lowest[i] = min(lowest[i], lowest[i + 1])
    return tuple(lowest)


def check_plan(problem: Problem, offsets: dict[int, int], arena_bytes: int | None = None) -> None:
    errors = verify(problem, offsets, arena_bytes)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PlanInvalid(errors[0] + more)
