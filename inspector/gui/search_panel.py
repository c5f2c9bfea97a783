"""Search (Ctrl+F) over node names, op types, aten targets, function names and module paths.

Each result is named by what tells it apart: the module path (and FX name) of the aten call a node belongs to,
elided in the middle so the distinguishing end stays visible."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from inspector.core.keys import MAIN
from inspector.core.provenance import AtenCall
from inspector.core.search import Hit, SearchIndex
from inspector.gui.text import tooltip
from inspector.gui.widgets import LineEdit

KIND_TAGS = {"function": "fn", "aten_target": "aten", "module": "mod", "op_type": "op", "node": "node"}


class SearchPanel(QWidget):
    """Type to search; Up/Down move through results, Enter (or a click) jumps to the selected one."""

    jump = Signal(object)  # Hit

    def __init__(self) -> None:
        super().__init__()
        self.box = LineEdit(placeholderText="Search nodes, ops, aten targets, functions, modules…")
        self.box.setClearButtonEnabled(True)
        self.results = QListWidget()
        self.results.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.results.setUniformItemSizes(True)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.box)
        lay.addWidget(self.status)
        lay.addWidget(self.results)
        self._index: SearchIndex | None = None
        self._owners: dict[int, AtenCall] | None = None  # main-graph node -> its aten call, built on first use
        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self.run)
        self.box.textChanged.connect(lambda _t: self._timer.start())
        self.box.returnPressed.connect(self._enter)
        self.box.installEventFilter(self)
        self.results.itemActivated.connect(self._activated)
        self.results.itemClicked.connect(self._activated)  # Up/Down only move; Enter or a click jumps

    def set_index(self, index: SearchIndex | None) -> None:
        self._index = index
        self._owners = None
        self._timer.stop()
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
            call = self.owner(hit)
            place = f"{call.module_path or 'root'} › {call.name}" if call is not None else hit.where
            item = QListWidgetItem(f"{KIND_TAGS[hit.kind]}  {hit.text}  ·  {place}")
            item.setData(Qt.ItemDataRole.UserRole, hit)
            item.setToolTip(tooltip(f"{hit.kind}: {hit.text}\n{hit.where}"
                                    + (f"\nin {call.target} ({call.name}) of {call.module_path}" if call else "")))
            self.results.addItem(item)
        n = len(result.hits)
        more = f" (showing {n} of {result.total})" if result.truncated else ""
        self.status.setText(f"{n} result{'s' if n != 1 else ''}{more}")

    def owner(self, hit: Hit) -> AtenCall | None:
        """The aten call a hit belongs to: the call itself, or the call holding a main-graph node."""
        if isinstance(hit.ref, AtenCall):
            return hit.ref
        if self._index is None or hit.kind not in ("node", "op_type") or hit.scope != MAIN or not hit.path:
            return None
        if self._owners is None:
            self._owners = {p[0]: call for call in self._index.index.provenance.calls if call.scope == MAIN
                            for p in call.node_paths if p and isinstance(p[0], int)}
        first = hit.path[0]
        return self._owners.get(first) if isinstance(first, int) else None

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
