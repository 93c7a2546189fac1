"""The check build (-DMCU_PLAN_CHECK) verifies the graph inputs at the start
of NAME_invoke, before any op runs: inside the arena, apart from each other
and from every other live buffer (issue 14).  The plans here are broken by
editing the generated offset table, as a buggy planner or a hand edit would."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mcu_planner.emit.output_dir import write_output
from mcu_planner.pipeline import generate_for_model
from mcu_planner.targets.check import CheckMismatch, HostTarget
from mcu_planner_testing.builder import Int8Net


def _two_input_model() -> bytes:
    net = Int8Net(0)
    a, b = net.input((1, 8, 8, 4)), net.input((1, 8, 8, 4))
    return net.build(net.conv2d(net.add(a, b), 4))


def _run_with_offsets(tmp_path, edit) -> None:
    graph, plan, files = generate_for_model(_two_input_model(), name="m")
    source = files["m.c"].decode()
    table = re.search(r"m_buffer_offset\[M_NUM_BUFFERS\] = \{\n(.*?)\n\};", source, re.S)
    rows = table.group(1).split("\n")
    tensors = [int(re.search(r"tensor (\d+)", row).group(1)) for row in rows]
    offsets = [int(re.match(r"\s*(\d+)u", row).group(1)) for row in rows]
    arena = int(re.search(r"#define M_ARENA_SIZE (\d+)", files["m.h"].decode()).group(1))
    slots = [tensors.index(t) for t in graph.inputs]
    new_offsets = edit(offsets, slots, arena)
    new_rows = [re.sub(r"^\s*\d+u", f"    {o}u", row) for row, o in zip(rows, new_offsets, strict=True)]
    files = dict(files)
    edited = source.replace(table.group(1), "\n".join(new_rows))
    # Not const, so that the compiler cannot see the bad offset at build time:
    # the run-time check is what is under test.
    edited = edited.replace("static const uint32_t m_buffer_offset[", "static uint32_t m_buffer_offset[")
    files["m.c"] = edited.encode()
    generated = write_output(files, tmp_path / "gen")
    sizes = [graph.tensors[t].nbytes for t in graph.inputs]
    samples = [[np.zeros(n, np.int8).tobytes() for n in sizes]]
    HostTarget().run(
        generated,
        "m",
        samples,
        input_bytes=sizes,
        output_bytes=[graph.tensors[graph.outputs[0]].nbytes],
        check_build=True,
        workdir=tmp_path / "work",
    )


def test_unedited_plan_passes(tmp_path):
    _run_with_offsets(tmp_path, lambda offsets, slots, arena: offsets)


def test_two_graph_inputs_placed_over_each_other_are_reported(tmp_path):
    def overlap(offsets, slots, arena):
        offsets = list(offsets)
        offsets[slots[1]] = offsets[slots[0]]
        return offsets

    with pytest.raises(CheckMismatch, match="graph input 1 .* overlaps graph input 0"):
        _run_with_offsets(tmp_path, overlap)


def test_graph_input_outside_the_arena_is_reported_before_anything_writes_it(tmp_path):
    def outside(offsets, slots, arena):
        offsets = list(offsets)
        offsets[slots[0]] = arena + 4096
        return offsets

    with pytest.raises(CheckMismatch, match="graph input 0"):
        _run_with_offsets(tmp_path, outside)
