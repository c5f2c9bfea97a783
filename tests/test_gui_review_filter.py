"""The filter box above the tabs filters the Review list as it filters the Functions tree: typed on the Functions
tab, the Review tab then lists only the items of matching families (or whose label or note matches); cleared, all
again. It filtered the Functions tree alone, so the Review tab listed every item under a box that said otherwise.
GPT-2 from the zoo."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from tests.conftest import ZOO


def _families(tree) -> list[str]:
    return [tree.topLevelItem(k).text(0) for k in range(tree.topLevelItemCount())]


def _rows(tree) -> int:
    return sum(tree.topLevelItem(k).childCount() for k in range(tree.topLevelItemCount()))


def _open_gpt2(qtbot, window, tmp_path):
    """A copy of the zoo's GPT-2 opened, its reviews listed; the Review panel."""
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    return window.review_panel


def test_typing_a_filter_lists_only_the_matching_review_items_and_clearing_it_lists_all(qtbot, window, tmp_path):
    panel = _open_gpt2(qtbot, window, tmp_path)
    items = panel.items()
    everything = _families(panel.tree)
    assert len(everything) == 11 and _rows(panel.tree) == len(items) == 47
    # typed as a user types it, on the Functions tab, in another case than the family's name
    window.filter_box.setFocus()
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        qtbot.keyClicks(window.filter_box, "LAYER_norm")
    window.trees.setCurrentWidget(panel)
    expected = [i for i, _r in items if "layer_norm" in i.family.family.label]
    assert _families(panel.tree) == ["aten::layer_norm"] and _rows(panel.tree) == len(expected) == 3
    listed = [panel.tree.topLevelItem(0).child(j).data(0, Qt.ItemDataRole.UserRole) for j in range(3)]
    assert [i.key for i in listed] == [i.key for i in expected]
    assert panel.summary.text() == "47 of 47 unreviewed · filter: 3 (3 unreviewed)"
    # a call's name finds the items of its body, as it finds the call's row in the Functions tree: the body of GPT-2's
    # two tanh calls shows "e.g. tanh" alone
    window.filter_box.set_now("tanh_1")
    assert _families(panel.tree) == ["aten::tanh"] and _rows(panel.tree) == 1
    assert "tanh_1" not in panel.tree.topLevelItem(0).child(0).text(0)
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        window.filter_box.clear()
    assert _families(panel.tree) == everything and _rows(panel.tree) == 47
    assert panel.summary.text() == "47 of 47 unreviewed"


def test_a_note_matches_the_filter_and_a_new_model_starts_unfiltered(qtbot, window, tmp_path):
    panel = _open_gpt2(qtbot, window, tmp_path)
    tanh = next(i for i, _r in panel.items() if i.family.family.label == "aten::tanh")
    row = next(panel.tree.topLevelItem(k).child(0) for k in range(panel.tree.topLevelItemCount())
               if panel.tree.topLevelItem(k).text(0) == "aten::tanh")
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        panel.tree.itemActivated.emit(row, 0)
    assert window.session.target is not None and window.session.target.item.key == tanh.key
    window.review_bar.note.setText("gelu's cube: check <approximate>")
    window.review_bar.buttons["suspicious"].click()
    panel.showing.setCurrentIndex(panel.showing.findData("all"))
    window.filter_box.set_now("GELU'S CUBE")  # (reviewed: hidden while the list shows the unreviewed, but it matches)
    panel.showing.setCurrentIndex(panel.showing.findData("unreviewed"))
    assert _rows(panel.tree) == 0 and panel.summary.text().endswith(" · 1 suspicious · filter: 1 (0 unreviewed)")
    panel.showing.setCurrentIndex(panel.showing.findData("all"))
    assert _families(panel.tree) == ["aten::tanh"] and _rows(panel.tree) == 1
    shown = panel.tree.topLevelItem(0).child(0)
    assert shown.text(1) == "suspicious" and shown.text(2) == "gelu's cube: check <approximate>"
    # another model: its list is whole (the box is cleared with the model's filter)
    other = tmp_path / "bert.onnx"
    shutil.copy(ZOO / "bert.onnx", other)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(other)
    assert window.filter_box.text() == "" and _rows(panel.tree) == len(panel.items()) > 1


def test_a_module_path_lists_the_items_of_the_calls_made_in_that_module(qtbot, window, tmp_path):
    # typing a module's path keeps the calls made in it in the Functions tree (their rows read "name  (module)");
    # the Review list then lists the items of those calls' bodies. It listed none: it read names, not module paths
    panel = _open_gpt2(qtbot, window, tmp_path)
    items = panel.items()
    window.filter_box.setFocus()
    with qtbot.waitSignal(window.filter_box.changed, timeout=10000):
        qtbot.keyClicks(window.filter_box, "H.1.MLP.act")
    # the truth: the module path torch wrote in each call's name_scopes metadata
    in_module = {id(c) for c in window.session.index.provenance.calls if "h.1.mlp.act" in c.module_path}
    assert len(in_module) == 8
    expected = [i for i, _r in items if i.body is not None and any(id(m) in in_module for m in i.body.members)]
    listed = [panel.tree.topLevelItem(k).child(j).data(0, Qt.ItemDataRole.UserRole)
              for k in range(panel.tree.topLevelItemCount()) for j in range(panel.tree.topLevelItem(k).childCount())]
    assert [i.key for i in listed] == [i.key for i in expected]
    assert _families(panel.tree) == ["aten::add", "aten::mul", "aten::pow", "aten::tanh"]
    assert panel.summary.text() == f"47 of 47 unreviewed · filter: {len(expected)} ({len(expected)} unreviewed)"
    # a module of no call of this model lists nothing, as the Functions tree shows nothing
    window.filter_box.set_now("h.7.mlp")
    assert _rows(panel.tree) == 0 and panel.summary.text() == "47 of 47 unreviewed · filter: 0 (0 unreviewed)"
    window.filter_box.set_now("")
    assert _rows(panel.tree) == 47
