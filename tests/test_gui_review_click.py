"""The Review list jumps on a single click, as the Search list does, and stays on the Review tab, so the next
open item is one click away (it needed a double-click, then showed the Functions tab). GPT-2 from the zoo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from inspector.core.model.calls import AtenCall
from inspector.core.specialise.specialiser import SpecialisedValue
from tests.conftest import ZOO


def test_one_click_on_two_review_rows_jumps_to_each_and_stays_on_the_review_tab(qtbot, window, tmp_path: Path):
    model = tmp_path / "gpt2.onnx"
    shutil.copy(ZOO / "gpt2.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    window.trees.setCurrentWidget(window.review_panel)
    tree = window.review_panel.tree
    rows = []
    for k in range(tree.topLevelItemCount()):
        family = tree.topLevelItem(k)
        rows += [family.child(j) for j in range(family.childCount())
                 if isinstance(family.child(j).data(0, Qt.ItemDataRole.UserRole).obj, SpecialisedValue)][:1]
    assert len(rows) >= 2
    for row in rows[:2]:
        item = row.data(0, Qt.ItemDataRole.UserRole)
        tree.scrollToItem(row)
        with qtbot.waitSignal(window.selection_shown, timeout=30000):
            qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=tree.visualItemRect(row).center())
        assert window.session.target is not None and window.session.target.item.obj is item.obj
        assert isinstance(window.center.current_scope(), AtenCall)
        assert window.trees.currentWidget() is window.review_panel
        assert tree.currentItem() is row
