"""Weights the optimizer numbered (``val_<n>``) are paired by where matched calls read them, before by name: an
export whose attention projections gained biases (Qwen2 against Mistral, Llama's ``attention_bias``) lowers each
projection's ``linear`` to one node more, so the numbers of every weight after them shift, and one name reads
another layer's weight in the other export. Paired by name, the down projection's weight read "reshaped FLOAT[32, 16]
-> FLOAT[16, 16]", its call "rewired", its own weight "added", and the k projection's "removed".

``tests/evidence/proj_bias_*`` are such a pair (``scripts/evidence_cases.py``: ``ProjBias``, biases on q, k and v in
B); truth: each parameter's shape in torch (``proj_bias.truth.json``), and which module reads each weight, from the
name scopes torch wrote on the node that reads it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import onnx
import pytest

from inspector.core.diff import diff_files
from inspector.core.diff.values import content_digest
from tests.conftest import ZOO

EVIDENCE = ZOO.parent / "evidence"
TRUTH = json.loads((EVIDENCE / "proj_bias.truth.json").read_text())


def _readers(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Each initializer's digest -> name, and each initializer -> the module of the first node reading it (the
    innermost module of the node's ``pkg.torch.onnx.name_scopes``, as torch wrote it)."""
    model = onnx.load(str(path))
    names = {content_digest(t): t.name for t in model.graph.initializer}
    module: dict[str, str] = {}
    for node in model.graph.node:
        scopes = next((p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"), None)
        for value in node.input:
            if value in names.values() and value not in module and scopes:
                module[value] = ast.literal_eval(scopes)[-2]  # (the last scope is the call's own FX name)
    return names, module


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_weight_is_paired_with_the_one_its_layer_reads(order: str):
    first, second = order
    a, b = EVIDENCE / f"proj_bias_{first}.onnx", EVIDENCE / f"proj_bias_{second}.onnx"
    d = diff_files(a, b)
    only = {k for k in TRUTH[second] if k not in TRUTH[first]}
    gone = {k for k in TRUTH[first] if k not in TRUTH[second]}
    assert only | gone == {"q.bias", "k.bias", "v.bias"}  # (torch: the pair differs in these alone)
    assert {c.where for c in d.changes if c.kind == "initializer_added"} == only
    assert {c.where for c in d.changes if c.kind == "initializer_removed"} == gone
    assert all(TRUTH[first][k] == TRUTH[second][k] for k in TRUTH[first] if k in TRUTH[second])
    assert not [c.detail for c in d.changes if c.kind in ("initializer_reshaped", "rewired")]
    _names_a, module_a = _readers(a)
    names_b, module_b = _readers(b)
    revalued = [c for c in d.changes if c.kind == "initializer_revalued"]
    assert revalued
    for c in revalued:
        (other,) = [n for digest, n in names_b.items() if digest.startswith(c.new["digest"])]
        assert module_a[c.where] == module_b[other], (c.where, other)
        assert c.read_by.startswith(f"{module_a[c.where]} › "), c.read_by
    # every weight of a layer both exports hold, changed in value, is said so once, of its own layer
    assert sorted(module_a[c.where] for c in revalued) == sorted({module_a[c.where] for c in revalued})


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_a_projection_given_a_bias_says_so_beside_its_new_node(order: str):
    """Each projection's ``linear`` lowers to one node more where torch gave it a bias: the body change says which
    argument is passed now (or no longer), from the calls' aten signatures, not only "+1 (Add)"."""
    first, second = order
    d = diff_files(EVIDENCE / f"proj_bias_{first}.onnx", EVIDENCE / f"proj_bias_{second}.onnx")
    biased = sorted(k.split(".")[0] for k in {*TRUTH[first], *TRUTH[second]} if k.endswith(".bias"))
    (change,) = [c for c in d.changes if c.kind == "body_changed" and c.family == "aten::linear"]
    model = onnx.load(str(EVIDENCE / f"proj_bias_{first}.onnx"))
    fx = {next(p.value for p in n.metadata_props if p.key == "pkg.torch.onnx.fx_node").split(" ")[0][1:]:
          ast.literal_eval(next(p.value for p in n.metadata_props if p.key == "pkg.torch.onnx.name_scopes"))[-2]
          for n in model.graph.node if n.op_type == "MatMul"}
    assert sorted(fx[site] for site in change.sites) == biased  # (the calls of the modules torch gave a bias)
    was, now = ("None", "tensor") if "bias" not in str(TRUTH[first]) else ("tensor", "None")
    assert change.detail.endswith(f"; bias: {was} -> {now}"), change.detail
    assert [(a.parameter, a.old, a.new) for a in change.arguments] == [
        ("bias", None if was == "None" else "tensor", None if now == "None" else "tensor")]
