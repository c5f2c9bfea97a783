"""The functions tree makes call rows only when an overload is expanded, at most CAP of them, and stays exact:
names, modules and node counts of every aten call as torch recorded them (the zoo's truth files), with the rows
made lazily, narrowed by the filter, and made on demand by a jump."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QTreeView

from inspector.core.model.index import ModelIndex, open_index
from inspector.gui import family_model
from inspector.gui.family_model import CAP, EAGER, FamilyFilter, FamilyModel, FamilyTree
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from replicate import externalise, replicate

ZOO = ROOT / "tests" / "zoo"


def _truth(name: str) -> dict[str, Any]:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _aten_calls(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """FX nodes of the main graph that emitted at least one ONNX node: the aten calls."""
    return [n for n in truth["fx_nodes"] if n["onnx_nodes"] and n["graph"] == ""]


def _rows(model: Any, parent: Any) -> list[Any]:
    return [model.index(r, 0, parent) for r in range(model.rowCount(parent))]


def _all_call_rows(model: FamilyModel) -> list[tuple[str, str, str]]:
    """(overload, call name, node count) of every call row, fetching each overload's rows as a view would."""
    out = []
    for fam in _rows(model, model.index(-1, 0)):
        for ov in _rows(model, fam):
            if model.canFetchMore(ov):
                model.fetchMore(ov)
            out += [(ov.data(), c.data(), c.siblingAtColumn(1).data()) for c in _rows(model, ov)]
    return out


@pytest.mark.parametrize("name", ["llama_gqa", "gpt2", "t5", "whisper", "tiny_noopt"])
@pytest.mark.parametrize("eager", [EAGER, 0])
def test_call_rows_match_torch(name: str, eager: int, monkeypatch: pytest.MonkeyPatch, qtbot: Any) -> None:
    """Every aten call is one row below the overload of its target, named by its module and FX name
    (``model.layers.0.self_attn › linear_1``), with the number of ONNX nodes torch says it emitted; the same whether
    the rows are made at once or on fetch."""
    monkeypatch.setattr(family_model, "EAGER", eager)
    model = FamilyModel(open_index(ZOO / f"{name}.onnx"))
    if eager == 0:  # nothing below an overload until it is fetched
        ov = model.index(0, 0, model.index(0, 0))
        assert model.rowCount(ov) == 0 and model.canFetchMore(ov) and model.hasChildren(ov)
    calls = _aten_calls(_truth(name))
    rows = _all_call_rows(model)
    expected = Counter((n["target"], f"{n['module'] or 'root'} › {n['name']}",
                        f"{n['onnx_nodes']} node{'s' if n['onnx_nodes'] != 1 else ''}") for n in calls)
    assert Counter(rows) == expected
    per_target = Counter(n["target"] for n in calls)
    for fam in _rows(model, model.index(-1, 0)):
        assert int(fam.siblingAtColumn(1).data()) == sum(per_target[ov.data()] for ov in _rows(model, fam))


def test_function_call_sites_are_rows_of_their_overloads(qtbot: Any) -> None:
    truth = _truth("ts_functions")
    model = FamilyModel(open_index(ZOO / "ts_functions.onnx"))
    families = {f.data(): f for f in _rows(model, model.index(-1, 0))}
    for fn in truth["module_functions"]:
        fam = families[f"{fn['domain']}.{fn['name']}"]
        sites = [c for ov in _rows(model, fam) for c in _rows(model, ov)]
        assert len(sites) == fn["calls"] == int(fam.siblingAtColumn(1).data())
        assert {c.data(FamilyModel.KindRole) for c in sites} == {"call_site"}


def test_rows_beyond_the_cap_are_narrowed_by_the_filter_and_made_by_a_jump(monkeypatch: pytest.MonkeyPatch,
                                                                           qtbot: Any) -> None:
    """With 3 rows per overload: the 4 calls of aten::linear in layer 1 of llama_gqa (truth) are the rows under
    the filter 'layers.1.', a 'more' row counts the rest, and a jump to the last call gives it a row."""
    monkeypatch.setattr(family_model, "CAP", 3)
    monkeypatch.setattr(family_model, "EAGER", 0)
    index = open_index(ZOO / "llama_gqa.onnx")
    model, proxy = FamilyModel(index), FamilyFilter()
    proxy.setSourceModel(model)
    calls = [n for n in _aten_calls(_truth("llama_gqa")) if n["target"] == "aten::linear"]
    fam = next(f for f in _rows(model, model.index(-1, 0)) if f.data() == "aten::linear")
    ov = model.index(0, 0, fam)
    model.fetchMore(ov)
    rows = [r.data() for r in _rows(model, ov)]
    assert rows[:3] == [f"{n['module']} › {n['name']}" for n in calls[:3]]
    assert rows[3] == f"… {len(calls) - 3:,} more calls: type in the filter to narrow them"
    matches = model.matching("layers.1.")
    model.apply(matches)
    proxy.set_kept("layers.1.", matches.kept if matches else None)
    layer1 = [n for n in calls if n["module"].startswith("model.layers.1.")]
    pov = proxy.mapFromSource(model.index(0, 0, model.index(fam.row(), 0)))
    shown = [proxy.index(r, 0, pov).data() for r in range(proxy.rowCount(pov))]
    assert shown[:3] == [f"{n['module']} › {n['name']}" for n in layer1[:3]]
    assert len(layer1) == 7  # q, k, v, o, gate, up, down
    assert shown[3:] == ["… 4 more calls: type in the filter to narrow them"]
    model.apply(None)
    proxy.set_kept("", None)
    last = index.families[[f.data() for f in _rows(model, model.index(-1, 0))].index("aten::linear")]
    target = last.overloads[0].aten_calls[-1]
    row = model.index_of(target)
    assert row.isValid() and row.data() == f"{calls[-1]['module']} › {calls[-1]['name']}"
    assert model.rowCount(model.index(0, 0, model.index(fam.row(), 0))) == 3 + 1 + 1  # head, the jump, more
    assert model.index_of(target) == row  # the same row on a second jump


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> ModelIndex:
    """The zoo's dynamo Llama with its decoder layer copied 64 times (4,105 nodes, 3,272 aten calls)."""
    out = tmp_path_factory.mktemp("replica") / "llama_64.onnx"
    model = replicate(onnx.load(str(ZOO / "llama_gqa.onnx"), load_external_data=False), 64, 0)
    externalise(model, out, location="llama_64.weights.bin")
    onnx.save(model, str(out))
    return open_index(out)


def test_a_big_replica_makes_a_bounded_number_of_rows_before_expansion(replica: ModelIndex, qtbot: Any) -> None:
    tree = FamilyTree(replica)
    overloads = [ov for fam in tree.root.children for ov in fam.children]
    calls = sum(len(ov.calls) for ov in overloads)
    assert calls == len(replica.provenance.calls) == 3272
    bound = len(tree.root.children) + len(overloads) + sum(len(ov.calls) for ov in overloads
                                                          if len(ov.calls) <= EAGER)
    assert tree.item_count() == bound < calls / 10
    model, proxy, view = FamilyModel(), FamilyFilter(), QTreeView()
    proxy.setSourceModel(model)
    view.setModel(proxy)
    qtbot.addWidget(view)
    model.set_tree(tree)
    view.expandToDepth(0)
    view.show()
    qtbot.waitExposed(view)
    assert tree.item_count() == bound  # showing families and overloads makes no call row
    big = max(overloads, key=lambda ov: len(ov.calls))
    assert len(big.calls) > CAP
    view.expand(proxy.mapFromSource(model.createIndex(big.row, 0, big)))  # the view fetches its rows
    assert tree.item_count() == bound + CAP + 1
    assert model.rowCount(model.createIndex(big.row, 0, big)) == CAP + 1
