"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) and the
CALL_ONCE that initialises them, resolved when the model is read.

A streaming model (ESPHome's microWakeWord, for one) keeps its context in
resource variables: subgraph 0 starts with CALL_ONCE, which on the first
invocation runs an init subgraph of VAR_HANDLE + ASSIGN_VARIABLE of
constants; every invocation then reads each variable (READ_VARIABLE) and
writes it back (ASSIGN_VARIABLE), each naming it through a VAR_HANDLE.

Here all of that becomes the variable tensors the rest of mcu-planner
already keeps in the persistent state region (Tensor.is_variable, as SVDF
and LSTM state):
- each (container, shared_name) is one variable tensor, at the index of the
  first VAR_HANDLE output naming it in subgraph 0; its shape, dtype and
  quantization are those of the value the init subgraph assigns (else of
  the first ASSIGN_VARIABLE in subgraph 0);
- the init subgraph runs now (ops on constants evaluated as folding.py
  does): the values it assigns become the variables' stored values, which NAME_reset() copies into the state
  region, so it costs nothing at run time;
- CALL_ONCE and VAR_HANDLE are dropped; READ_VARIABLE (variable) -> output
  and ASSIGN_VARIABLE (variable, value) stay, with the variable tensor in
  place of the handle (lowering/variables.py copies the bytes);
- where nothing else reads the assigned value and no op touches the
  variable between the value's producer and the ASSIGN_VARIABLE, the
  producer writes straight into the variable and the ASSIGN_VARIABLE goes
  (write_values_in_place): microWakeWord's STRIDED_SLICE of the newest
  slices lands in its ring buffer, with no copy and no arena bytes.

TFLite lets an assignment change a variable's shape or type; a variable
whose reads and writes do not all share one layout is refused (exit 4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import InputError, UnsupportedModel
from ..graph import Graph, Operator, Tensor, operator_name

RESOURCE_OPCODES = frozenset({"CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})

VariableKey = tuple[str, str]  # (container, shared_name), as TFLite keys its resources


@dataclass
class SubgraphRead:
    """One subgraph as the reader read it (tensor indices are its own)."""

    index: int
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # Used tensors of a type without an element size: index -> type name.
    unsized_types: dict[int, str]


def _key(op: Operator) -> VariableKey:
    return (str(op.options.get("container", "")), str(op.options.get("shared_name", "")))


def _describe(key: VariableKey) -> str:
    container, shared_name = key
    return f"'{container}/{shared_name}'" if container else f"'{shared_name}'"


def run_init_subgraph(subgraph: SubgraphRead, label: str) -> dict[VariableKey, Tensor]:
    """Run a CALL_ONCE's init subgraph now: the constant each variable it
    assigns is given (the last one, if several).  Ops computing the values
    from constants (a FILL, a RESHAPE ...) are evaluated by folding.py, as
    ops on constants in subgraph 0 are; anything else is refused."""
    from .folding import fold_constants

    where = f"{label}: CALL_ONCE init subgraph {subgraph.index}"
    # The ASSIGN_VARIABLEs stay in the graph folded, so that the values they read are kept.
    graph = Graph(tensors=tuple(subgraph.tensors), operators=tuple(subgraph.operators), inputs=(), outputs=())
    folded = fold_constants(graph)
    handles: dict[int, VariableKey] = {}
    values: dict[VariableKey, Tensor] = {}
    for op in folded.operators:
        if op.opcode == "VAR_HANDLE" and len(op.outputs) == 1:
            handles[op.outputs[0]] = _key(op)
        elif op.opcode == "ASSIGN_VARIABLE" and len(op.inputs) == 2 and op.inputs[0] in handles:
            value = folded.tensors[op.inputs[1]] if op.inputs[1] >= 0 else None
            if value is None or not value.is_constant:
                raise UnsupportedModel(f"{where}: ASSIGN_VARIABLE assigns a value that is not known at generation time")
            values[handles[op.inputs[0]]] = value
        else:
            raise UnsupportedModel(
                f"{where}: {operator_name(op)} is not supported there; an init subgraph may hold only "
                "VAR_HANDLE, ASSIGN_VARIABLE and ops on constants computed at generation time"
            )
    return values


def resolve_resource_variables(
    main: SubgraphRead, read_init: Callable[[int], SubgraphRead], label: str
) -> tuple[list[Tensor], list[Operator], str]:
    """Subgraph 0's tensors and operators with its resource variables made
    variable tensors (see the module docstring), and a note for the user."""
    initial: dict[VariableKey, Tensor] = {}
    handle_of: dict[int, VariableKey] = {}
    variable_of: dict[VariableKey, int] = {}
    touched: set[VariableKey] = set()
    init_subgraphs: list[int] = []
    kept: list[Operator] = []
    for op in main.operators:
        what = f"{label}: op {op.index} ({op.opcode})"
        if op.opcode == "VAR_HANDLE" and len(op.outputs) != 1:
            raise InputError(f"{what}: has {len(op.outputs)} outputs; a VAR_HANDLE makes one resource handle")
        if op.opcode == "CALL_ONCE":
            index = op.options.get("init_subgraph_index", 0)
            values = run_init_subgraph(read_init(index), label)
            early = sorted(touched & values.keys())
            if early:
                raise UnsupportedModel(f"{what}: initialises variable {_describe(early[0])} after ops have used it")
            initial.update(values)
            init_subgraphs.append(index)
        elif op.opcode == "VAR_HANDLE":
            handle_of[op.outputs[0]] = _key(op)
            variable_of.setdefault(_key(op), op.outputs[0])
        elif op.opcode in ("READ_VARIABLE", "ASSIGN_VARIABLE"):
            handle = op.inputs[0] if op.inputs else -1
            if handle not in handle_of:
                raise UnsupportedModel(f"{what}: its resource handle comes from no VAR_HANDLE of subgraph 0")
            key = handle_of[handle]
            touched.add(key)
            kept.append(replace(op, inputs=(variable_of[key],) + op.inputs[1:]))
        else:
            kept.append(op)

    tensors = list(main.tensors)
    state_bytes = 0
    for key in sorted(touched):
        index = variable_of[key]
        layout = _layout(
            key,
            initial.get(key),
            [op for op in kept if op.opcode in RESOURCE_OPCODES and op.inputs[:1] == (index,)],
            main,
            label,
        )
        value = initial.get(key)
        tensors[index] = Tensor(
            index,
            main.tensors[index].name or key[1],
            layout.shape,
            layout.dtype,
            layout.quantization,
            value.data if value is not None else None,
            is_variable=True,
        )
        state_bytes += layout.nbytes
    kept = write_values_in_place(tensors, kept, [variable_of[key] for key in sorted(touched)], main.outputs)
    operators = [replace(op, index=position) for position, op in enumerate(kept)]
    source = f"initialised by CALL_ONCE (subgraph {', '.join(map(str, init_subgraphs))}) at generation time"
    note = f"{len(touched)} resource variable{'s' if len(touched) != 1 else ''} ({state_bytes} B) kept as state" + (
        f", {source}" if init_subgraphs else ""
    )
    return tensors, operators, note


def _layout(key: VariableKey, value: Tensor | None, ops: list[Operator], main: SubgraphRead, label: str) -> Tensor:
    """The tensor whose shape, dtype and quantization the variable takes,
    after checking every read and write of it has the same shape and dtype."""
    uses = []  # (op, tensor read or written)
    for op in ops:
        if op.opcode == "READ_VARIABLE":
            if len(op.outputs) != 1:
                raise UnsupportedModel(f"{label}: op {op.index} (READ_VARIABLE) has {len(op.outputs)} outputs, not 1")
            uses.append((op, main.tensors[op.outputs[0]]))
        else:
            if len(op.inputs) != 2 or op.inputs[1] < 0:
                raise UnsupportedModel(f"{label}: op {op.index} (ASSIGN_VARIABLE) assigns no value")
            uses.append((op, main.tensors[op.inputs[1]]))
    if value is None:
        first_op, first = uses[0]
        if first_op.opcode == "READ_VARIABLE":
            raise UnsupportedModel(
                f"{label}: op {first_op.index} (READ_VARIABLE) reads variable {_describe(key)} "
                "before anything assigns it"
            )
        value = first
    for op, tensor in uses:
        if tensor.shape != value.shape or tensor.dtype != value.dtype:
            raise UnsupportedModel(
                f"{label}: op {op.index} ({op.opcode}) uses variable {_describe(key)} as "
                f"{tensor.dtype}{list(tensor.shape)}, but it holds {value.dtype}{list(value.shape)}; "
                "variables that change shape or type are not supported"
            )
    return value


def _writes_whole_output(opcode: str) -> bool:
    """Whether the op's kernel always runs and writes its whole output
    itself: its facts, the same for every call, let no plan elide it, run it
    in place or move its output over its input (no raster walk)."""
    from ..lowering import KernelFacts, declared_facts

    return declared_facts(opcode) == KernelFacts()


def write_values_in_place(
    tensors: list[Tensor], operators: list[Operator], variables: list[int], graph_outputs: tuple[int, ...]
) -> list[Operator]:
    """`operators` with each variable's one ASSIGN_VARIABLE folded into the
    op producing its value, where that is safe: the value is that op's only
    output and nothing but the ASSIGN_VARIABLE reads it, the op does not
    read the variable, and no op between the two touches it (ops on one
    variable keep their order, order.py, so none can move between them
    later).  The variable takes the value's quantization (both hold the
    same bytes; READ_VARIABLE copies them whatever the quantization)."""
    result = list(operators)
    for variable in variables:
        assigns = [i for i, op in enumerate(result) if op.opcode == "ASSIGN_VARIABLE" and op.inputs[0] == variable]
        if len(assigns) != 1:
            continue
        assign = assigns[0]
        value = result[assign].inputs[1]
        producers = [i for i, op in enumerate(result[:assign]) if value in op.outputs]
        readers = [op for op in result if value in op.inputs]
        if len(producers) != 1 or len(readers) != 1 or value in graph_outputs:
            continue
        producer = result[producers[0]]
        between = result[producers[0] + 1 : assign]
        if (
            producer.outputs != (value,)
            or variable in producer.inputs
            or not _writes_whole_output(producer.opcode)
            or any(variable in op.inputs + op.outputs for op in between)
        ):
            continue
        result[producers[0]] = replace(producer, outputs=(variable,))
        tensors[variable] = replace(tensors[variable], quantization=tensors[value].quantization)
        del result[assign]
    return result
