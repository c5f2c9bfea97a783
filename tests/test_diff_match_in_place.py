"""Plain nodes of a model cut like the other (one node count, the same aten call groups: diff/cut.py) are matched
by position, without hashing every node's neighbourhood (4.7 s of a 100k-node GPT-2 diff): equal nodes, and nodes
of one operator under one name. On the zoo's real export pairs: the same matches and changes either way. Two graphs
of plain nodes only (a TorchScript-style export, no metadata) with one node count are compared in place too."""

from __future__ import annotations

import json

import onnx
import pytest

from inspector.core.diff import diff_models, matching, wiring
from inspector.core.diff.model import MatchCount
from inspector.core.model.index import build_index, open_index
from inspector.core.model.loader import LoadedModel
from tests.conftest import ZOO


def _hashes_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted: list[int] = []
    real = matching._neighbourhood_hashes

    def counting(side, rounds=2):
        counted.append(1)
        return real(side, rounds)

    monkeypatch.setattr(matching, "_neighbourhood_hashes", counting)
    return counted


def test_a_pair_cut_alike_matches_its_plain_nodes_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = open_index(ZOO / "pair_heads_a.onnx"), open_index(ZOO / "pair_heads_b.onnx")
    counted = _hashes_counted(monkeypatch)
    fast = diff_models(a, b)
    assert counted == []  # both plain nodes matched where they are
    assert fast.matched["nodes"] == MatchCount(matched=2, only_a=0, only_b=0, renamed=0)
    monkeypatch.setattr(matching.Matcher, "_match_in_place", lambda self, umap, na, unequal: None)
    slow = diff_models(a, b)
    assert counted == [1, 1] and slow == fast  # hashed, and the same diff


def test_a_pair_not_cut_alike_is_still_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _hashes_counted(monkeypatch)
    d = diff_models(open_index(ZOO / "pair_scale_a.onnx"), open_index(ZOO / "pair_scale_b.onnx"))
    assert counted == [1, 1]
    assert d.matched["nodes"] == MatchCount(matched=2, only_a=0, only_b=0, renamed=2)


def test_a_plain_node_renamed_where_it_is_is_left_to_the_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    a = open_index(ZOO / "pair_heads_a.onnx")
    proto = onnx.load(str(ZOO / "pair_heads_b.onnx"), load_external_data=False)
    b_full = open_index(ZOO / "pair_heads_b.onnx")
    plain = [i for i, n in enumerate(proto.graph.node) if not any(p.key == "pkg.torch.onnx.fx_node"
                                                                  for p in n.metadata_props)]
    assert len(plain) == 2 and b_full.facts.total_nodes == len(proto.graph.node)
    proto.graph.node[plain[0]].name = "renamed_by_hand"  # the same operator under another name: not in place
    path = ZOO / "pair_heads_b.onnx"
    b = build_index(LoadedModel(path, proto, "binary", path.stat().st_size))
    counted = _hashes_counted(monkeypatch)
    d = diff_models(a, b)
    assert counted == [1, 1]  # one node left for the hashes
    assert d.matched["nodes"].matched == 2 and d.matched["nodes"].renamed == 1


def _without_metadata(path, tmp_path):
    """The zoo export as a TorchScript-style export carries it: no node or value metadata, so no aten calls."""
    proto = onnx.load(str(path), load_external_data=False)
    for item in (*proto.graph.node, *proto.graph.input, *proto.graph.value_info):
        del item.metadata_props[:]
    proto.ir_version = 9  # as TorchScript writes it: no body templates are looked for (core.model.recognise.applies)
    return build_index(LoadedModel(tmp_path / path.name, proto, "binary", 0))


def test_plain_graphs_of_one_node_count_match_in_place(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # torch's truth (pair_eps_b.truth.json): the pair differs in the eps of its 3 LayerNorms, nothing else
    truth = json.loads((ZOO / "pair_eps_b.truth.json").read_text())
    assert truth["pair"] == {"hyperparameter": "eps", "value": 1e-06, "other": "pair_eps_a", "other_value": 1e-05}
    assert truth["fx_target_counts"]["aten::layer_norm"] == 3
    a, b = _without_metadata(ZOO / "pair_eps_a.onnx", tmp_path), _without_metadata(ZOO / "pair_eps_b.onnx", tmp_path)
    assert not a.provenance.calls and not b.provenance.calls
    counted = _hashes_counted(monkeypatch)
    fast = diff_models(a, b)
    assert counted == []  # no node's neighbourhood hashed
    n = truth["onnx"]["main_graph_nodes"]
    assert fast.matched["nodes"] == MatchCount(matched=n, only_a=0, only_b=0, renamed=0)
    assert [(c.kind, c.family) for c in fast.changes] == [("node_changed", "LayerNormalization")] * 3
    for c in fast.changes:  # (the float32 of 1e-5 is 9.9999997e-06)
        assert {k: v for k, v in c.old.items() if k != "epsilon"} == {k: v for k, v in c.new.items() if k != "epsilon"}
        assert (c.old["epsilon"], c.new["epsilon"]) == (pytest.approx(truth["pair"]["other_value"], rel=1e-6),
                                                        pytest.approx(truth["pair"]["value"], rel=1e-6))
    monkeypatch.setattr(matching.Matcher, "_unequal_plain", lambda self: None)
    slow = diff_models(a, b)
    assert counted == [1, 1] and slow == fast  # hashed, and the same diff


def test_plain_graphs_that_differ_in_more_than_half_their_nodes_are_hashed(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path) -> None:
    a = _without_metadata(ZOO / "pair_eps_a.onnx", tmp_path)
    proto = onnx.load(str(ZOO / "pair_eps_a.onnx"), load_external_data=False)
    for item in (*proto.graph.node, *proto.graph.input, *proto.graph.value_info):
        del item.metadata_props[:]
    proto.ir_version = 9  # as in _without_metadata
    for i, node in enumerate(proto.graph.node):
        node.name = f"renamed_{i}"  # every node renamed: nothing is equal where it is
    b = build_index(LoadedModel(tmp_path / "renamed.onnx", proto, "binary", 0))
    counted = _hashes_counted(monkeypatch)
    d = diff_models(a, b)
    assert counted == [1, 1]
    n = len(proto.graph.node)
    assert d.matched["nodes"] == MatchCount(matched=n, only_a=0, only_b=0, renamed=n)


def _stripped(path):
    proto = onnx.load(str(path), load_external_data=False)
    for item in (*proto.graph.node, *proto.graph.input, *proto.graph.value_info):
        del item.metadata_props[:]
    proto.ir_version = 9  # as TorchScript writes it: no body templates are looked for (core.model.recognise.applies)
    return proto


def _alike_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = wiring.wired_alike_in_place

    def counting(pairs, umap, outside_alike):
        out = real(pairs, umap, outside_alike)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(wiring, "wired_alike_in_place", counting)
    return sizes


def test_plain_graphs_matched_in_place_check_the_wiring_of_their_changed_nodes_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    a, b = _without_metadata(ZOO / "pair_eps_a.onnx", tmp_path), _without_metadata(ZOO / "pair_eps_b.onnx", tmp_path)
    sizes = _alike_counted(monkeypatch)
    fast = diff_models(a, b)
    # every node but the 3 LayerNorms whose eps changed, and the nodes reading what those make (2: the last
    # norm's output is the graph's)
    readers = {i for i, node in enumerate(a.proto.graph.node)
               if set(node.input) & {o for n in a.proto.graph.node if n.op_type == "LayerNormalization"
                                     for o in n.output}}
    assert len(readers) == 2 and sizes == [len(a.proto.graph.node) - 3 - 2]
    monkeypatch.setattr(wiring, "wired_alike_in_place", lambda pairs, umap, outside_alike: set())
    assert diff_models(a, b) == fast  # the same diff as with every unit's wiring checked


def test_a_swap_of_two_producers_outputs_is_found_rewired_in_plain_graphs(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path) -> None:
    proto_a = _stripped(ZOO / "pair_eps_a.onnx")
    proto_b = _stripped(ZOO / "pair_eps_a.onnx")
    norms = [n for n in proto_b.graph.node if n.op_type == "LayerNormalization"]
    x, y = norms[0].output[0], norms[1].output[0]
    norms[0].output[0], norms[1].output[0] = y, x  # the readers of x now read what the second norm makes
    readers = sorted(n.name for n in proto_b.graph.node if set(n.input) & {x, y})
    assert len(readers) == 2
    a = build_index(LoadedModel(tmp_path / "a.onnx", proto_a, "binary", 0))
    b = build_index(LoadedModel(tmp_path / "b.onnx", proto_b, "binary", 0))
    sizes = _alike_counted(monkeypatch)
    fast = diff_models(a, b)
    assert sizes and sizes[0] == len(proto_a.graph.node) - 2 - len(readers)
    rewired = sorted(c.where for c in fast.changes if c.kind == "rewired")
    assert rewired == readers, [c.detail for c in fast.changes]
    monkeypatch.setattr(wiring, "wired_alike_in_place", lambda pairs, umap, outside_alike: set())
    assert diff_models(a, b) == fast


def test_plain_graphs_matched_in_place_make_units_only_for_what_differs(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path) -> None:
    # a plain node's unit is made on each access (its reads and outputs read from protobuf): for the nodes equal
    # at their place, counting renames, looking for folds, comparing attributes and checking wiring need none
    from inspector.core.diff.units import Side

    a, b = _without_metadata(ZOO / "pair_eps_a.onnx", tmp_path), _without_metadata(ZOO / "pair_eps_b.onnx", tmp_path)
    made: set[tuple[str, int]] = set()
    real = Side.unit

    def unit(self, k):
        made.add((self.index.path.name, k))
        return real(self, k)

    monkeypatch.setattr(Side, "unit", unit)
    d = diff_models(a, b)
    assert len(d.changes) == 3
    nodes = a.proto.graph.node
    changed = {i for i, n in enumerate(nodes) if n.op_type == "LayerNormalization"}
    readers = {i for i, n in enumerate(nodes) if set(n.input) & {o for j in changed for o in nodes[j].output}}
    assert {k for _side, k in made} == changed | readers and len(changed | readers) == 5
