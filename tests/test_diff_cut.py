"""The diff cuts its two models as a pair (``Side.pair``, ``inspector.core.diff.follow``) when the second is
mostly the first: neither resolves what its units read until it is used, and the pair names the units that may
differ. Whatever differs, each unit resolved must be what the model's own cut finds: the same units, reads (first
use first), outputs, baked constants and producers; and every unit the pair does not name must be the same on both
sides. Checked on the zoo's flat Llama export against copies changed in one place each: an attribute, a value
renamed, an input rewired, a value produced twice (so that unchanged calls read it from elsewhere, or read a node's
output where they read a baked constant), a baked constant turned into a graph input, optional outputs left empty,
a node added, every node renamed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from inspector.core.diff import ModelDiff, diff_dict, diff_models
from inspector.core.diff.cut import UNREAD, GraphCut, Unit, agree_small
from inspector.core.diff.units import Side
from inspector.core.model.index import ModelIndex, open_index
from tests.conftest import ROOT

LLAMA = ROOT / "tests" / "zoo" / "llama_gqa.onnx"


def _node(g: onnx.GraphProto, output: str) -> onnx.NodeProto:
    return next(n for n in g.node if output in n.output)


def _attribute(g: onnx.GraphProto) -> None:
    perm = next(a for a in _node(g, "transpose").attribute if a.name == "perm")
    perm.ints[:] = list(reversed(perm.ints))


def _renamed_value(g: onnx.GraphProto) -> None:
    _node(g, "val_104").output[0] = "val_104_renamed"
    reader = next(n for n in g.node if "val_104" in n.input)
    reader.input[list(reader.input).index("val_104")] = "val_104_renamed"


def _rewired(g: onnx.GraphProto) -> None:
    mul = _node(g, "mul_3")
    mul.input[list(mul.input).index("rsqrt")] = "add_3"


def _produced_twice_later(g: onnx.GraphProto) -> None:
    _node(g, "neg").output[0] = "slice_4"  # node 20 now also makes slice_4 (node 18's); nothing makes neg


def _produced_twice_earlier(g: onnx.GraphProto) -> None:
    _node(g, "slice_4").output[0] = "neg"  # node 18 now also makes neg (node 20's, the last producer)


def _shadows_constant(g: onnx.GraphProto) -> None:
    _node(g, "neg").output[0] = "val_103"  # a node now makes what unchanged calls read as a baked constant


def _made_again_later(g: onnx.GraphProto) -> None:
    _node(g, "neg").output[0] = "val_104"  # rsqrt (unchanged) made val_104 for itself; now it reads neg's


def _constant_to_input(g: onnx.GraphProto) -> None:
    t = next(t for t in g.initializer if t.name == "val_103")
    g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    g.initializer.remove(t)


def _weight_to_input(g: onnx.GraphProto) -> None:
    """q_proj's weight (read by unchanged nodes) becomes a graph input; an initializer of the same content and
    another name is matched to it (by content), so the reader is rewired from it to the input."""
    t = next(t for t in g.initializer if t.name == "val_105")
    g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    copy = g.initializer.add()
    copy.CopyFrom(t)
    copy.name = "val_105_copy"
    g.initializer.remove(t)


def _empty_outputs(g: onnx.GraphProto) -> None:
    for n in g.node[:4]:
        n.output.append("")


def _nodes_renamed(g: onnx.GraphProto) -> None:
    for n in g.node:  # every node differs: nothing to take over
        n.name += "_renamed"


def _added(g: onnx.GraphProto) -> None:
    g.node.append(helper.make_node("Identity", ["add_3"], ["extra"], name="extra"))


def _same(g: onnx.GraphProto) -> None:
    pass


def _stack_traces_moved(g: onnx.GraphProto) -> None:
    """Two nodes in five get another stack trace (an edit above them moved their lines), and one an attribute: the
    nodes differ, but only the attribute's call may read or do otherwise."""
    for i, n in enumerate(g.node):
        if i % 5 < 2:
            n.doc_string = "moved"
            for p in n.metadata_props:
                if p.key == "pkg.torch.onnx.stack_trace":
                    p.value += "\n(moved)"
    _attribute(g)


def _constant_changed(g: onnx.GraphProto) -> None:
    """A baked constant keeps its name and changes its value: no node differs, its readers do."""
    t = next(t for t in g.initializer if t.name == "val_102")
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * 3 + 1, "val_102"))


def _constant_encoded_otherwise(g: onnx.GraphProto) -> None:
    """The same constant stored as float_data instead of raw bytes: other messages, the same content."""
    t = next(t for t in g.initializer if t.name == "val_102")
    values = numpy_helper.to_array(t).reshape(-1).tolist()
    t.ClearField("raw_data")
    t.float_data.extend(values)


def _constant_described_as_parameter(g: onnx.GraphProto) -> None:
    """Metadata makes a baked constant a parameter: no longer baked into its readers."""
    info = g.value_info.add()
    info.name = "val_102"
    info.metadata_props.add(key="pkg.torch.export.graph_signature.InputSpec.kind", value="PARAMETER")


def _value_left_unread(g: onnx.GraphProto) -> None:
    """rsqrt's only reader reads add_3 instead: whether rsqrt keeps its output differs, and nothing else about it."""
    _read_instead(g, "mul_3", "rsqrt", "add_3")


def _graph_output_renamed(g: onnx.GraphProto) -> None:
    name = g.output[0].name
    g.output[0].name = _node(g, name).output[0] = name + "_out"


def _graph_output_added(g: onnx.GraphProto) -> None:
    g.output.append(helper.make_tensor_value_info("rsqrt", onnx.TensorProto.FLOAT, None))


def _dangling_read(g: onnx.GraphProto) -> None:
    _node(g, "mul_3").input.append("ghost")  # a name nothing makes


def _dangling_name_made_constant(g: onnx.GraphProto) -> None:
    """The name an unchanged node reads (made by nothing) becomes a small initializer: baked into it on one side."""
    g.initializer.append(numpy_helper.from_array(np.array([2.0], np.float32), "ghost"))


Change = Callable[[onnx.GraphProto], None]
# (change to B, change to both, how many aten calls of B have a node unequal to A's when B's cut takes over from
# A's, else None)
CASES: dict[str, tuple[Change, Change | None, int | None]] = {
    "same": (_same, None, 0),
    "attribute": (_attribute, None, 1),
    "renamed value": (_renamed_value, None, 1),  # Sqrt and Reciprocal: one call (rsqrt)
    "rewired": (_rewired, None, 1),
    "produced twice, later": (_produced_twice_later, None, 1),
    "produced twice, earlier": (_produced_twice_earlier, None, 1),
    "baked constant turned input": (_constant_to_input, None, 0),
    "value shadows a baked constant": (_shadows_constant, None, 1),
    "value made again later": (_made_again_later, None, 1),
    "empty outputs": (_attribute, _empty_outputs, 1),
    "first has a value produced twice": (_same, _produced_twice_earlier, None),  # A's producers: not unique
    "node added": (_added, None, None),
    "every node renamed": (_nodes_renamed, None, None),
    "constant changed under its name": (_constant_changed, None, 0),
    "constant encoded otherwise": (_constant_encoded_otherwise, None, 0),
    "constant described as a parameter": (_constant_described_as_parameter, None, 0),
    "value left unread": (_value_left_unread, None, 1),
    "graph output renamed": (_graph_output_renamed, None, 1),
    "graph output added": (_graph_output_added, None, 0),
    "dangling name made a constant": (_dangling_name_made_constant, _dangling_read, 0),
    "stack traces moved": (_stack_traces_moved, None, 48),
}


def _structure(node: onnx.NodeProto) -> tuple[Any, ...]:
    return (node.op_type, node.domain, node.overload, list(node.input), list(node.output),
            [a.SerializeToString() for a in node.attribute])


def _unit_of(u: Unit) -> tuple[Any, ...]:
    return (u.kind, u.nodes, u.label, u.reads, u.outputs, u.callee,
            [(name, t.SerializeToString()) for name, t in u.constants.items()])


def own_sides(a: ModelIndex, b: ModelIndex) -> tuple[Side, Side]:
    """The sides of a diff of ``a`` and ``b`` each cut on its own, what they may bake in judged alike
    (``agree_small``), as the diff cuts them when B is not mostly A."""
    cut_a, cut_b = GraphCut(a, alone=False), GraphCut(b, alone=False)
    agree_small(cut_a, cut_b)
    cut_a.finish()
    cut_b.finish()
    return Side(a, cut_a), Side(b, cut_b)


def _cut_of(side: Side) -> tuple[Any, ...]:
    """The side's cut, each unit resolved (``Side.unit``)."""
    cut = side.cut
    units = [None if u is None else _unit_of(side.unit(k)) for k, u in enumerate(cut.units)]
    return (cut.n_calls, list(cut.unit_of_node), list(cut.node_of_unit), cut.function_call_ids, cut.producer, units)


@pytest.mark.parametrize("case", list(CASES))
def test_cut_made_as_a_pair_is_its_own_cut(tmp_path: Path, case: str):
    change_b, change_both, unequal = CASES[case]
    model = onnx.load(str(LLAMA), load_external_data=False)
    if change_both is not None:
        change_both(model.graph)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change_b(other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a, b = open_index(tmp_path / "a.onnx"), open_index(tmp_path / "b.onnx")
    A, B = Side.pair(a, b)
    assert (B.cut.followed is A.cut) == (unequal is not None)
    if unequal is not None:
        assert B.cut.unequal is not None and len(B.cut.unequal) == unequal
        follow = B.follow
        assert follow is not None and follow is A.follow
        assert {A.unit_of_node[i] for i in follow.reshaped} <= follow.suspect
        # no unit is resolved before it is used; (below) used, each is what a cut of its own finds
        assert all(u is None or u.reads is UNREAD for u in (*A.units, *B.units))
    own_a, own_b = own_sides(a, b)
    assert _cut_of(A) == _cut_of(own_a)
    assert _cut_of(B) == _cut_of(own_b)
    if unequal is not None:  # what the pair does not name is the same on both sides
        nodes_a, nodes_b = a.proto.graph.node, b.proto.graph.node
        for k in range(A.n_calls):
            if k not in follow.suspect:
                ua, ub = A.unit(k), B.unit(k)
                assert _unit_of(ub) == _unit_of(own_b.unit(k))
                assert _unit_of(ua)[3:] == _unit_of(ub)[3:]  # reads, outputs, callee, constants
                assert all(_structure(nodes_a[i]) == _structure(nodes_b[i]) for i in ua.nodes)
                if k not in B.cut.unequal:
                    assert all(nodes_a[i] == nodes_b[i] for i in ua.nodes)
                mine, own = ub.call, own_b.unit(k).call  # (B may stand for its call with A's: the same FX text)
                assert mine is not None and own is not None
                assert (mine.fx_text, mine.name, mine.target) == (own.fx_text, own.name, own.target)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("order", ["ab", "ba"])
def test_diff_of_a_pair_is_the_diff_of_own_cuts(tmp_path: Path, case: str, order: str,
                                                monkeypatch: pytest.MonkeyPatch):
    """Each case's whole diff, both ways round: cut as a pair (what it reads of the units the pair does not name
    is skipped) and with each side cut on its own."""
    change_b, change_both, _unequal = CASES[case]
    model = onnx.load(str(LLAMA), load_external_data=False)
    if change_both is not None:
        change_both(model.graph)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change_b(other.graph)
    first, second = (model, other) if order == "ab" else (other, model)
    onnx.save(first, str(tmp_path / "a.onnx"))
    onnx.save(second, str(tmp_path / "b.onnx"))
    a = open_index(tmp_path / "a.onnx", modules=False)
    b = open_index(tmp_path / "b.onnx", modules=False, like=a)  # (as diff_files indexes them)
    paired, own = diff_models(a, b), _diff_of_own_cuts(a, b, monkeypatch)
    assert diff_dict(paired) == diff_dict(own)
    if case == "dangling name made a constant":  # (found although only an unchanged node reads it)
        assert [(c.kind, c.where) for c in paired.changes] == [("body_changed", "mul_3")]
    if case == "constant changed under its name":
        assert {c.kind for c in paired.changes} == {"value_changed"}
    if case == "stack traces moved":
        follow = Side.pair(a, b)[1].follow
        assert follow is not None and len(follow.suspect) == 1 and len(follow.differ) > 50


COND = ROOT / "tests" / "zoo" / "cond.onnx"


def _then_branch_alpha(g: onnx.GraphProto) -> None:
    """An attribute of a node inside the If's then branch (torch.cond)."""
    branch = next(a.g for n in g.node if n.op_type == "If" for a in n.attribute if a.name == "then_branch")
    next(n for n in branch.node if n.op_type == "Gemm").attribute.append(helper.make_attribute("alpha", 2.0))


def _else_branch_reads_another_weight(g: onnx.GraphProto) -> None:
    """A node inside the else branch reads another outer initializer (a value the If captures)."""
    branch = next(a.g for n in g.node if n.op_type == "If" for a in n.attribute if a.name == "else_branch")
    next(n for n in branch.node if n.op_type == "LayerNormalization").input[2] = "pos.bias"


@pytest.mark.parametrize("change", [_then_branch_alpha, _else_branch_reads_another_weight])
def test_a_pair_differing_inside_an_if_branch(tmp_path: Path, change: Change, monkeypatch: pytest.MonkeyPatch):
    """A graph whose If nodes capture outer values is cut as a pair too (a node's reads include what its branches
    capture); the diff is the one of own cuts, and it finds the change."""
    model = onnx.load(str(COND), load_external_data=False)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change(other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a, b = open_index(tmp_path / "a.onnx"), open_index(tmp_path / "b.onnx")
    A, B = Side.pair(a, b)
    assert B.cut.followed is A.cut and B.cut.unequal is not None and len(B.cut.unequal) == 1
    paired, own = diff_models(a, b), _diff_of_own_cuts(a, b, monkeypatch)
    assert paired.changes and diff_dict(paired) == diff_dict(own)


def _diff_of_own_cuts(a: ModelIndex, b: ModelIndex, monkeypatch: pytest.MonkeyPatch) -> ModelDiff:
    """The diff of ``a`` and ``b`` with each side cut on its own, as if B were not mostly A."""
    with monkeypatch.context() as m:
        m.setattr(Side, "pair", classmethod(lambda cls, x, y, progress=None: own_sides(x, y)))
        own = diff_models(a, b)
    return own


def _swapped_calls(g: onnx.GraphProto) -> None:
    """k_proj's and v_proj's MatMuls swap their metadata: each is matched to the other's node, and what reads
    them (unchanged nodes) is rewired."""
    a, b = _node(g, "linear_1"), _node(g, "linear_2")
    meta_a, meta_b = list(a.metadata_props), list(b.metadata_props)
    del a.metadata_props[:]
    del b.metadata_props[:]
    a.metadata_props.extend(meta_b)
    b.metadata_props.extend(meta_a)


def _name_taken_twice(g: onnx.GraphProto) -> None:
    """v_proj's MatMul is given k_proj's FX node name: two calls of B share a name (the diff then matches calls by
    its general steps, not in place); and an attribute changes, so that there is a change to show."""
    meta = next(p for p in _node(g, "linear_2").metadata_props if p.key == "pkg.torch.onnx.fx_node")
    meta.value = meta.value.replace("%linear_2 :", "%linear_1 :", 1)
    _attribute(g)


def _rewired_and_attribute(g: onnx.GraphProto) -> None:
    _rewired(g)
    _attribute(g)


@pytest.mark.parametrize("change", [_rewired_and_attribute, _swapped_calls, _made_again_later, _constant_to_input,
                                    _produced_twice_earlier, _weight_to_input, _name_taken_twice])
def test_diff_of_a_changed_copy_is_the_same_either_way(tmp_path: Path, change: Change,
                                                        monkeypatch: pytest.MonkeyPatch):
    """The whole diff of a changed copy, with B cut like A (as ``diff_models`` does: the shortcuts of node
    comparison and wiring apply) and on its own."""
    model = onnx.load(str(LLAMA), load_external_data=False)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change(other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a, b = open_index(tmp_path / "a.onnx"), open_index(tmp_path / "b.onnx")
    followed = diff_models(a, b)
    own = _diff_of_own_cuts(a, b, monkeypatch)
    assert followed.changes  # each change shows
    if change is _swapped_calls:
        rewired = {c.where for c in followed.changes if c.kind == "rewired"}
        assert rewired == {"linear_1", "linear_2", "view_1", "view_2"}
    if change is _weight_to_input:
        assert [c.detail for c in followed.changes if c.kind == "rewired"] == \
            ["input 1: was initializer val_105, now input val_105"]
    assert [(c.kind, c.family, c.where, c.detail, c.sites) for c in followed.changes] == \
        [(c.kind, c.family, c.where, c.detail, c.sites) for c in own.changes]


def _read_instead(g: onnx.GraphProto, output: str, old: str, new: str) -> None:
    node = _node(g, output)
    node.input[list(node.input).index(old)] = new


def test_calls_reading_another_weight_or_input_are_rewired(tmp_path: Path):
    """Wiring to graph inputs and initializers (checked inline for matched calls): a call that reads another
    weight of the same shape, and one that reads another graph input, are reported; nothing else is."""
    model = onnx.load(str(LLAMA), load_external_data=False)
    ids = next(v for v in model.graph.input if v.name == "input_ids")
    extra = model.graph.input.add()
    extra.CopyFrom(ids)
    extra.name = "other_ids"
    other = onnx.ModelProto()
    other.CopyFrom(model)
    _read_instead(other.graph, "linear_1", "val_112", "val_119")  # k_proj reads v_proj's weight
    _read_instead(other.graph, "embedding", "input_ids", "other_ids")
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    d = diff_models(open_index(tmp_path / "a.onnx"), open_index(tmp_path / "b.onnx"))
    assert sorted((c.where, c.detail) for c in d.changes if c.kind == "rewired") == [
        ("embedding", "input 1: was input input_ids, now input other_ids"),
        ("linear_1", "input 1: was initializer val_112, now initializer val_119"),
    ]


GPT2 = ROOT / "tests" / "zoo" / "gpt2.onnx"


def _split_outputs_swapped(g: onnx.GraphProto) -> None:
    """The first layer's Split (a plain node: the optimizer made it, without FX metadata) makes its first two
    values in the other order: the unchanged Reshapes that read them are rewired."""
    split = _node(g, "split_split_0")
    split.output[0], split.output[1] = split.output[1], split.output[0]


def _split_axis(g: onnx.GraphProto) -> None:
    """The Split's axis changes (a plain node differs; what reads it reads the same outputs)."""
    split = _node(g, "split_split_0")
    split.attribute.append(helper.make_attribute("axis", -1))


def _splits_swap_names(g: onnx.GraphProto) -> None:
    """The two layers' Splits swap their node names: plain nodes are matched by name, so each is matched to the
    other's place, and the unchanged Reshapes that read them are rewired."""
    first, second = _node(g, "split_split_0"), _node(g, "split_1_split_0")
    first.name, second.name = second.name, first.name


def _gpt2_weight_to_input(g: onnx.GraphProto) -> None:
    """An attention projection's weight becomes a graph input; a copy under another name is matched to it by
    content, so its reader (an unchanged call) is rewired from the initializer to the input."""
    name = "transformer.h.0.attn.c_proj.weight"
    t = next(t for t in g.initializer if t.name == name)
    g.input.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
    copy = g.initializer.add()
    copy.CopyFrom(t)
    copy.name = name + "_copy"
    g.initializer.remove(t)


@pytest.mark.parametrize("change", [_split_outputs_swapped, _split_axis, _splits_swap_names,
                                    _gpt2_weight_to_input])
def test_diff_of_a_changed_copy_with_plain_nodes_is_the_same_either_way(tmp_path: Path, change: Change,
                                                                        monkeypatch: pytest.MonkeyPatch):
    """As above, on GPT-2, whose Splits are plain nodes: the wiring of unchanged calls that read a plain node's
    output, or a weight, is worked out without comparing the calls' templates, and must come out as on B's own."""
    model = onnx.load(str(GPT2), load_external_data=False)
    other = onnx.ModelProto()
    other.CopyFrom(model)
    change(other.graph)
    onnx.save(model, str(tmp_path / "a.onnx"))
    onnx.save(other, str(tmp_path / "b.onnx"))
    a, b = open_index(tmp_path / "a.onnx"), open_index(tmp_path / "b.onnx")
    followed = diff_models(a, b)
    own = _diff_of_own_cuts(a, b, monkeypatch)
    rewired = sorted((c.where, c.detail) for c in followed.changes if c.kind == "rewired")
    if change is _split_outputs_swapped:
        assert rewired == [("view_3", "input 0: was node node_Split_326 output 1, now node node_Split_326 output 0"),
                           ("view_5", "input 0: was node node_Split_326 output 0, now node node_Split_326 output 1")]
    if change is _gpt2_weight_to_input:
        assert rewired == [("addmm_1", "input 1: was initializer transformer.h.0.attn.c_proj.weight, now input "
                                       "transformer.h.0.attn.c_proj.weight")]
    assert followed.changes
    assert [(c.kind, c.family, c.where, c.detail, c.sites) for c in followed.changes] == \
        [(c.kind, c.family, c.where, c.detail, c.sites) for c in own.changes]
