"""The specialiser keys a family's calls in one loop (``bodykey.group_keys``, the common one-node group inline) and
counts each overload's calls per body while it binds them (``FamilyAnalysis.bodies_counted``): both must give what
the call-by-call steps give, on every export of the zoo and every fixture."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.bodykey import _group_shape, group_key, group_keys, group_shape, group_shapes
from inspector.core.model.index import build_index, open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.loader import load_model
from inspector.core.specialise.specialiser import Specialiser
from tests.conftest import ROOT

ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_group_keys_are_the_keys_of_each_call(path: Path) -> None:
    index = open_index(path)
    maps = index.graph_maps()
    for family in index.families:
        for ov in family.overloads:
            calls = ov.aten_calls
            expected = [group_key(c, maps) if c.scope == MAIN else None for c in calls]
            assert group_keys(calls, maps) == expected, (path.name, ov.label)


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_group_shapes_are_the_shape_of_each_call(path: Path) -> None:
    """Fold takes every call's shape from one loop (``group_shapes``): names and key as ``group_shape`` makes them."""
    index = open_index(path)
    maps = index.graph_maps()
    calls = index.provenance.calls
    expected = [group_shape(c, maps) if c.scope == MAIN else None for c in calls]
    assert group_shapes(calls, maps) == expected
    assert [s.key if s is not None else None for s in expected] == group_keys(calls, maps)


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_bodies_counted_while_binding_equal_the_counts_looked_up(path: Path) -> None:
    index = open_index(path)
    specialiser = Specialiser(index)
    for family in index.families:
        analysis = specialiser.analyse(family)
        for ov in family.overloads:
            members = [ov.function] if ov.function is not None else ov.aten_calls
            counted = analysis.bodies_counted(members)  # as the summary asks: the overload's own list
            looked_up = analysis.bodies_counted(list(members))  # another list: each member looked up
            assert [(id(b), n) for b, n in counted] == [(id(b), n) for b, n in looked_up], (path.name, ov.label)
            assert sum(n for _b, n in counted) == sum(
                1 for m in members for b in analysis.bodies if any(x is m for x in b.members))


def test_a_list_changed_after_the_analysis_is_looked_up_again() -> None:
    path = ROOT / "tests" / "zoo" / "llama_gqa.onnx"
    index = open_index(path)
    family = next(f for f in index.families if f.kind == "aten_call" and f.call_count > 2)
    analysis = Specialiser(index).analyse(family)
    calls = family.overloads[0].aten_calls
    before = sum(n for _b, n in analysis.bodies_counted(calls))
    dropped = calls.pop()
    try:
        assert sum(n for _b, n in analysis.bodies_counted(calls)) == before - 1
    finally:
        calls.append(dropped)


def test_the_inline_keys_of_one_node_groups_reading_small_initializers(tmp_path: Path) -> None:
    """``group_keys`` keys one-node groups that read small initializers inline (baked in unless the FX text may name
    one, never a parameter) and tests their outputs against ``GraphMaps.unread``: each key must be what the general
    steps give, whichever condition sent it where."""
    def node(op: str, inputs: list[str], outputs: list[str], k: int, args: str = "%x") -> onnx.NodeProto:
        n = helper.make_node(op, inputs, outputs, name=f"n{k}")
        n.metadata_props.add(key="pkg.torch.onnx.fx_node",
                             value=f"%c{k} : [num_users=1] = call_function[target=torch.ops.aten.{op.lower()}.default]"
                                   f"(args = ({args},))")
        return n

    nodes = [
        node("Reshape", ["x", "k"], ["a"], 0),                     # baked in: k is c0
        node("Reshape", ["k", "a"], ["b"], 1),                     # the constant first: c0, then in0
        node("Add", ["b", "k"], ["d"], 2, args="%b, %k"),          # the FX text names k: the general steps decide
        node("Add", ["d", "kk"], ["e"], 3, args="%d, %lifted"),    # named by the FX name mapped to it
        node("Add", ["e", "p"], ["f"], 4),                         # a small parameter: never baked
        node("Split", ["f", "k"], ["g", "h"], 5),                  # baked, and an output nobody reads (h)
        node("Mul", ["g", "k"], ["out"], 6),                       # baked, making a graph output
        node("Add", ["g", "x"], ["z"], 7),                         # read by nothing
    ]
    kk_info = helper.make_tensor_value_info("kk", TensorProto.FLOAT, [])
    kk_info.metadata_props.add(key="pkg.torch.onnx.original_node_name", value="lifted")
    p_info = helper.make_tensor_value_info("p", TensorProto.FLOAT, [])
    p_info.metadata_props.add(key="pkg.torch.export.graph_signature.InputSpec.kind", value="PARAMETER")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), p_info],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])],
        [helper.make_tensor(n, TensorProto.FLOAT, [], [0.5]) for n in ("k", "kk", "p")], value_info=[kk_info])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    index = build_index(load_model(path))
    maps = index.graph_maps()
    calls = sorted(index.provenance.calls, key=lambda c: c.name)
    keys = group_keys(calls, maps)
    general = [_group_shape(c, [int(c.node_paths[0][0])], maps).key for c in calls]
    assert keys == general == [group_key(c, maps) for c in calls]
    assert group_shapes(calls, maps) == [group_shape(c, maps) for c in calls]
    assert maps.unread == {"h", "z"}
    constants = [key[0] for key in keys]  # type: ignore[index]
    assert constants == [("k",), ("k",), (), (), (), ("k",), ("k",), ()]
    reads = [key[1][0][3] for key in keys]  # type: ignore[index]
    assert reads[:2] == [("in0", "c0"), ("c0", "in0")]
    assert [key[2] for key in keys] == [("v0",)] * 5 + [("v0",), ("v0",), ()]  # type: ignore[index]
