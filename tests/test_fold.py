"""fold: flat exports become aten-level functions with overloads; outputs identical under onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet
from onnx import TensorProto, helper

from inspector.cli import main
from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.index import build_index, open_index
from inspector.core.model.keys import is_identifier
from inspector.core.model.loader import LoadedModel
from tests.conftest import FIXTURES, ROOT, SAMPLE

ZOO = ROOT / "tests" / "zoo"

ort = pytest.importorskip("onnxruntime")

EXPORTS = [FIXTURES / "dynamo_block.onnx", FIXTURES / "dynamo_block_h4.onnx", FIXTURES / "dynamo_block_noopt.onnx",
           FIXTURES / "dynamo_rewritten.onnx", SAMPLE]


def _run(model: onnx.ModelProto, feeds: dict, optimize: bool) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _feeds(model: onnx.ModelProto) -> dict:
    rng = np.random.default_rng(0)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 8, size=shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_fold_round_trips_with_identical_outputs(path: Path):
    index = open_index(path)
    folded, report = fold_model(index)
    onnx.checker.check_model(folded, full_check=True)
    assert report.calls_folded == len(index.provenance.calls) and not report.left_flat
    assert report.nodes_after < report.nodes_before or path.name == "dynamo_rewritten.onnx"
    feeds = _feeds(index.proto)
    for a, b in zip(_run(index.proto, feeds, False), _run(folded, feeds, False), strict=True):
        np.testing.assert_array_equal(a, b)  # same kernels in the same order: bit for bit
    for a, b in zip(_run(index.proto, feeds, True), _run(folded, feeds, True), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # ORT may fuse differently across functions


def test_folded_functions_keep_the_aten_signature():
    index = open_index(FIXTURES / "dynamo_block.onnx")
    folded, _report = fold_model(index)
    fns = {(f.name, f.overload): f for f in folded.functions}
    assert all(f.domain == "pkg.torch.aten" for f in folded.functions)
    transpose = fns[("transpose", "int")]
    assert transpose.doc_string.startswith("aten::transpose.int(")
    assert list(transpose.attribute) == ["dim0", "dim1"]  # no defaults: declared without values
    sdpa = fns[("scaled_dot_product_attention", "default")]
    declared = {a.name: helper.get_attribute_value(a) for a in sdpa.attribute_proto}
    assert declared["is_causal"] == 0 and declared["dropout_p"] == 0.0
    assert any(n.op_type == "Constant" for n in sdpa.node)  # the baked scale moved into the body
    calls = [n for n in folded.graph.node if n.op_type == "transpose"]
    assert len(calls) == 8
    assert {a.name: a.i for a in calls[0].attribute} == {"dim0": 1, "dim1": 2}
    assert calls[0].overload == "int" and calls[0].domain == "pkg.torch.aten"
    keys = {p.key for p in calls[0].metadata_props}
    assert "pkg.torch.onnx.fx_node" in keys and "pkg.torch.onnx.stack_trace" in keys
    assert not any(n.metadata_props for f in folded.functions for n in f.node)
    views = sorted(f.overload for f in folded.functions if f.name == "view")
    assert views == ["reshape_1x8x16", "reshape_1x8x2x8"]  # what differs, in words
    assert all(is_identifier(f.overload) for f in folded.functions)
    assert not {"val_9", "val_44", "val_47", "val_49"} & {t.name for t in folded.graph.initializer}


def test_folded_model_indexes_as_functions_with_overloads():
    index = open_index(FIXTURES / "dynamo_rewritten.onnx")
    folded, _ = fold_model(index)
    again = build_index(LoadedModel(index.path, folded, "binary", 0))
    fam = again.family("function", "pkg.torch.aten", "transpose")
    assert fam is not None
    assert sorted(o.overload for o in fam.overloads) == ["int_perm_0x2x1x3", "int_perm_0x2x3x1"]
    assert not [f for f in again.findings if f.severity == "error"]


def _non_convex_model() -> onnx.ModelProto:
    """Nodes a and c share one FX node, but b (another call) sits between them: folding a+c makes a cycle."""
    def meta(node, fx):
        p = node.metadata_props.add()
        p.key, p.value = "pkg.torch.onnx.fx_node", fx
        return node

    fx_ac = "%ac : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%x,), kwargs = {})"
    fx_b = "%b : [num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%ac,), kwargs = {})"
    a = meta(helper.make_node("Relu", ["x"], ["t1"], name="a"), fx_ac)
    b = meta(helper.make_node("Neg", ["t1"], ["t2"], name="b"), fx_b)
    c = meta(helper.make_node("Add", ["t1", "t2"], ["y"], name="c"), fx_ac)
    g = helper.make_graph([a, b, c], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def test_groups_that_would_form_a_cycle_stay_flat(tmp_path: Path):
    path = tmp_path / "cycle.onnx"
    onnx.save(_non_convex_model(), str(path))
    index = open_index(path)
    folded, report = fold_model(index)
    assert [(name, reason) for name, _t, reason in report.left_flat] == [("ac", "folding would form a cycle")]
    assert report.calls_folded == 1
    onnx.checker.check_model(folded, full_check=True)
    feeds = {"x": np.array([1.0, -2.0], dtype=np.float32)}
    np.testing.assert_array_equal(_run(index.proto, feeds, False)[0], _run(folded, feeds, False)[0])


def test_fold_command(tmp_path: Path, capsys):
    out = tmp_path / "folded.onnx"
    assert main(["fold", str(FIXTURES / "dynamo_block.onnx"), "-o", str(out), "--check"]) == 0
    text = capsys.readouterr().out
    assert "folded 40 aten calls into 8 functions (7 families)" in text
    assert onnx.load(str(out)).functions
    assert main(["fold", str(FIXTURES / "overloads.onnx"), "-o", str(tmp_path / "x.onnx")]) == 2
    assert "no aten calls to fold" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()


def test_fields_onnx_does_not_know_are_left_out_of_the_model_and_main_graph_in_place_too(tmp_path: Path):
    """A model and main graph carrying fields this onnx does not know (a newer exporter's): the folded model leaves
    them out, whether it is made in the index's own protobuf (the command) or in a copy, and both are the same."""
    model = onnx.load(str(FIXTURES / "dynamo_block.onnx"))
    unknown = b"\xf8\x07\x05"  # field 127, varint 5
    model.graph.MergeFromString(unknown)
    path = tmp_path / "unknown_fields.onnx"
    path.write_bytes(model.SerializeToString() + unknown)
    assert len(UnknownFieldSet(open_index(path).proto)) == len(UnknownFieldSet(open_index(path).proto.graph)) == 1
    copied, report = fold_model(open_index(path))
    in_place, _ = fold_model(open_index(path), consume=True)
    assert report.calls_folded == 40
    assert in_place.SerializeToString() == copied.SerializeToString()
    assert len(UnknownFieldSet(in_place)) == len(UnknownFieldSet(in_place.graph)) == 0


def _one_function_model(doc: str) -> onnx.ModelProto:
    f = helper.make_function("pkg.torch.aten", "view", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", 20)])
    f.doc_string = doc
    g = helper.make_graph([helper.make_node("view", ["x"], ["y"], domain="pkg.torch.aten")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("pkg.torch.aten", 1)],
                             functions=[f])


@pytest.mark.parametrize(("doc", "family"), [
    ("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", "aten::view"),  # as fold writes it
    ("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", None),  # another op's schema
    ("aten::no_such_op(Tensor self) -> Tensor", None),  # another op (not in the catalogue either)
    # not a schema: the name and domain are the evidence (issue 31: pkg.torch.aten.view implements aten::view)
    ("<b>aten::view</b>", "aten::view"),
])
def test_a_function_is_an_aten_family_only_by_agreeing_evidence(doc: str, family: str | None):
    index = build_index(LoadedModel(Path("hand.onnx"), _one_function_model(doc), "binary", 0))
    (fam,) = index.families
    assert fam.kind == "function" and fam.aten_family == family
    assert fam.label == (family or "pkg.torch.aten.view")


def test_a_fold_that_folds_nothing_adds_no_unused_opset_import(tmp_path: Path, capsys):
    """Every fx text unreadable as an aten op (a damaged or foreign target): nothing is folded, and the output is the
    model as it was, so ``diff`` calls them equal (an unused ``pkg.torch.aten`` opset import made them differ)."""
    m = onnx.load(str(ZOO / "pair_eps_a.onnx"))
    for n in m.graph.node:
        for p in n.metadata_props:
            if p.key == "pkg.torch.onnx.fx_node":
                p.value = p.value.replace("call_function[target=", "call_function[target=(((")
    src, out = tmp_path / "damaged.onnx", tmp_path / "folded.onnx"
    onnx.save(m, str(src))
    assert main(["fold", str(src), "-o", str(out)]) == 0
    assert "folded 0 aten calls" in capsys.readouterr().out
    folded = onnx.load(str(out))
    assert [o.domain for o in folded.opset_import] == [o.domain for o in m.opset_import]
    assert folded.ir_version == m.ir_version and not folded.functions
    assert main(["diff", str(src), str(out)]) == 0
