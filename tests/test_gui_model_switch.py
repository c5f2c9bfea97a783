"""Opening another model forgets the previous one's state; a review is bound to the model it was made in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt, QThreadPool

from inspector.core.util.paths import sidecar_path
from inspector.gui.main_window import MainWindow
from tests.conftest import FIXTURES


def _open(qtbot, window: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(path)


def _overload_row(window: MainWindow, family: str, overload: str):
    proxy = window.family_filter
    window.filter_box.set_now(family)
    fam = next(proxy.index(r, 0) for r in range(proxy.rowCount()) if proxy.index(r, 0).data() == family)
    return next(proxy.index(r, 0, fam) for r in range(proxy.rowCount(fam))
                if proxy.index(r, 0, fam).data() == overload)


def _press_wrong(qtbot, window: MainWindow) -> None:
    window.review_bar.buttons["wrong"].click()
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    qtbot.wait(50)


@pytest.mark.parametrize("wait_for_selection", [True, False], ids=["selection-shown", "selection-in-flight"])
def test_a_review_target_never_follows_into_another_model(qtbot, window, tmp_path: Path, wait_for_selection):
    # B is a copy of A under another name: the same fingerprints, so only the binding to the model tells them apart
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", a)
    shutil.copy(FIXTURES / "overloads.onnx", b)
    _open(qtbot, window, a)
    row = _overload_row(window, "local.tr", "perm_0231")
    if wait_for_selection:
        with qtbot.waitSignal(window.selection_shown, timeout=30000):
            window.family_view.setCurrentIndex(row)
        assert window.review_bar.buttons["wrong"].isEnabled()
        window.search_panel.box.setText("Transpose")
        window.search_panel.run()
        assert window.search_panel.results.count()
    else:
        window.family_view.setCurrentIndex(row)  # its body is analysed while B opens

    _open(qtbot, window, b)
    QThreadPool.globalInstance().waitForDone(30000)
    qtbot.wait(50)  # deliver late results of A's jobs, if any
    # every per-model state is B's or empty
    assert window.windowTitle().startswith("b.onnx")
    assert window.filter_box.text() == "" and window.search_panel.box.text() == ""
    assert window.search_panel.results.count() == 0
    assert window.session.selection is None and window.session.target is None
    assert not window.review_bar.buttons["wrong"].isEnabled() and not window.review_bar.note.isEnabled()
    assert not window.family_view.currentIndex().isValid()
    assert window.trees.currentWidget() is window.family_view  # not the previous model's search results
    assert not window.center.back_button.isEnabled()
    assert window.review_panel.items() and all(i.family.family in window.index.families
                                               for i, _r in window.review_panel.items())

    _press_wrong(qtbot, window)
    assert not sidecar_path(a).exists() and not sidecar_path(b).exists()

    # B's own overload, selected in B, is reviewable and goes to B's sidecar only
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(_overload_row(window, "local.tr", "perm_0231"))
    with qtbot.waitSignal(window.review_saved, timeout=5000):
        window.review_bar.buttons["wrong"].click()
    assert sidecar_path(b).exists() and not sidecar_path(a).exists()
    assert '"wrong"' in sidecar_path(b).read_text()


def test_a_stale_target_cannot_write(qtbot, window, tmp_path: Path):
    """Even a target left over by a code path that forgets to reset it is refused: it names its own store."""
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    shutil.copy(FIXTURES / "overloads.onnx", a)
    shutil.copy(FIXTURES / "overloads.onnx", b)
    _open(qtbot, window, a)
    with qtbot.waitSignal(window.selection_shown, timeout=30000):
        window.family_view.setCurrentIndex(_overload_row(window, "local.tr", "perm_0231"))
    stale = window.session.target
    assert stale is not None
    _open(qtbot, window, b)
    window.session.target = stale
    window.session.set_review("wrong", "")
    assert not sidecar_path(a).exists() and not sidecar_path(b).exists()
    assert window.session.target is None
