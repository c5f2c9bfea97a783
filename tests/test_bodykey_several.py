"""The group keys take two quick paths (``bodykey._batch``): one node with distinct named values, inline, and several
such nodes (``bodykey._several``), whose numbering is worked out once per wiring (``bodykey._wiring``). Whatever path
a call takes, its key and names must be what the general steps (``bodykey._group_shape``, every quick path bypassed)
give it: on every export of the zoo and every fixture, and on crafted groups made to hit each condition the quick path
for several nodes must turn away (a value read twice, an output also read inside the group, an empty name, a value
made twice or read before it is made, a small initializer that is a tensor argument, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.body import group_body
from inspector.core.bodies.bodykey import _WIRED, GroupShape, _group_shape, _several, group_keys, group_shapes
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import build_index, open_index
from inspector.core.model.keys import MAIN
from inspector.core.model.loader import load_model
from tests.conftest import ROOT

ZOO_AND_FIXTURES = [*sorted((ROOT / "tests" / "zoo").glob("*.onnx")),
                    *sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))]


def _general(call: AtenCall, maps: GraphMaps) -> GroupShape | None:
    """The general steps alone, as ``group_shape`` takes them for a group none of whose quick paths applies."""
    if call.scope != MAIN or any(len(p) != 1 or not isinstance(p[0], int) for p in call.node_paths):
        return None
    top = sorted(int(p[0]) for p in call.node_paths)
    if any(i in maps.captured for i in top):
        return None
    return _group_shape(call, top, maps)


def _check(calls: list[AtenCall], maps: GraphMaps) -> list[GroupShape | None]:
    expected = [_general(c, maps) for c in calls]
    assert group_shapes(calls, maps) == expected
    assert group_keys(calls, maps) == [s.key if s is not None else None for s in expected]
    return expected


@pytest.mark.parametrize("path", ZOO_AND_FIXTURES, ids=lambda p: p.name)
def test_every_call_is_keyed_as_the_general_steps_key_it(path: Path) -> None:
    index = open_index(path)
    maps = index.graph_maps()
    calls = index.provenance.calls
    _check(calls, maps)
    for call in calls:  # the quick path for several nodes, on its own, where it applies
        if call.scope == MAIN and len(call.node_paths) > 1:
            shape = _several(call, call.node_paths, maps)
            assert shape is None or shape == _general(call, maps), (path.name, call.name)


def test_the_quick_path_takes_every_group_of_several_nodes_of_an_export() -> None:
    """Llama with GQA (dynamo, optimised): its 9 calls of several nodes (5 rsqrt and 2 silu of 2 nodes, 2 attentions of
    11) are all taken by the quick path, agree with the general steps, and share 3 keys, one per target."""
    index = open_index(ROOT / "tests" / "zoo" / "llama_gqa.onnx")
    maps = index.graph_maps()
    several = [c for c in index.provenance.calls if len(c.node_paths) > 1]
    shapes = [_several(c, c.node_paths, maps) for c in several]
    assert [(c.target, len(c.node_paths)) for c in several] == [
        ("aten::rsqrt", 2), ("aten::scaled_dot_product_attention", 11), ("aten::rsqrt", 2), ("aten::silu", 2)] * 2 + [
        ("aten::rsqrt", 2)]
    assert None not in shapes and shapes == [_general(c, maps) for c in several]
    by_target = {c.target: {s.key for d, s in zip(several, shapes) if d.target == c.target and s is not None}
                 for c in several}
    assert {t: len(k) for t, k in by_target.items()} == {
        "aten::rsqrt": 1, "aten::scaled_dot_product_attention": 1, "aten::silu": 1}
    (attention,) = by_target["aten::scaled_dot_product_attention"]
    assert len(attention[1]) == 11 and len(attention[0]) == 4  # type: ignore[index]  # 11 nodes, 4 constants baked


def _node(op: str, inputs: list[str], outputs: list[str], k: int, group: str, args: str = "%x") -> onnx.NodeProto:
    n = helper.make_node(op, inputs, outputs, name=f"n{k}")
    n.metadata_props.add(key="pkg.torch.onnx.fx_node",
                         value=f"%{group} : [num_users=1] = call_function[target=torch.ops.aten.{group}.default]"
                               f"(args = ({args},), kwargs = {{}})")
    return n


GROUPS = [  # (group, [(op, inputs, outputs)], FX arguments)
    ("read_twice", [("Mul", ["x", "x"], ["t1"]), ("Add", ["t1", "t1"], ["t2"])], "%x"),
    ("inside_and_out", [("Relu", ["t2"], ["i1"]), ("Neg", ["i1"], ["i2"])], "%t2"),  # i1 is read by `final` too
    ("empty_in", [("Max", ["i2", "", "y"], ["e1"]), ("Neg", ["e1"], ["e2"])], "%i2"),
    ("empty_out", [("Split", ["e2"], ["", "s2"]), ("Neg", ["s2"], ["s3"])], "%e2"),
    ("made_twice", [("Relu", ["s3"], ["m1"]), ("Neg", ["s3"], ["m1"])], "%s3"),
    ("read_early", [("Add", ["m1", "l2"], ["l1"]), ("Neg", ["m1"], ["l2"])], "%m1"),  # l2 is made after it is read
    ("own_output", [("Add", ["l1", "w"], ["w"]), ("Neg", ["w"], ["w2"])], "%l1"),
    ("baked", [("Add", ["w2", "val_7"], ["b1"]), ("Mul", ["b1", "val_7"], ["b2"])], "%w2"),
    ("tensor_arg", [("Add", ["b2", "val_7"], ["a1"]), ("Neg", ["a1"], ["a2"])], "%b2, %val_7"),
    ("by_fx_name", [("Add", ["a2", "val_9"], ["q1"]), ("Neg", ["q1"], ["q2"])], "%a2, %lifted"),
    ("graph_output", [("Relu", ["q2"], ["o1"]), ("Neg", ["o1"], ["o2"])], "%q2"),  # o1 is a graph output
    ("unread", [("Split", ["o2"], ["u1", "u2"]), ("Neg", ["u1"], ["u3"])], "%o2"),  # u2 is read by nothing
    ("same_a", [("Mul", ["u3", "y"], ["p1"]), ("Add", ["p1", "y"], ["p2"])], "%u3"),
    ("same_b", [("Mul", ["p2", "y"], ["r1"]), ("Add", ["r1", "y"], ["r2"])], "%p2"),
    ("other", [("Mul", ["r2", "y"], ["h1"]), ("Add", ["y", "h1"], ["h2"])], "%r2"),  # the same ops, wired otherwise
]


def _crafted(tmp_path: Path) -> Path:
    nodes = [_node(op, ins, outs, k, group, args)
             for k, (group, (op, ins, outs), args) in enumerate(
                 (g, step, a) for g, steps, a in GROUPS for step in steps)]
    # a group whose nodes are not adjacent (the scan groups them by FX text): sorted by index, as the general steps do
    nodes.append(_node("Relu", ["h2"], ["j1"], 40, "apart"))
    nodes.append(_node("Neg", ["i1"], ["k1"], 41, "final"))
    nodes.append(_node("Add", ["j1", "k1"], ["j2"], 42, "apart"))
    alias = helper.make_tensor_value_info("val_9", TensorProto.FLOAT, [])
    alias.metadata_props.add(key="pkg.torch.onnx.original_node_name", value="lifted")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("x", "y")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("j2", "o1", "u3")],
        [helper.make_tensor(n, TensorProto.FLOAT, [], [0.5]) for n in ("val_7", "val_9")], value_info=[alias])
    path = tmp_path / "groups.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def test_crafted_groups_are_keyed_as_the_general_steps_key_them(tmp_path: Path) -> None:
    index = build_index(load_model(_crafted(tmp_path)))
    maps = index.graph_maps()
    calls = {c.name: c for c in index.provenance.calls}
    assert len(calls) == len(GROUPS) + 2
    names = sorted(calls)
    shapes = _check([calls[n] for n in names], maps)
    expected = {n: s for n, s in zip(names, shapes) if s is not None}
    assert len(expected) == len(names)
    quick = {n for n in names if len(calls[n].node_paths) > 1
             and _several(calls[n], calls[n].node_paths, maps) is not None}
    # turned away: an empty name read or made, a value made twice, one read before the group makes it
    assert quick == {n for n, _s, _a in GROUPS} - {"empty_in", "empty_out", "made_twice", "read_early",
                                                    "own_output"} | {"apart"}
    keys: dict[str, Any] = {n: s.key for n, s in expected.items()}
    assert keys["read_twice"] == ((), (("", "Mul", "", ("in0", "in0"), ("v0",), ()),
                                       ("", "Add", "", ("v0", "v0"), ("v1",), ())), ("v1",))
    # an output read inside the group and outside it is an output of the body
    assert expected["inside_and_out"].outputs == ["i1", "i2"] and keys["inside_and_out"][2] == ("v0", "v1")
    # the x-numbering of the general steps: read before it is made, or by the node that makes it
    assert keys["read_early"][1][0][3] == ("in0", "x1") and keys["own_output"][1][0][3] == ("in0", "x1")
    assert keys["empty_in"][1][0][3] == ("in0", "_", "in1")
    assert keys["empty_out"][1][0][4] == ("_", "v0")
    # a small initializer is baked in (c0) unless the FX node passes it, by its name or an FX name standing for it
    assert (expected["baked"].reads, expected["baked"].constants) == (["w2"], ["val_7"])
    assert keys["baked"][0] == ("val_7",) and keys["baked"][1][1][3] == ("v0", "c0")
    assert (expected["tensor_arg"].reads, expected["tensor_arg"].constants) == (["b2", "val_7"], [])
    assert (expected["by_fx_name"].reads, expected["by_fx_name"].constants) == (["a2", "val_9"], [])
    assert expected["graph_output"].outputs == ["o1", "o2"]
    assert expected["unread"].outputs == ["u3"] and keys["unread"][2] == ("v2",)  # u1 only inside, u2 nowhere
    assert expected["apart"].indices == [2 * len(GROUPS), 2 * len(GROUPS) + 2]
    assert expected["apart"].reads == ["h2", "k1"]
    # equal keys for one wiring under other names, and equal bodies; another wiring of the same ops differs in both
    assert keys["same_a"] == keys["same_b"] != keys["other"]
    prints = {n: fingerprint(group_body(calls[n], maps)).full for n in ("same_a", "same_b", "other")}
    assert prints["same_a"] == prints["same_b"] != prints["other"]


def test_a_group_too_large_for_the_wiring_cache_takes_the_general_steps(tmp_path: Path) -> None:
    """A group of more names than ``_WIRED`` is not worked out as a wiring (a hostile file could fill the cache with
    large ones): the general steps key it, and as they key any other."""
    count = _WIRED // 2 + 1  # each node reads one name and makes one
    nodes = [_node("Neg", ["x" if k == 0 else f"c{k - 1}"], [f"c{k}"], k, "chain") for k in range(count)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(f"c{count - 1}", TensorProto.FLOAT, [2])])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    index = build_index(load_model(path))
    maps = index.graph_maps()
    (call,) = index.provenance.calls
    assert _several(call, call.node_paths, maps) is None
    (shape,) = _check([call], maps)
    assert shape is not None and len(shape.key[1]) == count and shape.key[2] == (f"v{count - 1}",)  # type: ignore[index]
    assert shape.key[1][-1][3] == (f"v{count - 2}",)  # type: ignore[index]
