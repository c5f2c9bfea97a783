"""Message boxes that never render model text as markup, and the one question of where to write an output.

An output is never written over an input model, its external data or its reviews (``paths.check_output``). Qt's
save dialog asks "replace?" on its own for any existing file, so choosing the open model's name used to ask to
replace it and then refuse: the app's outputs ask here instead, refusing an input before anything is asked."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import check_output
from inspector.core.util.textsafe import one_line


def show_message(parent: QWidget, icon: QMessageBox.Icon, title: str, text: str) -> None:
    """A message box that shows ``text`` literally (error messages can quote model text, which may hold markup)."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.exec()


def confirm(parent: QWidget, title: str, text: str) -> bool:
    """A Yes/No question shown literally; True for Yes (No is the default)."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text,
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(QMessageBox.StandardButton.No)
    return box.exec() == QMessageBox.StandardButton.Yes


def output_path(parent: QWidget, title: str, suggested: str, filters: str, protected: Iterable[Path],
                what: str) -> Path | None:
    """Where to write ``what``, chosen in a save dialog: None when cancelled, when it would replace one of
    ``protected`` (said in a message, without asking first) or when the user does not want an existing file
    replaced."""
    chosen, _ = QFileDialog.getSaveFileName(parent, title, suggested, filters,
                                            options=QFileDialog.Option.DontConfirmOverwrite)
    if not chosen:
        return None
    path = Path(chosen)
    try:
        check_output(path, protected, what)
    except InspectorError as e:
        show_message(parent, QMessageBox.Icon.Warning, title, one_line(str(e), 300))
        return None
    if path.exists() and not confirm(parent, title, f"{path.name} already exists. Replace it?"):
        return None
    return path
