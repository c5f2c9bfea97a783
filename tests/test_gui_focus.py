"""The focus coming into a tree is no choice: Qt makes a tree's first row current when the tree gets the focus without a
click (its window activated, Tab) and has no current row, and the app followed that row. Clicking an overload's arrow
in a window not yet active, or coming back to the window, left the main graph for the first family (t5's aten::add).
t5 from the zoo."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import QApplication

from inspector.core.model.keys import MAIN
from tests.conftest import open_copy


@pytest.mark.parametrize("reason", [Qt.FocusReason.ActiveWindowFocusReason, Qt.FocusReason.TabFocusReason])
def test_the_focus_coming_into_a_tree_leaves_the_graph_where_it_is(qtbot, window, tmp_path, reason):
    open_copy(qtbot, window, tmp_path, "t5")
    assert window.center.current_scope() == MAIN
    chosen: list[object] = []
    window.left.chosen.connect(chosen.append)
    for view in (window.family_view, window.module_view):
        window.trees.setCurrentWidget(view)
        assert not view.currentIndex().isValid() or view is window.module_view
        QApplication.sendEvent(view, QFocusEvent(QEvent.Type.FocusIn, reason))
        qtbot.wait(50)
    assert chosen == [] and window.center.current_scope() == MAIN
    assert window.family_view.currentIndex().isValid()  # (Qt's current row, for the keyboard: no navigation)
    # a click on a row is a choice, as before
    first = window.family_filter.index(0, 0)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.trees.setCurrentWidget(window.family_view)
        rect = window.family_view.visualRect(window.family_filter.index(0, 0, first))
        qtbot.mouseClick(window.family_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert chosen and window.center.current_scope() != MAIN
