"""Search (Ctrl+F) over node names, op types, aten targets, function names, module paths, stack traces and
node metadata.

Each result says where it matched (name, op, target, module, function, stack trace, metadata) and is named by
what tells it apart: the module path (and FX name) of the aten call a node belongs to, elided so that what
differs from the other results stays visible (``gui/distinct.py``). Typing searches off the GUI thread (a
100k-node export's first query reads every node's metadata, about a second); a result that arrives after the text
has changed is dropped."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget
from shiboken6 import isValid

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN
from inspector.core.model.walk import NodePath
from inspector.core.search import NODE_KINDS, Hit, SearchIndex, SearchResult, around
from inspector.core.util.units import plural
from inspector.gui.analysis import main_call_owners
from inspector.gui.distinct import use_distinct_elision
from inspector.gui.text import tooltip
from inspector.gui.widgets import LineEdit
from inspector.gui.worker import Jobs, checkpoint

MATCH_CHARS = 36  # of a stack-trace or metadata line in a result's row, around the match (the tooltip has it whole)

class SearchPanel(QWidget):
    """Type to search; Up/Down move through results, Enter (or a click) jumps to the selected one."""

    jump = Signal(object)  # Hit
    shown = Signal(str)  # the rows for this text are in the list (searches off the GUI thread report later)

    def __init__(self) -> None:
        super().__init__()
        self.box = LineEdit(placeholderText="Search names, ops, aten targets, modules, stack traces…")
        self.box.setClearButtonEnabled(True)
        self.results = QListWidget()
        self.results.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # Qt's, for rows the delegate leaves long
        self.names = use_distinct_elision(self.results)  # results share a module path: keep what differs
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.results.setUniformItemSizes(True)
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.box)
        lay.addWidget(self.status)
        lay.addWidget(self.results)
        self.jobs = Jobs()
        self._index: SearchIndex | None = None
        self._owners: dict[NodePath, AtenCall] | None = None  # main-graph node -> its aten call, made on first use
        self._shown: str | None = None  # the text the rows are for
        self._jump_when_shown: str | None = None  # Enter was pressed before the rows for this text came
        self._generation = 0  # bumped per model: a search of the previous model reports to no one
        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self._start)
        self.box.textChanged.connect(lambda _t: self._timer.start())
        self.box.returnPressed.connect(self._enter)
        self.box.installEventFilter(self)
        self.results.itemActivated.connect(self._activated)
        self.results.itemClicked.connect(self._activated)  # Up/Down only move; Enter or a click jumps

    def set_index(self, index: SearchIndex | None) -> None:
        self._generation += 1
        self._index = index
        self._shown = self._jump_when_shown = None
        self._owners = None
        self._timer.stop()
        self.results.clear()
        self.status.setText("")

    def focus(self) -> None:
        self.box.setFocus()
        self.box.selectAll()

    def run(self) -> None:
        """Search for the box's text now, on this thread (Enter with no results yet; tests)."""
        self._timer.stop()
        text = self.box.text()
        if self._index is None or not text.strip():
            self._show(None)
            return
        result = self._index.search(text)
        self._owners_of(self._index)
        self._show(result, text)

    def _start(self) -> None:
        """Search for the box's text on a worker thread; the rows are made when it reports."""
        index, text, generation = self._index, self.box.text(), self._generation
        if index is None or not text.strip():
            self._show(None)
            return

        def work() -> SearchResult:
            index.build(progress=checkpoint)  # (once) in steps: the GUI thread runs between them
            result = index.search(text)
            self._owners_of(index)
            return result

        def done(result: SearchResult) -> None:
            # else the panel is gone, another model is shown, or a newer search is on its way
            if isValid(self) and generation == self._generation and text == self.box.text():
                self._show(result, text)

        self.jobs.run(work, done)

    def _owners_of(self, index: SearchIndex) -> dict[NodePath, AtenCall]:
        """Main-graph node -> its aten call (one pass over the calls; made off the GUI thread when typing)."""
        owners = self._owners
        if owners is None or index is not self._index:
            owners = main_call_owners(index.index)
            if index is self._index:
                self._owners = owners
        return owners

    def _show(self, result: SearchResult | None, text: str | None = None) -> None:
        self.results.clear()
        self._shown = text
        if result is None:
            self.status.setText("")
            return
        for hit in result.hits:
            call = self.owner(hit)
            place = call.place if call is not None else hit.where
            if call is not None and self._index is not None and call.node_paths and len(call.node_paths[0]) > 1:
                place += f" in {self._index.graph_of(call)}"  # the branch: FX names repeat across branches
            if call is not None and hit.kind in NODE_KINDS and len(call.node_paths) > 1:
                # which of the call's nodes: its metadata and stack trace are on every one of them, so the rows
                # of an SDPA call's ten nodes read the same without it
                place += f" › {hit.where.rsplit('/', 1)[-1]}"
            shown = around(hit.text, text or "", MATCH_CHARS) if hit.key else hit.text  # (a metadata line)
            item = QListWidgetItem(f"{hit.matched_in}  {shown}  ·  {place}")
            item.setData(Qt.ItemDataRole.UserRole, hit)
            matched = f"{hit.matched_in} ({hit.key})" if hit.key else hit.matched_in
            item.setToolTip(tooltip(f"{matched}: {hit.text}\n{hit.where}"
                                    + (f"\nin {call.target} ({call.name}) of {call.module_path or 'the root module'}"
                                       if call else "")))
            self.results.addItem(item)
        n = len(result.hits)
        more = f" (showing {n:,} of {result.total:,})" if result.truncated else ""
        self.status.setText(f"{plural(n, 'result')}{more}")
        self.shown.emit(text or "")
        if text is not None and self._jump_when_shown == text:
            self._jump_when_shown = None
            self._enter()

    def owner(self, hit: Hit) -> AtenCall | None:
        """The aten call a hit belongs to: the call itself, or the call holding a main-graph node."""
        if isinstance(hit.ref, AtenCall):
            return hit.ref
        if self._index is None or hit.kind not in NODE_KINDS or hit.scope != MAIN or not hit.path:
            return None
        return self._owners_of(self._index).get(hit.path)

    def _enter(self) -> None:
        text = self.box.text()
        if self._shown != text:  # the rows are of older text: jump once this text's rows come (off this thread)
            self._timer.stop()
            self._jump_when_shown = text
            self._start()
            return
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
