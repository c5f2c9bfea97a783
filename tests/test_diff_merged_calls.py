"""A call one export has twice and the other once, because the other's two calls computed one value: the diff says
which call stands in for it. GPT-NeoX with parallel residuals against one without read "call added: aten::layer_norm"
and nothing more: its two LayerNorms of a layer read the layer's input in A, equal weights and all, and the exporter's
optimizer kept one call; in B the second reads another value.

``tests/evidence/parallel_norms_*`` are such a pair (``scripts/evidence_cases.py``: ``ParallelNorms``); truth: which
FX node each LayerNorm's call reads in torch's graph (``parallel_norms.truth.json``), and the name scopes torch wrote on
each node."""

from __future__ import annotations

import ast
import json

import onnx
import pytest

from inspector.core.diff import diff_files
from tests.conftest import ZOO

EVIDENCE = ZOO.parent / "evidence"
TRUTH = json.loads((EVIDENCE / "parallel_norms.truth.json").read_text())


def _layer_norms(side: str) -> dict[str, str]:
    """The export's layer_norm calls: FX name -> module, from the metadata torch wrote on their nodes."""
    model = onnx.load(str(EVIDENCE / f"parallel_norms_{side}.onnx"))
    out = {}
    for node in model.graph.node:
        meta = {p.key: p.value for p in node.metadata_props}
        fx = meta.get("pkg.torch.onnx.fx_node", "")
        if "aten.layer_norm" in fx:
            out[fx.split(" ")[0][1:]] = ast.literal_eval(meta["pkg.torch.onnx.name_scopes"])[-2]
    return out


def test_the_pair_is_what_it_stands_for():
    assert TRUTH["a"] == {"norm1": "x", "norm2": "x"} and TRUTH["b"] == {"norm1": "x", "norm2": "add"}
    assert len(_layer_norms("a")) == 1 and sorted(_layer_norms("b").values()) == ["norm1", "norm2"]


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_the_call_one_side_lacks_names_the_call_that_stands_in_for_it(order: str):
    first, second = order
    d = diff_files(EVIDENCE / f"parallel_norms_{first}.onnx", EVIDENCE / f"parallel_norms_{second}.onnx")
    (one,) = _layer_norms("a")
    (extra,) = [name for name, module in _layer_norms("b").items() if module == "norm2"]
    kind = "call_added" if first == "a" else "call_removed"
    (change,) = [c for c in d.changes if c.family == "aten::layer_norm"]
    assert (change.kind, change.sites, change.stand_in) == (kind, [extra], one)
    if first == "a":
        assert change.detail.endswith(f"; A reads {one} where B reads {extra}: one call of A for two of B")
    else:
        assert change.detail.endswith(f"; B reads {one} where A reads {extra}: one call of B for two of A")


def test_a_call_added_with_no_counterpart_says_nothing_more():
    """renumber_b's two extra adds are read where A reads its gelu calls: another op, nothing that stands in."""
    d = diff_files(ZOO / "renumber_a.onnx", ZOO / "renumber_b.onnx")
    added = [c for c in d.changes if c.kind == "call_added"]
    assert added and not [c.detail for c in added if "one call of" in c.detail]
