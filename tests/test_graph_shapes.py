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


def _declared(graph: onnx.GraphProto) -> list[str]:
    return [v.name for v in (*graph.input, *graph.value_info, *graph.output)]


@pytest.mark.parametrize("name", ["llama_gqa.onnx", "cond.onnx", "whisper.onnx"])
def test_the_names_declared_are_read_once_and_shared(monkeypatch, name: str) -> None:
    """The specialiser's maps keep the names the main graph declares (read in the pass over the value infos they make
    anyway); its shapes and the scenes' value types look names up in those, and read none again."""
    from inspector.core.model import graph as graph_module
    from inspector.core.model.index import open_index
    from inspector.core.specialise import flow
    from inspector.core.specialise.specialiser import Specialiser

    graph = onnx.load(ZOO / name, load_external_data=False).graph
    assert graph_module.GraphMaps(graph).declared is None
    assert graph_module.GraphMaps(graph, declarations=True).declared == _declared(graph)
    assert graph_module.declared_names(graph) == _declared(graph)

    fresh = open_index(ZOO / name)
    expected = dict(GraphShapes(fresh.proto.graph))
    assert fresh.declared_names() == _declared(fresh.proto.graph)  # no maps yet: a pass of its own

    index = open_index(ZOO / name)
    assert index._maps is None  # (the graph maps of an export whose every node has its metadata: on first use)
    specialiser = Specialiser(index)
    maps = specialiser.maps
    assert maps.declared == _declared(index.proto.graph) and index.declared_names() is maps.declared
    monkeypatch.setattr(flow, "declared_names", None)  # called, it would fail: the shapes take the maps' names
    assert dict(specialiser.shapes) == expected and len(expected) > 10


def test_maps_made_without_the_names_leave_them_to_a_pass_of_their_own() -> None:
    """An export with nodes lacking metadata has its maps made while it is indexed (for the template matcher),
    without the names: the shapes then read them once, by a pass of their own."""
    from inspector.core.model.index import open_index
    from inspector.core.specialise.specialiser import Specialiser

    index = open_index(ZOO / "gpt2.onnx")
    assert index._maps is not None and index._maps.declared is None
    specialiser = Specialiser(index)
    assert dict(specialiser.shapes) == dict(GraphShapes(index.proto.graph))
    assert index.declared_names() == _declared(index.proto.graph)
    assert index.declared_names() is index.declared_names()


def test_shapes_from_names_read_already_are_the_same_in_steps(monkeypatch) -> None:
    from inspector.core.specialise import flow

    graph = _graph()
    names = _declared(graph)
    monkeypatch.setattr(flow, "_STEP", 2)
    calls: list[tuple[int, int]] = []
    given = GraphShapes(graph, progress=lambda done, total: calls.append((done, total)), names=lambda: names)
    assert dict(given) == dict(GraphShapes(graph)) == {"x": [2, 3], "y": [2, None], "w": [5]}
    assert calls == [(2, 6), (4, 6), (6, 6)]
    # names that are not this graph's declarations (another graph's) are not taken: the graph's own are read
    other = GraphShapes(graph, names=lambda: ["x", "y"])
    assert dict(other) == {"x": [2, 3], "y": [2, None], "w": [5]}


def test_scene_types_from_names_read_already_are_the_first_typed_declaration() -> None:
    """The scenes' value types: the first declaration of a name with a type, among inputs, outputs and value infos
    in turn, whether the names come from the index or are read by the scenes' own pass."""
    from inspector.core.model.values import type_text
    from inspector.render.graph_facts import GraphFacts

    graph = _graph()
    in_turn = (graph.input, graph.output, graph.value_info)
    names = [v.name for seq in in_turn for v in seq]
    shared = GraphFacts(graph.node, [], lambda: in_turn, None, {}, names=lambda: names)
    own = GraphFacts(graph.node, [], lambda: in_turn, None, {})
    wanted = {"x", "y", "z", "w", "missing"}
    expected = {"x": type_text(graph.input[0].type), "y": type_text(graph.output[0].type),
                "w": type_text(graph.value_info[2].type)}
    assert shared.types(wanted) == own.types(wanted) == expected
    assert expected["y"] != type_text(graph.value_info[0].type)  # the output's symbolic dim, declared first here
    assert shared.types({"y"}) == {"y": expected["y"]}
