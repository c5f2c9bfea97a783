"""A module fold (``fold --modules``) in the app, as a reviewer uses it: the functions tree lists each module
family's overloads (or variants) and their call sites, two layers compared side by side name what differs between
them, and the main graph shows one box per layer call. On the zoo's tiny_noopt (torch's config sets each Block's
eps and each Attention's head count per layer) and t5 (encoder and decoder blocks, three attention bodies),
checked against torch's module list and config in the truth files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QModelIndex
from shiboken6 import isValid

from inspector.core.fold.modules import MODULE_DOMAIN, fold_modules
from inspector.core.model.function_sites import CallSite
from inspector.core.model.index import open_index
from inspector.gui.main_window import MainWindow
from inspector.render.scene import FUNCTION_CALL
from tests.conftest import ROOT

ZOO = ROOT / "tests" / "zoo"


def _truth(name: str) -> dict[str, Any]:
    return json.loads((ZOO / f"{name}.truth.json").read_text())


def _paths(model: str, short: str) -> list[str]:
    """Module paths of one class, from torch's module list."""
    return sorted(p for p, c in _truth(model)["module_classes"].items() if c.rsplit(".", 1)[-1] == short)


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for model, patterns in (("tiny_noopt", "Block,Attention"), ("t5", "T5Block,T5Attention")):
        proto, _report = fold_modules(open_index(ZOO / f"{model}.onnx"), patterns)
        out[model] = tmp_path_factory.mktemp("modules") / f"{model}_modules.onnx"
        onnx.save(proto, out[model])
    return out


def _open(qtbot: Any, w: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(w.reviews_listed, timeout=60000), qtbot.waitSignal(w.center.view_shown, timeout=60000):
        w.open_path(path)


def _tree(w: MainWindow) -> dict[str, dict[str, list[str]]]:
    """The functions tree's module families: family row -> overload row -> its call-site rows, as shown."""
    model = w.family_view.model()

    def rows(parent: QModelIndex) -> list[QModelIndex]:
        while model.canFetchMore(parent):
            model.fetchMore(parent)
        return [model.index(k, 0, parent) for k in range(model.rowCount(parent))]

    return {str(f.data()): {str(o.data()): [str(s.data()) for s in rows(o)] for o in rows(f)}
            for f in rows(QModelIndex()) if str(f.data()).startswith(MODULE_DOMAIN + ".")}


def test_module_families_list_their_overloads_and_call_sites(qtbot, window: MainWindow, folded: dict[str, Path]):
    _open(qtbot, window, folded["tiny_noopt"])
    tree = _tree(window)
    config = _truth("tiny_noopt")["config"]
    blocks, attns = _paths("tiny_noopt", "Block"), _paths("tiny_noopt", "Attention")
    assert len(blocks) == len(config["eps"]) and len(attns) == len(config["heads"])
    # one overload per distinct eps (Block) and head count (Attention), listing the layers that have it
    by_eps = {e: [f"main/{p}" for p, x in zip(blocks, config["eps"], strict=True) if x == e] for e in config["eps"]}
    by_heads = {h: [f"main/{p}" for p, x in zip(attns, config["heads"], strict=True) if x == h]
                for h in config["heads"]}
    assert sorted(tree[f"{MODULE_DOMAIN}.Block"].values()) == sorted(by_eps.values())
    assert sorted(tree[f"{MODULE_DOMAIN}.Attention"].values()) == sorted(by_heads.values())
    assert set(tree[f"{MODULE_DOMAIN}.Block"]) == {"epsilon_1em05", "epsilon_1em06"}  # named by what differs

    _open(qtbot, window, folded["t5"])
    tree = _tree(window)
    # three attention bodies (encoder self, decoder self, decoder cross), called inside the blocks: variants
    attention = tree[f"{MODULE_DOMAIN}.T5Attention"]
    # named by what differs: the names the same bodies get as overloads when nothing nests them
    _alone, alone = fold_modules(open_index(ZOO / "t5.onnx"), "T5Attention")
    assert len(attention) == 3 and set(attention) == {k.overload for k in alone.functions}
    sites = sorted(s.rsplit("/", 1)[-1] for calls in attention.values() for s in calls)
    assert sites == _paths("t5", "T5Attention")
    assert all(len(calls) == 1 for calls in attention.values())
    blocks = tree[f"{MODULE_DOMAIN}.T5Block"]
    assert sorted(s for calls in blocks.values() for s in calls) == [f"main/{p}" for p in _paths("t5", "T5Block")]


def _compare(qtbot: Any, w: MainWindow, a: CallSite, b: CallSite) -> Any:
    side = w.family_compare.compare(a, b)
    assert side is not None
    qtbot.waitUntil(lambda: side.ready, timeout=60000)
    return side


def _site(w: MainWindow, name: str) -> CallSite:
    assert w.index is not None
    return next(s for sites in w.index.functions.calls.values() for s in sites if s.node_name == name)


def test_two_layers_side_by_side_name_what_differs(qtbot, window: MainWindow, folded: dict[str, Path]):
    _open(qtbot, window, folded["tiny_noopt"])
    config = _truth("tiny_noopt")["config"]
    blocks, attns = _paths("tiny_noopt", "Block"), _paths("tiny_noopt", "Attention")
    i, j = next((i, j) for i in range(len(blocks)) for j in range(i + 1, len(blocks))
                if config["eps"][i] != config["eps"][j])
    side = _compare(qtbot, window, _site(window, blocks[i]), _site(window, blocks[j]))
    rows = [(r.kind, r.label) for r in side.comparison.rows]
    assert rows == [("value", "LayerNormalization.epsilon")]
    row = side.comparison.rows[0]
    assert (np.float32(row.a), np.float32(row.b)) == (np.float32(config["eps"][i]), np.float32(config["eps"][j]))
    assert side.twin.side_a.graph.items_by_id and side.twin.side_b.graph.items_by_id  # both bodies drawn
    side.close()
    # two attentions with different head counts: the head count and the head size in the q, k, v shapes
    i, j = next((i, j) for i in range(len(attns)) for j in range(i + 1, len(attns))
                if config["heads"][i] != config["heads"][j])
    side = _compare(qtbot, window, _site(window, attns[i]), _site(window, attns[j]))
    values = {(int(r.a), int(r.b)) for r in side.comparison.rows if r.kind == "value"}
    hi, hj = config["heads"][i], config["heads"][j]
    assert values == {(hi, hj), (config["d"] // hi, config["d"] // hj)}
    assert all(r.kind == "value" and r.label == "Constant.value_ints" for r in side.comparison.rows)
    # two layers with one body: nothing differs
    same = next((i, j) for i in range(len(blocks)) for j in range(i + 1, len(blocks))
                if config["eps"][i] == config["eps"][j])
    side = _compare(qtbot, window, _site(window, blocks[same[0]]), _site(window, blocks[same[1]]))
    assert side.comparison.identical


def test_the_main_graph_shows_one_box_per_layer_call(qtbot, window: MainWindow, folded: dict[str, Path]):
    for model, classes in (("tiny_noopt", ("Block", "Attention")), ("t5", ("T5Block",))):
        _open(qtbot, window, folded[model])
        boxes = [item.node for item in window.center.graph.items_by_id.values()]
        calls = sorted(n.detail for n in boxes if n.kind == FUNCTION_CALL)
        assert calls == sorted(p for c in classes for p in _paths(model, c))
        assert all(n.label.startswith(f"{MODULE_DOMAIN}.") for n in boxes if n.kind == FUNCTION_CALL)


def test_closing_the_main_window_before_a_comparison_raises_nothing(qtbot, folded: dict[str, Path], tmp_path: Path):
    """The comparison window outlives the main window that opened it (its tree's compare helper is deleted
    first): closing it afterwards must not reach the deleted helper."""
    from PySide6.QtCore import QSettings

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    w.show()
    _open(qtbot, w, folded["tiny_noopt"])
    blocks = _paths("tiny_noopt", "Block")
    side = _compare(qtbot, w, _site(w, blocks[0]), _site(w, blocks[1]))
    w.close()
    w.deleteLater()
    qtbot.waitUntil(lambda: not isValid(w), timeout=10000)
    assert isValid(side)
    side.close()  # deleted on close
    qtbot.waitUntil(lambda: not isValid(side), timeout=10000)
    qtbot.wait(50)  # the deferred clean-up would run now


def test_export_compare_shows_a_change_inside_a_layer_in_its_module_function(qtbot, tmp_path: Path):
    """The flat export against a module fold of it with one Softmax axis changed in layer 1: the change row
    shows the flat side's aten call and, on the folded side, the module function the call now sits in (the
    attention of layer 1, by the call named after its module path), the changed Softmax marked on both."""
    from PySide6.QtCore import QThreadPool

    from inspector.core.model.calls import AtenCall
    from inspector.core.model.keys import FunctionKey
    from inspector.gui.compare import CompareWindow
    from inspector.gui.pairing import CHANGED

    proto = onnx.load(ZOO / "llama_gqa.onnx")
    layer = _paths("llama_gqa", "LlamaAttention")[1]
    softmax = next(n for n in proto.graph.node if n.op_type == "Softmax"
                   and any(p.key == "pkg.torch.onnx.name_scopes" and f"'{layer}'" in p.value for p in n.metadata_props))
    next(a for a in softmax.attribute if a.name == "axis").i = 0
    onnx.save(proto, tmp_path / "changed.onnx")
    folded, _ = fold_modules(open_index(tmp_path / "changed.onnx"), "LlamaDecoderLayer,LlamaAttention")
    onnx.save(folded, tmp_path / "folded.onnx")
    [callee] = [FunctionKey(n.domain, n.op_type, n.overload) for f in folded.functions for n in f.node
                if n.name == layer]
    w = CompareWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.pair_loaded, timeout=60000):
        w.open_pair(ZOO / "llama_gqa.onnx", tmp_path / "folded.onnx")
    rows = [w.changes.topLevelItem(i).child(j) for i in range(w.changes.topLevelItemCount())
            for j in range(w.changes.topLevelItem(i).childCount())]
    row = next(r for r in rows if "Softmax.axis" in r.text(0))
    assert f"[module call {layer} ({callee})]" in row.text(0)
    with qtbot.waitSignal(w.change_shown, timeout=60000):
        w.changes.setCurrentItem(row)
    assert isinstance(w.side_a.current_scope(), AtenCall) and w.side_b.current_scope() == callee
    marked = [{i for i, it in side.graph.items_by_id.items() if it.mark == CHANGED} for side in (w.side_a, w.side_b)]
    assert all(len(m) == 1 for m in marked)
    assert [side.graph.items_by_id[next(iter(m))].node.label for side, m in zip((w.side_a, w.side_b), marked,
                                                                                strict=True)] == ["Softmax"] * 2
    w.close()
    QThreadPool.globalInstance().waitForDone(30000)
