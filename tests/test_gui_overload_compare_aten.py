"""Overload against overload in an aten function family, whoever produced it (issue 31): the aten arguments that
differ between the two overloads are named, from the call sites' attributes or metadata, and the differing
literals are labelled with the argument their link names, not only listed as literals."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from inspector.core.model.index import open_index
from inspector.gui.analysis import Analyses
from inspector.gui.overload_compare import compare_members

PRODUCERS = Path(__file__).resolve().parent / "producers"


@pytest.mark.parametrize("style", ["torch_aten", "attributes", "nested"])
def test_two_view_overloads_differ_in_size(style: str) -> None:
    """pair_heads_a views (1, 8, 2, 16) before attention and (1, 8, 32) after it: two overloads with hash names."""
    index = open_index(PRODUCERS / f"pair_heads_a.{style}.onnx")
    fam = next(f for f in index.families if f.label == "aten::view")
    by_size = {o.overload.split(" ", 1)[1]: o.function for o in fam.overloads}
    a, b = by_size["(size=[1, 8, 2, 16])"], by_size["(size=[1, 8, 32])"]
    assert a is not None and b is not None
    c = compare_members(Analyses(index), a, b)
    assert [(r.label, r.a, r.b) for r in c.rows if r.kind == "argument" and r.label == "size"] == \
        [("size", "[1, 8, 2, 16]", "[1, 8, 32]")]
    assert [(r.label, r.a, r.b) for r in c.rows if r.kind == "value"] == \
        [("size (Constant.value)", "[1, 8, 2, 16]", "[1, 8, 32]")]
    assert "size" in c.arguments


def test_overloads_of_two_producers_in_one_family_compare(tmp_path: Path) -> None:
    import onnx
    from onnx import helper

    model = onnx.load(PRODUCERS / "pair_heads_a.torch_aten.onnx")
    moved = next(f for f in model.functions if f.name == "aten_view" and f.doc_string == "aten.view.default")
    old = (moved.domain, moved.name, moved.overload)
    moved.domain, moved.name = "aten", "view"
    for node in model.graph.node:
        if (node.domain, node.op_type, node.overload) == old:
            node.domain, node.op_type = moved.domain, moved.name
    model.opset_import.append(helper.make_opsetid("aten", 1))
    onnx.save(model, tmp_path / "two.onnx")
    index = open_index(tmp_path / "two.onnx")
    (fam,) = [f for f in index.families if f.label == "aten::view"]
    a, b = (o.function for o in fam.overloads)
    assert a is not None and b is not None and a.domain != b.domain
    c = compare_members(Analyses(index), a, b)
    assert sorted((r.a, r.b) for r in c.rows if r.kind == "argument" and r.label == "size") in (
        [("[1, 8, 2, 16]", "[1, 8, 32]")], [("[1, 8, 32]", "[1, 8, 2, 16]")])
