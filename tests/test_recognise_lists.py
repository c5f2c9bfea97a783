"""A list template (one node reading each tensor of a ``Tensor[]`` parameter once: cat's Concat) at the lengths a graph
has: crafted graphs, as a hostile file would make them. Each length is one template made once, however many nodes have
it; a length the catalogue's names cannot cite (over four digits) is still a call, its tensors unbound rather than
guessed; and the work stays linear in the graph's operands."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from inspector.core.aten.templates import load_templates, template_named
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise import onnx_opset, recognise
from inspector.core.model.recognise_nodes import node_keys
from inspector.core.model.recognise_templates import list_lengths


def _concats(lengths: list[int]) -> onnx.ModelProto:
    """One graph input per operand the longest Concat reads; a Concat of each length, along axis 1, read by a Relu
    so that none is the graph's output."""
    width = max(lengths)
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [2, 3]) for k in range(width)]
    nodes, outputs = [], []
    for j, n in enumerate(lengths):
        nodes.append(helper.make_node("Concat", [f"x{k}" for k in range(n)], [f"c{j}"], axis=1))
        nodes.append(helper.make_node("Relu", [f"c{j}"], [f"r{j}"]))
        outputs.append(helper.make_tensor_value_info(f"r{j}", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, producer_name="pytorch", ir_version=10, opset_imports=[helper.make_opsetid("", 18)])


def _recognised(model: onnx.ModelProto) -> list:
    return recognise(model.graph, GraphMaps(model.graph, flat=True), set(), load_templates(), onnx_opset(model))


def test_each_length_is_one_template_and_every_concat_a_cat() -> None:
    lengths = [1, 2, 3, 3, 4, 7, 7, 7, 12]
    model = _concats(lengths)
    maps = GraphMaps(model.graph, flat=True)
    keys = set(node_keys(model.graph, maps, onnx_opset(model))[0])
    extra = list_lengths(load_templates(), keys, onnx_opset(model))
    # cat and its public aliases (concat, concatenate) at each length other than the catalogue's two
    assert sorted({int(t.name.rsplit("[", 1)[1][:-1]) for t in extra}) == [1, 3, 4, 7, 12]
    assert len(extra) == len({t.name for t in extra})
    cats = [r for r in _recognised(model) if r.candidates == ("aten::cat",)]
    assert [len(model.graph.node[r.nodes[0]].input) for r in cats] == lengths
    assert [r.templates for r in cats][2] == ("aten::cat#0[3]",)
    assert [r.arguments for r in cats][2] == (("dim", 1),)
    named = template_named("aten::cat#0[7]")
    assert named is not None and len(named.nodes[0].inputs) == 7 and named.tensors == ("tensors",) * 7


def test_a_length_no_name_can_cite_is_a_call_with_its_tensors_unbound() -> None:
    model = _concats([12_000])
    cats = [r for r in _recognised(model) if r.candidates == ("aten::cat",)]
    assert len(cats) == 1 and cats[0].templates == ("aten::cat#0[12000]",)
    assert template_named("aten::cat#0[12000]") is None  # (the name is cited, never read back into a template)
    assert template_named("aten::cat#0[0]") is None and template_named("aten::add.Tensor#0[3]") is None
