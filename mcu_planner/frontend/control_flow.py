"""IF and WHILE: the subgraphs they run, resolved when the model is read.

TFLite's IF runs its then or its else subgraph on its inputs 1.. (input 0 is
the bool condition) and gives that subgraph's outputs as its own; WHILE keeps
its values in loop variables, runs the cond subgraph on them and, while that
says true, the body subgraph, whose outputs become the next values.

Here each such op stays one op of subgraph 0 (so ordering, lifetimes and the
planners see one op reading its inputs and writing its outputs), and carries
its subgraphs as `Body` records under the option BODIES, their ops rewritten
onto subgraph 0's tensors:
- a subgraph input is the tensor holding that value: the IF's input, or the
  WHILE's output (the loop variables live in the WHILE's outputs);
- an IF branch output computed by an op of the branch is that op writing the
  IF's output directly;
- every other tensor a subgraph computes is added to subgraph 0's tensors
  but read and written by no op of it: lowering/control_flow.py plans those
  inside one scratch tensor of the IF or WHILE (scratch.py: alive at that
  op's step only), with lifetimes of their own along the op's code, so the
  then and else branches, and a loop's cond and body, share its bytes;
  constants are added as constants;
- `Body.results` are the tensors holding the subgraph's outputs when it ends
  (lowering/control_flow.py copies those that are not the IF's outputs, and
  each WHILE body result into its loop variable).

Only static shapes: a subgraph whose inputs or outputs differ in shape or
type from the values they stand for is refused (exit 2), as is a subgraph
index out of range.  Control flow inside a subgraph is refused (exit 4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import InputError, UnsupportedModel
from ..graph import Graph, Operator, Tensor
from .resource_variables import SubgraphRead

CONTROL_FLOW_OPCODES = frozenset({"IF", "WHILE"})
# The options naming each op's subgraphs, in the order its Bodies are kept.
SUBGRAPH_OPTIONS = {
    "IF": (("then", "then_subgraph_index"), ("else", "else_subgraph_index")),
    "WHILE": (("cond", "cond_subgraph_index"), ("body", "body_subgraph_index")),
}
# The option under which an IF or WHILE keeps its Bodies.
BODIES = "bodies"
# Ops a subgraph of an IF or WHILE may not hold.
_NESTED = frozenset({"IF", "WHILE", "CALL", "CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})


@dataclass(frozen=True)
class Body:
    """One subgraph of an IF or WHILE, its ops on subgraph 0's tensors."""

    role: str  # "then", "else", "cond" or "body"
    subgraph: int
    graph: Graph  # the subgraph as read, with its own tensor indices (validate.py checks it)
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]  # the tensors its inputs are
    results: tuple[int, ...]  # the tensors holding its outputs when it ends
    # A WHILE body: per output, the tensor it is copied aside to first (a
    # loop variable passed on as another one), else -1.
    asides: tuple[int, ...] = ()


def bodies(op: Operator) -> tuple[Body, ...]:
    return tuple(op.options.get(BODIES, ()))


def _layout(tensor: Tensor) -> str:
    return f"{tensor.dtype}{list(tensor.shape)}"


class _Inliner:
    def __init__(self, tensors: list[Tensor], label: str, num_subgraphs: int):
        self.tensors = tensors
        self.label = label
        self.num_subgraphs = num_subgraphs

    def add(self, tensor: Tensor, name: str, scratch: bool) -> int:
        index = len(self.tensors)
        self.tensors.append(replace(tensor, index=index, name=name, is_scratch=scratch))
        return index

    def body(
        self,
        op: Operator,
        role: str,
        sub: SubgraphRead,
        inputs: tuple[int, ...],
        direct_outputs: tuple[int, ...] | None,
    ) -> Body:
        """`sub` rewritten onto subgraph 0's tensors: its inputs are `inputs`;
        with `direct_outputs`, an output an op of it computes is written
        there directly (an IF's branches)."""
        where = f"{self.label}: op {op.index} ({op.opcode}) {role} subgraph {sub.index}"
        for inner in sub.operators:
            if inner.opcode in _NESTED:
                raise UnsupportedModel(f"{where}: {inner.opcode} inside control flow is not supported")
        used = set(sub.inputs) | set(sub.outputs)
        for inner in sub.operators:
            used.update(t for t in inner.inputs + inner.outputs + inner.intermediates if t >= 0)
        unsized = sorted(t for t in used if t in sub.unsized_types)
        if unsized:
            raise UnsupportedModel(f"{where}: tensor {unsized[0]} has type {sub.unsized_types[unsized[0]]}")
        mapping: dict[int, int] = {}
        for position, (t, outer) in enumerate(zip(sub.inputs, inputs, strict=True)):
            self.same_layout(where, f"input {position}", sub.tensors[t], self.tensors[outer])
            mapping.setdefault(t, outer)
        produced = {t for inner in sub.operators for t in inner.outputs}
        if direct_outputs is not None:
            for t, outer in zip(sub.outputs, direct_outputs, strict=True):
                if t in produced and t not in mapping:
                    self.same_layout(where, "output", sub.tensors[t], self.tensors[outer])
                    mapping[t] = outer
        prefix = f"op{op.index}_{role}"
        for t in sorted(used - set(mapping)):
            tensor = sub.tensors[t]
            if tensor.is_variable:
                raise UnsupportedModel(f"{where}: variable tensor {t} inside control flow is not supported")
            if tensor.is_constant:
                mapping[t] = self.add(tensor, tensor.name, scratch=False)
            else:
                mapping[t] = self.add(tensor, f"{prefix}_{tensor.name or t}", scratch=False)

        def onto(refs: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(mapping[t] if t >= 0 else t for t in refs)

        operators = []
        for inner in sub.operators:
            rewritten = replace(
                inner,
                index=op.index,
                inputs=onto(inner.inputs),
                outputs=onto(inner.outputs),
                intermediates=onto(inner.intermediates),
            )
            operators.append(self.with_scratch(rewritten, prefix))
        graph = Graph(
            tensors=tuple(sub.tensors),
            operators=tuple(sub.operators),
            inputs=sub.inputs,
            outputs=sub.outputs,
        )
        return Body(role, sub.index, graph, tuple(operators), tuple(inputs), onto(sub.outputs))

    def with_scratch(self, op: Operator, prefix: str) -> Operator:
        """`op` with the working memory its kernel needs (scratch.py) as
        scratch tensors of its own, planned with the subgraph's tensors."""
        from ..lowering import SCRATCH_NEEDS, NotLowerable, load_all

        load_all()
        need_fn = SCRATCH_NEEDS.get(op.opcode)
        if need_fn is None:
            return op
        try:
            needs = need_fn(op, Graph(tensors=tuple(self.tensors), operators=(op,), inputs=(), outputs=()))
        except NotLowerable:
            return op  # its lowering says why
        indices = []
        for need in needs:
            index = len(self.tensors)
            name = f"{prefix}_{op.opcode.lower()}_scratch_{need.name}"
            self.tensors.append(Tensor(index, name, (need.elements,), need.dtype, is_scratch=True))
            indices.append(index)
        return replace(op, scratch=tuple(indices))

    def same_layout(self, where: str, what: str, inner: Tensor, outer: Tensor) -> None:
        if inner.shape != outer.shape or inner.dtype != outer.dtype:
            raise InputError(
                f"{where}: {what} is {_layout(inner)} but stands for {_layout(outer)}; "
                "shapes that change through control flow are not supported"
            )
        if not inner.same_quantization(outer):
            raise UnsupportedModel(
                f"{where}: {what} is quantized unlike the tensor it stands for; "
                "control flow copies the bytes, so both must share one quantization"
            )

    def check_count(self, op: Operator, role: str, sub: SubgraphRead, inputs: int, outputs: int) -> None:
        if len(sub.inputs) != inputs or len(sub.outputs) != outputs:
            raise InputError(
                f"{self.label}: op {op.index} ({op.opcode}) {role} subgraph {sub.index} has "
                f"{len(sub.inputs)} inputs and {len(sub.outputs)} outputs; the op needs {inputs} and {outputs}"
            )

    def check_bool(self, op: Operator, what: str, tensor: Tensor) -> None:
        if tensor.dtype != "bool" or tensor.num_elements != 1:
            raise InputError(f"{self.label}: op {op.index} ({op.opcode}): {what} is {_layout(tensor)}, not one bool")


def inline_control_flow(
    tensors: list[Tensor],
    operators: list[Operator],
    read_subgraph: Callable[[int], SubgraphRead],
    num_subgraphs: int,
    label: str,
) -> tuple[list[Tensor], list[Operator]]:
    """Subgraph 0's tensors and operators with every IF and WHILE carrying
    its subgraphs (see the module docstring)."""
    inliner = _Inliner(list(tensors), label, num_subgraphs)
    result = []
    for op in operators:
        if op.opcode not in CONTROL_FLOW_OPCODES:
            result.append(op)
            continue
        subs = []
        for role, option in SUBGRAPH_OPTIONS[op.opcode]:
            index = op.options.get(option, 0)
            if not 0 < index < num_subgraphs:
                raise InputError(
                    f"{label}: op {op.index} ({op.opcode}): {role} subgraph {index} out of range "
                    f"(model has {num_subgraphs} subgraphs; subgraph 0 cannot be called)"
                )
            subs.append((role, read_subgraph(index)))
        if any(t < 0 for t in op.inputs + op.outputs):
            raise InputError(f"{label}: op {op.index} ({op.opcode}) has an absent input or output")
        found: list[Body] = []
        if op.opcode == "IF":
            if not op.inputs:
                raise InputError(f"{label}: op {op.index} (IF) has no condition input")
            inliner.check_bool(op, "the condition", inliner.tensors[op.inputs[0]])
            for role, sub in subs:
                inliner.check_count(op, role, sub, len(op.inputs) - 1, len(op.outputs))
                found.append(inliner.body(op, role, sub, op.inputs[1:], op.outputs))
        else:
            if len(op.inputs) != len(op.outputs):
                raise InputError(
                    f"{label}: op {op.index} (WHILE) has {len(op.inputs)} inputs and {len(op.outputs)} outputs"
                )
            for position, (x, y) in enumerate(zip(op.inputs, op.outputs, strict=True)):
                inliner.same_layout(
                    f"{label}: op {op.index} (WHILE)", f"output {position}", inliner.tensors[y], inliner.tensors[x]
                )
            (_, cond), (_, body) = subs
            inliner.check_count(op, "cond", cond, len(op.inputs), 1)
            inliner.check_count(op, "body", body, len(op.inputs), len(op.outputs))
            inliner.check_bool(op, f"cond subgraph {cond.index}'s output", cond.tensors[cond.outputs[0]])
            found.append(inliner.body(op, "cond", cond, op.outputs, None))
            found.append(inliner.body(op, "body", body, op.outputs, None))
            asides = []
            for position, passed in enumerate(found[-1].results):
                if passed in op.outputs and passed != op.outputs[position]:
                    # Another loop variable passed through: copied aside
                    # before the loop variables take the new values.
                    variable = inliner.tensors[passed]
                    asides.append(inliner.add(variable, f"op{op.index}_aside_{position}", scratch=False))
                else:
                    asides.append(-1)
            found[-1] = replace(found[-1], asides=tuple(asides))
            for position, t in enumerate(body.outputs):
                inliner.same_layout(
                    f"{label}: op {op.index} (WHILE) body subgraph {body.index}",
                    f"output {position}",
                    body.tensors[t],
                    inliner.tensors[op.outputs[position]],
                )
        result.append(replace(op, options={**op.options, BODIES: tuple(found)}))
    return inliner.tensors, result
