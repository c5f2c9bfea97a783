"""Hostile FX text: no input-controlled parse is worse than linear.

A ``pkg.torch.onnx.fx_node`` value of 40,000 ``[target=`` repeats (a 320 KB model) once took 40 s in every
command, because a regex search restarted at each repeat and rescanned to the end of the text.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import onnx
import pytest

from inspector.cli import main
from inspector.core.model.fx import fx_head, parse_fx_node, target_of
from tests.conftest import FIXTURES

HOSTILE = {
    "targets": "[target=" * 40_000,
    "head_then_targets": "%x : [num_users=1] = call_function" + "[target=" * 40_000,
    "closers": "%x : = call_function[target=" + "] " * 40_000 + "x",
    "percents": "%" * 80_000,
    "refs": "%a : = call_function[target=torch.ops.aten.add.Tensor](args = (" + "%b, " * 20_000 + "))",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_fx_parsers_are_linear_on_hostile_text(name: str):
    text = HOSTILE[name]
    start = time.perf_counter()
    target_of(text)
    fx_head(text)
    parse_fx_node(text)
    assert time.perf_counter() - start < 1.0


def test_fx_head_reads_a_name_before_the_first_target():
    text = "%mul_26 : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%a, %b), kwargs = {})"
    assert fx_head(text) == ("mul_26", "torch.ops.aten.mul.Tensor")
    assert fx_head("%t : = f[target= torch.ops.aten.t.default ][target=x]") == ("t", "torch.ops.aten.t.default")
    for bad in ("%a[target=x] : = f[target=y]", "%a b : = f[target=y]", "", "%", "x : = f[target=y]",
                "% : = f[target=y]", "%a : = f[target=y", "[target=y] %a : x", "%a : = f"):
        assert fx_head(bad) is None, bad


def test_target_of_reads_the_first_target():
    text = "%t : = call_function[target=torch.ops.aten.t.default](args = ([1],))"
    assert target_of(text) == "torch.ops.aten.t.default"
    assert target_of("no target here") is None
    assert target_of("[target=unclosed") is None
    assert target_of("x[target= a ][target=b]") == "a"


def _hostile_model(tmp_path: Path, text: str) -> Path:
    model = onnx.load(str(FIXTURES / "dynamo_block.onnx"))
    for node in model.graph.node[:3]:
        for p in node.metadata_props:
            if p.key == "pkg.torch.onnx.fx_node":
                p.value = text
    path = tmp_path / "hostile_fx.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("name", ["targets", "head_then_targets"])
def test_summary_of_a_model_with_hostile_fx_text_finishes_in_under_a_second(tmp_path: Path, capsys, name: str):
    path = _hostile_model(tmp_path, HOSTILE[name])
    start = time.perf_counter()
    assert main(["summary", "--json", str(path)]) == 0
    assert time.perf_counter() - start < 1.0
    out = json.loads(capsys.readouterr().out)
    assert out["model"]["node_count"] == len(onnx.load(str(path)).graph.node) == 66
