"""The verifier accepts valid plans and catches every kind of broken one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcu_planner.memory.planning import run_planner
from mcu_planner.memory.problem import Buffer, Problem, Step, peak_live, problem_from_intervals
from mcu_planner.memory.verify import verify


@st.composite
def interval_sets(draw, max_buffers: int = 24):
    n = draw(st.integers(1, max_buffers))
    sizes = draw(st.sampled_from(["equal", "mixed"]))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, 15))
        length = draw(st.integers(1, 8))
        size = 48 if sizes == "equal" else draw(st.integers(1, 300))
        buffers.append(Buffer(i, size, start, start + length))
    return problem_from_intervals(buffers, alignment=draw(st.sampled_from([1, 4, 16])))


def brute_force_overlaps(problem: Problem, offsets: dict[int, int]) -> bool:
    """Byte by byte, step by step: does any byte hold two live buffers?"""
    owner: dict[tuple[int, int], int] = {}
    for b in problem.buffers:
        for step in range(b.start, b.end):
            for byte in range(offsets[b.id], offsets[b.id] + b.size):
                if (step, byte) in owner:
                    return True
                owner[(step, byte)] = b.id
    return False


@settings(max_examples=150, deadline=None)
@given(interval_sets())
def test_greedy_plans_pass_the_verifier_and_respect_the_lower_bound(problem):
    plan = run_planner(problem, "greedy")
    assert verify(problem, plan.offsets, plan.arena_bytes) == []
    assert not brute_force_overlaps(problem, plan.offsets)
    assert plan.arena_bytes >= peak_live(problem).bytes


@settings(max_examples=150, deadline=None)
@given(interval_sets(max_buffers=10), st.data())
def test_verifier_agrees_with_a_byte_by_byte_check_on_arbitrary_offsets(problem, data):
    a = problem.alignment
    offsets = {b.id: a * data.draw(st.integers(0, 40)) for b in problem.buffers}
    assert (verify(problem, offsets) == []) == (not brute_force_overlaps(problem, offsets))


def test_verifier_catches_overlap_misalignment_missing_and_overflow():
    problem = problem_from_intervals([Buffer(0, 32, 0, 2), Buffer(1, 32, 1, 3), Buffer(2, 32, 3, 4)], alignment=16)
    assert verify(problem, {0: 0, 1: 32, 2: 0}, 64) == []
    assert any("share bytes [16, 32)" in e for e in verify(problem, {0: 0, 1: 16, 2: 0}))
    assert any("not a multiple of 16" in e for e in verify(problem, {0: 0, 1: 40, 2: 0}))
    assert any("not placed" in e for e in verify(problem, {0: 0, 1: 32}))
    assert any("past the arena" in e for e in verify(problem, {0: 0, 1: 32, 2: 0}, 48))
    # Buffers 0 and 2 never live at the same step: sharing bytes is fine.
    assert verify(problem, {0: 0, 1: 32, 2: 0}) == []


def test_in_place_pairs_may_share_exactly_the_same_offset_only():
    buffers = (Buffer(0, 64, 0, 2), Buffer(1, 64, 1, 3))
    steps = (Step((), (0,)), Step((0,), (1,), in_place=((1, 0),)), Step((1,), ()))
    problem = Problem(buffers, 16, steps)
    assert verify(problem, {0: 0, 1: 0}) == []
    assert verify(problem, {0: 0, 1: 16}) != []
    without_pair = Problem(buffers, 16, (steps[0], Step((0,), (1,)), steps[2]))
    assert verify(without_pair, {0: 0, 1: 0}) != []


def test_in_place_pairs_count_only_where_the_input_dies():
    # Buffer 0 is read again at step 3: writing buffer 1 over it at step 1 would destroy it.
    buffers = (Buffer(0, 64, 0, 4), Buffer(1, 64, 1, 3))
    steps = (Step((), (0,)), Step((0,), (1,), in_place=((1, 0),)), Step((1,), ()), Step((0,), ()))
    assert verify(Problem(buffers, 16, steps), {0: 0, 1: 0}) != []


def test_inverted_lifetimes_are_reported():
    problem = Problem((Buffer(0, 16, 3, 1),), 16, (Step((), ()),) * 4)
    assert any("inverted" in e for e in verify(problem, {0: 0}))
