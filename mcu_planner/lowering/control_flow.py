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

Everything a subgraph computes is a scratch tensor of the op, so no byte of
it is shared with the op's inputs or outputs: the copies never overlap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..control_flow import Body, bodies
from ..errors import InvalidModel, McuPlanError
from ..graph import Graph, Operator, operator_dtype_key, operator_name
from . import KernelCall, KernelFacts, NotLowerable, declare_facts, lower, lowers


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


def _body_steps(body: Body, graph: Graph, failed: dict[str, int], reasons: dict[str, str]) -> list[ControlStep]:
    steps = []
    for inner in body.operators:
        try:
            steps.append(ControlStep("call", inner, lower(inner, graph)))
        except NotLowerable as exc:
            key = operator_dtype_key(inner, graph.tensors)
            failed[key] = failed.get(key, 0) + 1
            reason = str(exc).strip()
            if key not in reasons and reason and reason != operator_name(inner):
                reasons[key] = reason
        except McuPlanError as exc:
            raise InvalidModel(f"{body.role} subgraph {body.subgraph}: {exc}") from None
    return steps


def _scratch(graph: Graph, op: Operator, like: int, count: int) -> int:
    """The op's scratch tensor for copying loop variable `like` aside:
    the first of its scratch tensors of that layout not yet taken."""
    tensor = graph.tensors[like]
    candidates = [
        t
        for t in op.scratch
        if graph.tensors[t].name.startswith(f"op{op.index}_aside_")
        and graph.tensors[t].shape == tensor.shape
        and graph.tensors[t].dtype == tensor.dtype
    ]
    if len(candidates) <= count:
        raise NotLowerable(f"WHILE: no scratch tensor to copy loop variable {like} aside")
    return candidates[count]


@lowers("IF", "WHILE")
def lower_control_flow(op: Operator, graph: Graph) -> KernelCall:
    failed: dict[str, int] = {}
    reasons: dict[str, str] = {}
    steps: list[ControlStep] = []
    sources: list[str] = ["mcu_copy"]
    if op.opcode == "IF":
        then_body, else_body = bodies(op)
        condition = graph.tensors[op.inputs[0]]
        if condition.data is not None:
            # Known at generation time (a constant, or folded from constants): only that branch runs.
            taken = (then_body,) if any(condition.data[:1]) else (else_body,)
        else:
            taken = (then_body, else_body)
            steps.append(ControlStep("if", tensor=op.inputs[0]))
        for position, body in enumerate(taken):
            if position:
                steps.append(ControlStep("else"))
            steps.extend(_body_steps(body, graph, failed, reasons))
            for result, output in zip(body.results, op.outputs):
                if result != output:
                    steps.append(_copy(result, output, graph, op))
        if len(taken) == 2:
            steps.append(ControlStep("end"))
    else:
        cond, body = bodies(op)
        steps.extend(_copy(x, y, graph, op) for x, y in zip(op.inputs, op.outputs))
        steps.append(ControlStep("loop"))
        steps.extend(_body_steps(cond, graph, failed, reasons))
        steps.append(ControlStep("break_unless", tensor=cond.results[0]))
        steps.extend(_body_steps(body, graph, failed, reasons))
        results = list(body.results)
        aside = 0
        for position, (result, variable) in enumerate(zip(results, op.outputs)):
            if result in op.outputs and result != variable:
                kept = _scratch(graph, op, result, aside)
                aside += 1
                steps.append(_copy(result, kept, graph, op))
                results[position] = kept
        for result, variable in zip(results, op.outputs):
            if result != variable:
                steps.append(_copy(result, variable, graph, op))
        steps.append(ControlStep("end"))
    if failed:
        raise BranchNotLowerable(failed, reasons)
    for step in steps:
        for stem in step.call.sources if step.call is not None else ():
            if stem not in sources:
                sources.append(stem)
    return ControlFlowCall(function="", params_type="", sources=tuple(sources), steps=tuple(steps))


# The op reads its inputs and writes its outputs whole, through kernels and
# copies the plan knows nothing of: it may assume nothing.
declare_facts(KernelFacts(), "IF", "WHILE")
