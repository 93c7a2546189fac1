"""In-place depthwise convolution (TinyEngine's method, depth multiplier 1).

A depthwise convolution with one filter per channel may compute its output
one channel at a time into a scratch buffer (output_h x output_w values)
and write the channel back over the input, whose channel is then no longer
needed: the output takes the input's bytes, and only the scratch is extra
(mcu_depthwise_conv_2d_s8_in_place, mcu_conv_reference.c).  The partial overlap of the
ordinary kernel (overlap.py) keeps the output about one input row and two
pixels below the input; for deep, small images (7 x 7 x 512: 4,608 B against
49) the scratch is far smaller, for shallow, large ones (48 x 48 x 8: 400 B
against 2,304) far larger.  So an int8 depthwise convolution becomes a
candidate only where its scratch is smaller than that overlap distance, and
the pipeline keeps the candidates only when the arena gets smaller (the
channel-by-channel kernel is slower than the ordinary one).

The rewrite is one of the Program (program.py): the op gets a scratch tensor,
planned like any other (scratch.py), and the call its facts offer for running
over its input (`over_input`, mcu_depthwise_conv_2d_s8_in_place), whose facts
say so (`writes_over_input`): lifetimes puts the output in the input's bytes.
"""

from __future__ import annotations

from dataclasses import replace

from ..graph import Tensor
from ..lowering import KernelFacts
from ..lowering.program import LoweredOp, Program
from .lifetimes import Lifetimes
from .problem import align_up


def candidates(program: Program, lifetimes: Lifetimes) -> list[int]:
    """Ops (indices) whose in-place run needs less than their overlap does."""
    graph = program.graph
    consumers = graph.consumers()
    chosen = []
    for op in graph.operators:
        if op.opcode != "DEPTHWISE_CONV_2D" or op.scratch or len(op.outputs) != 1 or not op.inputs:
            continue
        src, dst = op.inputs[0], op.outputs[0]
        if src not in lifetimes.placements or dst not in lifetimes.placements:
            continue
        inp, out = graph.tensors[src], graph.tensors[dst]
        if len(inp.shape) != 4 or len(out.shape) != 4 or inp.shape[3] != out.shape[3] or out.nbytes > inp.nbytes:
            continue  # depth multiplier 1, and the output fits in the input
        if consumers.get(src, []) != [op.index] or src in graph.outputs or dst in graph.inputs:
            continue  # the input must die here
        if program.facts(op.index).over_input is None:
            continue  # int8 only
        scratch = align_up(out.shape[0] * out.shape[1] * out.shape[2], lifetimes.problem.alignment)
        step = lifetimes.problem.steps[op.index]
        dst_buffer = lifetimes.placements[dst].buffer
        apart = next((-o.max_offset for o in step.overlaps if o.output == dst_buffer), out.nbytes)
        if scratch < apart:
            chosen.append(op.index)
    return chosen


def with_in_place_depthwise(program: Program, ops: list[int]) -> Program:
    """`program` with each of `ops` run over its own input, with its scratch tensor."""
    graph = program.graph
    tensors = list(graph.tensors)
    operators = list(graph.operators)
    lowered = list(program.ops)
    for index in ops:
        op = operators[index]
        over_input = program.facts(index).over_input
        assert over_input is not None, f"op {index} cannot run over its input"
        batches, height, width, _ = graph.tensors[op.outputs[0]].shape
        scratch = len(tensors)
        name = f"op{op.index}_depthwise_conv_2d_scratch_channel"
        tensors.append(Tensor(scratch, name, (batches * height * width,), "int8", is_scratch=True))
        operators[index] = replace(op, scratch=(scratch,))
        # The facts of the channel-by-channel kernel: no raster walk, no window.
        facts = KernelFacts(macs=program.facts(index).macs, writes_over_input=True)
        lowered[index] = LoweredOp(over_input(scratch), facts)
    graph = replace(graph, tensors=tuple(tensors), operators=tuple(operators))
    return replace(program, graph=graph, ops=tuple(lowered))
