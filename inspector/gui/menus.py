"""The main window's File menu, and its Open Recent list (kept in the window's QSettings)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

if TYPE_CHECKING:
    from inspector.gui.main_window import MainWindow

MAX_RECENT = 10
FILE_FILTER = "ONNX models (*.onnx *.onnxtxt *.onnxtext *.txt);;All files (*)"


class RecentFiles:
    """The last ``MAX_RECENT`` models opened, newest first, as a menu that opens them."""

    def __init__(self, settings: QSettings, menu: QMenu, open_path: Callable[[str], None]) -> None:
        self.settings, self.menu, self._open = settings, menu, open_path
        self.refresh()

    def paths(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def remember(self, path: Path) -> None:
        recent = [str(path), *[p for p in self.paths() if p != str(path)]][:MAX_RECENT]
        self.settings.setValue("recent", recent)
        self.refresh()

    def refresh(self) -> None:
        self.menu.clear()
        for p in self.paths():
            act = self.menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self._open(p))
        self.menu.setEnabled(bool(self.paths()))


def add_action(menu: QMenu, text: str, shortcut: QKeySequence | QKeySequence.StandardKey,
               slot: Callable[[], object]) -> QAction:
    """An action with a shortcut, in ``menu`` (its shortcut works anywhere in the menu's window)."""
    action = QAction(text, menu.parentWidget() or menu)
    action.setShortcut(shortcut)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_file_menu(window: MainWindow) -> RecentFiles:
    """File: Open, Open Recent, Compare with, Compare Two Selected (two overloads or calls of one family, side by
    side), Export Report, Find, Quit."""
    file_menu = window.menuBar().addMenu("&File")

    def add(text: str, shortcut: QKeySequence | QKeySequence.StandardKey, slot: Callable[[], object]) -> None:
        add_action(file_menu, text, shortcut, slot)

    add("&Open…", QKeySequence.StandardKey.Open, window.choose_file)
    recent = RecentFiles(window.settings, file_menu.addMenu("Open &Recent"), window.open_path)
    file_menu.addSeparator()
    add("&Compare with…", QKeySequence("Ctrl+Shift+O"), window.compare_with)
    from inspector.gui.overload_compare import FamilyCompare  # it builds its own window's menu from here

    family_compare = FamilyCompare(window)  # the functions tree's two-row selection and context menu
    add("Compare Two &Selected Side by Side", QKeySequence("Ctrl+D"), family_compare.compare_selected)
    add("&Export Report…", QKeySequence("Ctrl+E"), window.export_report)
    add("&Find…", QKeySequence.StandardKey.Find, window.start_search)
    add("&Quit", QKeySequence.StandardKey.Quit, window.close)
    return recent
