"""A stripped export diffed against its original says what really differs (``inspector.core.diff.sources``): the
calls recognised by body template are the original's calls over the same nodes, and the bare nodes no template
recognised are the original's calls, so the one change left is where the calls come from; an edit still shows.

Ground truth comes from the original's fx metadata: which fx node each node of a recognised call belonged to, and
the target that node names; never from the diff itself."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from inspector.core.diff.run import diff_models
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import open_index
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from strip_metadata import strip, zoo_dynamo  # type: ignore[import-not-found]

ZOO = ROOT / "tests" / "zoo"
FX_NODE = "pkg.torch.onnx.fx_node"
_TARGET = re.compile(r"call_function\[target=torch\.ops\.(\w+)\.(\w+)\.(\w+)\]")


def _stripped(name: str, tmp_path: Path) -> tuple[onnx.ModelProto, Path]:
    model = onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False)
    assert strip(model) > 0
    path = tmp_path / f"{name}_stripped.onnx"
    onnx.save(model, str(path))
    return model, path


def _fx(node: onnx.NodeProto) -> str | None:
    return next((p.value for p in node.metadata_props if p.key == FX_NODE), None)


def _all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes of a graph and of its subgraphs at any depth."""
    out = []
    for n in graph.node:
        out.append(n)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out += _all_nodes(g)
    return out


def _target(fx_text: str) -> str:
    """The aten target of an FX text, or its raw target (``operator.add`` of two sizes, which ONNX computes with an
    Add that the templates take for ``aten::add.Tensor``)."""
    m = _TARGET.search(fx_text)
    if m is None:
        raw = re.search(r"call_function\[target=([^\]]+)\]", fx_text)
        return raw.group(1) if raw else fx_text
    ns, op, overload = m.groups()
    return f"{ns}::{op}" + ("" if overload == "default" else f".{overload}")


def _truth(name: str, stripped: Path) -> tuple[int, int, int]:
    """From the original's metadata: the stripped copy's recognised calls whose nodes (Constants apart, which a
    template may claim where fx leaves them outside) belong to one fx node whose target is among the candidates;
    the original's fx calls; the stripped copy's recognised calls."""
    original = onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False)
    nodes = original.graph.node
    calls = open_index(stripped).provenance.calls
    recognised = [c for c in calls if c.recognised]
    right = 0
    for c in recognised:
        texts = {_fx(nodes[p[0]]) for p in c.node_paths if nodes[p[0]].op_type != "Constant"}
        if len(texts) == 1 and None not in texts and _target(texts.pop()) in (c.candidates or (c.target,)):  # type: ignore[arg-type]
            right += 1
    fx_calls = len({t for n in _all_nodes(original.graph) if (t := _fx(n)) is not None})
    return right, fx_calls, len(recognised)


@pytest.mark.parametrize("name", ["t5", "gpt2", "llama_gqa"])
def test_a_stripped_export_against_its_original_differs_only_in_where_its_calls_come_from(
        name: str, tmp_path: Path) -> None:
    _, path = _stripped(name, tmp_path)
    right, fx_calls, recognised = _truth(name, path)
    assert right == recognised > 0  # every recognised call is one of the original's calls (the truth of the test)
    stripped, original = open_index(path), open_index(ZOO / f"{name}.onnx")
    forward = diff_models(stripped, original)
    assert [(c.kind, c.section, c.detail) for c in forward.changes] == [
        ("metadata_added", "model",
         f"aten calls: {recognised} recognised by body template -> {fx_calls} from fx metadata")]
    m = forward.matched["aten_calls"]
    assert (m.matched, m.only_a, m.only_b) == (recognised, 0, fx_calls - recognised)
    back = diff_models(original, stripped)
    assert [(c.kind, c.old, c.new) for c in back.changes] == [
        ("metadata_removed", f"{fx_calls} from fx metadata", f"{recognised} recognised by body template")]
    m = back.matched["aten_calls"]
    assert (m.matched, m.only_a, m.only_b) == (recognised, fx_calls - recognised, 0)
    assert diff_models(stripped, open_index(path)).equal


def _parts(name: str, stripped: Path) -> tuple[int, int]:
    """From the original's metadata: the stripped copy's recognised calls whose nodes are a part of one fx call of
    a target not among their candidates (the templates grouped them otherwise: SDPA's matmuls, a batch norm folded
    into a Conv), and the fx calls nested in subgraphs of main-graph nodes (a cond's branches)."""
    original = onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False)
    nodes = original.graph.node
    parts = 0
    for c in open_index(stripped).provenance.calls:
        texts = {_fx(nodes[p[0]]) for p in c.node_paths if nodes[p[0]].op_type != "Constant"}
        if c.recognised and len(texts) == 1 and None not in texts:
            parts += _target(texts.pop()) not in (c.candidates or (c.target,))  # type: ignore[arg-type]
    nested = sum(1 for y in _all_nodes(original.graph) if _fx(y)) - sum(1 for y in nodes if _fx(y))
    return parts, nested


# (the templates' residual Adds also take gpt2_dynamic's ``operator.add`` of two sizes, and a convolution of any
# kernel a Conv with its batch norm folded in: 28 -> 31 and 5 -> 6 parts; gpt2_dynamic 31 -> 12 once the catalogue
# held SDPA's dynamic-shape form, whose nodes had been lone matmul, isnan, add and mul calls; llama_gqa_noopt 27 -> 3
# and bert_noopt 8 -> 2 once ``index.Tensor`` had templates, whose Transpose, Max, Unsqueeze and Concat nodes they were;
# gpt2_dynamic 12 -> 4 once a mask indexing that reuses another call's positions was found whole: ``recognise_shared``;
# 4 -> 5 with the fused view's template, which took the Reshape of a slice whose end is symbolic; 5 -> 4 once the
# catalogue held that slice's body; convnet 6 -> 0 once a batch norm the optimizer fused into a Conv had its template:
# each Conv is that batch norm's call, whole; llama_gqa_noopt 3 -> 1 and bert_noopt 2 -> 0 once a chain of lone calls
# whose values between them are named as a body's (``val_<n>``) was one call: ``recognise_names.inside_named``, the
# noopt ``new_ones``' Expand then Cast; gpt2_dynamic 4 -> 2 once ``sym_size.int`` had its template, generated with
# dynamic shapes: its Shape and Squeeze had been a lone shape and squeeze call each; gpt2_dynamic 2 -> 1 and
# llama_gqa_noopt 1 -> 0 once ``prims::convert_element_type`` had its template: a lone Cast had been ``_to_copy`` alone)
@pytest.mark.parametrize(("name", "parts", "nested"), [("gpt2_dynamic", 1, 0), ("llama_gqa_noopt", 0, 0),
                                                       ("bert_noopt", 0, 0), ("convnet", 0, 0), ("cond", 0, 7)])
def test_calls_the_templates_group_otherwise_are_the_same_nodes(name: str, parts: int, nested: int,
                                                                 tmp_path: Path) -> None:
    """Recognised calls that are parts of one fx call (or fx calls in an If's branches, which no template
    recognises) are the same nodes: no family, call or node is added or removed, either way."""
    _, path = _stripped(name, tmp_path)
    assert _parts(name, path) == (parts, nested)
    _, fx_calls, recognised = _truth(name, path)
    stripped, original = open_index(path), open_index(ZOO / f"{name}.onnx")
    detail = f"aten calls: {recognised} recognised by body template -> {fx_calls} from fx metadata"
    assert [(c.kind, c.detail) for c in diff_models(stripped, original).changes] == [("metadata_added", detail)]
    assert [c.kind for c in diff_models(original, stripped).changes] == ["metadata_removed"]


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.stem)
def test_every_dynamo_export_of_the_zoo_stripped_differs_from_itself_only_in_its_metadata(
        path: Path, tmp_path: Path) -> None:
    _, stripped_path = _stripped(path.stem, tmp_path)
    stripped, original = open_index(stripped_path), open_index(path)
    assert [c.kind for c in diff_models(stripped, original).changes] == ["metadata_added"]
    assert [c.kind for c in diff_models(original, stripped).changes] == ["metadata_removed"]
    assert diff_models(stripped, open_index(stripped_path)).equal


def _node_of(model: onnx.ModelProto, call: AtenCall, op_type: str) -> int:
    """The index of the node of ``call`` with operator ``op_type``."""
    return next(int(p[0]) for p in call.node_paths if model.graph.node[int(p[0])].op_type == op_type)


def _truth_name(name: str, i: int, target: str) -> str:
    """The FX name of the call node ``i`` of the original export belongs to, checked to be a call of ``target``."""
    fx_text = _fx(onnx.load(str(ZOO / f"{name}.onnx"), load_external_data=False).graph.node[i])
    assert fx_text is not None and _target(fx_text) == target
    return fx_text.split(" ", 1)[0].lstrip("%")


def test_an_edit_that_breaks_a_recognised_call_apart_still_shows(tmp_path: Path) -> None:
    """GPT-2 (dynamic)'s first ``sym_size.int``, a Shape then a Squeeze (its template generated with dynamic shapes),
    its Squeeze made to read the Shape's own input: the edited side has a squeeze no side had, and one sym_size call
    fewer, each way. (Its Squeeze was a squeeze call alone before the catalogue held sym_size's template, an edit
    inside a call the templates grouped otherwise; it was a cat inside an ``index.Tensor`` until the matcher found mask
    indexing that reuses another call's positions whole, and a matmul inside an SDPA until the catalogue held SDPA's
    dynamic-shape form.)"""
    model, path = _stripped("gpt2_dynamic", tmp_path)
    call = next(c for c in open_index(path).provenance.calls if c.target == "aten::sym_size.int")
    i = _node_of(model, call, "Squeeze")
    node = model.graph.node[i]
    shape = next(n for n in model.graph.node if node.input[0] in n.output)
    assert shape.op_type == "Shape" and _node_of(model, call, "Shape") == list(model.graph.node).index(shape)
    node.input[0] = shape.input[0]
    onnx.save(model, str(path))
    size = _truth_name("gpt2_dynamic", i, "aten::sym_size.int")
    edited, orig = open_index(path), open_index(ZOO / "gpt2_dynamic.onnx")
    assert [(c.kind, c.family, c.sites) for c in diff_models(edited, orig).changes[1:]] == [
        ("family_removed", "aten::squeeze", ["aten::squeeze"]),
        ("call_added", "aten::sym_size", [size])]
    assert [(c.kind, c.family, c.sites) for c in diff_models(orig, edited).changes[1:]] == [
        ("family_added", "aten::squeeze", ["aten::squeeze"]),
        ("call_removed", "aten::sym_size", [size])]


def test_an_edit_of_a_recognised_call_still_shows_against_the_original(tmp_path: Path) -> None:
    """The Transpose of T5's first recognised transpose call (a body permute lowers to as well, its output named
    ``transpose``: ``recognise_names``) given another perm: the one call pair reports its perm, under each side's own
    family, and nothing else changes but the metadata line."""
    model, path = _stripped("t5", tmp_path)
    calls = open_index(path).provenance.calls
    call = next(c for c in calls if c.recognised and c.target == "aten::transpose.int")
    i = _node_of(model, call, "Transpose")
    perm = model.graph.node[i].attribute[0]
    assert perm.name == "perm"
    before = list(perm.ints)
    perm.ints[0], perm.ints[1] = perm.ints[1], perm.ints[0]
    after = list(perm.ints)
    onnx.save(model, str(path))
    fx_name = _truth_name("t5", i, "aten::transpose.int")
    edited, orig = open_index(path), open_index(ZOO / "t5.onnx")
    forward = [c for c in diff_models(edited, orig).changes if c.kind != "metadata_added"]
    assert [(c.kind, c.family, c.sites, c.old, c.new) for c in forward] == [
        ("value_changed", "aten::transpose", [call.name], after, before)]
    back = [c for c in diff_models(orig, edited).changes if c.kind != "metadata_removed"]
    assert [(c.kind, c.family, c.sites, c.old, c.new) for c in back] == [
        ("value_changed", "aten::transpose", [fx_name], before, after)]


@pytest.mark.parametrize("stripped_side", ["a", "b"])
def test_an_edited_pair_stripped_on_one_side_still_shows_its_eps(stripped_side: str, tmp_path: Path) -> None:
    """pair_eps_a/_b differ in the LayerNorm eps alone; with either side stripped, that eps (read from the files)
    at each LayerNormalization is the one change besides the metadata line (the two Add nodes no template
    recognised, calls in the original, are neither removed nor added)."""
    names = ["pair_eps_a", "pair_eps_b"]
    paths = [ZOO / f"{n}.onnx" for n in names]
    k = 0 if stripped_side == "a" else 1
    paths[k] = _stripped(names[k], tmp_path)[1]
    eps = []
    for n in names:
        model = onnx.load(str(ZOO / f"{n}.onnx"), load_external_data=False)
        eps.append([a.f for x in model.graph.node if x.op_type == "LayerNormalization" for a in x.attribute
                    if a.name == "epsilon"])
    assert len(eps[0]) == len(eps[1]) == 3 and len(set(eps[0])) == len(set(eps[1])) == 1 and eps[0] != eps[1]
    changes = diff_models(open_index(paths[0]), open_index(paths[1])).changes
    assert [c.kind for c in changes] == ["metadata_added" if k == 0 else "metadata_removed", "value_changed"]
    value = changes[1]
    assert (value.family, len(value.sites)) == ("aten::layer_norm", 3)
    # (shown as float32: the attribute's value, not its double)
    assert (np.float32(value.old), np.float32(value.new)) == (np.float32(eps[0][0]), np.float32(eps[1][0]))
