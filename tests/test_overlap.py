"""Partial overlap: an op's output partly over the input it reads for the last time.

- the bound overlap.py derives in closed form equals, on small shapes, the
  largest shift a brute-force simulation of the declared walk allows (every
  byte each pixel group reads and writes), and the verifier's own
  enumeration agrees at the bound and one byte past it;
- the verifier rejects plans that break the walk, also when the problem
  states a looser bound than the walk allows (it re-derives it);
- greedy and the exact planner give verified plans below the live peak on
  builder-made chains, and the exact planner proves vww-like chains optimal;
- every kernel with a raster walk (its KernelFacts' access) that the builders reach runs bit-exact with
  the reference when each output sits as far into its input as the bound
  allows, to the byte, in the normal and the -DMCU_PLAN_CHECK build: a kernel
  whose loops no longer follow its declared walk fails here.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import needs_cortex_m
from hypothesis import given, settings
from hypothesis import strategies as st

from mcu_planner.emit.codegen import generate
from mcu_planner.memory.overlap import max_output_offset
from mcu_planner.memory.planners.greedy import plan_greedy
from mcu_planner.memory.planning import ArenaPlan, run_planner
from mcu_planner.memory.problem import (
    Buffer,
    Overlap,
    Problem,
    Step,
    WindowAccess,
    align_down,
    align_up,
    arena_bytes,
    peak_live,
)
from mcu_planner.memory.verify import check_plan, verify
from mcu_planner.pipeline import PlanOptions, analyse_model
from mcu_planner.targets.check import random_inputs, run_generated
from mcu_planner.targets.reference import run_isolated
from mcu_planner_testing.builder import FloatNet, Int4Net, Int8Net, Int16x8Net, Uint8Net, conv_output_size


def _taps(a: WindowAccess):
    """Every in-bounds tap of the walk, in order: (output pixel, input pixel),
    both counted across the batches."""
    for p in range(a.batches * a.output_h * a.output_w):
        b, yx = divmod(p, a.output_h * a.output_w)
        y, x = divmod(yx, a.output_w)
        for fy in range(a.filter_h):
            for fx in range(a.filter_w):
                iy = y * a.stride_h - a.pad_h + fy * a.dilation_h
                ix = x * a.stride_w - a.pad_w + fx * a.dilation_w
                if 0 <= iy < a.input_h and 0 <= ix < a.input_w:
                    yield p, (b * a.input_h + iy) * a.input_w + ix


def _largest_safe_shift(a: WindowAccess) -> int:
    """Simulate the walk byte by byte: the largest shift of the output's start
    from the input's start below which (and at which) no group writes a byte
    that it or a later group reads."""
    pixels = a.batches * a.output_h * a.output_w
    in_bytes = a.batches * a.input_h * a.input_w * a.input_pixel_bytes
    last_reader = np.full(in_bytes, -1)  # per input byte: the last group that reads it
    for p, read in _taps(a):
        first = read * a.input_pixel_bytes
        last_reader[first : first + a.input_pixel_bytes] = p // a.group
    writer = np.arange(pixels * a.output_pixel_bytes) // a.output_pixel_bytes // a.group  # per output byte

    def safe(shift: int) -> bool:
        at = np.arange(writer.size) + shift  # each output byte's place, from the input's start
        inside = (at >= 0) & (at < in_bytes)
        return not np.any(last_reader[at[inside]] >= writer[inside])

    shift = -writer.size  # wholly below the input: always safe
    while shift < in_bytes and safe(shift + 1):
        shift += 1
    return shift


@st.composite
def walks(draw) -> WindowAccess:
    filter_h, filter_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dilation_h, dilation_w = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    stride_h, stride_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    input_h, input_w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    pad_h = draw(st.integers(0, (filter_h - 1) * dilation_h))
    pad_w = draw(st.integers(0, (filter_w - 1) * dilation_w))
    output_h = max(1, (input_h + 2 * pad_h - dilation_h * (filter_h - 1) - 1) // stride_h + 1)
    output_w = max(1, (input_w + 2 * pad_w - dilation_w * (filter_w - 1) - 1) // stride_w + 1)
    return WindowAccess(
        batches=draw(st.integers(1, 2)),
        input_h=input_h,
        input_w=input_w,
        input_pixel_bytes=draw(st.integers(1, 5)),
        output_h=output_h,
        output_w=output_w,
        output_pixel_bytes=draw(st.integers(1, 5)),
        filter_h=filter_h,
        filter_w=filter_w,
        stride_h=stride_h,
        stride_w=stride_w,
        pad_h=pad_h,
        pad_w=pad_w,
        dilation_h=dilation_h,
        dilation_w=dilation_w,
        group=draw(st.integers(1, 3)),
    )


def _pair_problem(access: WindowAccess, max_offset: int, alignment: int = 1) -> Problem:
    """The input (buffer 0, dying at step 0) and the output (buffer 1, born there)."""
    in_size = access.batches * access.input_h * access.input_w * access.input_pixel_bytes
    out_size = access.batches * access.output_h * access.output_w * access.output_pixel_bytes
    buffers = (Buffer(0, in_size, 0, 1), Buffer(1, out_size, 0, 2))
    steps = (Step((0,), (1,), overlaps=(Overlap(1, 0, max_offset, access),)), Step((1,), ()))
    return Problem(buffers, alignment, steps)


@settings(max_examples=150, deadline=None)
@given(walks())
def test_the_derived_bound_is_the_largest_shift_the_walk_allows(access):
    bound = max_output_offset(access)
    assert bound == _largest_safe_shift(access)
    # The verifier, enumerating taps its own way, agrees at the bound and one byte past it.
    problem = _pair_problem(access, bound)
    base = max(0, -bound) + 1
    assert verify(problem, {0: base, 1: base + bound}) == []
    in_size = problem.buffers[0].size
    if bound + 1 < in_size:
        assert verify(problem, {0: base, 1: base + bound + 1}) != []


def _largest_safe_whole_pixel_shift(a: WindowAccess) -> int:
    """Simulate a channel-wise walk pixel by pixel: the most whole pixels (at
    most 0) the output may start after the input such that, there and at
    every shift below, no output pixel writes over an input pixel that a
    later output pixel reads (the same channel: earlier readers, and the
    writer itself, have read it already)."""
    pixels = a.batches * a.output_h * a.output_w
    in_pixels = a.batches * a.input_h * a.input_w
    last_reader = np.full(in_pixels, -1)  # per input pixel: the last output pixel that reads it
    for p, read in _taps(a):
        last_reader[read] = p
    writer = np.arange(pixels)

    def safe(shift: int) -> bool:
        over = writer + shift  # the input pixel each output pixel writes over
        inside = (over >= 0) & (over < in_pixels)
        return not np.any(last_reader[over[inside]] > writer[inside])

    shift = -pixels
    while shift < 0 and safe(shift + 1):
        shift += 1
    return shift


@settings(max_examples=150, deadline=None)
@given(walks())
def test_a_channel_wise_walk_over_whole_pixels_allows_what_its_simulation_allows(access):
    a = replace(access, output_pixel_bytes=access.input_pixel_bytes, channel_wise=True)
    pixel = a.input_pixel_bytes
    groups = _largest_safe_shift(a)
    bound = max_output_offset(a, whole_pixels=True)
    # At most one pixel before the input (the exact planner's pairs keep the output below it).
    assert bound == max(groups, pixel * min(-1, _largest_safe_whole_pixel_shift(a)))
    assert max_output_offset(a) == groups  # shifts that may split pixels: the groups' bound alone
    # The verifier, enumerating taps its own way, accepts the bound and refuses the next whole pixel.
    problem = _pair_problem(a, bound)
    base = max(0, -bound) + 1
    assert verify(problem, {0: base, 1: base + bound}) == []
    beyond = (bound // pixel + 1) * pixel
    if beyond <= 0:
        assert verify(problem, {0: base, 1: base + beyond}) != []


def test_a_stride_2_depthwise_may_start_its_output_one_pixel_before_its_input():
    # 12x12x16 -> 6x6x16 at 16-byte alignment: whole pixels.  Its walk would
    # allow the input's start; the groups of four alone keep the output a
    # group (64 B) below the input.
    problem = _ordinary(_vww_like(), alignment=16).lifetimes.problem
    strided = [o for step in problem.steps for o in step.overlaps if o.access.channel_wise and o.access.stride_h == 2]
    assert strided
    for o in strided:
        assert _largest_safe_whole_pixel_shift(o.access) == 0
        assert o.max_offset == -o.access.input_pixel_bytes
        assert max_output_offset(o.access) == _largest_safe_shift(o.access) < o.max_offset


def test_pointwise_bounds_match_the_arithmetic():
    # Two pixels a group: a 1x1 stride-1 convolution keeping 8 channels may
    # start its output two pixels (16 B) before its input.
    same = WindowAccess(1, 4, 4, 8, 4, 4, 8, group=2)
    assert max_output_offset(same) == -16
    # Doubling 8 -> 16 channels: the last pair (pixels 14, 15) reads from
    # byte 112 and ends its writes at 256.
    wider = WindowAccess(1, 4, 4, 8, 4, 4, 16, group=2)
    assert max_output_offset(wider) == 112 - 256


def test_the_verifier_recomputes_the_bound_instead_of_trusting_the_problem():
    access = WindowAccess(1, 4, 4, 8, 4, 4, 8, filter_h=3, filter_w=3, pad_h=1, pad_w=1)
    truth = max_output_offset(access)
    loose = _pair_problem(access, truth + 64)
    # greedy follows the (wrong) stated bound; the verifier refuses its plan.
    offsets = plan_greedy(loose).offsets
    assert offsets[1] - offsets[0] > truth
    assert verify(loose, offsets) != []
    right = _pair_problem(access, truth)
    assert verify(right, plan_greedy(right).offsets) == []
    exact = run_planner(right, "optimal", time_limit=5.0)  # verified inside
    assert exact.arena_bytes == right.buffers[0].size - truth


def _ordinary(model: bytes, alignment: int = 16):
    """The model analysed in its own order, every op on its ordinary kernel
    (no depthwise convolution in place: that is for --ram alone)."""
    analysed = analyse_model(model, PlanOptions(alignment=alignment, order="model"))
    return analysed.without_in_place or analysed


def _vww_like(seed: int = 0) -> bytes:
    net = Int8Net(seed=seed)
    x = net.input((1, 24, 24, 3))
    x = net.conv2d(x, 8, kernel=(3, 3), strides=(2, 2), activation="RELU")
    x = net.depthwise_conv2d(x, activation="RELU")
    x = net.conv2d(x, 16, kernel=(1, 1), activation="RELU")
    x = net.depthwise_conv2d(x, strides=(2, 2), activation="RELU")
    x = net.conv2d(x, 32, kernel=(1, 1), activation="RELU")
    x = net.depthwise_conv2d(x, activation="RELU")
    x = net.conv2d(x, 16, kernel=(1, 1), activation="RELU")
    x = net.average_pool2d(x, pool=(6, 6), strides=(6, 6))
    x = net.reshape(x, (1, 16))
    x = net.fully_connected(x, 4)
    return net.build(x)


@pytest.mark.parametrize("planner", ["greedy", "optimal"])
def test_planners_take_overlaps_and_the_verifier_accepts_their_plans(planner):
    lifetimes = _ordinary(_vww_like()).lifetimes
    problem = lifetimes.problem
    assert len(problem.overlap_limits()) >= 8
    plan = run_planner(problem, planner, time_limit=5.0)  # verified inside
    assert plan.arena_bytes < peak_live(problem).bytes
    if planner == "optimal":
        assert plan.proven_optimal
        # Overlaps off: the same lifetimes need the live peak.
        apart = replace(problem, steps=tuple(replace(s, overlaps=()) for s in problem.steps))
        assert run_planner(apart, planner, time_limit=5.0).arena_bytes == peak_live(apart).bytes


def test_a_plan_one_unit_past_an_overlap_bound_is_rejected():
    lifetimes = _ordinary(_vww_like()).lifetimes
    problem = lifetimes.problem
    plan = run_planner(problem, "optimal", time_limit=5.0)
    assert verify(problem, plan.offsets) == []
    buffers = problem.by_id()
    limits = problem.overlap_limits()
    for (out, inp), limit in limits.items():
        # The pair alone, its output moved one aligned unit past the bound (still over the input).
        step = buffers[out].start
        overlap = next(o for o in problem.steps[step].overlaps if o.output == out)
        pair = Problem(
            (replace(buffers[inp], start=0, end=1), replace(buffers[out], start=0, end=2)),
            problem.alignment,
            (Step((inp,), (out,), overlaps=(overlap,)), Step((out,), ())),
        )
        base = buffers[out].size + problem.alignment
        at_bound = base + align_down(limit, problem.alignment)
        assert verify(pair, {inp: base, out: at_bound}) == [], (out, inp)
        past = at_bound + problem.alignment
        if past < base + buffers[inp].size:
            errors = verify(pair, {inp: base, out: past})
            assert errors and f"{min(out, inp)} and {max(out, inp)}" in errors[0]


# ---------------------------------------------------------------- bit-exact at the tightest overlaps


def _tight_chain_offsets(problem: Problem, scratch: frozenset[int] = frozenset()) -> dict[int, int]:
    """A chain of ops, each output as far into its dying input as the
    overlap bound allows (below it when the op has no overlap); the kernels'
    `scratch` buffers (the convolutions' columns) above the chain."""
    limits = problem.overlap_limits()
    order = sorted((b for b in problem.buffers if b.id not in scratch), key=lambda b: (b.start, b.id))
    offsets = {order[0].id: 0}
    for previous, b in itertools.pairwise(order):
        limit = limits.get((b.id, previous.id))
        step = b.size if limit is None else -align_down(limit, problem.alignment)
        offsets[b.id] = offsets[previous.id] - step
    low = min(offsets.values())
    offsets = {i: o - low for i, o in offsets.items()}
    top = align_up(max(offsets[b.id] + b.size for b in order), problem.alignment)
    for b in problem.buffers:
        if b.id in scratch:
            offsets[b.id] = top
    return offsets


def _int_chain(net, activation: bool = True, multiplier_4: bool = False) -> tuple[bytes, set[str]]:
    x = net.input((1, 15, 14, 3))
    x = net.quantize(x, -0.9, 0.9)  # requantized, over the graph input
    if activation:  # mcu_activations.c's loop (the int16 kernels declare no walk)
        x = net.leaky_relu(x)
    x = net.conv2d(x, 8, kernel=(3, 3), strides=(2, 2))  # padding SAME, odd size
    x = net.conv2d(x, 16, kernel=(1, 1))  # widening pointwise
    x = net.conv2d(x, 16, kernel=(3, 3))  # whole vectors: Helium's interleaved columns
    x = net.depthwise_conv2d(x, strides=(1, 1))
    x = net.conv2d(x, 8, kernel=(1, 1))  # narrowing pointwise
    x = net.pad(x, ((0, 0), (1, 2), (2, 1), (0, 0)))
    x = net.conv2d(x, 8, kernel=(3, 3), dilation=(2, 2))
    x = net.depthwise_conv2d(x, strides=(2, 2), depth_multiplier=2)
    if multiplier_4:  # int8: the Cortex-M55's raster walk of multiples of 4 (MCU_DEPTHWISE_S8(4, 1))
        x = net.depthwise_conv2d(x, kernel=(3, 3), depth_multiplier=4)
    x = net.conv2d(x, 12, kernel=(3, 3), padding="VALID")
    x = net.max_pool2d(x, pool=(2, 2), strides=(1, 1), padding="SAME")
    x = net.average_pool2d(x, pool=(2, 2), strides=(1, 1), padding="VALID")
    x = net.reshape(x, (1, int(np.prod(net.shape(x)))))
    x = net.fully_connected(x, 6)
    opcodes = {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D", "FULLY_CONNECTED", "PAD"}
    return net.build(x), opcodes | ({"LEAKY_RELU"} if activation else set())


def _float_chain() -> tuple[bytes, set[str]]:
    net = FloatNet(seed=3)
    x = net.input((1, 9, 8, 3))

    def conv(x, opcode, filters, k, stride, padding="SAME", multiplier=1):
        n, h, w, c = net.shape(x)
        oh, ow = conv_output_size(h, k, stride, 1, padding), conv_output_size(w, k, stride, 1, padding)
        out_c = c * multiplier if opcode == "DEPTHWISE_CONV_2D" else filters
        shape = (1, k, k, out_c) if opcode == "DEPTHWISE_CONV_2D" else (filters, k, k, c)
        options = {"padding": padding, "stride_h": stride, "stride_w": stride}
        if opcode == "DEPTHWISE_CONV_2D":
            options["depth_multiplier"] = multiplier
        return net.op(opcode, (x, net.const(shape, 0.3), net.const((out_c,), 0.1)), (n, oh, ow, out_c), options)

    x = conv(x, "CONV_2D", 8, 3, 2)
    x = conv(x, "CONV_2D", 12, 1, 1)
    x = conv(x, "DEPTHWISE_CONV_2D", 0, 3, 1)
    x = conv(x, "CONV_2D", 4, 1, 1)
    n, h, w, c = net.shape(x)
    x = net.op("PAD", (x, net.int32_const([[0, 0], [2, 1], [1, 1], [0, 0]])), (n, h + 3, w + 2, c))
    n, h, w, c = net.shape(x)
    pool = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "filter_height": 2, "filter_width": 2}
    x = net.op("MAX_POOL_2D", (x,), (n, h, w, c), pool)
    x = net.op("AVERAGE_POOL_2D", (x,), (n, h, w, c), pool)
    x = net.op("RESHAPE", (x, net.int32_const([1, h * w * c])), (1, h * w * c), {"new_shape": [1, h * w * c]})
    x = net.op("FULLY_CONNECTED", (x, net.const((5, h * w * c), 0.1), net.const((5,), 0.1)), (1, 5))
    return net.build(x), {"CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D", "FULLY_CONNECTED", "PAD"}


def _quantize_chain() -> tuple[bytes, set[str]]:
    """QUANTIZE narrowing (float32 -> int8, int16 -> int8) and widening
    (int8 -> int16), each at its tightest overlap."""
    net = Int8Net(seed=6)
    x = net.quantize(net.float_input((1, 7, 6, 3)), -1.0, 1.0)
    x = net.conv2d(x, 4, kernel=(3, 3))
    x = net.quantize(x, -2.0, 2.0, dtype="int16")
    x = net.quantize(x, -1.5, 1.5, dtype="int8")
    return net.build(net.conv2d(x, 8, kernel=(1, 1))), {"QUANTIZE", "CONV_2D"}


CHAINS = {
    "int8": lambda: _int_chain(Int8Net(seed=1), multiplier_4=True),
    "int4": lambda: _int_chain(Int4Net(seed=7)),  # FULLY_CONNECTED reads its int4 filter packed
    "uint8": lambda: _int_chain(Uint8Net(seed=2)),
    "int16": lambda: _int_chain(Int16x8Net(seed=4), activation=False),
    "float32": _float_chain,
    "quantize": _quantize_chain,
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_kernels_are_bit_exact_at_the_tightest_overlap(kind):
    _run_at_the_tightest_overlaps(kind, "host")


# The Cortex-M builds take the kernels' DSP (M4) and Helium (M55) paths.
@needs_cortex_m
@pytest.mark.parametrize("target", ["mps2-an386", "mps3-an547"])
def test_int8_kernels_are_bit_exact_at_the_tightest_overlap_on_cortex_m(target):
    _run_at_the_tightest_overlaps("int8", target)


# At 16-byte alignment the int8 depthwise convolutions' pixels (8 and 16
# channels) are whole units: their channel-wise bounds apply.
@pytest.mark.slow
def test_int8_depthwise_is_bit_exact_at_its_whole_pixel_bounds():
    problem = _ordinary(_vww_like(), alignment=16).lifetimes.problem
    overlaps = [o for step in problem.steps for o in step.overlaps if o.access.channel_wise]
    # Those of 8 and 16 channels go further than their groups' walk alone
    # allows; 32-channel pixels are not whole 16-byte units: the groups' bound.
    whole = [o for o in overlaps if 16 % o.access.input_pixel_bytes == 0]
    assert len(whole) == 2 and len(overlaps) == 3
    assert all(align_down(max_output_offset(o.access), 16) < align_down(o.max_offset, 16) for o in whole)
    assert all(max_output_offset(o.access) == o.max_offset for o in overlaps if o not in whole)
    _run_chain_at_its_bounds(_vww_like(), {"CONV_2D", "DEPTHWISE_CONV_2D"}, 16, "int8_whole_pixels", "host")


@needs_cortex_m
@pytest.mark.parametrize("target", ["mps2-an386", "mps3-an547"])
def test_int8_depthwise_is_bit_exact_at_its_whole_pixel_bounds_on_cortex_m(target):
    _run_chain_at_its_bounds(_vww_like(), {"CONV_2D", "DEPTHWISE_CONV_2D"}, 16, "int8_whole_pixels", target)


# RAM the Cortex-M builds link with: the chains' arenas are a few KiB.
BOARD_TEST_RAM = 256 * 1024


def _run_at_the_tightest_overlaps(kind: str, target: str) -> None:
    model, opcodes = CHAINS[kind]()
    alignment = 4 if kind in ("float32", "int16", "quantize") else 1  # every bound is a whole number of elements
    _run_chain_at_its_bounds(model, opcodes, alignment, kind, target)


def _run_chain_at_its_bounds(model: bytes, opcodes: set[str], alignment: int, kind: str, target: str) -> None:
    """Each output of the chain `model` as far into its dying input as its
    bound allows (at `alignment`), bit-exact against the reference in the
    normal and the -DMCU_PLAN_CHECK build."""
    analysed = _ordinary(model, alignment)
    graph, lifetimes = analysed.graph, analysed.lifetimes
    problem = lifetimes.problem
    limits = problem.overlap_limits()
    with_overlap = {graph.operators[problem.by_id()[out].start].opcode for out, _ in limits}
    assert opcodes <= with_overlap, opcodes - with_overlap
    program = lifetimes.program
    assert any(program.facts(op.index).access is not None for op in graph.operators)
    offsets = _tight_chain_offsets(problem, frozenset(t.index for t in graph.tensors if t.is_scratch))
    check_plan(problem, offsets)
    size = arena_bytes(problem, offsets)
    shared = 0
    for (out, inp), limit in limits.items():  # every overlap at its bound
        assert offsets[out] - offsets[inp] == align_down(limit, alignment)
        shared += offsets[out] + problem.by_id()[out].size > offsets[inp]
    assert shared >= len(opcodes)
    plan = ArenaPlan("tightest overlaps", offsets, size, False, 0.0)
    name = f"tight_{kind}"
    files = generate(graph, lifetimes, plan, name=name)
    rng = np.random.default_rng(7)
    input_sets = [random_inputs(graph, rng) for _ in range(2)]
    expected = run_isolated(model, input_sets)
    # On a board: a budget the check build's extra tables still leave room for.
    ram = None if target == "host" else BOARD_TEST_RAM
    runs = run_generated(graph, files, name, input_sets, target=target, ram=ram)
    assert len(runs) == 2  # the normal build and the -DMCU_PLAN_CHECK one
    for run in runs:
        for s, outputs in enumerate(expected):
            for o, want in enumerate(outputs):
                assert run.outputs[s][o] == np.ascontiguousarray(want).tobytes(), (kind, s, o)


def test_report_and_plan_json_say_what_the_overlaps_saved(tmp_path):
    from test_cli import run_cli

    model = tmp_path / "chain.tflite"
    model.write_bytes(_vww_like())
    plan_path = tmp_path / "plan.json"
    lifetimes = _ordinary(model.read_bytes()).lifetimes
    live_peak = peak_live(lifetimes.problem).bytes
    # Overlaps on walks that cost nothing (the pointwise DSP blocks' on the
    # Cortex-M4, cost_model.py) are taken at once; the depthwise ones need
    # the kernel's slower walk: taken only when the budget needs them.
    roomy = run_cli(model, "--ram", "1M", "--json", plan_path, "--order", "model")
    assert roomy.returncode == 0, roomy.stderr
    roomy_plan = json.loads(plan_path.read_text())
    assert roomy_plan["arena_bytes"] <= live_peak
    roomy_total = roomy_plan["ram"]["total_bytes"]  # --ram counts the counters and static buffers too
    result = run_cli(model, "--ram", str(roomy_total - 16), "--json", plan_path, "--order", "model")
    assert result.returncode == 0, result.stderr
    plan = json.loads(plan_path.read_text())
    # Without overlaps this chain needs its live peak (test_planners_take_overlaps...).
    assert plan["live_peak_bytes"] == plan["techniques"]["arena_without_overlaps_bytes"] == live_peak
    assert plan["arena_bytes"] < roomy_plan["arena_bytes"]
    saved = live_peak - plan["arena_bytes"]
    assert f"saving {saved:,} B (without them: {live_peak:,} B, proven optimal)" in result.stdout
    assert plan["techniques"]["overlap_ops"] == len(plan["overlaps"]) > 0
    limits = lifetimes.problem.overlap_limits()
    offsets = {t["index"]: t["offset"] for t in plan["tensors"] if "alias_of" not in t}
    for o in plan["overlaps"]:
        assert o["offset"] == offsets[o["output"]] - offsets[o["input"]] <= limits[(o["output"], o["input"])]
        assert o["shared_bytes"] > 0
    assert plan["techniques"]["overlap_shared_bytes"] == sum(o["shared_bytes"] for o in plan["overlaps"])


def _canonical_optimum(sizes, starts, ends, pairs) -> int:
    """Brute force: every order of the buffers, each placed at the lowest
    offset its already placed time-neighbours allow (`height` above a pair's
    lower buffer instead of its size); the best over all orders is optimal
    (any plan pushed down is one of these)."""
    from itertools import permutations

    height = {(lower, upper): h for lower, upper, h in pairs}
    best = sum(sizes)
    for order in permutations(range(len(sizes))):
        offsets: dict[int, int] = {}
        for b in order:
            offsets[b] = max(
                [
                    offsets[a] + height.get((a, b), sizes[a])
                    for a in offsets
                    if starts[a] < ends[b] and starts[b] < ends[a]
                ],
                default=0,
            )
        best = min(best, max(offsets[b] + sizes[b] for b in offsets))
    return best


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_the_exact_solver_with_overlap_pairs_finds_the_brute_force_optimum(data):
    from mcu_planner.memory.planners.optimal import _solver_module

    solver = _solver_module()
    n = data.draw(st.integers(2, 6))
    sizes = [data.draw(st.integers(1, 6)) for _ in range(n)]
    starts = [data.draw(st.integers(0, 4)) for _ in range(n)]
    ends = [s + data.draw(st.integers(1, 3)) for s in starts]
    pairs = []
    for below in range(n):
        for above in range(n):
            together = below != above and starts[below] < ends[above] and starts[above] < ends[below]
            if together and all({below, above} != {a, b} for a, b, _ in pairs) and data.draw(st.booleans()):
                pairs.append((below, above, data.draw(st.integers(1, sizes[below]))))
    optimum = _canonical_optimum(sizes, starts, ends, pairs)
    answer, offsets, _ = solver.fit(sizes, starts, ends, optimum, 5.0, "WAT,TAW,TWA", pairs)
    assert answer == "found"
    height = {(lower, upper): h for lower, upper, h in pairs}
    for a in range(n):  # the plan keeps every pair of time-neighbours apart as far as it must
        assert 0 <= offsets[a] and offsets[a] + sizes[a] <= optimum
        for b in range(n):
            if a != b and starts[a] < ends[b] and starts[b] < ends[a] and offsets[a] <= offsets[b]:
                assert offsets[b] - offsets[a] >= height.get((a, b), sizes[a]), (a, b)
    assert solver.fit(sizes, starts, ends, optimum - 1, 5.0, "WAT,TAW,TWA", pairs)[0] == "infeasible"


@pytest.mark.parametrize(
    "pairs",
    [[(0, 1, 0)], [(0, 1, 5)], [(0, 0, 1)], [(0, 2, 1)], [(0, 1, 1), (1, 0, 1)], [(0, 3, 1)], [(0, 1)]],
    ids=["height-0", "height-above-size", "itself", "not-together", "twice", "out-of-range", "not-a-triple"],
)
def test_the_exact_solver_refuses_malformed_pairs(pairs):
    from mcu_planner.memory.planners.optimal import _solver_module

    with pytest.raises(ValueError):
        _solver_module().fit([4, 4, 4], [0, 0, 2], [1, 2, 3], 12, 1.0, "WAT,TAW,TWA", pairs)
