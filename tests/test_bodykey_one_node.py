"""Most aten calls are one node, and their group key is taken by a shortcut (``bodykey._one_node``, with a quicker
path still for distinct named inputs and outputs, none baked in). Whatever path it takes, a one-node group must get
what the general steps for several nodes (``bodykey._group_shape``) give it: the key, the reads, the constants and
the outputs; on every export of the zoo and on nodes made to hit each condition of the quick path."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.bodykey import _group_shape, _one_node, group_key
from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import load_model
from tests.conftest import ROOT

ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


def _same_as_general(path: Path) -> int:
    index = open_index(path)
    maps = index.graph_maps()
    compared = 0
    for call in index.provenance.calls:
        paths = call.node_paths
        if len(paths) != 1 or len(paths[0]) != 1 or not isinstance(paths[0][0], int):
            continue
        i = paths[0][0]
        if i in maps.captured or len(maps.inputs[i]) > 8:
            continue
        general = _group_shape(call, [i], maps)
        assert _one_node(call, i, maps) == (general.key, general.indices, general.reads, general.constants,
                                            general.outputs), (path.name, call.name)
        assert group_key(call, maps) == general.key
        compared += 1
    return compared


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_one_node_groups_are_keyed_as_the_general_steps_key_them(path: Path) -> None:
    _same_as_general(path)


def test_every_condition_of_the_quick_path(tmp_path: Path) -> None:
    def node(op: str, inputs: list[str], outputs: list[str], k: int) -> onnx.NodeProto:
        n = helper.make_node(op, inputs, outputs, name=f"n{k}")
        n.metadata_props.add(key="pkg.torch.onnx.fx_node",
                             value=f"%c{k} : [num_users=1] = call_function[target=torch.ops.aten.{op.lower()}.default]"
                                   "(args = (%x,))")
        return n

    nodes = [
        node("Add", ["x", "y"], ["a"], 0),          # quick: distinct named inputs, one output read later
        node("Add", ["a", "a"], ["b"], 1),          # the same input twice
        node("Max", ["b", "", "x"], ["c"], 2),      # an omitted input
        node("Add", ["c", "k"], ["d"], 3),          # a small initializer: baked in
        node("Split", ["d"], ["e", "", "f"], 4),    # an omitted output
        node("Split", ["e"], ["g", "h"], 5),        # an output nobody reads (h)
        node("Add", ["g", "f"], ["out"], 6),        # a graph output
        node("Split", ["f"], ["u", "u"], 7),        # the same output twice (hostile)
        node("Add", ["u", "w"], ["w"], 8),          # reads what it makes itself (hostile)
        node("Identity", ["u"], ["out2"], 9),       # read by nothing but a graph output
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("x", "y")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("out", "out2", "w")],
        [helper.make_tensor("k", TensorProto.FLOAT, [], [0.5])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    assert _same_as_general(path) == len(nodes)
    index = build_index(load_model(path))
    maps = index.graph_maps()
    keys = {c.name: _one_node(c, c.node_paths[0][0], maps) for c in index.provenance.calls}  # type: ignore[arg-type]
    assert keys["c0"][0][1][0][3:5] == (("in0", "in1"), ("v0",)) and keys["c0"][0][2] == ("v0",)
    assert keys["c3"][0][0] == ("k",) and keys["c3"][3] == ["k"]  # baked in
    assert keys["c4"][0][1][0][4] == ("v0", "_", "v1")
    assert keys["c5"][4] == ["g"] and keys["c5"][0][2] == ("v0",)  # h is read by nobody
