"""Search: node names and op types at any depth, aten targets, modules, function keys; order and limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from onnx import TensorProto, helper

from inspector.core.bodies.body import walk_body
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import EAGER_TEXT_CHECK_NODES, open_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.search import KINDS, SearchIndex, search
from tests.conftest import FIXTURES

ZOO = Path(__file__).resolve().parent / "zoo"


@pytest.fixture(scope="module")
def nested():
    return open_index(FIXTURES / "nested_calls.onnx")


@pytest.fixture(scope="module")
def block():
    return open_index(FIXTURES / "dynamo_block.onnx")


def test_node_names_in_nested_subgraphs_and_function_bodies(nested):
    (hit,) = search(nested, "loop_if_then").hits
    assert (hit.kind, hit.text, hit.scope) == ("node", "loop_if_then_negate", MAIN)
    assert hit.path == hit.ref == (1, "body", 2, "then_branch", 0)
    assert hit.where == "main/main_loop.body/loop_if.then_branch/loop_if_then_negate"

    (hit,) = search(nested, "BRANCHY_then").hits  # case-insensitive
    assert hit.scope == FunctionKey("local", "branchy")
    assert hit.path == (0, "then_branch", 0)
    assert hit.where == "local.branchy/branchy_if.then_branch/branchy_then_double"


def test_op_types_in_function_bodies_and_subgraphs(nested):
    hits = search(nested, "neg").hits
    neg = [h for h in hits if h.text == "Neg"]
    assert [(h.kind, h.scope, h.path, h.where) for h in neg] == [
        ("op_type", FunctionKey("local", "negate"), (0,), "local.negate/Neg#0")]
    calls = [h for h in hits if h.kind == "op_type" and h.text == "negate"]  # call sites of local.negate
    assert {h.where for h in calls} == {"main/main_loop.body/loop_if.then_branch/loop_if_then_negate",
                                        "local.branchy/branchy_if.else_branch/branchy_else_negate"}
    # a node whose op type and name both match is reported once
    assert len({(h.scope, h.path) for h in hits if h.path}) == len([h for h in hits if h.path])


def test_order_exact_first_then_kind_then_document_order(nested):
    hits = search(nested, "negate").hits
    ranks = [(not h.exact, KINDS.index(h.kind)) for h in hits]
    assert ranks == sorted(ranks)
    assert hits[0].exact and hits[0].kind == "op_type"  # op type "negate" equals the query
    assert any(h.kind == "function" and not h.exact for h in hits)

    # node hits follow document order: main graph first, parents before the nodes of their subgraphs
    hits = [h for h in search(nested, "_").hits if h.kind == "node"]
    main_order = [p for p, _n in walk_body(nested.proto.graph.node)]
    main_hits = [h.path for h in hits if h.scope == MAIN]
    assert main_hits == [p for p in main_order if p in set(main_hits)]
    scopes = [h.scope for h in hits]
    assert scopes.index(FunctionKey("local", "branchy")) > max(i for i, s in enumerate(scopes) if s == MAIN)


def test_aten_targets_one_hit_per_call(block):
    hits = search(block, "transpose").hits
    aten = [h for h in hits if h.kind == "aten_target"]
    calls = [c for c in block.provenance.calls if c.target == "aten::transpose.int"]
    assert len(aten) == len(calls) == 8
    assert all(h.text == "aten::transpose.int" and isinstance(h.ref, AtenCall) for h in aten)
    assert [h.ref for h in aten] == calls
    assert aten[0].scope == MAIN and aten[0].where.startswith("main/transpose")
    assert "in layers.0.attn" in aten[0].where
    assert any(h.kind == "op_type" and h.text == "Transpose" for h in hits)

    (first, *_rest) = search(block, "aten::transpose.int").hits
    assert first.exact and first.kind == "aten_target"
    assert search(block, "torch.ops.aten.transpose").hits[0].text == "torch.ops.aten.transpose.int"


def test_module_paths_and_classes(block):
    hits = search(block, "layers.0.attn").hits
    assert (hits[0].kind, hits[0].text, hits[0].ref, hits[0].exact) == ("module", "layers.0.attn", "layers.0.attn",
                                                                         True)
    modules = [h.text for h in hits if h.kind == "module"]
    assert modules == ["layers.0.attn", "layers.0.attn.q_proj", "layers.0.attn.k_proj", "layers.0.attn.v_proj",
                       "layers.0.attn.out_proj"]
    by_class = [h for h in search(block, "selfattention").hits if h.kind == "module"]
    assert [(h.text, h.ref) for h in by_class] == [("__main__.SelfAttention", "layers.0.attn"),
                                                   ("__main__.SelfAttention", "layers.1.attn")]
    # each row says what its text does not: a module found by its path, its class; found by its class, its path
    assert [h.where for h in by_class] == ["layers.0.attn", "layers.1.attn"]
    assert hits[0].where == "SelfAttention" and [h.where for h in hits[1:5]] == ["Linear"] * 4


def test_function_keys():
    index = open_index(FIXTURES / "overloads.onnx")
    (hit, *rest) = search(index, "perm_0231").hits
    assert (hit.kind, hit.text, hit.ref, hit.scope, hit.path) == (
        "function", "local.tr:perm_0231", FunctionKey("local", "tr", "perm_0231"), None, ())
    assert not [h for h in rest if h.kind == "function"]
    assert [h.text for h in search(index, "local.tr").hits if h.kind == "function"] == [
        "local.tr:perm_0213", "local.tr:perm_0231", "local.tr:perm_1023"]


def test_limit_and_truncation(block):
    full = search(block, "node_")
    assert not full.truncated and full.total == len(full.hits) > 10
    few = search(block, "node_", limit=5)
    assert few.hits == full.hits[:5] and few.truncated and few.total == full.total
    assert len(few) == 5 and list(few) == few.hits
    none = search(block, "node_", limit=0)
    assert none.hits == [] and none.truncated
    exact = search(block, "node_", limit=full.total)
    assert not exact.truncated


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_empty_query_finds_nothing(block, query):
    result = search(block, query)
    assert result.hits == [] and not result.truncated and result.total == 0


def test_hostile_strings_are_returned_raw():
    index = open_index(FIXTURES / "hostile.onnx")
    hits = search(index, "<script>").hits
    texts = {h.text for h in hits}
    assert "relu<script>alert(1)</script>" in texts
    function = next(h for h in hits if h.kind == "function")
    assert function.text == 'dom<script>alert(1)</script>.fn<img src=x onerror=alert(1)>:ova"];evil[label="x'
    assert "&lt;" not in "".join(h.text + h.where for h in hits)
    assert any(h.where == "main/relu<script>alert(1)</script>" for h in hits)
    assert search(index, 'evil[label="x').hits  # quotes and brackets are plain text to the matcher


def test_search_index_is_reusable(block):
    si = SearchIndex(block)
    first = si.search("linear")
    assert si.search("LINEAR") == first
    assert si.search("no such thing anywhere").hits == []
    assert first.hits == search(block, "linear").hits


def test_a_name_that_is_not_utf8_in_a_model_too_large_to_check_up_front(tmp_path: Path):
    """Above ``EAGER_TEXT_CHECK_NODES`` the index does not read every string, so a node name that is not valid
    UTF-8 reaches search as bytes: it is found by its decoding (U+FFFD for the bad byte), and the names around it
    are still found."""
    n = EAGER_TEXT_CHECK_NODES + 500
    nodes = [helper.make_node("Identity", ["x" if i == 0 else f"v{i - 1}"], [f"v{i}"], name=f"node{i}")
             for i in range(n)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"v{n - 1}", TensorProto.FLOAT, [1])])
    data = helper.make_model(graph).SerializeToString()
    assert data.count(b"node12345") == 1
    path = tmp_path / "bad_name.onnx"
    path.write_bytes(data.replace(b"node12345", b"node\xff2345"))
    si = SearchIndex(open_index(path))
    hits = si.search("node\ufffd2345").hits
    assert [(h.kind, h.text, h.path) for h in hits] == [("node", "node\ufffd2345", (12345,))]
    assert [(h.kind, h.text, h.path) for h in si.search("node12346").hits] == [("node", "node12346", (12346,))]
    assert [h.path for h in si.search("NODE1234").hits] == [(1234,), *((12340 + k,) for k in range(10) if k != 5)]


def test_a_build_with_progress_reads_in_steps_and_finds_the_same(monkeypatch: pytest.MonkeyPatch):
    """``SearchIndex.build(progress=...)`` reads the main graph ``_STEP`` nodes at a time, reporting each step, and
    its tables give exactly the hits of a build in one go; what ``progress`` raises stops the build."""
    from inspector.core import search as search_module

    monkeypatch.setattr(search_module, "_STEP", 8)
    ix = open_index(ZOO / "llama_gqa.onnx")
    n = len(ix.proto.graph.node)
    assert ix.flat_main and n > 8 * 10
    seen: list[tuple[int, int]] = []
    stepped = SearchIndex(ix)
    stepped.build(progress=lambda done, total: seen.append((done, total)))
    assert seen == [(min(k + 8, n), n) for k in range(0, n, 8)]
    whole = SearchIndex(ix)
    for query in ("transpose", "layers.1.self_attn", "node_MatMul", "aten::add", "rsqrt", "apply_rotary_pos_emb"):
        assert stepped.search(query) == whole.search(query)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        SearchIndex(ix).build(progress=stop)
