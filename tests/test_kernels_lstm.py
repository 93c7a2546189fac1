"""UNIDIRECTIONAL_SEQUENCE_LSTM against the LiteRT reference interpreter.

Every model runs several invocations in a row on both sides, so the output
and cell states (variable tensors) are carried across invocations exactly as
the interpreter carries them.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MODELS_DIR, needs_cortex_m, needs_shared
from kernel_models import assert_matches_reference

from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering import NotLowerable, lower
from mcu_planner.lowering.lstm import lstm_scratch
from mcu_planner_testing.builder import LSTM_INPUT_SLOTS, ModelBuilder, lstm_model

INT8_CASES = {
    "batch_major": dict(batch=2, time=3, n_input=5, n_cell=4),
    "time_major": dict(batch=3, time=4, n_input=7, n_cell=6, time_major=True),
    "one_step_one_cell": dict(batch=1, time=1, n_input=1, n_cell=1),
    "wide": dict(batch=1, time=5, n_input=33, n_cell=17, seed=3),
    "cifg_peephole": dict(batch=2, time=3, n_input=4, n_cell=5, cifg=True, peephole=True),
    "peephole_time_major": dict(batch=2, time=3, n_input=6, n_cell=5, peephole=True, time_major=True),
    # n_cell 7: TFLite's integer variance is exact only for powers of two; the same integer steps here.
    "layer_norm": dict(batch=2, time=3, n_input=5, n_cell=7, layer_norm=True),
    "layer_norm_cifg_peephole": dict(batch=1, time=4, n_input=3, n_cell=4, layer_norm=True, cifg=True, peephole=True),
    "projection": dict(batch=2, time=3, n_input=4, n_cell=6, n_output=3, projection=True),
    "projection_bias_clips": dict(
        batch=2,
        time=4,
        n_input=4,
        n_cell=5,
        n_output=7,
        projection=True,
        projection_bias=True,
        cell_clip=0.25,
        proj_clip=0.3,
        time_major=True,
    ),
    "peephole_projection": dict(batch=1, time=3, n_input=4, n_cell=6, n_output=4, projection=True, peephole=True),
    # The gates saturate: large weights on a wide input range.
    "saturating": dict(batch=2, time=3, n_input=6, n_cell=5, weight_std=8.0, input_range=(-6.0, 6.0)),
    # Asymmetric ranges: zero points far from 0 on input and output state.
    "extreme_zero_points": dict(
        batch=1, time=4, n_input=5, n_cell=5, input_range=(-0.05, 3.0), output_range=(-2.0, 0.02)
    ),
    # The cell state's power-of-two scale sets the integer bits of tanh(cell): 0 and 6.
    "cell_scale_2^-15": dict(batch=1, time=3, n_input=4, n_cell=3, cell_scale_exponent=-15),
    "cell_scale_2^-9": dict(batch=1, time=3, n_input=4, n_cell=3, cell_scale_exponent=-9, weight_std=2.0),
}

FLOAT_CASES = {
    "batch_major": dict(batch=3, time=4, n_input=6, n_cell=5),
    "wide_batch_major": dict(batch=2, time=3, n_input=37, n_cell=13, seed=5),
    "time_major": dict(batch=3, time=3, n_input=4, n_cell=5, time_major=True),
    "cifg_peephole_clip": dict(batch=2, time=3, n_input=4, n_cell=6, cifg=True, peephole=True, cell_clip=0.2),
    "layer_norm_peephole": dict(batch=2, time=3, n_input=5, n_cell=7, layer_norm=True, peephole=True),
    "layer_norm_time_major": dict(batch=2, time=3, n_input=4, n_cell=7, layer_norm=True, time_major=True),
    "projection": dict(
        batch=2,
        time=3,
        n_input=4,
        n_cell=5,
        n_output=3,
        projection=True,
        projection_bias=True,
        proj_clip=0.1,
        time_major=True,
    ),
    "projection_batch_major": dict(batch=2, time=2, n_input=9, n_cell=6, n_output=8, projection=True),
    # Time-major products large enough for Eigen's gebp kernel: rows in pairs
    # of packets, a last packet, leftover rows; columns in and outside blocks of 4.
    "gebp_rows_and_columns": dict(batch=6, time=2, n_input=30, n_cell=7, time_major=True),
    "gebp_projection": dict(batch=5, time=2, n_input=37, n_cell=16, n_output=11, projection=True, time_major=True),
}


@pytest.mark.parametrize("case", sorted(INT8_CASES))
def test_int8_lstm_bit_exact_over_invocations(case):
    assert_matches_reference(lstm_model("int8", **INT8_CASES[case]), inputs=4)


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_float_lstm_bit_exact_over_invocations(case):
    assert_matches_reference(lstm_model("float32", **FLOAT_CASES[case]), inputs=3)


def test_scratch_is_one_time_step_of_gates():
    """Time-major steps all batch rows at once, batch-major one row: the
    gate scratch holds 4 gates x those rows x n_cell, the hidden scratch
    (projection only) one gate's worth of int8."""
    for time_major, rows in ((True, 3), (False, 1)):
        graph = read_model(lstm_model("int8", batch=3, n_cell=5, n_output=2, projection=True, time_major=time_major))
        needs = lstm_scratch(graph.operators[0], graph)
        assert [(n.dtype, n.elements) for n in needs] == [("int16", 4 * rows * 5), ("int8", rows * 5)]
        assert [graph.tensors[t].num_elements for t in graph.operators[0].scratch] == [4 * rows * 5, rows * 5]
    graph = read_model(lstm_model("float32", batch=2, n_cell=4, n_output=6, projection=True))
    assert [(n.dtype, n.elements) for n in lstm_scratch(graph.operators[0], graph)] == [
        ("float32", 16),
        ("float32", 6),
    ]


def _lstm_with(input_dtype: str, weight_dtype: str, state_dtype: str) -> bytes:
    mb = ModelBuilder()
    slots = {"input": mb.add_tensor((1, 2, 3), input_dtype, (0.1, 0) if input_dtype != "float32" else None)}
    q = (0.05, 0) if weight_dtype != "float32" else None
    for gate in ("input", "forget", "cell", "output"):
        slots[f"input_to_{gate}_weights"] = mb.add_tensor((4, 3), weight_dtype, q, data=np.ones((4, 3)))
        slots[f"recurrent_to_{gate}_weights"] = mb.add_tensor((4, 4), weight_dtype, q, data=np.ones((4, 4)))
        slots[f"{gate}_gate_bias"] = mb.add_tensor((4,), "float32", data=np.zeros(4))
    state_q = (0.1, 0) if state_dtype != "float32" else None
    slots["output_state"] = mb.add_tensor((1, 4), state_dtype, state_q, is_variable=True)
    slots["cell_state"] = mb.add_tensor((1, 4), state_dtype, state_q, is_variable=True)
    out = mb.add_tensor((1, 2, 4), state_dtype, state_q)
    mb.add_op("UNIDIRECTIONAL_SEQUENCE_LSTM", tuple(slots.get(k, -1) for k in LSTM_INPUT_SLOTS), (out,))
    mb.set_io([slots["input"]], [out])
    return mb.build()


@pytest.mark.parametrize(
    "model, reason",
    [
        (lambda: _lstm_with("float32", "int8", "float32"), "hybrid"),
        (lambda: _lstm_with("int16", "int8", "int16"), "int16 input"),
        (lambda: lstm_model("int8", cell_scale_exponent=-8), r"cell state scale 2\^-8"),
        (lambda: lstm_model("int8", n_cell=3, n_output=5, projection=True, peephole=True), "more outputs than cells"),
    ],
    ids=["hybrid", "int16_input", "cell_scale_too_coarse", "peephole_wider_output"],
)
def test_variants_without_a_kernel_are_not_lowerable(model, reason):
    graph = read_model(model())
    with pytest.raises(NotLowerable, match=reason):
        lower(graph.operators[0], graph)


@needs_shared
def test_trained_lstm_int8_bit_exact_over_invocations():
    """The TFLM MNIST LSTM: 28 steps of a 20-cell int8 LSTM, five invocations
    in a row (the state carries over) and two after reset, every output byte
    as LiteRT's; its plan holds the 4 gates x 20 cells of int16 scratch."""
    path = MODELS_DIR / "tflite-micro" / "trained_lstm_int8.tflite"
    report = assert_matches_reference(path, inputs=5, seed=1)
    assert (report.total, report.reset_total) == (5, 2)
    graph = read_model(path)
    assert [graph.tensors[t].nbytes for t in graph.operators[0].scratch] == [4 * 20 * 2]


@needs_cortex_m
def test_int8_lstm_sequence_on_mps2_an386():
    """Every optional part of the integer LSTM in one firmware: four
    invocations in one QEMU run with the state carried over, two after reset."""
    model = lstm_model(
        "int8",
        batch=2,
        time=3,
        n_input=5,
        n_cell=8,
        n_output=6,
        layer_norm=True,
        peephole=True,
        projection=True,
        projection_bias=True,
        time_major=True,
        cell_clip=0.5,
    )
    report = assert_matches_reference(model, inputs=4, target="mps2-an386")
    assert (report.total, report.reset_total) == (4, 2)


M4_GATE_CASES = {
    # 7 cells: one block of four rows and three rows after it; odd input and
    # state widths (SMLAD pairs plus leftover columns); tanh(cell) with its own
    # table (cell state 2^-11: 4 integer bits).
    "rows_past_the_blocks": dict(batch=2, time=3, n_input=5, n_cell=7, time_major=True, seed=4),
    # A Q3.12 cell state reads the cell gate's tanh table; saturating gates
    # reach both ends of the tables.
    "shared_tanh_table_saturating": dict(
        batch=1, time=4, n_input=9, n_cell=6, cell_scale_exponent=-12, weight_std=8.0, input_range=(-6.0, 6.0)
    ),
}


@needs_cortex_m
@pytest.mark.parametrize("case", sorted(M4_GATE_CASES))
def test_int8_lstm_gates_on_mps2_an386(case):
    """The Cortex-M4 gate path (both products of four rows per pass, rows
    after the last block of four, the activation tables) over three
    invocations in one QEMU run, state carried over."""
    report = assert_matches_reference(lstm_model("int8", **M4_GATE_CASES[case]), inputs=3, target="mps2-an386")
    assert report.total == 3


@needs_cortex_m
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_float_lstm_on_cortex_m(board):
    """The float LSTM's Cortex-M build (the logistic's range reduction
    without floorf / ldexpf, the dot products' four lanes in registers),
    exactly: 9 inputs leave a column after the lanes, the peephole and the
    clip add their terms; three invocations, state carried over.  (8 cells:
    every logistic is a whole packet's; the elements outside the packets go
    through libm's expf, which newlib computes differently from the host's.)"""
    model = lstm_model("float32", batch=2, time=3, n_input=9, n_cell=8, peephole=True, cell_clip=3.0, seed=6)
    report = assert_matches_reference(model, inputs=3, target=board)
    assert report.total == 3
