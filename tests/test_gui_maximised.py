"""A main window closed maximised opens maximised the next time (its settings remember it); one closed at its
normal size opens at its normal size."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings

from inspector.gui.main_window import MainWindow


def _window(qtbot, settings: Path) -> MainWindow:
    w = MainWindow(QSettings(str(settings), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    return w


def test_the_maximised_state_is_remembered_across_windows(qtbot, tmp_path: Path):
    settings = tmp_path / "settings.ini"
    first = _window(qtbot, settings)
    first.show_as_before()
    assert not first.isMaximized()
    first.showMaximized()
    first.close()
    second = _window(qtbot, settings)
    second.show_as_before()
    assert second.isMaximized()
    second.showNormal()
    second.close()
    third = _window(qtbot, settings)
    third.show_as_before()
    assert not third.isMaximized() and third.isVisible()
    third.close()
