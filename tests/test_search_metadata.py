"""Search over what nodes carry in ``metadata_props``: stack traces and other metadata (issue 12.6).

The expected hits come from reading the ONNX file directly (``onnx.load``, a recursive walk, a dict of each
node's metadata), not from the search code: a node matches by name or op type first, then by its stack trace,
then by any other metadata entry except the three the module tree is made of (searched as module hits).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

from inspector.core.model.index import open_index
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope
from inspector.core.search import MATCHED_IN, SearchIndex, matched_line, search
from tests.conftest import FIXTURES

ZOO = Path(__file__).resolve().parent / "zoo"
STACK_TRACE = "pkg.torch.onnx.stack_trace"
MODULE_KEYS = {"namespace", "pkg.torch.onnx.name_scopes", "pkg.torch.onnx.class_hierarchy"}


def _walk(nodes, prefix=()) -> Iterator[tuple[tuple, onnx.NodeProto]]:
    for i, node in enumerate(nodes):
        path = (*prefix, i)
        yield path, node
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk(a.g.node, (*path, a.name))
            elif a.type == onnx.AttributeProto.GRAPHS:
                for k, g in enumerate(a.graphs):
                    yield from _walk(g.node, (*path, f"{a.name}[{k}]"))


def _expected(path: Path, query: str) -> dict[str, list[tuple[GraphScope, tuple]]]:
    """Stack-trace and metadata matches of ``query``, by kind, in document order, read from the file."""
    model = onnx.load(path)
    q = query.strip().casefold()
    scopes = [(MAIN, model.graph.node)]
    scopes += [(FunctionKey(f.domain, f.name, f.overload), f.node) for f in model.functions]
    out: dict[str, list[tuple[GraphScope, tuple]]] = {"stack_trace": [], "metadata": []}
    for scope, nodes in scopes:
        for p, node in _walk(nodes):
            if q in node.name.casefold() or q in node.op_type.casefold():
                continue
            meta = {e.key: e.value for e in node.metadata_props}
            if q in meta.get(STACK_TRACE, "").casefold():
                out["stack_trace"].append((scope, p))
            elif any(q in v.casefold() for k, v in meta.items() if k != STACK_TRACE and k not in MODULE_KEYS):
                out["metadata"].append((scope, p))
    return out


def _found(path: Path, query: str) -> dict[str, list[tuple[GraphScope, tuple]]]:
    result = search(open_index(path), query, limit=10**6)
    assert not result.truncated
    return {kind: [(h.scope, h.path) for h in result.hits if h.kind == kind] for kind in ("stack_trace", "metadata")}


def test_rotary_finds_the_nodes_whose_stack_trace_mentions_apply_rotary_pos_emb():
    path = ZOO / "llama_gqa.onnx"
    expected = _expected(path, "rotary")
    assert len(expected["stack_trace"]) == 28 and expected["metadata"] == []  # 14 nodes in each of 2 layers
    index = open_index(path)
    hits = [h for h in search(index, "rotary").hits if h.kind == "stack_trace"]
    assert [(h.scope, h.path) for h in hits] == expected["stack_trace"]
    model = onnx.load(path)
    for h in hits:
        node = model.graph.node[h.path[0]]
        trace = next(e.value for e in node.metadata_props if e.key == STACK_TRACE)
        assert h.key == STACK_TRACE and h.matched_in == "stack trace" and h.ref == h.path
        assert h.text in [line.strip() for line in trace.splitlines()] and "rotary" in h.text.casefold()
        assert h.where == f"main/{node.name}"
    # the call site's line, the first line of the trace that mentions the query
    assert hits[0].text == "query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)"
    # nothing else in the model says "rotary": no node name, op type, target, module or function
    assert search(index, "rotary").total == 28


@pytest.mark.parametrize(("name", "query"), [
    ("llama_gqa", "apply_rotary_pos_emb"),
    ("llama_gqa", "unsqueeze_14"),  # an FX node name: in the fx_node text of the calls that read it
    ("llama_gqa", "num_users=2"),
    ("llama_gqa", "ReshapeReshape"),  # a rewriter rule name
    ("llama_gqa", 'modeling_llama.py", line 2'),
    ("cond", "true_branch"),  # stack traces of nodes inside the If's branches
    ("cond", "relu"),  # op Relu, then stack traces ("relu * 2.0"), then fx_node arguments
    ("cond", "torch.ops.aten.tanh"),
    ("gpt2", "attention"),
    ("t5", "torch.ops.aten"),
])
def test_stack_trace_and_metadata_hits_match_an_independent_reading(name, query):
    path = ZOO / f"{name}.onnx"
    expected = _expected(path, query)
    assert expected["stack_trace"] or expected["metadata"]  # every case finds something
    assert _found(path, query) == expected


def test_exact_metadata_values_come_first_and_name_their_key():
    index = open_index(ZOO / "llama_gqa.onnx")
    hits = search(index, "reshapereshape").hits
    assert [(h.kind, h.key, h.text, h.exact) for h in hits] == [
        ("metadata", "pkg.onnxscript.rewriter.rule_name", "ReshapeReshape", True)] * 2
    assert [h.matched_in for h in hits] == ["metadata", "metadata"]
    fx = [h for h in search(index, "unsqueeze_14").hits if h.kind == "metadata"]
    assert fx and {h.key for h in fx} == {"pkg.torch.onnx.fx_node"}
    assert all("unsqueeze_14" in h.text for h in fx)
    # a whole fx_node text is an exact match on each node that carries it
    model = onnx.load(ZOO / "llama_gqa.onnx")
    text = next(e.value for e in model.graph.node[17].metadata_props if e.key == "pkg.torch.onnx.fx_node")
    carriers = [i for i, n in enumerate(model.graph.node)
                if any(e.key == "pkg.torch.onnx.fx_node" and e.value == text for e in n.metadata_props)]
    exact = [h for h in search(index, text.upper()).hits if h.exact]
    assert [(h.kind, h.path) for h in exact] == [("metadata", (i,)) for i in carriers] and carriers


def test_each_hit_says_where_it_matched():
    assert MATCHED_IN == {"function": "function", "aten_target": "target", "module": "module", "op_type": "op",
                          "node": "name", "stack_trace": "stack trace", "metadata": "metadata"}


def test_metadata_is_read_on_the_first_query_not_when_the_table_is_built():
    si = SearchIndex(open_index(ZOO / "llama_gqa.onnx"))
    si.build()
    assert si._meta is None
    si.search("rotary")
    meta = si._meta
    assert meta is not None
    assert si.search("ROTARY") == si.search("rotary") and si._meta is meta  # read once, kept
    # each distinct text is kept once: 137 nodes, far fewer distinct stack traces and rule names
    assert len(meta.node_sig) == 137 and len(meta.texts) < 137


def test_matched_line():
    text = 'File "a.py", line 1, in f\n    x = g()\n  File "b.py", line 2, in apply_rotary_pos_emb\n    y = 1'
    assert matched_line(text, "rotary") == 'File "b.py", line 2, in apply_rotary_pos_emb'
    assert matched_line(text, "x = g") == "x = g()"
    assert matched_line("a\nb", "a\nb") == "a"  # a query across lines: the first line
    assert len(matched_line("x" * 1000, "x")) == 300


def test_hostile_metadata_is_returned_raw():
    index = open_index(FIXTURES / "hostile.onnx")
    (hit,) = [h for h in search(index, "onerror=alert").hits if h.kind == "metadata"]
    assert (hit.kind, hit.key, hit.text, hit.path) == (
        "metadata", "key<script>alert(1)</script>", "value<img src=x onerror=alert(1)>", (0,))
    (hit,) = search(index, "md|table").hits  # the matching line of a multi-line value, raw
    assert (hit.key, hit.text) == ("note", "line2 | md|table | [x](javascript:alert(1)) \u202eRTL ${{x}} </td></tr>")


def _with_meta(node: onnx.NodeProto, **entries: str) -> onnx.NodeProto:
    for key, value in entries.items():
        e = node.metadata_props.add()
        e.key, e.value = key.replace("__", "."), value
    return node


def test_function_bodies_and_subgraphs(tmp_path: Path):
    """A hand-made model: an aten call inside a local function's body, a node inside an If branch."""
    from onnx import TensorProto, helper

    fx = "%mul_9 : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%x, %y), kwargs = {})"
    body = [_with_meta(helper.make_node("Mul", ["x", "y"], ["t"], name="f_mul"),
                       pkg__torch__onnx__fx_node=fx, pkg__torch__onnx__stack_trace='File "m.py", line 3, in rotary_f'),
            _with_meta(helper.make_node("Neg", ["t"], ["z"], name="f_neg"), pkg__torch__onnx__fx_node=fx)]
    f = helper.make_function("local", "f", ["x", "y"], ["z"], body, [helper.make_opsetid("", 20)])
    then = helper.make_graph([_with_meta(helper.make_node("Neg", ["a"], ["b"], name="then_neg"),
                                         pkg__torch__onnx__stack_trace="in rotary_branch")], "then", [],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["c"], name="else_id")], "else", [],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])])
    nodes = [_with_meta(helper.make_node("f", ["a", "a"], ["d"], name="call_f", domain="local"), note="rotary here"),
             helper.make_node("If", ["cond"], ["e"], name="branch", then_branch=then, else_branch=other)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, functions=[f], opset_imports=[helper.make_opsetid("", 20),
                                                                   helper.make_opsetid("local", 1)])
    path = tmp_path / "meta.onnx"
    onnx.save(model, str(path))
    for query in ("rotary", "mul_9", "torch.ops.aten.mul"):
        assert _found(path, query) == _expected(path, query)
    body_f = FunctionKey("local", "f")
    assert _expected(path, "rotary") == {"stack_trace": [(MAIN, (1, "then_branch", 0)), (body_f, (0,))],
                                         "metadata": [(MAIN, (0,))]}
    assert _expected(path, "mul_9")["metadata"] == [(body_f, (0,)), (body_f, (1,))]  # fx_node, through the call


def test_joined_texts_match_each_item_once_and_never_across_items():
    from inspector.core.search import _Joined

    items = ["abcab", "", "b", "xa", "bx", "ab\0c"]
    joined = _Joined(items)
    for q in ("ab", "b", "a", "x", "xab", "a\0b", "\0", "ab\0c", "c", "zz", "bcab"):
        assert joined.matching(q) == [k for k, item in enumerate(items) if q in item], q
    assert _Joined([]).matching("a") == []
    assert [joined.item(k) for k in range(len(items))] == items
