"""Scenes(index) reads each graph once for all its scenes: the same scenes as build_scene, and 20 aten-call scenes of a
large export cost about what one does (each used to scan the whole graph for readers and value types).

Work is counted, not timed (Python function calls, as in tests/test_scaling.py), so the figure is the same on
every machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.model.index import ModelIndex, open_index
from inspector.core.model.keys import MAIN
from inspector.render.scene import Scenes, build_scene
from tests.builders import count_calls
from tests.conftest import ROOT
from tests.test_scaling import _build

ZOO = ROOT / "tests" / "zoo"


@pytest.fixture(scope="module")
def llama_x64(tmp_path_factory: pytest.TempPathFactory) -> ModelIndex:
    return _build(tmp_path_factory.mktemp("scenes"), 64)


def _scopes(index: ModelIndex) -> list[Any]:
    return [MAIN, *index.functions.functions, *index.provenance.calls]


@pytest.mark.parametrize("name", ["llama_gqa", "cond", "ts_functions", "whisper"])
def test_shared_scenes_equal_fresh_ones(name):
    index = open_index(ZOO / f"{name}.onnx")
    scenes = Scenes(index)
    for scope in _scopes(index):
        for max_nodes in (400, 6):
            assert scenes.scene(scope, max_nodes=max_nodes) == build_scene(index, scope, max_nodes=max_nodes)
    main = build_scene(index, MAIN)
    opened = frozenset(n.id for n in main.nodes if n.expandable)
    assert scenes.scene(MAIN, opened) == build_scene(index, MAIN, opened)


def test_twenty_call_scenes_cost_about_one(llama_x64, monkeypatch):
    # a graph that may hold subgraphs: its pass over the graph makes a Python call per node, which the counts see
    # (a flat graph's pass is all C, and one scene would count only its own nodes)
    monkeypatch.setattr(type(llama_x64), "flat_main", property(lambda _self: False))
    calls = [c for c in llama_x64.provenance.calls if c.scope == MAIN][-20:]  # the last layers': far from the start
    # the index's shared graph maps not made yet, nor the scan's reads of the main graph's nodes (``MainReads``)
    # kept for them: each measurement's maps read the graph
    llama_x64._maps = llama_x64._read = None
    one = count_calls(lambda: Scenes(llama_x64).scene(calls[0]))
    llama_x64._maps = None
    shared = Scenes(llama_x64)
    twenty = count_calls(lambda: [shared.scene(c) for c in calls])
    fresh = count_calls(lambda: [build_scene(llama_x64, c) for c in calls[:2]])
    # one pass over the graph is most of one scene; each of the other 19 adds only its own nodes
    assert (twenty - one) / 19 < 0.1 * one, (one, twenty, fresh)
    # the graph's read counts are the index's (GraphMaps, shared with specialisation): a new Scenes, or the
    # specialiser, does not read the graph again
    assert fresh < 0.6 * one, (one, fresh)
    assert llama_x64.graph_maps() is llama_x64.graph_maps()


def test_a_repeated_value_info_name_takes_the_first_typed_one(tmp_path: Path):
    relu = helper.make_node("Relu", ["x"], ["y"], name="r")
    relu2 = helper.make_node("Relu", ["y"], ["z"], name="r2")
    graph = helper.make_graph([relu, relu2], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    graph.value_info.append(onnx.ValueInfoProto(name="y"))  # no type
    graph.value_info.append(helper.make_tensor_value_info("y", TensorProto.INT64, [3]))
    graph.value_info.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]))
    path = tmp_path / "dup.onnx"
    onnx.save(helper.make_model(graph), str(path))
    index = open_index(path)
    scenes = Scenes(index)
    first, second = scenes.scene(MAIN), scenes.scene(MAIN)  # a pass over the value infos, then a map of them
    for scene in (first, second, build_scene(index, MAIN)):
        assert [(e.source, e.target, e.label) for e in scene.edges] == [
            ("in:x", "n:0", "FLOAT[2]"), ("n:0", "n:1", "INT64[3]"), ("n:1", "out:z", "FLOAT[2]")]
