"""With patches, every output describes the buffers the generated C has:
the plan JSON's tensors lie inside the arena at the bytes the C reserves
(one patch for a stage's intermediates), the layers' MACs count the halos
recomputed, and --map prints the same bytes."""

from __future__ import annotations

import json
import re

import pytest
from test_patches import _vww_like

from mcu_planner import cli
from mcu_planner.frontend.reader import read_model
from mcu_planner.lowering.program import lower_program


@pytest.mark.parametrize("patches", ["3", "4x1"])
def test_plan_json_with_patches_stays_inside_the_arena(tmp_path, capsys, patches):
    model = tmp_path / "vww_like.tflite"
    model.write_bytes(_vww_like())
    plan_path = tmp_path / "plan.json"
    assert cli.main([str(model), "--patches", patches, "--json", str(plan_path), "--map"]) == 0
    printed = capsys.readouterr().out
    plan = json.loads(plan_path.read_text())
    stage = plan["techniques"]["patches"]
    assert stage is not None and stage["extra_macs"] > 0
    arena = plan["arena_bytes"]
    assert all(t["offset"] + t["bytes"] <= arena for t in plan["tensors"])
    # The stage's intermediates are held one patch at a time: smaller than the tensor.
    cut = [t for t in plan["tensors"] if "tensor_bytes" in t]
    assert cut and all(t["bytes"] < t["tensor_bytes"] for t in cut)
    # MACs: the model's own (each op's facts, lowered from the unpatched graph) plus the halos.
    whole = lower_program(read_model(str(model)))
    assert (
        sum(layer["macs"] for layer in plan["layers"])
        == sum(whole.facts(op.index).macs for op in whole.graph.operators) + stage["extra_macs"]
    )
    # --map prints the same offset and bytes per tensor.
    rows = {int(m[0]): (int(m[1]), int(m[2])) for m in re.findall(r"^\s+#(\d+) [#.]+\s+(\d+)\s+(\d+)  ", printed, re.M)}
    assert rows == {t["index"]: (t["offset"], t["bytes"]) for t in plan["tensors"]}
