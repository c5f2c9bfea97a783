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


@pytest.mark.parametrize("name", ["llama_gqa.onnx", "gpt2.onnx", "cond.onnx"])
def test_graph_maps_built_with_progress_are_the_maps_built_in_one_go(name: str, monkeypatch: pytest.MonkeyPatch):
    """``GraphMaps(progress=...)`` reads the nodes ``_STEP`` at a time (2 here), reporting each step, and makes the same
    inputs, outputs, producers, read counts (in the same order) and parameters; what ``progress`` raises stops it."""
    from inspector.core.model import graph as graph_module
    from inspector.core.model.graph import GraphMaps

    monkeypatch.setattr(graph_module, "_STEP", 2)
    ix = open_index(ZOO / name)
    g = ix.proto.graph
    n = len(g.node)
    seen: list[tuple[int, int]] = []
    stepped = GraphMaps(g, flat=ix.flat_main, progress=lambda done, total: seen.append((done, total)))
    whole = GraphMaps(g, flat=ix.flat_main)
    assert n > 2 * 2 and seen == [(min(k + 2, n), n) for k in range(0, n, 2)]
    assert stepped.inputs == whole.inputs and stepped.outputs == whole.outputs
    assert list(stepped.read_count.items()) == list(whole.read_count.items())
    assert stepped.producer == whole.producer and stepped.captured == whole.captured
    assert stepped.parameters == whole.parameters and stepped.onnx_name == whole.onnx_name
    assert ix.graph_maps(progress=lambda done, total: None).read_count == whole.read_count

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        GraphMaps(g, progress=stop)
