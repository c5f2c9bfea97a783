"""Local functions read as aten families, whoever produced them (issue 31).

- On every dynamo zoo model, the links of ``fold``'s output equal the flat export's links, value for value: the
  literal's value, the aten parameter, the argument's value and the place the lowering implements it, per target.
- The producers' files (``tests/producers``, written by ``scripts/make_producers.py`` from zoo exports) read as one
  family per aten op, with the aten signature bound and the same links as the flat export they came from.
- Evidence that disagrees is a finding, and the function is not read as an aten overload.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import onnx
import pytest
from onnx import helper

from inspector.core.fold.aten_fold import fold_model
from inspector.core.model.aten_functions import recognise
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.signature import function_call_signature
from inspector.core.specialise.specialiser import Specialiser
from inspector.core.summary import summary_dict

TESTS = Path(__file__).resolve().parent
ZOO = TESTS / "zoo"
PRODUCERS = TESTS / "producers"
DYNAMO = sorted(p.name[: -len(".truth.json")] for p in ZOO.glob("*.truth.json")
                if json.loads(p.read_text())["kind"] in ("dynamo", "dynamo-noopt"))
STYLES = ("torch_aten", "attributes", "nested")
BASES = ("pair_transpose_a", "pair_heads_a", "convnet")

Link = tuple[str, str, str, str, str]


def links(index: ModelIndex) -> set[Link]:
    """(target, literal value, parameter, argument value, place) of every link of every body."""
    specialiser = Specialiser(index)
    out: set[Link] = set()
    for family in index.families:
        for body in specialiser.analyse(family).bodies:
            first = body.members[0]
            target = first.target if isinstance(first, AtenCall) else index.functions.aten_target(first)
            for spec in body.specialised:
                for a in spec.links:
                    assert target is not None
                    out.add((target, json.dumps(spec.literal.value), a.parameter, json.dumps(a.value), a.place))
    return out


@cache
def flat_links(name: str) -> frozenset[Link]:
    return frozenset(links(open_index(ZOO / f"{name}.onnx")))


@pytest.mark.parametrize("name", DYNAMO)
def test_links_of_the_fold_equal_the_flat_exports(name: str, tmp_path: Path) -> None:
    model, _report = fold_model(open_index(ZOO / f"{name}.onnx"))
    onnx.save(model, tmp_path / "folded.onnx")
    folded = open_index(tmp_path / "folded.onnx")
    assert links(folded) == flat_links(name)


def test_every_dynamo_model_of_the_zoo_has_links() -> None:
    # the comparison above must compare something: every dynamo export links some value (7 in pair_transpose_a)
    assert all(flat_links(n) for n in DYNAMO)
    assert len(flat_links("pair_transpose_a")) == 7


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("base", BASES)
def test_producers_read_as_one_family_per_aten_op(base: str, style: str) -> None:
    index = open_index(PRODUCERS / f"{base}.{style}.onnx")
    flat = open_index(ZOO / f"{base}.onnx")
    flat_ops = sorted(f.label for f in flat.families if f.kind == "aten_call")
    aten = [f for f in index.families if f.aten_family is not None]
    assert sorted(f.label for f in aten) == flat_ops
    assert not [f for f in index.families if f.kind == "aten_call"]  # no second listing of the same calls
    calls = {f.label: f.call_count for f in aten}
    assert calls == {f.label: f.call_count for f in flat.families if f.kind == "aten_call"}
    assert not [x for x in index.findings if x.kind == "aten_evidence"]
    assert links(index) == flat_links(base)


@pytest.mark.parametrize("style", STYLES)
def test_producers_bind_the_aten_signature(style: str) -> None:
    index = open_index(PRODUCERS / f"pair_transpose_a.{style}.onnx")
    fam = next(f for f in index.families if f.label == "aten::transpose")
    key = fam.overloads[0].function
    assert key is not None and index.functions.aten_target(key) == "aten::transpose.int"
    site = index.functions.calls[key][0]
    node = index.functions.site_node(site, index.functions.main)
    sig = function_call_signature(index.functions.functions[key], node)
    assert sig is not None and sig.problem is None
    assert {b.parameter.name: b.value for b in sig.bound if not b.parameter.is_tensor} == {"dim0": 1, "dim1": 2}


def test_torch_aten_names_hash_overloads_by_what_differs() -> None:
    data = summary_dict(open_index(PRODUCERS / "pair_heads_a.torch_aten.onnx"))
    view = next(f for f in data["families"] if f["label"] == "aten::view")
    shown = sorted(o["overload"] for o in view["overloads"])
    hashes = sorted(o["function"]["overload"] for o in view["overloads"])
    assert [s.split(" ", 1)[1] for s in shown] == ["(size=[1, 8, 2, 16])", "(size=[1, 8, 32])"]
    assert [s.split(" ", 1)[0] for s in shown] == hashes
    assert all(h.startswith("default_") and len(h) == len("default_") + 8 for h in hashes)
    assert {o["function"]["name"] for o in view["overloads"]} == {"aten_view"}


def test_nested_calls_are_listed_once() -> None:
    index = open_index(PRODUCERS / "pair_heads_a.nested.onnx")
    blocks = next(f for f in index.families if f.name == "Block")
    assert blocks.aten_family is None and len(blocks.overloads) == 2
    inner = [s for f in index.families if f.aten_family for o in f.overloads if o.function
             for s in index.functions.calls[o.function] if s.caller != blocks.overloads[0].function]
    assert inner  # some aten functions are called from inside the blocks ...
    assert not index.provenance.calls or not [f for f in index.families if f.kind == "aten_call"]  # ... once


def _function(doc: str, domain: str = "pkg.torch.aten", name: str = "aten_view") -> onnx.FunctionProto:
    f = helper.make_function(domain, name, ["self"], ["out"], [helper.make_node("Identity", ["self"], ["out"])],
                             [helper.make_opsetid("", 20)])
    f.doc_string = doc
    return f


def _call(target: str | None, **attrs: object) -> onnx.NodeProto:
    node = helper.make_node("aten_view", ["x"], ["y"], domain="pkg.torch.aten", **attrs)
    if target is not None:
        entry = node.metadata_props.add()
        entry.key = "pkg.torch.onnx.fx_node"
        entry.value = (f"%v : [num_users=1] = call_function[target=torch.ops.{target}]"
                       "(args = (%x, [2, 3]), kwargs = {})")
    return node


@pytest.mark.parametrize(("doc", "domain", "name", "target", "evidence"), [
    ("aten.view.default", "pkg.torch.aten", "aten_view", "aten::view", ("doc", "name")),
    ("aten::view.default", "any.domain", "f", "aten::view", ("doc",)),
    ("torch.ops.aten.transpose.int", "aten", "transpose", "aten::transpose.int", ("doc", "name")),
    ("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", "local", "view", "aten::view", ("doc",)),
    ("", "pkg.onnxscript.torch_lib", "aten_view", "aten::view", ("name",)),  # the one overload torchlib lowers
    ("", "pkg.onnxscript.torch_lib", "aten_add", None, ()),  # the name alone: add.Tensor and add.Scalar both fit
    ("a function that views", "local", "aten_view", None, ()),  # neither an aten domain nor a schema
])
def test_recognised_from_the_doc_string_and_the_name(doc: str, domain: str, name: str, target: str | None,
                                                       evidence: tuple[str, ...]) -> None:
    found = recognise(_function(doc, domain, name), [])
    assert (found.target, found.evidence, found.conflict) == (target, evidence, None)


def test_a_name_that_fits_several_overloads_is_said_not_guessed(tmp_path: Path) -> None:
    """A library function named ``aten_add`` in torchlib's domain, with no doc string and no FX metadata, passing
    no attributes: ``add.Tensor`` and ``add.Scalar`` both fit. It is not read as either, and the summary says why
    (it used to say nothing: a family of its own, no finding)."""
    f = _function("", "pkg.onnxscript.torch_lib", "aten_add")
    assert recognise(f, []).candidates == ("aten::add.Scalar", "aten::add.Tensor")
    call = helper.make_node("aten_add", ["x"], ["y"], domain="pkg.onnxscript.torch_lib")
    graph = helper.make_graph([call], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, functions=[f], opset_imports=[
        helper.make_opsetid("", 20), helper.make_opsetid("pkg.onnxscript.torch_lib", 1)])
    path = tmp_path / "ambiguous.onnx"
    onnx.save(model, path)
    index = open_index(path)
    assert [(x.kind, x.severity, x.message) for x in index.findings] == [(
        "aten_evidence", "info", "function pkg.onnxscript.torch_lib.aten_add is not read as an aten overload: it is "
        "named after aten::add, whose overloads aten::add.Scalar, aten::add.Tensor all fit what its calls pass, and "
        "no doc string or FX metadata says which")]
    assert [fam.label for fam in index.families] == ["pkg.onnxscript.torch_lib.aten_add"]


def test_recognised_from_the_call_metadata_alone() -> None:
    found = recognise(_function("", "local", "f"), [_call("aten.view.default")])
    assert (found.target, found.evidence) == ("aten::view", ("fx",))


def test_name_and_attributes_pick_the_one_overload_that_fits() -> None:
    f = _function("", "aten", "transpose")
    call = helper.make_node("transpose", ["x"], ["y"], domain="aten", dim0=1, dim1=2)
    assert recognise(f, [call]).target == "aten::transpose.int"


@pytest.mark.parametrize(("doc", "calls", "said"), [
    ("aten.view.default", [_call("aten.mul.Tensor")], "doc says aten::view; fx says aten::mul.Tensor"),
    ("", [_call("aten.view.default"), _call("aten.mul.Tensor")], "fx says aten::mul.Tensor; fx says aten::view"),
    ("aten.mul.Tensor", [], "its name names op view, but its doc says aten::mul.Tensor"),
])
def test_conflicting_evidence_is_a_finding_not_a_guess(doc: str, calls: list[onnx.NodeProto], said: str,
                                                      tmp_path: Path) -> None:
    found = recognise(_function(doc), calls)
    assert found.target is None and found.conflict is not None and said in found.conflict
    f = _function(doc)
    graph = helper.make_graph(calls, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, functions=[f], opset_imports=[helper.make_opsetid("", 20),
                                                                   helper.make_opsetid("pkg.torch.aten", 1)])
    path = tmp_path / "conflict.onnx"
    onnx.save(model, path)
    index = open_index(path)
    (finding,) = [x for x in index.findings if x.kind == "aten_evidence"]
    assert finding.severity == "warning" and said in finding.message
    assert [fam.label for fam in index.families if fam.kind == "function"] == ["pkg.torch.aten.aten_view"]


def test_attributes_that_disagree_with_the_metadata_are_the_signatures_problem() -> None:
    f = _function("aten.view.default")
    sig = function_call_signature(f, _call("aten.view.default", size=[2, 4]))
    assert sig is not None and [b.value for b in sig.bound if b.parameter.name == "size"] == [[2, 3]]
    assert sig.problem == "the call's attributes disagree with its FX metadata: size: attribute [2, 4], " \
                          "FX metadata [2, 3]"
    agreeing = function_call_signature(f, _call("aten.view.default", size=[2, 3]))
    assert agreeing is not None and agreeing.problem is None


def test_two_producers_names_for_one_op_are_one_family(tmp_path: Path) -> None:
    """One aten_view overload moved to pkg.onnxscript.torch_lib (its call nodes with it): still one aten::view
    family, of both overloads, whose calls add up."""
    model = onnx.load(PRODUCERS / "pair_heads_a.torch_aten.onnx")
    moved = next(f for f in model.functions if f.name == "aten_view")
    old = (moved.domain, moved.name, moved.overload)
    moved.domain = "pkg.onnxscript.torch_lib"
    for node in model.graph.node:
        if (node.domain, node.op_type, node.overload) == old:
            node.domain = moved.domain
    model.opset_import.append(helper.make_opsetid(moved.domain, 1))
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, tmp_path / "two.onnx")
    index = open_index(tmp_path / "two.onnx")
    (view,) = [f for f in index.families if f.label == "aten::view"]
    assert sorted(o.function.domain for o in view.overloads if o.function) == ["pkg.onnxscript.torch_lib",
                                                                               "pkg.torch.aten"]
    assert view.call_count == 8
    assert sorted(f.label for f in index.families) == sorted(f.label for f in open_index(
        ZOO / "pair_heads_a.onnx").families)


def shaped(index: ModelIndex) -> set[tuple[str, str]]:
    """(target, literal value) of every shape-specialised value."""
    specialiser = Specialiser(index)
    out: set[tuple[str, str]] = set()
    for family in index.families:
        for body in specialiser.analyse(family).bodies:
            first = body.members[0]
            target = first.target if isinstance(first, AtenCall) else index.functions.aten_target(first)
            out |= {(str(target), json.dumps(s.literal.value)) for s in body.specialised if s.shape}
    return out


@pytest.mark.parametrize("base", BASES)
def test_typed_function_bodies_explain_the_shapes_the_flat_export_explains(base: str) -> None:
    """torch_aten functions type the values made inside them: every shape-specialised value of the flat export is
    explained in them too (pair_heads_a: SDPA's reshape of the key to (-1, S, E) and back, and its default scale)."""
    flat = shaped(open_index(ZOO / f"{base}.onnx"))
    assert shaped(open_index(PRODUCERS / f"{base}.torch_aten.onnx")) == flat
    if base == "pair_heads_a":
        assert flat == {("aten::scaled_dot_product_attention", "[-1, 8, 16]"),
                        ("aten::scaled_dot_product_attention", "[1, 2, 16, 8]"),
                        ("aten::scaled_dot_product_attention", "[0.5]")}
