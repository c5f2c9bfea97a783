"""Every window and dialog opens, closes and opens again, three times over: the main window's file dialogs and its
"Compare with…" pick, the compare window, and the overload comparison by Ctrl+D and by right-click → Compare with….
A closed window is deleted (WA_DeleteOnClose): nothing may ask it anything afterwards (the second Ctrl+D once raised
``RuntimeError: Internal C++ object (OverloadCompareWindow) already deleted`` and opened nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")

import shiboken6
from PySide6.QtCore import QEvent, QItemSelectionModel, QPersistentModelIndex, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialog, QFileDialog, QInputDialog, QMenu

from inspector.gui.main_window import MainWindow
from inspector.gui.overload_compare import FamilyCompare
from tests.conftest import FIXTURES

ZOO = Path(__file__).resolve().parent / "zoo"


def _calls(window: MainWindow, name: str) -> list[Any]:
    assert window.index is not None
    return [c for c in window.index.provenance.calls if c.target == f"aten::{name}"]


def _select_two(window: MainWindow, a: Any, b: Any) -> None:
    """Ctrl+click two rows of the functions tree."""
    rows = []
    for obj in (a, b):
        assert window.select_in_tree(obj)
        rows.append(QPersistentModelIndex(window.family_view.currentIndex()))
    model = window.family_view.selectionModel()
    model.clearSelection()  # a plain click on the first, then a Ctrl+click on the second
    for row in rows:
        model.select(row, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)


def _when_shown(kind: type, act: Callable[[Any], None], seen: list[str]) -> None:
    """Once a modal widget (or popup) of ``kind`` is up, ``act`` on it; ``seen`` records its window title."""
    def poll() -> None:
        w = QApplication.activePopupWidget() if kind is QMenu else QApplication.activeModalWidget()
        if isinstance(w, kind) and w.isVisible():
            seen.append(w.windowTitle())
            act(w)
        else:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(0, poll)


def _closed(qtbot: Any, w: Any) -> None:
    """Ctrl+W in the window (its File → Close), and the window deleted."""
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5000)
    qtbot.keyClick(w, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert not w.isVisible()
    # deleted as the app's own event loop would delete it (a nested loop, as a test waits in, never does)
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not shiboken6.isValid(w)


def test_ctrl_d_then_ctrl_w_three_times_opens_a_new_comparison_each_time(qtbot, window: MainWindow):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(ZOO / "tiny_noopt.onnx")
    fc = window.findChild(FamilyCompare)
    assert fc is not None
    calls = _calls(window, "layer_norm")
    assert len(calls) >= 3
    pairs = [(calls[0], calls[1]), (calls[1], calls[2]), (calls[0], calls[2])]
    opened = []
    for a, b in pairs:
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=5000)
        _select_two(window, a, b)
        window.family_view.setFocus()
        qtbot.keyClick(window.family_view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
        assert fc.windows, "Ctrl+D opened nothing"
        ow = fc.windows[-1]
        assert ow not in opened and ow.isVisible()
        qtbot.waitUntil(lambda ow=ow: ow.ready, timeout=60000)
        assert ow.twin.side_a.current_scope() is a and ow.twin.side_b.current_scope() is b
        opened.append(ow)
        _closed(qtbot, ow)
        qtbot.waitUntil(lambda: fc.windows == [], timeout=5000)  # a deleted window is forgotten
    assert len(opened) == 3


# a popup menu on the offscreen platform: it cannot raise or grab the keyboard (the test platform, not the app)
@pytest.mark.qt_log_ignore(r"^This plugin does not support (raise\(\)|grabbing the keyboard|propagateSizeHints\(\))$")
def test_right_click_compare_with_three_times(qtbot, window: MainWindow):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "overloads.onnx")
    fc = window.findChild(FamilyCompare)
    assert fc is not None
    fam = next(f for f in window.index.families if f.name == "tr")
    titles: list[str] = []
    for k, overload in enumerate([fam.overloads[0], fam.overloads[1], fam.overloads[0]]):
        assert window.select_in_tree(overload)
        view = window.family_view
        pos = view.visualRect(view.currentIndex()).center()
        others = [label for label, _o in fc.siblings(overload)]

        def pick(menu: QMenu, choice: str = others[k]) -> None:
            action = next(a for a in menu.actions() if a.text() == "Compare with…")
            _when_shown(QInputDialog, lambda d: (d.setTextValue(choice), d.accept()), titles)
            menu.close()
            action.trigger()

        _when_shown(QMenu, pick, titles)
        fc._context_menu(pos)
        ow = fc.windows[-1]
        qtbot.waitUntil(lambda ow=ow: ow.ready, timeout=60000)
        assert ow.comparison is not None and others[k].removeprefix("call ") in ow.comparison.b.title
        _closed(qtbot, ow)
    assert titles.count("Compare with…") == 3


def test_the_compare_window_three_times(qtbot, window: MainWindow):
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "dynamo_block.onnx")
    for _ in range(3):
        compare = window.open_compare(FIXTURES / "dynamo_block_h4.onnx")
        assert compare is not None and compare.isVisible()
        with qtbot.waitSignal(compare.change_shown, timeout=60000):
            pass
        assert compare.pair is not None and compare.pair.a is window.index
        _closed(qtbot, compare)
        qtbot.waitUntil(lambda: window._compare_windows == [], timeout=5000)


def test_the_main_window_dialogs_three_times(qtbot, window: MainWindow, tmp_path: Path):
    model = tmp_path / "overloads.onnx"
    model.write_bytes((FIXTURES / "overloads.onnx").read_bytes())
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(model)
    seen: list[str] = []
    reject: Callable[[QDialog], None] = lambda d: d.reject()  # noqa: E731
    for _ in range(3):
        _when_shown(QFileDialog, reject, seen)
        window.choose_file()
        _when_shown(QFileDialog, reject, seen)
        window.compare_with()
        _when_shown(QFileDialog, reject, seen)
        window.export_report()
        _when_shown(QFileDialog, reject, seen)
        window.center.export_dialog()
    assert seen == ["Open ONNX model", "Compare with…", "Export report", "Export graph"] * 3
    # and once more, accepted: the dialogs still work after being closed three times
    out = tmp_path / "report.md"

    def accept(d: QFileDialog) -> None:
        d.selectFile(str(out))
        d.accept()

    _when_shown(QFileDialog, accept, seen)
    with qtbot.waitSignal(window.report_exported, timeout=60000):
        window.export_report()
    assert out.read_text().startswith("#")
    assert not QApplication.activeModalWidget()


def test_quit_closes_the_comparisons_it_opened_with_the_main_window(qtbot, window: MainWindow):
    """File > Quit in the main window: its model comparison and overload comparison close with it (Quit closed only the
    main window, and an open comparison kept the app running with no main window to return to)."""
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(ZOO / "tiny_noopt.onnx")
    compare = window.open_compare(ZOO / "tiny_noopt.onnx")
    assert compare is not None
    calls = _calls(window, "layer_norm")
    overload = window.family_compare.compare(calls[0], calls[1])
    assert overload is not None
    qtbot.waitUntil(lambda: overload.ready, timeout=60000)
    quit_action = next(a for m in window.menuBar().findChildren(QMenu) for a in m.actions() if a.text() == "&Quit")
    quit_action.trigger()
    assert not window.isVisible() and not compare.isVisible() and not overload.isVisible()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not shiboken6.isValid(compare) and not shiboken6.isValid(overload)


def test_quit_in_a_comparison_closes_every_window(qtbot, window: MainWindow):
    """File > Quit in the compare window (the only window of ``onnx-inspector A B``) closes it and the main window."""
    with qtbot.waitSignal(window.model_loaded, timeout=30000):
        window.open_path(FIXTURES / "dynamo_block.onnx")
    compare = window.open_compare(FIXTURES / "dynamo_block_h4.onnx")
    assert compare is not None
    with qtbot.waitSignal(compare.change_shown, timeout=60000):
        pass
    quit_action = next(a for m in compare.menuBar().findChildren(QMenu) for a in m.actions() if a.text() == "&Quit")
    quit_action.trigger()
    assert not compare.isVisible() and not window.isVisible()
