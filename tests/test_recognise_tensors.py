"""The tensor arguments of calls recognised by body template, bound to their parameters, against the exporter's own
metadata as truth: each zoo dynamo export is stripped (``scripts/strip_metadata.py``) and indexed again, and a
recognised call's tensors (``signature.recognised_tensors``, named by the parameter the template generator passed
each outside tensor as) must be the truth call's tensors, parameter by parameter (FX names read as the ONNX values
they stand for; where the FX value is no ONNX value, a clone the optimizer removed or a parameter's FX name, there is
nothing to compare with). A tensor the templates cannot place stays unbound: never a wrong name.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from inspector.core.model.fx import TensorRef
from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.signature import call_signature, recognised_tensors
from tests.conftest import ROOT
from tests.stripping import stripped_file, zoo_dynamo


def _stripped(path: Path, folder: Path) -> ModelIndex:
    return open_index(stripped_file(path, folder))


def _nodes(call) -> frozenset[int]:
    return frozenset(int(p[0]) for p in call.node_paths if len(p) == 1)


def _tensors(index: ModelIndex, call) -> dict[str, list[str]]:
    """The truth call's tensor arguments by parameter, as ONNX value names."""
    onnx_name = index.graph_maps().onnx_name
    out: dict[str, list[str]] = {}
    for b in call_signature(call).bound:
        if not b.provided:
            continue
        items = b.value if isinstance(b.value, (list, tuple)) else [b.value]
        refs = [onnx_name.get(v.name, v.name) for v in items if isinstance(v, TensorRef)]
        if refs:
            out[b.parameter.name] = refs
    return out


def test_recognised_tensors_are_the_exporters_on_every_zoo_export(tmp_path: Path) -> None:
    right = wrong = unknown = 0
    mistakes: list[str] = []
    for path in zoo_dynamo():
        truth_index = open_index(path)
        truth = {_nodes(c): c for c in truth_index.provenance.calls if c.scope == MAIN}
        g = truth_index.proto.graph
        values = {v for n in g.node for v in n.output} | {v.name for v in g.input} | {t.name for t in g.initializer}
        index = _stripped(path, tmp_path)
        for call in index.provenance.calls:
            want = truth.get(_nodes(call))
            if not call.recognised or len(call.candidates) != 1 or want is None or want.target != call.target:
                continue
            expected = _tensors(truth_index, want)
            for param, got in recognised_tensors(call).items():
                names = [r.name for r in (got if isinstance(got, list) else [got])]
                if param in expected and not values.issuperset(expected[param]):
                    unknown += 1  # the FX value is no ONNX value (a clone the optimizer removed, a parameter's FX
                    continue  # name without its state-dict name): nothing to compare with
                if expected.get(param) == names:
                    right += 1
                else:
                    wrong += 1
                    mistakes.append(f"{path.stem} {call.name} {call.target} {param}={names} (truth {expected})")
    assert wrong == 0, mistakes[:10]
    # measured: 1744 tensors named as the metadata names them, 267 the metadata names by an FX name only (1745 before
    # the non-``.vec`` ``upsample_nearest2d`` had a template: padnet's Resize of scales fits both overloads alike, and a
    # call of two candidates binds none; 1645 and 259
    # while a multi-node call's tensors were read again from its nodes in graph order, not as its match read them:
    # ``RecognisedCall.wiring``, and while a one-node body among the nodes computing its shape bound none; 1613 before
    # renumber_a and renumber_b: their linears' inputs, weights and biases, their gelus' and adds' operands; 1611 before
    # gpt2_dynamic's two ``sym_size.int`` calls had a template: their selves; 1579 before
    # padnet's 32: its instance norms' weight and bias, made inside the body where the norm has none, were bound as
    # tensors until the template of that body and the names of the constants it reads told them apart; 1566 and 258
    # before the masks' ``bitwise_and`` and the noopt ``ne.Scalar`` and ``new_ones`` were recognised; 1524 and 256
    # while a Scalar overload and a Tensor one kept both candidates, before the name of the constant they read told
    # which, ``recognise_narrow``: the selves of 28 pows, the tensors of a mask's comparisons; 1163 and 191
    # while a body several overloads share kept every candidate, before its output's name told which,
    # ``recognise_names``; 1161 before the slice to a symbolic end had its template: its self and end; 187 unknown
    # before the fused view's template took 4 more lone Reshapes; 998 and 150 while a call of fewer nodes than its
    # template bound none: a linear whose weight's Transpose the optimizer folded, a mask indexing that reuses another
    # call's positions; 995 before a cat of three fitted cat's template of two: ``list_template``; 993 and 148 before
    # gpt2_dynamic's mask indexing that reuses another call's positions was recognised; 983 before dwconv joined the
    # zoo: its linear, layer norm and convolutions' operands; 973 before ``index.Tensor`` had templates: the mask
    # indexing's self and positions in the noopt exports). 767 and 140 while only a template's first node was read (766
    # before convnet's MaxPool was max_pool2d alone: ``recognise_lengths``): a body whose outside tensors several of its
    # nodes read (SDPA's query, key and value; a layer norm's weight and bias) is now bound where its nodes are the
    # template's, wiring checked
    assert right == 1744 and unknown == 267, (right, unknown)


def test_a_recognised_add_shows_its_operands_in_the_signature(tmp_path: Path) -> None:
    index = _stripped(ROOT / "tests" / "zoo" / "t5.onnx", tmp_path)
    text = {c.name: call_signature(c).text for c in index.provenance.calls
            if c.target == "aten::add.Tensor" and c.recognised}
    # a residual add of two tensors (the template of alpha at its default: one Add)
    # (each call named as torch's FX graph named it, as its output's name says: ``recognise_names``)
    assert text["add_9"] == "aten::add.Tensor(self=%embedding, other=%linear_3, alpha=1) -> Tensor"
    # the layer norm's eps: a number ``other`` is baked with alpha into one constant (other * alpha), which the
    # evidence cannot split, so ``other`` and ``alpha`` stay missing while ``self`` is bound (alpha was shown at its
    # default, 1: a guess, as the literal moves with it)
    assert text["add_2"] == "aten::add.Tensor(self=%mean, other=<missing>, alpha=<missing>) -> Tensor"
    assert sum("self=%" in t for t in text.values()) == len(text) == 18


def test_no_tensor_is_bound_where_the_template_cannot_place_it(tmp_path: Path) -> None:
    """The guard: the call's first node must be the template's first node (operator and operand count), else the
    tensors stay unbound rather than named from another node."""
    index = _stripped(ROOT / "tests" / "zoo" / "t5.onnx", tmp_path)
    add = next(c for c in index.provenance.calls if c.target == "aten::add.Tensor" and recognised_tensors(c))
    other = next(n for n in index.proto.graph.node if n.op_type not in ("Add", "Constant"))
    assert recognised_tensors(replace(add, first_node=other)) == {}
    assert recognised_tensors(replace(add, recognised=("aten::no_such_op#0",))) == {}


def test_the_other_side_of_a_diff_binds_what_the_first_binds(tmp_path: Path) -> None:
    """A diff indexes its second model like its first (``open_index(..., like=)``: calls whose nodes are equal are
    taken over): a recognised call taken over reads its own model's nodes, so its tensors are bound as on the first
    side (GPT-2 with dynamic shapes, stripped, against a copy of itself: its SDPA's query, key, value and mask were
    bound on one side only)."""
    first = _stripped(ROOT / "tests" / "zoo" / "gpt2_dynamic.onnx", tmp_path)
    copy = tmp_path / "copy.onnx"
    copy.write_bytes((tmp_path / "gpt2_dynamic.onnx").read_bytes())
    second = open_index(copy, like=first)
    one = {_nodes(c): recognised_tensors(c) for c in first.provenance.calls if c.recognised}
    other = {_nodes(c): recognised_tensors(c) for c in second.provenance.calls if c.recognised}
    assert one == other and sum(map(len, one.values())) > 100
    sdpa = next(c for c in second.provenance.calls if c.target == "aten::scaled_dot_product_attention")
    assert set(recognised_tensors(sdpa)) == {"query", "key", "value", "attn_mask"}
    assert sdpa.first_node is second.proto.graph.node[int(sdpa.node_paths[0][0])]


def test_an_attention_whose_nodes_lie_in_another_order_binds_what_its_match_read(tmp_path: Path) -> None:
    """GPT-2's and ViT's attentions: the optimizer's export lays SDPA's nodes out in another order than its template,
    so reading them again in graph order bound none of its tensors; the match's own reading (``wiring``) binds query,
    key and value as torch's FX text names them. (The mask, made once for every layer by another call's nodes, stays
    missing.)"""
    for name in ("gpt2", "vit"):
        truth = next(c for c in open_index(ROOT / "tests" / "zoo" / f"{name}.onnx").provenance.calls
                     if c.target == "aten::scaled_dot_product_attention")
        call = next(c for c in _stripped(ROOT / "tests" / "zoo" / f"{name}.onnx", tmp_path).provenance.calls
                    if c.target == "aten::scaled_dot_product_attention" and c.recognised)
        assert call.wiring is not None and call.wiring[0] == call.recognised[0]
        got = {p: r.name for p, r in recognised_tensors(call).items()}
        want = _tensors(open_index(ROOT / "tests" / "zoo" / f"{name}.onnx"), truth)
        assert got == {p: want[p][0] for p in ("query", "key", "value")}


def test_a_tensor_whose_node_the_optimizer_folded_says_where_it_went(tmp_path: Path) -> None:
    """A stripped export's ``linear`` read ``weight=<missing>`` and nothing more: the optimizer had folded its weight's
    Transpose into the constant its MatMul reads. The signature's note now names that constant, for a parameter the
    truth call passes (torch's metadata) and the call's nodes do not show; it is an operand of those nodes, and the
    truth call's node reads it too."""
    import re

    said = 0
    for path in zoo_dynamo():
        truth_index = open_index(path)
        truth = {_nodes(c): c for c in truth_index.provenance.calls if c.scope == MAIN}
        index = _stripped(path, tmp_path)
        graph = index.proto.graph.node
        for call in index.provenance.calls:
            want = truth.get(_nodes(call))
            if not call.recognised or len(call.candidates) != 1 or want is None or want.target != call.target:
                continue
            sig = call_signature(call)
            for param, op, value in re.findall(r"(\w+): the optimizer folded (\w+)\(\w+\) into (\S+?)(?:;|$)",
                                               sig.problem or ""):
                assert param in _tensors(truth_index, want) or any(
                    b.parameter.name == param and b.provided for b in call_signature(want).bound), (path.name, param)
                assert not any(b.parameter.name == param and b.provided for b in sig.bound)
                assert any(value in graph[i].input for i in _nodes(call)), (path.name, value)
                assert op == "Transpose"
                said += 1
    assert said == 145, said  # (the linears without bias of the optimized Llama, BERT, T5, ViT, ... exports)
