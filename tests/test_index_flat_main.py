"""ModelIndex.flat_main: whether a pass over the main graph may skip every node's attributes (search, the diff's
cut). A graph wrongly called flat would lose what its subgraphs read and the paths of their nodes."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper

from inspector.core.model.index import open_index

ZOO = Path(__file__).resolve().parent / "zoo"
ZOO_MODELS = sorted(p.name for p in ZOO.glob("*.onnx"))


def _nests(model: onnx.ModelProto) -> bool:
    """Read from the file itself: a main-graph node holds a graph or calls a function of the model."""
    functions = {(f.domain, f.name) for f in model.functions}
    return any((n.domain, n.op_type) in functions
               or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in n.attribute)
               for n in model.graph.node)


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_flat_main_is_no_subgraph_and_no_call(name: str) -> None:
    index = open_index(ZOO / name)
    assert index.flat_main is not _nests(index.proto)


def test_zoo_has_both_kinds() -> None:
    flat = {name: open_index(ZOO / name).flat_main for name in ("cond.onnx", "ts_functions.onnx", "gpt2.onnx")}
    assert flat == {"cond.onnx": False, "ts_functions.onnx": False, "gpt2.onnx": True}


def test_an_op_of_another_domain_is_not_flat(tmp_path: Path) -> None:
    # an op outside the standard domain may be a function the checker cannot see: not taken as flat
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    for domain, expected in (("", True), ("ai.onnx", True), ("com.example", False)):
        node = helper.make_node("Relu", ["x"], ["y"], domain=domain)
        graph = helper.make_graph([node], "g", [x], [y])
        imports = [helper.make_opsetid("", 18)] + ([helper.make_opsetid(domain, 1)] if domain else [])
        path = tmp_path / f"m_{domain or 'default'}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=imports), path)
        assert open_index(path).flat_main is expected, domain
