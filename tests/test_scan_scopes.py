"""The scan reads each call's name_scopes while its first node is at hand (``open_index(modules=True)``, the
default); the module tree built from those texts must be the tree built by reading the nodes, on every real export
of the zoo and on hand-made nodes whose metadata is laid out differently from node to node."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper

from inspector.core.model.calls import NAME_SCOPES
from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import load_model
from inspector.core.model.module_tree import ModuleNode
from tests.conftest import ROOT

ZOO = sorted((ROOT / "tests" / "zoo").glob("*.onnx"))


def _tree(root: ModuleNode) -> list[tuple[str, str, tuple[int, ...], int]]:
    out, stack = [], [root]
    while stack:
        m = stack.pop()
        out.append((m.path, m.class_name, tuple(m.calls), m.node_count))
        stack.extend(m.children.values())
    return sorted(out)


@pytest.mark.parametrize("path", ZOO, ids=lambda p: p.name)
def test_the_module_tree_from_the_scan_is_the_tree_read_from_the_nodes(path: Path) -> None:
    read = open_index(path)
    unread = open_index(path, modules=False)
    for call in read.provenance.calls:  # the scan's text is the first node's own entry
        entries = [p.value for p in call.first_node.metadata_props if p.key == NAME_SCOPES]
        assert call.scopes_text == (entries[0] if entries else "")
    assert all(call.scopes_text is None for call in unread.provenance.calls)
    assert _tree(read.provenance.module_root) == _tree(unread.provenance.module_root)
    assert [c.module_path for c in read.provenance.calls] == [c.module_path for c in unread.provenance.calls]


def _node(i: int, props: list[tuple[str, str]]) -> onnx.NodeProto:
    node = helper.make_node("Relu", [f"x{i}"], [f"x{i + 1}"], name=f"n{i}")
    for k, v in props:
        node.metadata_props.add(key=k, value=v)
    return node


def test_name_scopes_found_wherever_a_node_keeps_it(tmp_path: Path) -> None:
    fx = "pkg.torch.onnx.fx_node"
    cls = "pkg.torch.onnx.class_hierarchy"
    layouts = [  # the same keys in another order, an extra entry, none at all
        [(fx, "%relu : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%x,))"),
         (NAME_SCOPES, "['', 'a', 'relu']"), (cls, "['M', 'A', 'relu']")],
        [(fx, "%relu_1 : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%relu,))"),
         (cls, "['M', 'B', 'relu']"), (NAME_SCOPES, "['', 'b', 'relu_1']")],
        [(fx, "%relu_2 : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%relu_1,))"),
         (NAME_SCOPES, "['', 'b', 'relu_2']"), (cls, "['M', 'B', 'relu']")],
        [("other", "x"), (NAME_SCOPES, "['', 'a', 'a.c', 'relu_3']"), (cls, "['M', 'A', 'C', 'relu']"),
         (fx, "%relu_3 : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%relu_2,))")],
        [(fx, "%relu_4 : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%relu_3,))")],
    ]
    nodes = [_node(i, props) for i, props in enumerate(layouts)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("x5", onnx.TensorProto.FLOAT, [1])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), path)
    index = build_index(load_model(path))
    calls = index.provenance.calls
    assert [c.scopes_text for c in calls] == ["['', 'a', 'relu']", "['', 'b', 'relu_1']", "['', 'b', 'relu_2']",
                                              "['', 'a', 'a.c', 'relu_3']", ""]
    assert [c.module_path for c in calls] == ["a", "b", "b", "a.c", ""]
    assert _tree(index.provenance.module_root) == _tree(open_index(path, modules=False).provenance.module_root)
