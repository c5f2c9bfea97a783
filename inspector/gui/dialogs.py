"""Message boxes that never render model text as markup."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def show_message(parent: QWidget, icon: QMessageBox.Icon, title: str, text: str) -> None:
    """A message box that shows ``text`` literally (error messages can quote model text, which may hold markup)."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.exec()
