"""The functions tree's filter box: debounced, and it only filters (changing the rows never navigates)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from inspector.gui.family_model import FamilyFilter
from inspector.gui.widgets import LineEdit

DEBOUNCE_MS = 200


class FilterBox(LineEdit):
    """Typing restarts a 200 ms timer; the filter is applied when it fires (or at once by ``apply``). While
    rows come and go, ``filtering`` is True, so the tree's current-row signal can be told from a user's choice."""

    def __init__(self, proxy: FamilyFilter, parent: QObject | None = None) -> None:
        super().__init__(placeholderText="Filter functions, overloads, aten targets…")
        self.setClearButtonEnabled(True)
        self.proxy = proxy
        self.filtering = False
        self.timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.timer.timeout.connect(self.apply)
        self.textChanged.connect(lambda _t: self.timer.start())

    def apply(self) -> None:
        self.timer.stop()
        if self.proxy.filterRegularExpression().pattern() == _pattern(self.text()):
            return
        self.filtering = True
        try:
            self.proxy.setFilterFixedString(self.text())
        finally:
            self.filtering = False

    def set_now(self, text: str) -> None:
        """Set the text and filter without waiting (tests, jumps that must reveal a row)."""
        self.setText(text)
        self.apply()


def _pattern(text: str) -> str:
    from PySide6.QtCore import QRegularExpression

    return QRegularExpression.escape(text)
