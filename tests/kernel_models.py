"""Helpers for the kernel tests: models built op by op, and the one assertion
every kernel test makes (generated C == TFLite reference interpreter).

`Branches` holds several independent single-op branches (one compile checks
many cases), each with its own graph inputs and seeded random quantization
parameters; layer-by-layer networks are in mcu_planner_testing.builder.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mcu_planner.gemmlowp16 import ReciprocalTable, reciprocal_table
from mcu_planner.targets.check import check_model, random_inputs
from mcu_planner.targets.qemu import run_firmware
from mcu_planner.targets.reference import run_isolated
from mcu_planner_testing.builder import ModelBuilder

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def assert_matches_reference(model: bytes, inputs: int = 3, seed: int = 0, target: str = "host", input_sets=None):
    """Generated C agrees with the reference interpreter on every output of
    `inputs` random input sets: byte for byte for integer outputs, and for
    float outputs exactly too, not only within check_model's tolerance (the
    kernels do the reference's float operations in its order)."""
    report = check_model(model, target=target, inputs=inputs, seed=seed, raise_on_mismatch=False, input_sets=input_sets)
    assert report.passed, report.mismatch_message()
    assert report.max_float_error == 0.0, f"float outputs differ from the reference by up to {report.max_float_error:g}"
    return report


def assert_firmware_matches_reference(elf, model: bytes, graph, board: str, sets: int = 2) -> None:
    """The firmware `elf` built from `model` (read as `graph`) gives the
    reference interpreter's bytes on every output, for `sets` random input
    sets run under QEMU on `board`."""
    input_sets = [random_inputs(graph, np.random.default_rng(seed)) for seed in range(sets)]
    inputs = [b"".join(np.ascontiguousarray(s[i]).tobytes() for s in input_sets) for i in range(len(graph.inputs))]
    run = run_firmware(elf, machine=board, inputs=inputs, num_outputs=len(graph.outputs)).check()
    expected = run_isolated(model, input_sets)
    for i, got in enumerate(run.outputs):
        assert got == b"".join(np.ascontiguousarray(outputs[i]).tobytes() for outputs in expected), f"output {i}"


def random_scale(rng: np.random.Generator, low: float = 1e-3, high: float = 0.5) -> float:
    """Log-uniform in [low, high], rounded to float32 like a tensor field."""
    return float(np.float32(np.exp(rng.uniform(np.log(low), np.log(high)))))


def random_int8_quant(rng: np.random.Generator, low: float = 1e-3, high: float = 0.5) -> tuple[float, int]:
    return random_scale(rng, low, high), int(rng.integers(-128, 128))


class Branches:
    """A model of independent ops, each reading its own graph inputs; every
    op's output is a graph output."""

    def __init__(self, description: str):
        self.mb = ModelBuilder(description)
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def input(self, shape, dtype: str = "int8", quant=None) -> int:
        t = self.mb.add_tensor(shape, dtype, quant)
        self.inputs.append(t)
        return t

    def constant(self, values: np.ndarray, dtype: str, quant=None) -> int:
        return self.mb.add_tensor(values.shape, dtype, quant, data=values)

    def op(self, opcode: str, inputs, out_shape, dtype: str = "int8", quant=None, options=None) -> int:
        y = self.mb.add_tensor(out_shape, dtype, quant)
        self.mb.add_op(opcode, inputs, (y,), options or None)
        self.outputs.append(y)
        return y

    def build(self) -> bytes:
        self.mb.set_io(self.inputs, self.outputs)
        return self.mb.build()


class FedBranches(Branches):
    """Branches whose every graph input comes with the function drawing its values."""

    def __init__(self, description: str):
        super().__init__(description)
        self.draws: list[Callable[[np.random.Generator], np.ndarray]] = []

    def fed(self, shape, dtype: str, draw: Callable[[np.random.Generator, tuple], np.ndarray], quant=None) -> int:
        self.draws.append(lambda rng: np.asarray(draw(rng, tuple(shape))).astype(dtype))
        return self.input(shape, dtype, quant)

    def input_sets(self, count: int, seed: int = 0) -> list[list[np.ndarray]]:
        rng = np.random.default_rng(seed)
        return [[draw(rng) for draw in self.draws] for _ in range(count)]


def few(values):
    """A FedBranches draw picking among `values` (so ties and edges repeat)."""
    return lambda rng, shape: rng.choice(np.asarray(values), size=shape)


def fp16_tables_header(specs: dict[str, tuple[int, str | None]]) -> str:
    """C definitions of mcu_fp16_table NAME (mcu_quant.h) for each NAME: (k,
    HALVED), the table of R_k built as the LSTM lowering builds it: of its own
    (HALVED None), or reading the table HALVED (defined before it, of R_(k-1))
    below its first magnitude; for harnesses that read them."""
    lines = []
    built: dict[str, ReciprocalTable] = {}
    for name, (bits, halved) in specs.items():
        table = reciprocal_table(bits, built[halved] if halved else None)
        built[name] = table
        knots = ", ".join(str(v) for v in table.knots)
        residuals = ", ".join(str(v) for v in table.residuals)
        link = f"&{halved}" if halved else "NULL"
        lines += [
            f"static const int16_t {name}_knots[] = {{{knots}}};",
            f"static const uint8_t {name}_residuals[] = {{{residuals}}};",
            f"static const mcu_fp16_table {name} = "
            f"{{{name}_knots, {name}_residuals, {table.last}, {table.first}, {link}}};",
        ]
    return "\n".join(lines) + "\n"
