"""Plain nodes of a model cut like the other (one node count, the same aten call groups: diff/cut.py) are matched
by position, without hashing every node's neighbourhood (4.7 s of a 100k-node GPT-2 diff): equal nodes, and nodes
of one operator under one name. On the zoo's real export pairs: the same matches and changes either way."""

from __future__ import annotations

import onnx
import pytest

from inspector.core.diff import diff_models, matching
from inspector.core.diff.model import MatchCount
from inspector.core.index import build_index, open_index
from inspector.core.loader import LoadedModel
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
    monkeypatch.setattr(matching.Matcher, "_match_in_place", lambda self, umap, na: None)
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
