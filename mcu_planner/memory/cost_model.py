"""A per-op cost model, for the default plan's speed/size trade.

The reference core is the Cortex-M4: mps2-an386 under `qemu-system-arm
-icount shift=0`, where QEMU runs one instruction per nanosecond and the
SysTick counts at 25 MHz, so one tick is 40 instructions.  `mcu-plan check
MODEL --target mps2-an386 --inputs 1 --profile` prints each op's ticks and
MACs.  The rates below are in those ticks (the names say "instructions":
the unit cancels, since only the ratio of an extra to the model's estimate,
DEFAULT_EXTRA_SHARE, is ever used).

An op's estimate is its MACs (KernelFacts.macs) times the rate per MAC of
its kernel, or, for an op without MACs, its output elements times a
per-element rate.  Measured on vww_96_int8 with every kernel on its fast
walk and its full scratch (`--alias off --patches off --order model`:
325,036 ticks):

- the int8 depthwise entries (`mcu_depthwise_conv_2d_s8_*`): 0.097 ticks per MAC (13 ops, 77.1 k ticks
  over 798 k MACs; kws_ref_model 0.094, person_detect 0.094).
- the int8 convolution's entries and every other kernel with MACs: 0.037 ticks per MAC
  (14 int8 convolutions and the FULLY_CONNECTED, 247 k ticks over 6.69 M
  MACs; kws 0.034, person_detect 0.033).  Float kernels are slower per MAC:
  the model's total is then underestimated, which only makes the 2% test of
  `within_default_cost` stricter.
- ops without MACs: 2 per output element (AVERAGE_POOL_2D's 256 outputs
  took 659 ticks; pretrainedResnet_quant's ADDs 1.95).

What the raster walk (KernelFacts.raster_walk_is_slower) adds, measured as
the same models' ticks per op with every slower overlap taken (no --ram,
`--patches off`):

- depthwise int8 (channel-group runs lost): vww_96_int8 ops 3, 5, 9, 13
  +605, +1,732, +1,491, +1,010 ticks (0.007 to 0.024 per MAC);
  str_ww_ref_model ops 0, 2 +262, +156 (0.078, 0.010); kws_ref_model's
  25 x 5 layers +3,629 each (0.050); micro_speech's layer +2,056 (0.006).
  No rule per MAC, pixel or row fits them all; the model charges 0.03 per
  MAC (vww_96_int8's five: +6.2 k against +3.1 k measured; kws_ref_model's
  op 7: 2,160 against 3,629).
- int8 convolution on its full columns (the M4 DSP blocks, which walk
  in raster order anyway: KernelFacts.smaller_scratch offered): +0 or +1
  tick on every pointwise convolution of vww_96_int8, kws_ref_model and
  str_ww_ref_model; the model charges nothing.  Otherwise (1x1 stride 1 on
  the compact columns: channel pairs no longer outermost; or a window longer
  than a column) it charges 2.2 per output pixel, measured before the
  blocks (+1.93 and +2.14 per pixel on vww_96_int8's ops 2 and 6).

What the compact columns (an int8 CONV_2D's smaller scratch, without the
M4 DSP blocks: memory/scratch_sizes.py) add, measured per op with every
convolution on them against the full columns (alias off): pointwise ops
+0.016 to +0.060 per MAC, more per MAC for fewer input channels
(vww_96_int8 op 2, 8 channels: +17,736 ticks over 294,912 MACs; op 26,
256 channels: +9,483 over 589,824), windows +0.015 to +0.020 per MAC
(pretrainedResnet_quant's 3x3 layers, model_runner_codegen_model op 4),
a first layer up to +0.095 (model_runner op 2, 4x1 on one channel: +292
over 3,072).  The model charges 0.016 per MAC plus 0.4 per output value:
within -7% to +22% of every stride-1 pointwise and window layer of the six
models measured (str_ww_ref_model op 7, one pixel: -17%), first layers up
to +85%, stride-2 pointwise ones (no columns at all then) up to -31%.  The
blocks run those layers 1.25x to 2.2x faster, so giving them up at a
model's peak costs far more than 2% on every model measured: the default
takes them only for layers of few MACs (a pointwise convolution of one
pixel).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

from ..lowering.conv import DEPTHWISE_S8_ENTRIES
from ..lowering.program import Program
from .problem import Problem

REFERENCE_CORE = "Cortex-M4"

INSTRUCTIONS_PER_MAC = dict.fromkeys(DEPTHWISE_S8_ENTRIES, 0.097)
INSTRUCTIONS_PER_MAC_OTHERWISE = 0.037
INSTRUCTIONS_PER_OUTPUT_ELEMENT_WITHOUT_MACS = 2.0

RASTER_EXTRA_PER_MAC = dict.fromkeys(DEPTHWISE_S8_ENTRIES, 0.03)
RASTER_EXTRA_PER_OUTPUT_PIXEL = 2.2

SMALLER_SCRATCH_EXTRA_PER_MAC = 0.016
SMALLER_SCRATCH_EXTRA_PER_OUTPUT_ELEMENT = 0.4

# The most the default plan may add to the model's estimated instructions
# for a smaller arena (and it adds no MACs).
DEFAULT_EXTRA_SHARE = 0.02


def op_instructions(program: Program, index: int) -> float:
    """The estimated instructions of op `index` on its fast walk."""
    facts, call = program.facts(index), program.call(index)
    if facts.macs:
        rate = INSTRUCTIONS_PER_MAC.get(call.function if call else "", INSTRUCTIONS_PER_MAC_OTHERWISE)
        return facts.macs * rate
    op = program.graph.operators[index]
    elements = sum(prod(program.graph.tensors[t].shape) for t in op.outputs if t >= 0)
    return elements * INSTRUCTIONS_PER_OUTPUT_ELEMENT_WITHOUT_MACS


def model_instructions(program: Program) -> float:
    """The estimated instructions of one run of the whole model, every op on its fast walk."""
    return sum(op_instructions(program, index) for index in range(len(program.ops)))


def raster_walk_extra(program: Program, index: int) -> float:
    """What op `index` costs more on its slower raster walk than on its fast one."""
    facts, call = program.facts(index), program.call(index)
    function = call.function if call else ""
    if function in RASTER_EXTRA_PER_MAC:
        return facts.macs * RASTER_EXTRA_PER_MAC[function]
    access = facts.access
    if access is None or facts.smaller_scratch is not None:
        return 0.0  # an int8 convolution on its full columns: the M4 DSP blocks walk in raster order
    return access.batches * access.output_h * access.output_w * RASTER_EXTRA_PER_OUTPUT_PIXEL


def smaller_scratch_extra(program: Program, index: int) -> float:
    """What op `index` costs more on the slower paths of its smaller scratch
    (scratch_sizes.py) than on its full one."""
    facts = program.facts(index)
    if facts.smaller_scratch is None and facts.larger_scratch is None:
        return 0.0
    op = program.graph.operators[index]
    elements = sum(prod(program.graph.tensors[t].shape) for t in op.outputs if t >= 0)
    return facts.macs * SMALLER_SCRATCH_EXTRA_PER_MAC + elements * SMALLER_SCRATCH_EXTRA_PER_OUTPUT_ELEMENT


def cheap_smaller_scratch(program: Program) -> frozenset[int]:
    """The scratch tensors of the ops whose smaller scratch alone costs at
    most DEFAULT_EXTRA_SHARE: the ones the default plan may give up."""
    allowance = DEFAULT_EXTRA_SHARE * model_instructions(program)
    return frozenset(
        alternative.tensor
        for index, lowered in enumerate(program.ops)
        if (alternative := lowered.facts.smaller_scratch) is not None
        and smaller_scratch_extra(program, index) <= allowance
    )


def slower_walk_steps(problem: Problem, offsets: dict[int, int]) -> tuple[int, ...]:
    """The steps whose output the plan (`offsets`) starts inside an input
    only the slower raster walk lets it overlap (Overlap.slower)."""
    sizes = {b.id: b.size for b in problem.buffers}
    steps = []
    for index, step in enumerate(problem.steps):
        for o in step.overlaps:
            if not o.slower or o.output not in offsets or o.input not in offsets:
                continue
            out_at, in_at = offsets[o.output], offsets[o.input]
            if out_at < in_at + sizes[o.input] and in_at < out_at + sizes[o.output]:
                steps.append(index)
                break
    return tuple(steps)


@dataclass(frozen=True)
class SlowerWalks:
    """The ops a plan runs on their slower raster walk, and those it runs on
    the slower paths of a smaller scratch (scratch_sizes.py), and what that
    costs."""

    ops: tuple[int, ...]
    extra_instructions: float
    model_instructions: float
    smaller_scratch_ops: tuple[int, ...] = ()
    smaller_scratch_extra: float = 0.0

    @property
    def extra_share(self) -> float:
        extra = self.extra_instructions + self.smaller_scratch_extra
        return extra / self.model_instructions if self.model_instructions else 0.0

    def within_default_cost(self) -> bool:
        return self.extra_share <= DEFAULT_EXTRA_SHARE

    def line(self) -> str:
        """The report's line for them."""
        taken = []
        if self.ops:
            taken.append(f"overlaps on the raster walk: ops {', '.join(map(str, self.ops))}")
        if self.smaller_scratch_ops:
            taken.append(f"compact columns: ops {', '.join(map(str, self.smaller_scratch_ops))}")
        return f"{'; '.join(taken)} ({100 * self.extra_share:+.1f}% instructions, estimated on the {REFERENCE_CORE})"


def slower_walks(program: Program, problem: Problem, offsets: dict[int, int]) -> SlowerWalks:
    """The slower walks of the plan `offsets` of `program`, and the smaller scratch its ops run on."""
    stage = program.patch_stage
    staged = set(stage.ops) if stage is not None else set()  # the stage's strips run in order on any walk
    ops = tuple(index for index in slower_walk_steps(problem, offsets) if index not in staged)
    walks = SlowerWalks(ops, sum(raster_walk_extra(program, index) for index in ops), model_instructions(program))
    return with_smaller_scratch_cost(program, walks)


def with_smaller_scratch_cost(program: Program, walks: SlowerWalks | None) -> SlowerWalks:
    """`walks` (None: no slower walk) with the smaller scratch `program`'s ops run on, and its cost."""
    if walks is None:
        walks = SlowerWalks((), 0.0, model_instructions(program))
    ops = tuple(i for i, lowered in enumerate(program.ops) if lowered.facts.larger_scratch is not None)
    return replace(
        walks, smaller_scratch_ops=ops, smaller_scratch_extra=sum(smaller_scratch_extra(program, i) for i in ops)
    )
