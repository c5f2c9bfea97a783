"""The template matcher keys each node from what the index's scan read of it (``ScanResult.bare``) instead of reading
the node again, and that changes nothing it finds: on every stripped dynamo export of the zoo the scan holds one entry
per main-graph node, the keys made from it are the keys read from the nodes, and the recognised calls are the same;
a Constant's entry holds its attributes' names, never its tensor; a graph with one node of an aten call gets no list it
could take for complete, and is keyed from its nodes as before. The index asks for the list only of a model the
matcher looks at (``recognition_applies``): a TorchScript export or another producer's model pays nothing for it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.model.functions import scan_model
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import recognition_applies
from inspector.core.model.recognise import onnx_opset, recognised_calls
from inspector.core.model.recognise_nodes import node_keys
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from strip_metadata import strip, zoo_dynamo

FX = "pkg.torch.onnx.fx_node"


def _calls(model: onnx.ModelProto, bare: list[object] | tuple[()]) -> list[tuple[object, ...]]:
    maps = GraphMaps(model.graph, flat=True)
    return [(c.fx_text, c.name, c.target, c.node_paths, c.recognised, c.candidates)
            for c in recognised_calls(model, [], maps, bare)]


@pytest.mark.parametrize("path", zoo_dynamo(), ids=lambda p: p.stem)
def test_the_scan_keys_every_node_of_a_stripped_export_as_the_matcher_would(path: Path) -> None:
    model = onnx.load(str(path), load_external_data=False)
    assert scan_model(model, bare=True).bare == []  # (every node of the export is an aten call's)
    strip(model)
    assert scan_model(model).bare == []  # (not asked for)
    bare = scan_model(model, bare=True).bare
    graph = model.graph
    assert len(bare) == len(graph.node)
    for entry, node in zip(bare, graph.node):
        op = node.op_type if not node.domain else (node.domain, node.op_type)
        assert entry == op if not node.attribute else entry[0] == op
    maps = GraphMaps(graph, flat=True)
    read = node_keys(graph, maps, onnx_opset(model))
    assert node_keys(graph, maps, onnx_opset(model), bare) == read
    found = _calls(model, bare)
    assert found == _calls(model, ()) and len(found) > 0


def _model(nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    return helper.make_model(graph, producer_name="pytorch", ir_version=10,
                             opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)])


def test_a_constant_is_keyed_by_its_attribute_names_and_a_node_of_a_call_ends_the_list() -> None:
    big = helper.make_tensor("big", TensorProto.FLOAT, [64, 64], [0.5] * 4096)
    nodes = [helper.make_node("Constant", [], ["c"], value=big),
             helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Relu", ["t"], ["r"], domain="custom"),
             helper.make_node("MatMul", ["r", "c"], ["z"])]
    model = _model(nodes)
    bare = scan_model(model, bare=True).bare
    assert bare[0] == ("Constant", ("value",)) and bare[2] == ("custom", "Relu") and bare[3] == "MatMul"
    assert bare[1] == ("Transpose", (nodes[1].attribute[0].SerializeToString(),))
    maps = GraphMaps(model.graph, flat=True)
    keys = node_keys(model.graph, maps, onnx_opset(model))
    assert node_keys(model.graph, maps, onnx_opset(model), bare) == keys
    assert keys[0][0][:2] == ("", "Constant") and keys[2] == [0, 1, 2, 3]  # (four distinct numbers)

    # the third node an aten call's: the scan stops keying there, and the matcher reads every node itself
    nodes[2].metadata_props.add(key=FX, value="%relu : [num_users=1] = call_function[target=torch.ops.aten.relu."
                                              "default](args = (%t,), kwargs = {})")
    model = _model(nodes)
    bare = scan_model(model, bare=True).bare
    assert len(bare) == 2
    assert node_keys(model.graph, GraphMaps(model.graph, flat=True), onnx_opset(model), bare) == keys


def test_only_a_model_the_matcher_looks_at_has_its_nodes_keyed() -> None:
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Relu", ["t"], ["z"])]
    model = _model(nodes)
    assert recognition_applies(model)
    torchscript = _model(nodes)
    torchscript.ir_version = 8
    other = _model(nodes)
    other.producer_name = "another"
    assert not recognition_applies(torchscript) and not recognition_applies(other)
    for plain in (torchscript, other):
        assert scan_model(plain, bare=recognition_applies(plain)).bare == []
    assert len(scan_model(model, bare=recognition_applies(model)).bare) == 2
