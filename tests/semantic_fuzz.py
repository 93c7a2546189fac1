"""Semantic mutations of builder-built models (issue 14): values, not bytes.

Each mutation reads a model into a Graph, changes one meaningful value --
a scale, a zero point, a shape, a bias length, the op order, an options table,
an option value, a tensor index -- and writes the model again with
ModelBuilder.from_graph.  `run_one` then runs `mcu-plan MODEL -o OUT --json J`
and, when that succeeds, `check` on the model, and returns what happened.

tests/test_semantic_fuzz.py draws mutations with Hypothesis (a few dozen in
CI); `python tests/semantic_fuzz.py N SEED [K] [--start=S]` runs the seeded
random mutations S .. S+N-1 (each from its own seed "SEED/i", so ranges run
at different times add up to one campaign) and prints the counts per exit
code.

Recorded run (`timeout ... nice -n 10 semantic_fuzz.py 10000 20261127 8`, stopped at
the time limit after 4,612 mutations, code of commit f99bce1 + 44555ca): plan
exits {0: 895, 1: 3, 2: 3478, 4: 236}; of the models planned, every 8th
distinct one checked: 52 bit-exact, 2 exit 2, 1 exit 5; slowest run 2.47 s
CPU, largest peak 62 MiB, no control character printed; LiteRT itself
crashed on 7 planned models (all after the variable-flag mutation; an ADD
writing a variable crashes it); 14 runs broke the
contract: 3 exit 1 (an empty conv window), 10 models planned that LiteRT
refuses (RESHAPE and SPLIT shapes, an empty conv window), 1 check exit 5
(a RESHAPE whose shape input disagrees with its output).  All 14 exit 2 in
one line since (rules filter-shape, reshape-shape, split-shape).
Full campaign (`semantic_fuzz.py N 20261127 8 --start=S`, mutations 0-9,999 in
ranges, finished on commit f0af495): plan exits {0: 2077, 2: 7459, 4: 464},
no exit 1; slowest 3.18 s CPU, largest peak 56 MiB, no control character;
146 of 148 checked models bit-exact; 3 contract breaks, each a model LiteRT
refuses and the plan accepted: 5432 (padding past int16, rule window-padding)
and 3055, 3163 (a CONV_2D bias marked -1, rule conv-bias); all three exit 2
since.
Earlier run (`semantic_fuzz.py 10000 20261122 8`, commit dcf5b18): plan exits
{0: 2152, 2: 7747, 4: 101}, no exit 1, 99 of 106 checked models bit-exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import random
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a source checkout

from mcu_planner.errors import MAX_UNSUPPORTED_LINES
from mcu_planner.frontend.reader import read_model
from mcu_planner.graph import Graph, Quantization
from mcu_planner_testing.builder import (
    NUMPY_DTYPES,
    Int8Net,
    Int16x8Net,
    ModelBuilder,
    single_op_model,
    tiny_kws_int8,
)


def _float_conv() -> bytes:
    b = ModelBuilder()
    x = b.add_tensor((1, 5, 5, 2), "float32")
    w = b.add_tensor((3, 3, 3, 2), "float32", data=np.linspace(-1, 1, 54, dtype=np.float32).reshape(3, 3, 3, 2))
    bias = b.add_tensor((3,), "float32", data=np.array([0.1, -0.2, 0.3], np.float32))
    y = b.add_tensor((1, 5, 5, 3), "float32")
    z = b.add_tensor((1, 75), "float32")
    b.add_op(
        "CONV_2D",
        [x, w, bias],
        [y],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"},
    )
    shape = b.add_tensor((2,), "int32", data=np.array([1, 75], np.int32))
    b.add_op("RESHAPE", [y, shape], [z])
    b.set_io([x], [z])
    return b.build()


def _small_int8_net() -> bytes:
    net = Int8Net(3)
    x = net.input((1, 6, 6, 3))
    y = net.depthwise_conv2d(net.conv2d(x, 4, activation="RELU6"))
    z = net.max_pool2d(net.add(y, net.conv2d(x, 4, kernel=(1, 1))))
    return net.build(net.softmax(net.fully_connected(net.reshape(z, (1, 36)), 5)))


def _data_movement_int8() -> bytes:
    """SPLIT, PACK, GATHER (constant indices) and CONCATENATION: declared
    counts, indices and axes for the mutations to break."""
    net = Int8Net(5)
    x = net.input((1, 6, 4))
    a, b, c = net.split(x, 3, axis=1)
    packed = net.pack(a, b, axis=0)
    gathered = net.gather(packed, [1, 0, 1], axis=0)
    return net.build(net.concatenation(net.reshape(gathered, (1, 6, 4)), net.reshape(c, (1, 2, 4)), axis=1))


def _int16_net() -> bytes:
    """16x8 ADD, RELU, MEAN, CONCATENATION and SOFTMAX: int16 zero points
    must stay 0 for each of them."""
    net = Int16x8Net(6)
    x, y = net.input((1, 4, 4, 3)), net.input((1, 4, 4, 3))
    joined = net.concatenation(x, y, axis=-1)
    summed = net.relu(net.add(joined, net.input((1, 4, 4, 6))))
    return net.build(net.softmax(net.reshape(net.mean(summed, (1, 2)), (1, 6))))


BASE_MODELS = {
    "kws": tiny_kws_int8,
    "small": _small_int8_net,
    "data_movement": _data_movement_int8,
    "int16": _int16_net,
    "fc": lambda: single_op_model("fully_connected", (2, 12), units=6),
    "mul": lambda: single_op_model("mul", (1, 4, 1, 3), (1, 1, 5, 3)),
    "float_conv": _float_conv,
}


class Draws:
    """The choices a mutation makes, from Hypothesis or from random.Random."""

    def __init__(self, source):
        self.source = source

    def integer(self, lo: int, hi: int) -> int:
        if isinstance(self.source, random.Random):
            return self.source.randint(lo, hi)
        from hypothesis import strategies as st

        return self.source.draw(st.integers(lo, hi))

    def choice(self, items):
        items = list(items)
        return items[self.integer(0, len(items) - 1)]


SPECIAL_SCALES = (0.0, -1.0, math.nan, math.inf, 1e-45, 1e-38, 1e-30, 1e30, 3e38)
SPECIAL_ZERO_POINTS = (-(2**31), -32769, -200, -129, -128, -1, 0, 1, 127, 128, 255, 256, 32768, 2**31)
OTHER_TABLES = (
    "Pool2DOptions",
    "Conv2DOptions",
    "DepthwiseConv2DOptions",
    "AddOptions",
    "ReshapeOptions",
    "FullyConnectedOptions",
    "SoftmaxOptions",
    "ConcatenationOptions",
)
WINDOW_VALUES = (-1, 0, 1, 2, 3, 7, 32767, 32768, 2**31 - 1)


def with_tensor(graph: Graph, index: int, **changes) -> Graph:
    """`graph` with tensor `index` changed (dataclasses.replace fields)."""
    tensors = list(graph.tensors)
    tensors[index] = dataclasses.replace(tensors[index], **changes)
    return dataclasses.replace(graph, tensors=tuple(tensors))


def with_op(graph: Graph, index: int, **changes) -> Graph:
    """`graph` with operator `index` changed (dataclasses.replace fields)."""
    ops = list(graph.operators)
    ops[index] = dataclasses.replace(ops[index], **changes)
    return dataclasses.replace(graph, operators=tuple(ops))


def _quantized(graph: Graph) -> list[int]:
    return [t.index for t in graph.tensors if t.quantization is not None]


def _resized_data(tensor, shape) -> bytes | None:
    """Constant data for a new shape: the old values repeated or cut (so the
    reader does not refuse the file for its byte count)."""
    if tensor.data is None or tensor.dtype not in NUMPY_DTYPES:
        return tensor.data
    old = np.frombuffer(tensor.data, dtype=np.dtype(NUMPY_DTYPES[tensor.dtype]).newbyteorder("<"))
    count = int(np.prod(shape)) if shape else 1
    values = np.resize(old, count) if old.size else np.zeros(count, old.dtype)
    return values.astype(old.dtype).tobytes()


def mutate_scale(graph: Graph, d: Draws) -> Graph:
    if not _quantized(graph):
        return graph
    t = graph.tensors[d.choice(_quantized(graph))]
    q = t.quantization
    k = d.integer(0, len(q.scales) - 1)
    if d.integer(0, 1):
        value = d.choice(SPECIAL_SCALES)
    else:
        value = q.scales[k] * 2.0 ** d.integer(-60, 60)
    scales = list(q.scales)
    scales[k] = float(np.float32(value)) if math.isfinite(value) and abs(value) < 3.4e38 else value
    return with_tensor(graph, t.index, quantization=dataclasses.replace(q, scales=tuple(scales)))


def mutate_zero_point(graph: Graph, d: Draws) -> Graph:
    if not _quantized(graph):
        return graph
    t = graph.tensors[d.choice(_quantized(graph))]
    q = t.quantization
    zero_points = list(q.zero_points)
    zero_points[d.integer(0, len(zero_points) - 1)] = (
        d.choice(SPECIAL_ZERO_POINTS) if d.integer(0, 1) else d.integer(-300, 300)
    )
    return with_tensor(graph, t.index, quantization=dataclasses.replace(q, zero_points=tuple(zero_points)))


def mutate_shape(graph: Graph, d: Draws) -> Graph:
    t = graph.tensors[d.integer(0, len(graph.tensors) - 1)]
    if not t.shape:
        return graph
    shape = list(t.shape)
    axis = d.integer(0, len(shape) - 1)
    shape[axis] = d.choice((0, 1, max(shape[axis] - 1, 0), max(shape[axis] + 1, 1), max(shape[axis] * 2, 1)))
    q = t.quantization
    if q is not None and q.per_channel and q.axis == axis:
        q = None if d.integer(0, 1) else q
    return with_tensor(graph, t.index, shape=tuple(shape), data=_resized_data(t, shape), quantization=q)


def mutate_bias_length(graph: Graph, d: Draws) -> Graph:
    weighted = [
        op
        for op in graph.operators
        if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and len(op.inputs) > 2 and op.inputs[2] >= 0
    ]
    if not weighted:
        return graph
    bias = graph.tensors[d.choice(weighted).inputs[2]]
    current = bias.shape[0] if bias.shape else 1
    length = d.choice((0, 1, max(current - 1, 0), current + 1, current * 2))
    q = bias.quantization
    if q is not None and q.per_channel:
        q = Quantization(
            tuple(np.resize(q.scales, length)) or (1.0,), tuple(np.resize(q.zero_points, length)) or (0,), 0
        )
        q = q if length > 1 else Quantization(q.scales[:1], q.zero_points[:1])
    return with_tensor(graph, bias.index, shape=(length,), data=_resized_data(bias, (length,)), quantization=q)


def mutate_op_order(graph: Graph, d: Draws) -> Graph:
    if len(graph.operators) < 2:
        return graph
    ops = list(graph.operators)
    i, j = d.integer(0, len(ops) - 1), d.integer(0, len(ops) - 1)
    ops[i], ops[j] = ops[j], ops[i]
    return dataclasses.replace(graph, operators=tuple(dataclasses.replace(op, index=k) for k, op in enumerate(ops)))


def mutate_options_table(graph: Graph, d: Draws) -> Graph:
    index = d.integer(0, len(graph.operators) - 1)
    return with_op(graph, index, options={}, options_tables=(d.choice(OTHER_TABLES),))


def mutate_option_value(graph: Graph, d: Draws) -> Graph:
    index = d.integer(0, len(graph.operators) - 1)
    op = graph.operators[index]
    names = [k for k, v in op.options.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not names:
        return graph
    name = d.choice(names)
    value = op.options[name]
    new = (
        d.choice((math.nan, math.inf, -1.0, 0.0, 1e-30, 1e30)) if isinstance(value, float) else d.choice(WINDOW_VALUES)
    )
    return with_op(graph, index, options={**op.options, name: new})


def mutate_tensor_index(graph: Graph, d: Draws) -> Graph:
    index = d.integer(0, len(graph.operators) - 1)
    op = graph.operators[index]
    outputs = d.integer(0, 1) == 1
    refs = list(op.outputs if outputs else op.inputs)
    if not refs:
        return graph
    k = d.integer(0, len(refs) - 1)
    refs[k] = d.integer(0 if outputs else -1, len(graph.tensors) - 1)
    return with_op(graph, index, **{"outputs" if outputs else "inputs": tuple(refs)})


SPECIAL_INTS = (-(2**31), -1, 0, 1, 2, 3, 4, 6, 100, 2**31 - 1)


def mutate_constant_value(graph: Graph, d: Draws) -> Graph:
    """One element of an integer constant (indices, axes, shapes, paddings)."""
    constants = [t.index for t in graph.tensors if t.data is not None and t.dtype in ("int32", "int64") and t.data]
    if not constants:
        return graph
    t = graph.tensors[d.choice(constants)]
    values = np.frombuffer(t.data, dtype=np.dtype(NUMPY_DTYPES[t.dtype]).newbyteorder("<")).copy()
    values[d.integer(0, values.size - 1)] = d.choice(SPECIAL_INTS)
    return with_tensor(graph, t.index, data=values.tobytes())


def mutate_variable(graph: Graph, d: Draws) -> Graph:
    """A tensor marked variable (a constant one then has a buffer) or not."""
    t = graph.tensors[d.integer(0, len(graph.tensors) - 1)]
    return with_tensor(graph, t.index, is_variable=not t.is_variable)


MUTATIONS = {
    "constant_value": mutate_constant_value,
    "variable": mutate_variable,
    "scale": mutate_scale,
    "zero_point": mutate_zero_point,
    "shape": mutate_shape,
    "bias_length": mutate_bias_length,
    "op_order": mutate_op_order,
    "options_table": mutate_options_table,
    "option_value": mutate_option_value,
    "tensor_index": mutate_tensor_index,
}

_BASE_GRAPHS: dict[str, Graph] = {}


def mutated_model(d: Draws) -> tuple[str, bytes]:
    """(description, model bytes) after one to three mutations of a base model."""
    base = d.choice(sorted(BASE_MODELS))
    if base not in _BASE_GRAPHS:
        _BASE_GRAPHS[base] = read_model(BASE_MODELS[base]())
    graph = _BASE_GRAPHS[base]
    kinds = []
    for _ in range(d.integer(1, 3)):
        kind = d.choice(sorted(MUTATIONS))
        kinds.append(kind)
        graph = MUTATIONS[kind](graph, d)
    return f"{base}: {', '.join(kinds)}", ModelBuilder.from_graph(graph).build()


# Bounds every run must keep (issue 20): wall time and peak memory.
MAX_RUN_SECONDS = 20.0
MAX_RUN_BYTES = 2 * 2**30
# A run still going after this long is stopped (and reported over the bound).
KILL_AFTER_SECONDS = 120


def control_characters(text: str) -> list[str]:
    """Characters that must not reach a terminal raw: C0 controls other than
    newline, DEL and C1 controls."""
    return sorted({c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F})


@dataclasses.dataclass
class Outcome:
    plan_exit: int
    stderr: list[str]
    written: list[str]  # files left in the work directory besides the model
    check_exit: int | None = None
    check_stderr: list[str] = dataclasses.field(default_factory=list)
    # Everything the runs printed, for the control-character check.
    printed: str = ""
    # Filled by run_isolated: the plan's CPU time and peak resident memory,
    # and LiteRT's verdict on a model the plan accepted.
    seconds: float | None = None
    peak_bytes: int | None = None
    litert: str | None = None

    def problems(self) -> list[str]:
        """What breaks the contract: empty when the run was well-behaved."""
        found = []
        if self.plan_exit not in (0, 2, 4):
            found.append(f"plan exit {self.plan_exit}")
        if self.plan_exit != 0:
            # Exit 4 lists each missing operator and dtype on a line of its own
            # under the head line (errors.MAX_UNSUPPORTED_LINES, then "and N more").
            allowed = 1 if self.plan_exit != 4 else 2 + MAX_UNSUPPORTED_LINES
            if not 1 <= len(self.stderr) <= allowed:
                found.append(f"{len(self.stderr)} stderr lines")
            if self.written:
                found.append(f"wrote {self.written}")
        if any("Traceback" in line for line in self.stderr + self.check_stderr):
            found.append("traceback")
        if self.check_exit not in (None, 0, 2):
            found.append(f"check exit {self.check_exit}: {' '.join(self.check_stderr)[:300]}")
        if self.check_exit == 2 and len(self.check_stderr) != 1:
            found.append(f"check: {len(self.check_stderr)} stderr lines")
        controls = control_characters(self.printed)
        if controls:
            found.append(f"control characters printed: {controls!r}")
        if self.seconds is not None and self.seconds > MAX_RUN_SECONDS:
            found.append(f"took {self.seconds:.1f} s CPU")
        if self.peak_bytes is not None and self.peak_bytes > MAX_RUN_BYTES:
            found.append(f"peak memory {self.peak_bytes / 2**20:.0f} MiB")
        if self.plan_exit == 0 and self.litert not in (None, "loaded"):
            found.append(f"accepted a model LiteRT refuses ({self.litert})")
        return found


def _main_quietly(args: list[str]) -> tuple[int, list[str], str]:
    """(exit code, stderr lines, everything printed) of one mcu-plan command."""
    from mcu_planner.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue().strip().splitlines(), out.getvalue() + err.getvalue()


def run_one(model: bytes, *, check: bool = True, sanitize: bool = False) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="mcu-plan-fuzz-") as work:
        work_dir = Path(work)
        path = work_dir / "m.tflite"
        path.write_bytes(model)
        code, err, printed = _main_quietly(
            [str(path), "-o", str(work_dir / "out"), "--json", str(work_dir / "plan.json"), "--planner", "greedy"]
        )
        written = sorted(p.name for p in work_dir.iterdir() if p.name != "m.tflite")
        outcome = Outcome(code, err, written if code != 0 else [], printed=printed)
        if code == 0 and check:
            args = ["check", str(path), "--inputs", "2"] + (["--sanitize"] if sanitize else [])
            outcome.check_exit, outcome.check_stderr, check_printed = _main_quietly(args)
            outcome.printed += check_printed
        return outcome


def litert_verdict(model: bytes) -> str:
    """'loaded' when LiteRT's BUILTIN_REF interpreter builds the model,
    allocates its tensors and invokes it once on zeros; otherwise the first
    line of its complaint."""
    from mcu_planner.targets.reference import _interpreter_classes

    Interpreter, OpResolverType = _interpreter_classes()
    try:
        interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interpreter.allocate_tensors()
        interpreter.invoke()
    except Exception as exc:  # noqa: BLE001 -- any refusal is the verdict
        return f"refused: {' '.join(str(exc).split())[:160]}"
    return "loaded"


def _in_child(work, limit_seconds: int = KILL_AFTER_SECONDS) -> tuple[object, float, int]:
    """(what `work()` returns, CPU seconds, peak resident bytes), computed in
    a forked child so that its time and memory are its own and a crash or a
    hang is an outcome, not the end of the campaign.  CPU time, because the
    wall time of a run on a shared machine measures the other users; the
    child is stopped after `limit_seconds` of wall time."""
    import os
    import pickle

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the campaign's handler is the parent's
        signal.alarm(limit_seconds)
        try:
            result: object = work()
        except BaseException as exc:  # noqa: BLE001
            result = exc
        with os.fdopen(write_end, "wb") as pipe:
            try:
                pickle.dump(result, pipe)
            except Exception as exc:  # noqa: BLE001
                pickle.dump(RuntimeError(f"unpicklable result: {exc}"), pipe)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status, usage = os.wait4(pid, 0)
    seconds = usage.ru_utime + usage.ru_stime
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    if not payload:
        code = os.waitstatus_to_exitcode(status)
        return (
            RuntimeError(f"child died ({'signal ' + str(-code) if code < 0 else 'exit ' + str(code)})"),
            seconds,
            peak,
        )
    return pickle.loads(payload), seconds, peak


def run_isolated(model: bytes, *, check: bool = False) -> Outcome:
    """run_one in a child process (time and memory measured), then, when
    the plan accepted the model, LiteRT's verdict on it (another child:
    LiteRT crashes on some models)."""
    result, seconds, peak = _in_child(lambda: run_one(model, check=check))
    if isinstance(result, BaseException):
        # A crash, or the wall-time alarm (SIGALRM): counted as exit 1.
        outcome = Outcome(1, [f"harness: {type(result).__name__}: {result}"], [])
        outcome.seconds = seconds
    else:
        assert isinstance(result, Outcome)
        outcome = result
        outcome.seconds = seconds
    outcome.peak_bytes = peak
    if outcome.plan_exit == 0:
        verdict, _, _ = _in_child(lambda: litert_verdict(model), 60)
        outcome.litert = verdict if isinstance(verdict, str) else f"refused: LiteRT crashed ({verdict})"
    return outcome


class _Stopped(Exception):
    """SIGTERM (from `timeout`) during a campaign."""


def _stop(signum, frame):
    raise _Stopped


def campaign(count: int, seed: int, check_every: int = 1, start: int = 0) -> None:
    """`count` seeded mutations, each planned in a child process; prints the
    counts per plan exit code and per check result, the slowest run and the
    largest peak memory, and every run that breaks the contract (exit 1, a
    bad stderr, files left behind, a control character printed, over
    MAX_RUN_SECONDS or MAX_RUN_BYTES, a model planned that LiteRT refuses).
    SIGTERM (`timeout`) ends it early with the summary of the runs done."""
    plan_codes: Counter = Counter()
    check_codes: Counter[int] = Counter()
    problem_kinds: Counter[str] = Counter()
    litert_crashes = 0
    bad = 0
    zero_seen = 0
    slowest, largest = 0.0, 0
    checked: set[bytes] = set()
    # Import and warm up everything a run uses once, here: every child then
    # starts from it instead of importing it again.
    run_one(BASE_MODELS["small"](), check=False)
    litert_verdict(BASE_MODELS["small"]())

    def summary() -> str:
        return (
            f"plan exits {dict(sorted(plan_codes.items(), key=str))}; "
            f"check (every {check_every}. distinct exit-0 model) exits {dict(sorted(check_codes.items()))}; "
            f"slowest {slowest:.2f} s CPU, largest peak {largest / 2**20:.0f} MiB; "
            f"LiteRT crashed on {litert_crashes} planned models; "
            f"contract broken {bad} {dict(problem_kinds)}"
        )

    signal.signal(signal.SIGTERM, _stop)
    done = 0
    try:
        for i in range(start, start + count):
            done = i - start
            # Each mutation draws from its own seed, so a campaign can be run in
            # ranges (--start) across processes or days and still be one run.
            rng = random.Random(f"{seed}/{i}")
            try:
                description, model = mutated_model(Draws(rng))
            except ValueError as exc:  # a mutation the builder cannot write (not a finding about mcu-plan)
                plan_codes["unbuildable"] += 1
                print(f"#{i}: unbuildable mutation: {exc}", flush=True)
                continue
            outcome = run_isolated(model, check=False)
            if outcome.plan_exit == 0 and model not in checked:
                zero_seen += 1
                if zero_seen % check_every == 0:
                    checked.add(model)
                    checked_outcome = run_isolated(model, check=True)
                    outcome.check_exit = checked_outcome.check_exit
                    outcome.check_stderr = checked_outcome.check_stderr
                    outcome.printed += checked_outcome.printed
            plan_codes[outcome.plan_exit] += 1
            if outcome.check_exit is not None:
                check_codes[outcome.check_exit] += 1
            slowest, largest = max(slowest, outcome.seconds or 0.0), max(largest, outcome.peak_bytes or 0)
            if outcome.litert and "LiteRT crashed" in outcome.litert:
                # LiteRT's own crash says nothing about whether it refuses the model.
                litert_crashes += 1
                print(f"#{i} {description}: LiteRT crashed on a planned model", flush=True)
                outcome.litert = None
            problems = outcome.problems()
            if problems:
                bad += 1
                problem_kinds.update(p.split(":")[0].split(" (")[0] for p in problems)
                print(f"#{i} {description}: {problems} {[repr(line) for line in outcome.stderr[:1]]}", flush=True)
            if (i + 1) % 500 == 0:
                print(f"{i + 1} runs: {summary()}", flush=True)
        done = count
    except _Stopped:
        print(f"stopped by SIGTERM after {done} mutations", flush=True)
    print(f"seed {seed}, mutations {start}..{start + done - 1} ({done}): {summary()}", flush=True)


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--start=")]
    first = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--start=")), 0)
    campaign(int(arguments[0]), int(arguments[1]), int(arguments[2]) if len(arguments) > 2 else 1, first)
