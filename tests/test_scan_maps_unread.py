"""``GraphMaps.unread`` keeps only the outputs nothing reads, in one pass over the nodes' outputs (a copy of every read
name, taken out again, was a second pass): on real exports with a branch (torch.cond) and with local functions, the
set is the one the definitions give, with and without a checkpoint, and a value read only inside a branch is read."""

from __future__ import annotations

import onnx
import pytest
from onnx import helper

from inspector.core.model import graph as graph_module
from tests.conftest import ZOO


def _with_dead_nodes(name: str) -> tuple[onnx.GraphProto, set[str]]:
    """The zoo export's main graph with 7 nodes whose outputs nothing reads, spread over it, and (in an export with a
    branch) one node whose output only a node inside the branch reads; the names nothing reads."""
    graph = onnx.load(ZOO / name, load_external_data=False).graph
    source = graph.input[0].name
    for k in range(7):
        graph.node.insert(k * len(graph.node) // 7, helper.make_node("Identity", [source], [f"dead_{k}"]))
    branch = next((n for n in graph.node if n.op_type == "If"), None)
    if branch is not None:
        graph.node.insert(list(graph.node).index(branch), helper.make_node("Neg", [source], ["read_in_branch"]))
        then = next(a.g for a in branch.attribute if a.name == "then_branch")
        then.node.append(helper.make_node("Identity", ["read_in_branch"], ["inner_unread"]))
    return graph, {f"dead_{k}" for k in range(7)}


def _truth(graph: onnx.GraphProto) -> set[str]:
    """Outputs of main-graph nodes that no node input reads at any depth and that are not graph outputs (the exports
    name every value once, so a name read inside a branch is the outer one)."""
    read = {o.name for o in graph.output}
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.node:
            read.update(n.input)
            stack.extend(a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
            stack.extend(a.graphs for a in n.attribute if a.type == onnx.AttributeProto.GRAPHS)
    return {o for n in graph.node for o in n.output if o and o not in read}


@pytest.mark.parametrize("name", ["cond.onnx", "ts_functions.onnx", "llama_gqa.onnx"])
def test_unread_is_what_the_definitions_give_with_and_without_a_checkpoint(monkeypatch, name: str) -> None:
    graph, dead = _with_dead_nodes(name)
    assert _truth(graph) == dead
    plain = graph_module.GraphMaps(graph).unread
    monkeypatch.setattr(graph_module, "_STEP", 3)
    calls: list[tuple[int, int]] = []
    maps = graph_module.GraphMaps(graph, progress=lambda done, total: calls.append((done, total)))
    made_by_maps = len(calls)
    stepped = maps.unread
    assert stepped == plain == dead
    assert "read_in_branch" not in plain and "inner_unread" not in plain
    # the outputs' pass of ``unread`` ran 3 nodes at a time, its checkpoint called between the steps
    steps = calls[made_by_maps:]
    assert len(steps) == -(-len(graph.node) // 3)
    done = [d for d, _t in steps]
    assert done == sorted(set(done)) and {t for _d, t in steps} == {len(graph.node)}
