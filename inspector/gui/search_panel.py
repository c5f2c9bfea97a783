"""Search (Ctrl+F) over node names, op types, aten targets, function names and module paths."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from inspector.core.search import Hit, SearchIndex
from inspector.gui.text import tooltip


class SearchPanel(QWidget):
    """Type to search; Up/Down move through results, Enter (or a click) jumps to the selected one."""

    jump = Signal(object)  # Hit

    def __init__(self) -> None:
        super().__init__()
        self.box = QLineEdit(placeholderText="Search nodes, ops, aten targets, functions, modules…")
        self.box.setClearButtonEnabled(True)
        self.results = QListWidget()
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.box)
        lay.addWidget(self.status)
        lay.addWidget(self.results)
        self._index: SearchIndex | None = None
        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self.run)
        self.box.textChanged.connect(lambda _t: self._timer.start())
        self.box.returnPressed.connect(self._enter)
        self.box.installEventFilter(self)
        self.results.itemActivated.connect(self._activated)
        self.results.currentItemChanged.connect(lambda cur, _prev: self._activated(cur) if cur else None)

    def set_index(self, index: SearchIndex | None) -> None:
        self._index = index
        self.results.clear()
        self.status.setText("")

    def focus(self) -> None:
        self.box.setFocus()
        self.box.selectAll()

    def run(self) -> None:
        self.results.clear()
        if self._index is None or not self.box.text().strip():
            self.status.setText("")
            return
        result = self._index.search(self.box.text())
        for hit in result.hits:
            item = QListWidgetItem(f"{hit.kind:<11} {hit.text}   — {hit.where}")
            item.setData(Qt.ItemDataRole.UserRole, hit)
            item.setToolTip(tooltip(hit.where))
            self.results.addItem(item)
        more = f" (showing {len(result.hits)} of {result.total})" if result.truncated else ""
        self.status.setText(f"{len(result.hits)} results{more}")

    def _enter(self) -> None:
        self._timer.stop()
        if self.results.count() == 0:
            self.run()
        if self.results.count():
            row = max(self.results.currentRow(), 0)
            self.results.setCurrentRow(row)
            self._activated(self.results.item(row))

    def eventFilter(self, obj: object, event: object) -> bool:
        if (obj is self.box and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up) and self.results.count()):
            step = 1 if event.key() == Qt.Key.Key_Down else -1
            row = min(max(self.results.currentRow() + step, 0), self.results.count() - 1)
            self.results.setCurrentRow(row)
            return True
        return super().eventFilter(obj, event)  # type: ignore[arg-type]

    def _activated(self, item: QListWidgetItem | None) -> None:
        if item is None:
            return
        hit = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(hit, Hit):
            self.jump.emit(hit)
