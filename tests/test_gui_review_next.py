"""A review goes through the list from the keyboard: Ctrl+N shows the next unreviewed item of the Review list (after
the one the review bar marks, in the list's order, within its filter), Ctrl+1 marks it; at the end the status bar says
none is left. GPT-2 from the zoo (torch 2.13): every item ends up ok in the sidecar beside the copy, each once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.util.paths import sidecar_path
from tests.conftest import open_copy

CTRL = Qt.KeyboardModifier.ControlModifier


def _next(qtbot: Any, window: Any) -> Any:
    """Ctrl+N, as a user presses it; the item the review bar then marks."""
    before = window.session.target
    qtbot.keyClick(window, Qt.Key.Key_N, CTRL)
    qtbot.waitUntil(lambda: window.session.target is not None and window.session.target is not before,
                    timeout=30000)
    return window.session.target.item


def test_ctrl_n_goes_through_the_unreviewed_items_in_the_lists_order(qtbot, window, tmp_path: Path):
    qtbot.keyClick(window, Qt.Key.Key_N, CTRL)  # (no model yet)
    assert window.statusBar().currentMessage() == "Open a model to review it"
    model = open_copy(qtbot, window, tmp_path, "gpt2")
    session = window.session
    order = [item.key for item, review in session.review_list if review.status == "unreviewed"]
    assert len(order) == len(session.review_list) == 47
    assert "(Ctrl+N)" in window.review_bar.next.toolTip()
    # nothing marked yet: the list's first item, then (marked ok) the one after it; the list's current row is the
    # item the review bar marks, so it shows where Ctrl+N goes on from
    assert _next(qtbot, window).key == order[0]
    assert window.review_panel.tree.currentItem().data(0, Qt.ItemDataRole.UserRole).key == order[0]
    qtbot.keyClick(window, Qt.Key.Key_1, CTRL)
    assert _next(qtbot, window).key == order[1]
    # within the filter: the first unreviewed item of the family typed
    window.filter_box.set_now("tanh")
    tanh = [k for k in order if k.family == "aten::tanh"]
    assert tanh and _next(qtbot, window).key == tanh[0]
    window.review_bar.buttons["ok"].click()
    if len(tanh) == 1:  # (every item the filter keeps is reviewed: said so, not "none left")
        qtbot.keyClick(window, Qt.Key.Key_N, CTRL)
        assert window.statusBar().currentMessage() == "No unreviewed item matches the filter"
    window.filter_box.set_now("")
    # to the end: each item marked once, in order after the tanh item, wrapping round to those before it
    marked = [order[0], tanh[0]]
    _next(qtbot, window)
    while True:
        qtbot.keyClick(window, Qt.Key.Key_1, CTRL)
        marked.append(session.target.item.key)
        before = session.target
        qtbot.keyClick(window, Qt.Key.Key_N, CTRL)
        if session.target is before:  # (none left: the target stays)
            break
        qtbot.waitUntil(lambda b=before: session.target is not None and session.target is not b, timeout=30000)
    assert window.statusBar().currentMessage() == "No unreviewed item left in the Review list"
    start = order.index(tanh[0])
    assert marked[1:] == [*order[start:], *order[1:start]] and sorted(map(str, marked)) == sorted(map(str, order))
    assert len(tanh) == 1
    saved = json.loads(sidecar_path(model).read_text())["reviews"]
    assert len(saved) == 47 and {r["status"] for r in saved.values()} == {"ok"}


def test_ctrl_n_before_the_list_is_made_says_so(qtbot, window, tmp_path: Path):
    """A 100k-node export's Review list is made for seconds after it opens: until then Ctrl+N says the list is not
    made yet, not that no item is left."""
    open_copy(qtbot, window, tmp_path, "gpt2")
    panel, items = window.review_panel, window.session.review_list
    panel.set_items([], listed=False)
    assert panel.jump_next(None) == "The Review list is not made yet: try again in a moment"
    panel.set_items(items, listed=True)
    with qtbot.waitSignal(panel.jump, timeout=1000) as jumped:
        assert panel.jump_next(None) == ""
    assert jumped.args[0].key == items[0][0].key


def test_a_clicked_button_keeps_the_focus_while_the_next_body_is_analysed(qtbot, window, tmp_path: Path):
    """Ok clicked, then Ctrl+N to another family's body: while that body is analysed the bar has no target and its
    buttons are disabled, and Qt moved the focus off the disabled button along the tab chain, into the filter box
    with its text selected, so the next key typed replaced the filter. The bar now holds the focus meanwhile and
    gives it back to the button."""
    open_copy(qtbot, window, tmp_path, "gpt2")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    window.filter_box.setText("a")  # (gpt2's families with an "a": add, addmm, baddbmm, …)
    first = _next(qtbot, window)
    ok = window.review_bar.buttons["ok"]
    for _step in range(4):
        ok.setFocus()
        qtbot.waitUntil(ok.hasFocus, timeout=1000)
        ok.click()
        item = _next(qtbot, window)
        qtbot.waitUntil(lambda: ok.isEnabled(), timeout=30000)
        assert ok.hasFocus(), type(window.focusWidget()).__name__
        qtbot.keyClick(window.focusWidget(), Qt.Key.Key_X)
        assert window.filter_box.text() == "a"
    assert item.key.family != first.key.family  # (the steps went on to another family's body)


def test_a_flagged_item_stays_findable_in_the_functions_tree(qtbot, window, tmp_path: Path):
    """The Review column counted specialised values and open items only: once an item was marked suspicious or wrong
    its overload's row read as one with nothing left, and the flag could be found only in the Review list. It now
    counts them, first (a narrow column keeps them), in the review panel's colours. GPT-2's aten::pow (its gelu's
    cube): one body with one specialised value, 2 items."""
    from inspector.gui.theme import STATUS_COLOURS

    open_copy(qtbot, window, tmp_path, "gpt2")
    window.filter_box.set_now("pow")
    proxy = window.family_filter
    family = proxy.index(0, 0)
    overload = proxy.index(0, 2, family)
    row = proxy.index(0, 2)
    assert family.data() == "aten::pow" and row.data() == "1 spec · 2 open" == overload.data()
    assert row.data(Qt.ItemDataRole.ForegroundRole) is None
    _next(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_2, CTRL)  # suspicious
    qtbot.waitUntil(lambda: proxy.index(0, 2).data() == "1 spec · 1 susp · 1 open", timeout=10000)
    assert proxy.index(0, 2).data(Qt.ItemDataRole.ToolTipRole) == (
        "1 specialised value · 1 marked suspicious · 1 unreviewed item")
    assert proxy.index(0, 2).data(Qt.ItemDataRole.ForegroundRole).color().name() == STATUS_COLOURS["suspicious"]
    _next(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_3, CTRL)  # wrong: its colour wins
    qtbot.waitUntil(lambda: proxy.index(0, 2).data() == "1 spec · 1 wrong · 1 susp", timeout=10000)
    overload = proxy.index(0, 2, proxy.index(0, 0))
    assert overload.data() == "1 spec · 1 wrong · 1 susp"
    assert overload.data(Qt.ItemDataRole.ForegroundRole).color().name() == STATUS_COLOURS["wrong"]
    # the Review list shows what was flagged, whatever the filter: the two, and says how many of each there are
    panel = window.review_panel
    window.filter_box.set_now("")
    panel.showing.setCurrentIndex(panel.showing.findData("flagged"))
    flagged = [panel.tree.topLevelItem(k).child(j) for k in range(panel.tree.topLevelItemCount())
               for j in range(panel.tree.topLevelItem(k).childCount())]
    assert [(row.parent().text(0), row.text(1)) for row in flagged] == [("aten::pow", "suspicious"),
                                                                        ("aten::pow", "wrong")]
    assert panel.summary.text() == "45 of 47 unreviewed · 1 wrong · 1 suspicious"
    window.filter_box.set_now("pow")
    window.review_bar.buttons["ok"].click()  # the wrong one is ok after all: only the suspicious one is flagged
    qtbot.waitUntil(lambda: proxy.index(0, 2).data() == "1 spec · 1 susp", timeout=10000)
    assert proxy.index(0, 2).data(Qt.ItemDataRole.ForegroundRole).color().name() == STATUS_COLOURS["suspicious"]
    assert panel.tree.topLevelItem(0).childCount() == 1
