"""GraphShapes: the static shapes the link rules read, looked up on first use instead of typing every value."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.model.loader import load_model
from inspector.core.specialise.links import GraphShapes, value_shape
from tests.builders import count_calls
from tests.conftest import ZOO


def _vi(name: str, dims: list[int | str] | None) -> onnx.ValueInfoProto:
    if dims is None:
        return helper.make_empty_tensor_value_info(name)
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _graph() -> onnx.GraphProto:
    node = helper.make_node("Relu", ["x"], ["y"])
    return helper.make_graph(
        [node], "g", [_vi("x", [2, 3])], [_vi("y", [2, "S"])],
        value_info=[_vi("y", [2, 3]), _vi("z", None), _vi("w", [5]), _vi("w", None)],
    )


def test_the_last_typed_declaration_wins_and_untyped_ones_never_do() -> None:
    shapes = GraphShapes(_graph())
    assert shapes.get("x") == [2, 3]
    assert shapes.get("y") == [2, None]  # the output's symbolic dim, declared after the value info
    assert shapes.get("w") == [5]  # a later declaration without a type does not erase it
    assert shapes.get("z") is None and "z" not in shapes
    assert shapes.get("missing", "d") == "d"
    assert dict(shapes) == {"x": [2, 3], "y": [2, None], "w": [5]}
    assert len(shapes) == 3


def test_an_inner_graph_types_its_own_values_and_falls_back_to_the_outer_ones() -> None:
    outer = GraphShapes(_graph())
    inner_graph = helper.make_graph([], "branch", [], [_vi("x", [7])], value_info=[_vi("v", [1, 1])])
    inner = GraphShapes(inner_graph, outer)
    assert inner.get("x") == [7]  # typed inside: the branch's own declaration
    assert inner.get("v") == [1, 1]
    assert inner.get("w") == [5]  # not typed inside: the enclosing graph's
    assert outer.get("x") == [2, 3]
    assert dict(inner) == {"x": [7], "y": [2, None], "w": [5], "v": [1, 1]}


def test_shapes_match_the_value_infos_of_a_real_export() -> None:
    graph = load_model(ZOO / "llama_gqa.onnx").proto.graph
    expected: dict[str, list[int | None]] = {}
    for v in (*graph.input, *graph.value_info, *graph.output):
        dims = v.type.tensor_type.shape.dim
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
            expected[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    assert len(expected) > 100
    assert dict(GraphShapes(graph)) == expected


def test_one_look_up_types_one_value_not_the_graph() -> None:
    graph = load_model(ZOO / "llama_gqa.onnx").proto.graph
    name = graph.value_info[len(graph.value_info) // 2].name
    one = count_calls(lambda: GraphShapes(graph).get(name))
    typed_all = count_calls(lambda: [value_shape(v) for v in graph.value_info])
    assert one < typed_all / 5


def test_shapes_read_in_steps_through_a_checkpoint_are_the_same(monkeypatch) -> None:
    """With a checkpoint, the declarations are read a step at a time (the app's analyses pass their job's checkpoint,
    so reading a 100k-node graph's value infos never holds the GIL in one piece); what is read does not change."""
    from inspector.core.specialise import flow

    graph = onnx.load(ZOO / "gpt2.onnx", load_external_data=False).graph
    plain = flow.GraphShapes(graph)
    monkeypatch.setattr(flow, "_STEP", 16)
    calls: list[tuple[int, int]] = []
    stepped = flow.GraphShapes(graph, progress=lambda done, total: calls.append((done, total)))
    total = len(graph.input) + len(graph.value_info) + len(graph.output)
    assert dict(stepped.items()) == dict(plain.items()) and len(plain) > 50
    assert calls[-1] == (total, total) and len(calls) >= total // 16
    assert [d for d, _t in calls] == sorted(d for d, _t in calls)


@pytest.mark.parametrize("name", ["gpt2.onnx", "llama_gqa_noopt.onnx"])
def test_the_values_nothing_reads_made_in_steps_are_the_same(monkeypatch, name: str) -> None:
    """``GraphMaps.unread`` is made on first use from every node's outputs and reads: with a checkpoint, in steps
    (made at once, the set of a 100k-node graph held the GIL for 15-30 ms while the app typed); the set is the one
    the definition gives, read from the file."""
    from inspector.core.model import graph as graph_module

    graph = onnx.load(ZOO / name, load_external_data=False).graph
    # an exporter leaves no output unread: 40 nodes whose outputs nothing reads are added, spread over the graph
    for k in range(40):
        graph.node.insert(k * len(graph.node) // 40, onnx.helper.make_node("Identity", [graph.input[0].name],
                                                                            [f"dead_{k}"]))
    read = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    truth = {o for n in graph.node for o in n.output if o and o not in read}
    plain = graph_module.GraphMaps(graph).unread
    monkeypatch.setattr(graph_module, "_STEP", 16)
    calls: list[tuple[int, int]] = []
    stepped = graph_module.GraphMaps(graph, progress=lambda done, total: calls.append((done, total))).unread
    assert stepped == plain == truth == {f"dead_{k}" for k in range(40)}
    assert len(calls) >= 2 * len(graph.node) // 16
