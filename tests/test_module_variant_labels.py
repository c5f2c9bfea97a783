"""A module family written as variants reads by what differs: ``fold --modules`` names a family called inside
another function ``T5Attention``, ``T5Attention.1``, ``T5Attention.2`` (onnxruntime ignores the overload of such
calls) and notes each variant's overload name in its doc string; the trees and ``summary`` showed ``(default)``,
``1``, ``2``. The labels are now the names the same bodies get as overloads when nothing nests them."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import helper

from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules
from inspector.core.model.functions import build_function_index
from inspector.core.model.index import open_index

ZOO = Path(__file__).parent / "zoo"


def _labels(model: onnx.ModelProto, domain: str, name: str) -> dict[str, str]:
    family = build_function_index(model).families[(domain, name)]
    return {key.name: family.label(key) for key in family.members}


def test_variants_read_as_the_overloads_they_stand_for(tmp_path: Path) -> None:
    nested, _ = fold_modules(open_index(ZOO / "t5.onnx"), "T5Block,T5Attention")
    _alone, report = fold_modules(open_index(ZOO / "t5.onnx"), "T5Attention")
    labels = _labels(nested, MODULE_DOMAIN, "T5Attention")
    assert sorted(labels) == ["T5Attention", "T5Attention.1", "T5Attention.2"]
    # the same three bodies, called from the main graph, are overloads: their names are the variants' labels
    assert sorted(labels.values()) == sorted(k.overload for k in report.functions)
    path = tmp_path / "t5_nested.onnx"
    onnx.save(nested, path)
    families = {f.label: f for f in open_index(path).families if f.label.endswith("T5Attention")}
    assert sorted(ov.overload for fam in families.values() for ov in fam.overloads) == sorted(labels.values())


def test_torchscript_variants_keep_their_numbers_and_a_hostile_note_is_not_read() -> None:
    """A variant whose doc string only looks like the note (markup in the name) is labelled by its suffix."""
    body = [helper.make_node("Relu", ["x"], ["y"])]
    fns = [helper.make_function("m", name, ["x"], ["y"], body, [helper.make_opsetid("", 20)],
                                doc_string=doc)
           for name, doc in [("Blk", ""), ("Blk.1", "(overload <b>x</b>, named as a variant: "),
                             ("Blk.2", "(overload eps_1em06, named as a variant: whatever")]]
    graph = helper.make_graph([helper.make_node("Blk.1", ["a"], ["b"], domain="m")], "g",
                              [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, functions=fns, opset_imports=[helper.make_opsetid("", 20),
                                                                   helper.make_opsetid("m", 1)])
    assert _labels(model, "m", "Blk") == {"Blk": "", "Blk.1": "1", "Blk.2": "eps_1em06"}
