"""IF and WHILE -> the calls of their subgraphs' ops, inside an `if`/`else`
or a `for (;;)` loop that codegen writes around them.

The subgraphs' ops are already on subgraph 0's tensors (control_flow.py),
so each lowers as it would in subgraph 0; what is added is the copies TFLite
makes between a subgraph's values and the op's:
- IF: `if (cond) { then } else { else }` (only the branch taken when the
  condition is a constant); a branch output that its ops do not write into
  the IF's output directly (an input passed through, a constant, one value
  given twice) is copied there at the end of the branch;
- WHILE: the inputs are copied into the outputs, which hold the loop
  variables; then `for (;;) { cond; if (!c) break; body; copies }`, where
  each body result is copied into its loop variable.  A result that is
  another loop variable is first copied aside, so that no copy reads a loop
  variable an earlier copy of the same iteration has written.

Everything a subgraph computes lives in one scratch tensor of the op, its
sub-arena (`sub_arena`: planned here, along the op's code), so no byte of it
is shared with the op's inputs or outputs: the copies never overlap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..errors import InvalidModel, McuPlanError
from ..frontend.control_flow import Body, bodies
from ..graph import Graph, Operator, operator_dtype_key, operator_name
from . import KernelCall, KernelFacts, NotLowerable, ScratchNeed, declare_facts, lower, lowers, scratch_for


@dataclass(frozen=True)
class ControlStep:
    """One line of an IF's or WHILE's code: a kernel call ("call", with the
    op it runs for), or a control statement ("if" and "break_unless" test
    the bool `tensor`; "else", "end", "loop")."""

    kind: str
    op: Operator | None = None
    call: KernelCall | None = None
    tensor: int = -1


@dataclass(frozen=True)
class ControlFlowCall(KernelCall):
    """An IF's or WHILE's code: `steps` in order (codegen renders them)."""

    steps: tuple[ControlStep, ...] = field(default=())
    # The scratch tensor holding what the subgraphs compute (-1: nothing),
    # and where each such value starts in it: (tensor, byte offset).
    sub_arena: int = -1
    places: tuple[tuple[int, int], ...] = ()


class BranchNotLowerable(NotLowerable):
    """Ops inside an IF's or WHILE's subgraphs the runtime lacks:
    "OPCODE dtype" -> count, and the first reason for each."""

    def __init__(self, combinations: dict[str, int], reasons: dict[str, str]):
        super().__init__("; ".join(sorted(combinations)))
        self.combinations = combinations
        self.reasons = reasons


def op_calls(op: Operator, call: KernelCall) -> Iterator[tuple[Operator, KernelCall]]:
    """Every kernel call `call` makes, with the op it runs for: itself, or,
    for an IF or WHILE, the calls of its steps."""
    if isinstance(call, ControlFlowCall):
        for step in call.steps:
            if step.call is not None and step.op is not None:
                yield step.op, step.call
    else:
        yield op, call


def kernel_calls(call: KernelCall) -> Iterator[KernelCall]:
    """The kernel calls `call` makes: itself, or an IF's or WHILE's calls."""
    if isinstance(call, ControlFlowCall):
        yield from (step.call for step in call.steps if step.call is not None)
    else:
        yield call


def _copy(source: int, target: int, graph: Graph, where: Operator) -> ControlStep:
    """The step copying tensor `source` into `target` (same layout)."""
    nbytes = graph.tensors[target].nbytes
    copy_op = replace(where, opcode="COPY", inputs=(source,), outputs=(target,), options={}, scratch=())
    call = KernelCall(
        function="mcu_copy",
        params_type="mcu_copy_params",
        params={"bytes": nbytes},
        args=(source, target),
        sources=("mcu_copy",),
    )
    return ControlStep("call", copy_op, call)


def _code(op: Operator, graph: Graph) -> list[ControlStep]:
    """The op's steps in order, each subgraph op's call not yet made
    (`call` None): what the sub-arena is planned over and lowering fills."""
    steps: list[ControlStep] = []
    if op.opcode == "IF":
        then_body, else_body = bodies(op)
        condition = graph.tensors[op.inputs[0]]
        if condition.data is not None:
            # Known at generation time (a constant, or folded from constants): only that branch runs.
            taken: tuple[Body, ...] = (then_body,) if any(condition.data[:1]) else (else_body,)
        else:
            taken = (then_body, else_body)
            steps.append(ControlStep("if", tensor=op.inputs[0]))
        for position, body in enumerate(taken):
            if position:
                steps.append(ControlStep("else"))
            steps.extend(ControlStep("call", inner) for inner in body.operators)
            for result, output in zip(body.results, op.outputs, strict=True):
                if result != output:
                    steps.append(_copy(result, output, graph, op))
        if len(taken) == 2:
            steps.append(ControlStep("end"))
    else:
        cond, body = bodies(op)
        steps.extend(_copy(x, y, graph, op) for x, y in zip(op.inputs, op.outputs, strict=True))
        steps.append(ControlStep("loop"))
        steps.extend(ControlStep("call", inner) for inner in cond.operators)
        steps.append(ControlStep("break_unless", tensor=cond.results[0]))
        steps.extend(ControlStep("call", inner) for inner in body.operators)
        results = list(body.results)
        for position, aside in enumerate(body.asides):
            if aside >= 0:
                steps.append(_copy(results[position], aside, graph, op))
                results[position] = aside
        for result, variable in zip(results, op.outputs, strict=True):
            if result != variable:
                steps.append(_copy(result, variable, graph, op))
        steps.append(ControlStep("end"))
    return steps


# Every value inside the sub-arena starts at a multiple of this (the arena's own alignment).
SUB_ARENA_ALIGNMENT = 16


def sub_arena(op: Operator, graph: Graph, steps: list[ControlStep] | None = None) -> tuple[int, dict[int, int]]:
    """Bytes of the op's sub-arena and where each value its subgraphs
    compute starts in it.  A value is held from the first to the last step
    touching it, the steps taken in code order: an output never shares its
    input's bytes, the then and else branches (of which one runs) follow one
    another, and so do a loop's cond and body (every such value is written
    anew in each turn before it is read: the loop variables live in the
    WHILE's outputs, outside).  Placed first fit, largest first."""
    steps = _code(op, graph) if steps is None else steps
    outside = set(op.inputs) | set(op.outputs)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for position, step in enumerate(steps):
        touched: tuple[int, ...] = (step.tensor,)
        if step.op is not None:
            touched = step.op.inputs + step.op.outputs + step.op.intermediates + step.op.scratch
        for t in touched:
            if t >= 0 and t not in outside and not graph.tensors[t].is_constant:
                first.setdefault(t, position)
                last[t] = position
    size_of = {t: -(-max(graph.tensors[t].nbytes, 1) // SUB_ARENA_ALIGNMENT) * SUB_ARENA_ALIGNMENT for t in first}
    places: dict[int, int] = {}
    for t in sorted(first, key=lambda t: (-size_of[t], first[t], t)):
        taken = sorted(
            (places[u], places[u] + size_of[u]) for u in places if first[u] <= last[t] and first[t] <= last[u]
        )
        offset = 0
        for start, end in taken:
            if offset + size_of[t] <= start:
                break
            offset = max(offset, end)
        places[t] = offset
    return max((places[t] + size_of[t] for t in places), default=0), places


@scratch_for("IF", "WHILE")
def control_flow_scratch(op: Operator, graph: Graph) -> tuple[ScratchNeed, ...]:
    """The sub-arena holding what the op's subgraphs compute."""
    size, _ = sub_arena(op, graph)
    return (ScratchNeed("subgraphs", "uint8", size),) if size else ()


@lowers("IF", "WHILE")
def lower_control_flow(op: Operator, graph: Graph) -> KernelCall:
    failed: dict[str, int] = {}
    reasons: dict[str, str] = {}
    code = _code(op, graph)
    size, places = sub_arena(op, graph, code)
    if size and (len(op.scratch) != 1 or graph.tensors[op.scratch[0]].nbytes < size):
        raise NotLowerable(f"{op.opcode}: no scratch tensor of {size} bytes for its subgraphs")
    steps: list[ControlStep] = []
    sources: list[str] = ["mcu_copy"]
    for step in code:
        if step.kind == "call" and step.call is None and step.op is not None:
            inner = step.op
            try:
                step = replace(step, call=lower(inner, graph))
            except NotLowerable as exc:
                key = operator_dtype_key(inner, graph.tensors)
                failed[key] = failed.get(key, 0) + 1
                reason = str(exc).strip()
                if key not in reasons and reason and reason != operator_name(inner):
                    reasons[key] = reason
                continue
            except McuPlanError as exc:
                raise InvalidModel(f"op {op.index} ({op.opcode}): {exc}") from None
        for stem in step.call.sources if step.call is not None else ():
            if stem not in sources:
                sources.append(stem)
        steps.append(step)
    if failed:
        raise BranchNotLowerable(failed, reasons)
    return ControlFlowCall(
        function="",
        params_type="",
        sources=tuple(sources),
        steps=tuple(steps),
        sub_arena=op.scratch[0] if size else -1,
        places=tuple(sorted(places.items())),
    )


# The op reads its inputs and writes its outputs whole, through kernels and
# copies the plan knows nothing of: it may assume nothing.
declare_facts(KernelFacts(), "IF", "WHILE")
