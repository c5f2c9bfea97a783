"""An FX name says which call it is only among exports of one FX graph: torch numbers the calls of a name in graph
order, so a call more of it renumbers every one after it. ``renumber_b`` adds its activation's input back in each
block (``h + gelu(h)``), an add before each residual add: the residual adds ``add`` and ``add_1`` of ``renumber_a``
are its ``add_1`` and ``add_3``. Paired by name, the diff reported the residual adds as added, and 7 rewirings that
were none. The truth is torch's: the arguments of each FX node (``NAME.truth.json``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inspector.core.diff import diff_files
from tests.conftest import ZOO


def _fx(name: str) -> list[dict[str, Any]]:
    return json.loads((ZOO / f"{name}.truth.json").read_text("utf-8"))["fx_nodes"]


def _reads(node: dict[str, Any]) -> set[str]:
    return {v["node"] for v in node["args"].values() if isinstance(v, dict) and "node" in v}


@pytest.mark.parametrize("order", ["a-b", "b-a"])
def test_renumbered_calls_pair_by_what_they_read(order: str):
    a, b = ("renumber_a", "renumber_b") if order == "a-b" else ("renumber_b", "renumber_a")
    fx_b = {n["name"]: n for n in _fx("renumber_b")}
    gelus = {n for n, node in fx_b.items() if node["target"] == "aten::gelu"}
    extra = sorted(n for n, node in fx_b.items() if node["target"] == "aten::add.Tensor" and _reads(node) & gelus)
    assert extra == ["add", "add_2"]  # (torch: the adds that read a gelu; the residual adds are add_1 and add_3)
    # the linear calls that read those adds in renumber_b and a gelu in renumber_a: fc2 of each block
    fc2 = sorted(n for n, node in fx_b.items() if node["target"] == "aten::linear" and _reads(node) & set(extra))
    assert fc2 == ["linear_1", "linear_3"]
    assert all(_reads(n) & {"gelu", "gelu_1"} for n in _fx("renumber_a") if n["name"] in fc2)

    d = diff_files(ZOO / f"{a}.onnx", ZOO / f"{b}.onnx")
    kinds = sorted((c.kind, c.family) for c in d.changes)
    # the extra adds are added (or removed), and each block's fc2 reads one instead of the gelu (or the other way
    # round: the diff says as much each way; from B to A it said nothing of fc2, whose add is removed)
    added_or_removed = "call_added" if order == "a-b" else "call_removed"
    assert kinds == [(added_or_removed, "aten::add"), ("rewired", "aten::linear"), ("rewired", "aten::linear")]
    assert sorted(site for c in d.changes if c.kind == "rewired" for site in c.sites) == fc2
    gelu_then_add = [(c.old, c.new) for c in d.changes if c.kind == "rewired"]
    if order == "b-a":
        gelu_then_add = [(new, old) for old, new in gelu_then_add]
    assert sorted(gelu_then_add) == [("aten call gelu", "aten call add"), ("aten call gelu_1", "aten call add_2")]
    (change,) = [c for c in d.changes if c.kind == added_or_removed]
    assert sorted(change.sites) == extra
    assert d.matched["aten_calls"].matched == 8


@pytest.mark.parametrize("name", ["t5", "bert", "llama_gqa"])
def test_an_optimised_export_pairs_each_call_with_its_own_name_either_way(name: str):
    """An export and its unoptimised one have one FX graph (torch's truth: the same FX nodes) but not as many calls
    of each name: the optimiser folds some. Each call of the optimised one is its namesake in the other, either way
    round (t5's unoptimised export against the optimised one paired three transposes with their neighbours, which
    read what the folded ones had read)."""
    names = [[n["name"] for n in _fx(n)] for n in (name, f"{name}_noopt")]
    assert names[0] == names[1]
    for a, b in ((name, f"{name}_noopt"), (f"{name}_noopt", name)):
        matched = diff_files(ZOO / f"{a}.onnx", ZOO / f"{b}.onnx").matched["aten_calls"]
        assert matched.renamed == 0
        assert (matched.only_a if a == name else matched.only_b) == 0
