"""What made the recognised calls cheaper changes nothing they say: a recognised call reads its first node from the
graph when asked (``recognise.RecognisedCall``), which is the graph's node object itself, with that node's own
metadata; and a node's attributes, read once per number of (op, arity, attribute bytes) instead of once per node
(``recognise_attributes.NodeAttributes``), are each node's own, on every stripped dynamo export of the zoo and on
Constant nodes, whose number holds their attributes' names alone.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.aten.templates import Template, load_templates
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.recognise import Matcher, onnx_opset, recognised_calls
from inspector.core.model.recognise_attributes import NodeAttributes
from inspector.core.model.recognise_call import RecognisedCall
from inspector.core.model.recognise_constants import CONSTANT
from inspector.core.model.recognise_nodes import node_keys
from tests.conftest import ROOT
from tests.stripping import strip, stripped_model, zoo_dynamo

ZOO = ROOT / "tests" / "zoo"


def _stripped(path: Path) -> onnx.ModelProto:
    return stripped_model(path)


def test_a_recognised_call_reads_its_first_node_from_the_graph(tmp_path: Path) -> None:
    """The stripped Llama export, with a note of its own left on one node: every recognised call's first node is the
    graph's node at its first path (the same object while it is held), and the call's metadata is that node's."""
    model = _stripped(ZOO / "llama_gqa.onnx")
    graph = model.graph
    calls = recognised_calls(model, [], GraphMaps(graph, flat=True))
    # (102 before the catalogue had add.Tensor of two tensors: the 8 residual Adds)
    assert len(calls) == 110 and all(type(c) is RecognisedCall and c.scope == MAIN for c in calls)
    for call in calls:
        node = call.first_node
        assert node is graph.node[call.node_paths[0][0]]
        assert node is call.first_node
    target = calls[5]
    first = graph.node[target.node_paths[0][0]]
    first.metadata_props.add(key="reviewer.note", value="<b>kept</b>")
    path = tmp_path / "noted.onnx"
    onnx.save(model, str(path))
    index = open_index(path)
    found = [c for c in index.provenance.calls if c.recognised]
    assert len(found) == len(calls)
    nodes = index.proto.graph.node
    for call in found:  # (the exporter's namespace is left by the strip: metadata read from the node, not made up)
        node = nodes[call.node_paths[0][0]]
        assert call.metadata == {p.key: p.value for p in node.metadata_props} and "namespace" in call.metadata
    noted = [c for c in found if "reviewer.note" in c.metadata]
    assert [c.node_paths for c in noted] == [target.node_paths] and noted[0].metadata["reviewer.note"] == "<b>kept</b>"


def test_a_first_node_given_to_a_recognised_call_is_the_one_it_holds() -> None:
    model = _stripped(ZOO / "llama_gqa.onnx")
    calls = recognised_calls(model, [], GraphMaps(model.graph, flat=True))
    call, other = calls[0], model.graph.node[len(model.graph.node) - 1]
    assert call.first_node is not other
    call.first_node = other
    assert call.first_node is other


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.stem)
def test_attributes_read_once_per_number_are_each_nodes_own(path: Path) -> None:
    model = _stripped(path)
    graph, opset = model.graph, onnx_opset(model)
    keys, _kinds, full = node_keys(graph, GraphMaps(graph, flat=True), opset)
    shared, own = NodeAttributes(graph, opset, full, keys), NodeAttributes(graph, opset)
    assert [shared.of(g) for g in range(len(graph.node))] == [own.of(g) for g in range(len(graph.node))]
    assert len({id(shared.of(g)) for g in range(len(graph.node))}) < len(graph.node)  # (shared where alike)


def test_constant_nodes_of_one_number_keep_their_own_values() -> None:
    """Two Constant nodes with one attribute name and arity are one number (their values are read as constants, not
    as a key), yet each has its own value."""
    nodes = [helper.make_node("Constant", [], ["a"], value=helper.make_tensor("a", TensorProto.INT64, [1], [3])),
             helper.make_node("Constant", [], ["b"], value=helper.make_tensor("b", TensorProto.INT64, [1], [7])),
             helper.make_node("Add", ["a", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.INT64, [1])])
    keys, _kinds, full = node_keys(graph, GraphMaps(graph, flat=True), 18)
    assert full[0] == full[1] and keys[0][1] == CONSTANT
    attributes = NodeAttributes(graph, 18, full, keys)
    assert attributes.of(0) != attributes.of(1)
    assert attributes.of(0) == NodeAttributes(graph, 18).of(0) and attributes.of(1) == NodeAttributes(graph, 18).of(1)


def test_on_the_llama_replica_every_multi_node_template_tried_fits() -> None:
    """The stripped 8x Llama replica (``benchmarks/replicate.py``, 64 layers): the nodes feeding a multi-node
    template's last node are judged with their constants before a try (``Matcher._feeders``), so each try there is a
    call found (add.Tensor with alpha, tried at each rotary Add whose Mul reads a cos table, no longer is)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from replicate import replicate

    model = replicate(onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False), 64)
    strip(model)
    tried: list[str] = []

    class Trying(Matcher):
        def _match(self, t: Template, anchor: int, least: int = 2, reuse: bool = False) -> Any:
            if least > 1:
                tried.append(t.name)
            return super()._match(t, anchor, least, reuse)

    found = Trying(model.graph, GraphMaps(model.graph), set(), load_templates(), onnx_opset(model)).run()
    multi = [r for r in found if len(r.nodes) > 1]
    assert len(tried) == len(multi) > 0
    assert "aten::add.Tensor#2" not in tried and sorted(set(tried)) == sorted({r.templates[0] for r in multi})
