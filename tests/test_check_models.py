"""`mcu-plan check` on every shared model the runtime supports: the generated
C, built for the host normally and with -DMCU_PLAN_CHECK, gives the reference
interpreter's bytes on three seeded random input sets."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import model_param, needs_shared, supported_shared_model_paths
from mcu_planner import reference
from mcu_planner.builder import Int8Net
from mcu_planner.check import check_model
from mcu_planner.errors import CheckMismatch

@needs_shared
@pytest.mark.parametrize(
    "path", [model_param(p) for p in supported_shared_model_paths()] or [None]
)
def test_shared_model_matches_the_reference(path):
    report = check_model(path, inputs=3, seed=0, raise_on_mismatch=False)
    assert report.total == 3
    assert report.passed, report.mismatch_message()


def small_model() -> bytes:
    net = Int8Net(seed=7)
    x = net.input((1, 5, 5, 3))
    y = net.depthwise_conv2d(x, activation="RELU6")
    y = net.average_pool2d(y, pool=(5, 5), strides=(1, 1))
    y = net.reshape(y, (1, 3))
    return net.build(net.softmax(net.fully_connected(y, 4)))


def test_check_passes_a_correct_model():
    report = check_model(small_model(), inputs=4, seed=3)
    assert (report.total, report.exact, report.first_mismatch) == (4, 4, None)
    assert report.format()[-1] == "bit-exact 4/4"


def test_check_reports_the_first_differing_byte(monkeypatch):
    # A reference that is off by one in one byte of the second input set: the
    # check must name exactly that output, byte and the two values.
    true_run = reference.ReferenceModel.run
    calls = []

    def altered(self, inputs):
        outputs = true_run(self, inputs)
        calls.append(1)
        if len(calls) == 2:
            flat = outputs[0].reshape(-1)
            flat[2] = flat[2] + 1 if flat[2] < 127 else flat[2] - 1
        return outputs

    monkeypatch.setattr(reference.ReferenceModel, "run", altered)
    report = check_model(small_model(), inputs=3, seed=3, raise_on_mismatch=False)
    assert (report.total, report.exact) == (3, 2)
    output, index, expected, got = report.first_mismatch
    assert (output, index) == (0, 2) and abs(expected - got) == 1
    calls.clear()
    with pytest.raises(CheckMismatch, match=r"output 0 byte 2: expected"):
        check_model(small_model(), inputs=3, seed=3)


def test_inputs_are_seeded():
    from mcu_planner.check import random_inputs
    from mcu_planner.reader import read_model

    graph = read_model(small_model())
    first = random_inputs(graph, np.random.default_rng(5))
    again = random_inputs(graph, np.random.default_rng(5))
    other = random_inputs(graph, np.random.default_rng(6))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    # int8 inputs span the whole range, not a corner of it.
    values = np.concatenate([random_inputs(graph, np.random.default_rng(s))[0].reshape(-1) for s in range(20)])
    assert values.min() == -128 and values.max() == 127
