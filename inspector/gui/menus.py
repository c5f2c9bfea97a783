"""The main window's File menu, built from the callables it runs, and its Open Recent list (kept in QSettings)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar

MAX_RECENT = 10
FILE_FILTER = "ONNX models (*.onnx *.onnxtxt *.onnxtext *.txt);;All files (*)"


class RecentFiles:
    """The last ``MAX_RECENT`` models opened, newest first, as a menu that opens them."""

    def __init__(self, settings: QSettings, menu: QMenu, open_path: Callable[[str], object]) -> None:
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
    """An action with a shortcut, in ``menu`` (its shortcut works anywhere in the menu's window). A standard key
    gets all its bindings: ``QKeySequence(Close)`` alone is the first, Ctrl+F4 on the offscreen platform, where
    Ctrl+W did nothing."""
    action = QAction(text, menu.parentWidget() or menu)
    if isinstance(shortcut, QKeySequence.StandardKey):
        action.setShortcuts(shortcut)
    else:
        action.setShortcut(shortcut)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


@dataclass(frozen=True, slots=True)
class FileActions:
    """What the File menu's items do (git-cola's small builders: the menu is built from callables, not from the
    window that owns them)."""

    choose_file: Callable[[], object]
    open_path: Callable[[str], object]
    compare_with: Callable[[], object]
    compare_selected: Callable[[], object]
    export_report: Callable[[], object]
    find: Callable[[], object]
    quit: Callable[[], object]


def build_file_menu(bar: QMenuBar, settings: QSettings, actions: FileActions) -> RecentFiles:
    """File: Open, Open Recent, Compare with, Compare Two Selected (two overloads or calls of one family, side by
    side), Export Report, Find, Quit."""
    file_menu = bar.addMenu("&File")

    def add(text: str, shortcut: QKeySequence | QKeySequence.StandardKey, slot: Callable[[], object]) -> None:
        add_action(file_menu, text, shortcut, slot)

    add("&Open…", QKeySequence.StandardKey.Open, actions.choose_file)
    recent = RecentFiles(settings, file_menu.addMenu("Open &Recent"), actions.open_path)
    file_menu.addSeparator()
    add("&Compare with…", QKeySequence("Ctrl+Shift+O"), actions.compare_with)
    add("Compare Two &Selected Side by Side", QKeySequence("Ctrl+D"), actions.compare_selected)
    add("&Export Report…", QKeySequence("Ctrl+E"), actions.export_report)
    add("&Find…", QKeySequence.StandardKey.Find, actions.find)
    add("&Quit", QKeySequence.StandardKey.Quit, actions.quit)
    return recent
