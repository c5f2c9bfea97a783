"""The second model of a diff is indexed with the first one's index at hand (``open_index(..., like=)``,
``inspector.core.model.scan_like``): nodes equal at equal places are not read again. Whatever differs, the index must be
the one the model gets on its own: the same aten calls (text, name, target, nodes, first node, rewriter rules, name
scopes) in the same order, families, op histogram, findings and counts; and the diff made with it the same.
Checked on copies of the zoo's flat Llama export changed in one place each, and on changes the shortcut does not
cover (then the model is scanned on its own)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import helper

from inspector.core.diff import diff_models
from inspector.core.model.calls import FX_NODE, NAME_SCOPES, RULE_NAME
from inspector.core.model.index import ModelIndex, open_index
from tests.conftest import ROOT

LLAMA = ROOT / "tests" / "zoo" / "llama_gqa.onnx"
NEW_TEXT = "%neg_9 : [num_users=1] = call_function[target=torch.ops.aten.neg.default](args = (%x,), kwargs = {})"


def _entry(node: onnx.NodeProto, key: str) -> onnx.StringStringEntryProto:
    return next(p for p in node.metadata_props if p.key == key)


def _same(g: onnx.GraphProto) -> None:
    pass


def _attribute(g: onnx.GraphProto) -> None:
    node = next(n for n in g.node if n.op_type == "Transpose")
    perm = next(a for a in node.attribute if a.name == "perm")
    perm.ints[:] = list(reversed(perm.ints))


def _new_call(g: onnx.GraphProto) -> None:
    _entry(g.node[10], FX_NODE).value = NEW_TEXT  # a call the first model has not got, amid the others


def _joins_an_earlier_call(g: onnx.GraphProto) -> None:
    _entry(g.node[5], FX_NODE).value = _entry(g.node[0], FX_NODE).value  # rsqrt's second node: now the first call's


def _first_node_without_metadata(g: onnx.GraphProto) -> None:
    del g.node[4].metadata_props[:]  # rsqrt's first node: the call starts one node later


def _no_fx_text(g: onnx.GraphProto) -> None:
    props = g.node[4].metadata_props
    keep = [p for p in props if p.key != FX_NODE]
    del props[:]
    props.extend(keep)


def _rule_name(g: onnx.GraphProto) -> None:
    g.node[7].metadata_props.add(key=RULE_NAME, value="FuseThis")


def _op_type(g: onnx.GraphProto) -> None:
    g.node[1].op_type = "Mul" if g.node[1].op_type != "Mul" else "Add"


def _damaged_text(g: onnx.GraphProto) -> None:
    _entry(g.node[2], FX_NODE).value = "not FX at all"


def _name_scopes(g: onnx.GraphProto) -> None:
    _entry(g.node[3], NAME_SCOPES).value = "['', 'elsewhere', 'x']"


def _swapped_calls(g: onnx.GraphProto) -> None:
    a, b = g.node[20], g.node[40]
    meta_a, meta_b = list(a.metadata_props), list(b.metadata_props)
    del a.metadata_props[:]
    del b.metadata_props[:]
    a.metadata_props.extend(meta_b)
    b.metadata_props.extend(meta_a)


def _split_call(g: onnx.GraphProto) -> None:
    _entry(g.node[5], FX_NODE).value = NEW_TEXT  # rsqrt's second node: a call of its own, after rsqrt


def _last_node_gone_from_its_call(g: onnx.GraphProto) -> None:
    _entry(g.node[5], FX_NODE).value = NEW_TEXT
    _entry(g.node[4], FX_NODE).value = NEW_TEXT  # rsqrt's call is gone: both its nodes are a new one


# what the shortcut does not cover: these are scanned on their own
def _subgraph(g: onnx.GraphProto) -> None:
    node = g.node[10]
    branch = helper.make_graph([helper.make_node("Identity", [node.input[0]], ["y"])], "b", [],
                               [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    node.op_type = "If"
    node.attribute.extend([helper.make_attribute("then_branch", branch), helper.make_attribute("else_branch", branch)])


def _added(g: onnx.GraphProto) -> None:
    g.node.append(helper.make_node("Identity", [g.node[-1].output[0]], ["extra"]))


def _renamed(g: onnx.GraphProto) -> None:
    for node in g.node:
        node.name = node.name + "_r"


def _custom_domain(g: onnx.GraphProto) -> None:
    g.node[10].domain = "com.example"


def _damaged_later(g: onnx.GraphProto) -> None:
    _entry(g.node[30], FX_NODE).value = "not FX at all"  # a call named by its place among the calls: call<k>


Change = Callable[[onnx.GraphProto], None]
# change -> whether the second index is made like the first
CASES: dict[str, tuple[Change, bool]] = {
    "same": (_same, True),
    "attribute": (_attribute, True),
    "new call": (_new_call, True),
    "node joins an earlier call": (_joins_an_earlier_call, True),
    "first node without metadata": (_first_node_without_metadata, True),
    "no fx text": (_no_fx_text, True),
    "rule name": (_rule_name, True),
    "op type": (_op_type, True),
    "damaged text": (_damaged_text, True),
    "name scopes": (_name_scopes, True),
    "calls swapped": (_swapped_calls, True),
    "call gone": (_last_node_gone_from_its_call, True),
    "damaged in both, a new call before it": (_split_call, True),
    "subgraph": (_subgraph, False),
    "node added": (_added, False),
    "every node renamed": (_renamed, False),
    "custom domain": (_custom_domain, False),
}


def _view(index: ModelIndex) -> tuple[Any, ...]:
    nodes = index.proto.graph.node
    p = index.provenance
    calls = [(c.fx_text, c.name, c.raw_target, c.target, c.scope, c.node_paths, c.rule_names, c.scopes_text,
              c.first_node is not None and c.first_node == nodes[c.node_paths[0][0]])  # type: ignore[index]
             for c in p.calls]
    families = [(f.kind, f.domain, f.name, f.label, [(o.overload, o.call_count, [c.name for c in o.aten_calls])
                                                     for o in f.overloads]) for f in index.families]
    findings = [(x.kind, x.severity, x.message) for x in index.findings]
    return (calls, families, dict(index.op_histogram), findings, p.nodes_with_metadata, p.nodes_without_fx,
            p.damaged, p.damaged_texts, index.facts)


@pytest.mark.parametrize("modules", [False, True], ids=["no modules", "modules"])
@pytest.mark.parametrize("case", list(CASES))
def test_an_index_made_like_another_is_its_own_index(tmp_path: Path, case: str, modules: bool) -> None:
    change, follows = CASES[case]
    model = onnx.load(str(LLAMA), load_external_data=False)
    if case.startswith("damaged in both"):
        _damaged_later(model.graph)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change(other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a = open_index(tmp_path / "a.onnx", modules)
    like, own = open_index(tmp_path / "b.onnx", modules, like=a), open_index(tmp_path / "b.onnx", modules)
    assert (like.followed is a) == follows
    assert like.unequal is not None if follows else like.unequal is None
    if follows:
        nodes_a, nodes_b = model.graph.node, other.graph.node
        assert like.unequal == [i for i in range(len(nodes_a)) if nodes_a[i] != nodes_b[i]]
        assert (like.unequal == []) == (change is _same)
        # the first nodes are this model's own, not the other's equal ones
        assert all(c.first_node is like.proto.graph.node[c.node_paths[0][0]]  # type: ignore[index]
                   for c in like.provenance.calls)
    assert _view(like) == _view(own)
    if modules:
        assert _tree(like) == _tree(own)
    diff_like, diff_own = diff_models(a, like), diff_models(a, own)
    assert [(c.kind, c.family, c.where, c.detail, c.sites) for c in diff_like.changes] == \
        [(c.kind, c.family, c.where, c.detail, c.sites) for c in diff_own.changes]
    assert diff_like.equal == diff_own.equal
    if change in (_attribute, _new_call, _op_type, _swapped_calls, _split_call):
        assert not diff_like.equal
    if case.startswith("damaged in both"):  # its name moved with its place
        assert a.provenance.damaged == like.provenance.damaged == 1
        (before,) = [c.name for c in a.provenance.calls if c.fx_text == "not FX at all"]
        (after,) = [c.name for c in like.provenance.calls if c.fx_text == "not FX at all"]
        assert before.startswith("call") and after == f"call{int(before[4:]) + 1}"


def _tree(index: ModelIndex) -> list[tuple[str, str, list[int], int]]:
    out = []
    stack = [index.provenance.module_root]
    while stack:
        m = stack.pop()
        out.append((m.path, m.class_name, m.calls, m.node_count))
        stack.extend(m.children.values())
    return out


def test_a_first_model_with_local_functions_is_not_followed(tmp_path: Path) -> None:
    a = open_index(ROOT / "tests" / "fixtures" / "overloads.onnx")
    b = open_index(ROOT / "tests" / "fixtures" / "overloads.onnx", like=a)
    assert b.followed is None and _view(b) == _view(open_index(ROOT / "tests" / "fixtures" / "overloads.onnx"))


def _stripped_llama() -> onnx.ModelProto:
    from tests.stripping import stripped_model

    return stripped_model(LLAMA)


def _sigmoid_to_tanh(g: onnx.GraphProto) -> None:
    next(n for n in g.node if n.op_type == "Sigmoid").op_type = "Tanh"  # a silu's first node: tanh and mul now


# changes to nodes whose calls the first model's templates recognised (no metadata: the calls' texts are ours)
STRIPPED: dict[str, Change] = {"op type": _sigmoid_to_tanh, "attribute": _attribute}


@pytest.mark.parametrize("case", list(STRIPPED))
def test_a_recognised_call_over_a_node_that_differs_is_recognised_again(tmp_path: Path, case: str) -> None:
    """A stripped export changed in a node of a recognised call: the call is not taken over (it was, whole: its
    target and arguments the first model's at a node that is no longer theirs)."""
    model = _stripped_llama()
    other = onnx.ModelProto()
    other.CopyFrom(model)
    STRIPPED[case](other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a = open_index(tmp_path / "a.onnx", False)
    like, own = open_index(tmp_path / "b.onnx", False, like=a), open_index(tmp_path / "b.onnx", False)
    assert like.followed is a and a.provenance.recognised > 0 and like.unequal
    assert _view(like) == _view(own)
    assert like.provenance.recognised == own.provenance.recognised
    diff_like, diff_own = diff_models(a, like), diff_models(a, own)
    assert [(c.kind, c.family, c.where, c.detail, c.sites) for c in diff_like.changes] == \
        [(c.kind, c.family, c.where, c.detail, c.sites) for c in diff_own.changes]
    assert not diff_like.equal
