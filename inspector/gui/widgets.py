"""Small widgets: a label that elides instead of widening its window, sizing a top-level window to the screen it
opens on, a line edit that leaves the window's Ctrl shortcuts to the window, and a tree that says why it is empty."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFocusEvent, QGuiApplication, QKeyEvent, QPainter, QPaintEvent, QPalette, QResizeEvent
from PySide6.QtWidgets import QLabel, QLineEdit, QSizePolicy, QTreeView, QWidget

from inspector.gui.text import tooltip


class ElidedLabel(QLabel):
    """One line of plain text, elided (in the middle by default) to the width it is given; the whole text is in
    the tooltip. Its minimum width is small, so a long text never makes its window wider."""

    def __init__(self, text: str = "", mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle,
                 min_chars: int = 8) -> None:
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._full = ""
        self._mode = mode
        self._min_chars = min_chars
        self.set_full_text(text)

    def set_full_text(self, text: str, mode: Qt.TextElideMode | None = None) -> None:
        """Show ``text``, elided by ``mode`` from now on when one is given."""
        self._full = text
        if mode is not None:
            self._mode = mode
        self.setToolTip(tooltip(text) if text else "")
        self._elide()

    def full_text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().averageCharWidth() * self._min_chars, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        return QSize(min(self.fontMetrics().horizontalAdvance(self._full) + 4, 600), super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.width() - 2, 0)
        first_line = self._full.split("\n", 1)[0]
        self.setText(self.fontMetrics().elidedText(first_line, self._mode, width) if width else first_line)


def fit_to_screen(window: QWidget, width: int, height: int) -> None:
    """Resize ``window`` to ``width`` × ``height``, or to the available geometry of its screen when smaller."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        window.resize(width, height)
        return
    avail = screen.availableGeometry()
    frame_w, frame_h = 16, 40  # room for the window manager's frame and title bar, unknown before showing
    window.resize(min(width, avail.width() - frame_w), min(height, avail.height() - frame_h))


WINDOW_KEYS = {Qt.Key.Key_E, Qt.Key.Key_0, Qt.Key.Key_1, Qt.Key.Key_2, Qt.Key.Key_3}  # export, review


class LineEdit(QLineEdit):
    """A line edit that does not claim Ctrl+E (export) or Ctrl+0..3 (review): on X11, Qt's line edits take
    Ctrl+E as "end of line", which would swallow the window's shortcut while the box has focus."""

    def event(self, e: QEvent) -> bool:
        if (e.type() == QEvent.Type.ShortcutOverride and isinstance(e, QKeyEvent)
                and e.modifiers() == Qt.KeyboardModifier.ControlModifier and e.key() in WINDOW_KEYS):
            e.ignore()
            return False
        return super().event(e)


class HintedTreeView(QTreeView):
    """A tree view that, when it has no rows, says why (``hint``, asked at each paint) instead of showing a blank
    panel: a model without local functions or aten calls, or a filter that matches nothing. The hint is drawn as
    plain text, so nothing in it (a filter text, a file name) is read as markup."""

    def __init__(self, hint: Callable[[], str]) -> None:
        super().__init__()
        self._hint = hint
        self.focusing = False  # the focus is coming in (``focusInEvent``): a row made current now is no one's choice

    def focusInEvent(self, event: QFocusEvent) -> None:
        """Qt makes the first row current when a view without a current row gets the focus other than by a click (its
        window activated, Tab), and the app took that for a choice: switching back to the window left the main graph
        for the first family. ``focusing`` says it happens, for whoever follows the current row."""
        self.focusing = True
        try:
            super().focusInEvent(event)
        finally:
            self.focusing = False

    def empty_hint(self) -> str:
        """The text shown: the hint when the tree has no rows, else empty."""
        model = self.model()
        return self._hint() if model is None or model.rowCount() == 0 else ""

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        text = self.empty_hint()
        if not text:
            return
        painter = QPainter(self.viewport())
        painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(self.viewport().rect().adjusted(12, 12, -12, -12),
                         int(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap), text)
        painter.end()
