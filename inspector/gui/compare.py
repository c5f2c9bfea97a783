"""Two models side by side: the list of changes grouped by family, both graphs with added / removed / changed
nodes coloured, changed specialised values old beside new, selection and scrolling kept in step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from PySide6.QtCore import QSettings, Qt, QThreadPool, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QMainWindow,
    QScrollBar,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.body import Body, GraphMaps, function_body, group_body, walk_body
from inspector.core.diff import Change, ModelDiff, align_nodes, diff_models, show_value
from inspector.core.index import ModelIndex, open_index
from inspector.core.keys import MAIN, FunctionKey, Scope
from inspector.core.literals import attribute_value, tensor_value
from inspector.core.provenance import AtenCall
from inspector.gui.compare_export import build_compare_menu
from inspector.gui.graph_panel import GraphPanel, scene_id
from inspector.gui.text import esc, tooltip
from inspector.gui.widgets import ElidedLabel, fit_to_screen
from inspector.gui.worker import Jobs
from inspector.report.diff_text import group_title, kind_title, sites_text, verdict

ADDED, REMOVED, CHANGED = "#6aa84f", "#cc0000", "#e69138"


@dataclass(slots=True)
class Pair:
    a: ModelIndex
    b: ModelIndex
    diff: ModelDiff


def _open_pair(a: Path, b: Path) -> Pair:
    ia, ib = open_index(a), open_index(b)
    return Pair(ia, ib, diff_models(ia, ib))


def scope_for(index: ModelIndex, change: Change) -> Scope:
    """The scope a change lives in, on one side: an aten call, a function, or the main graph."""
    names = [change.where, *change.sites]
    if change.section == "aten_call":
        by_name = {c.name: c for c in index.provenance.calls}
        for name in names:
            if name in by_name:
                return by_name[name]
        for call in index.provenance.calls:  # renamed on this side: the first call of the family
            if f"{call.family[0]}::{call.family[1]}" == change.family:
                return call
    if change.section == "function":
        keys = {str(k): k for k in index.functions.functions}
        for name in names:
            if name in keys:
                return keys[name]
        for k in index.functions.functions:
            if f"{k.domain}.{k.name}" == change.family or k.name == change.family:
                return k
    return MAIN


def body_of(index: ModelIndex, scope: Scope, maps: GraphMaps | None) -> Body | None:
    if isinstance(scope, FunctionKey) and scope in index.functions.functions:
        return function_body(scope, index.functions.functions[scope])
    if isinstance(scope, AtenCall) and maps is not None:
        return group_body(scope, maps)
    return None


def body_marks(body_a: Body, body_b: Body
               ) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """Scene-id marks for both sides: removed/changed nodes in A, added/changed in B, changed constants."""
    wa, wb = list(walk_body(body_a.nodes)), list(walk_body(body_b.nodes))
    marks_a: dict[str, tuple[str, str]] = {}
    marks_b: dict[str, tuple[str, str]] = {}
    for op, i, j in align_nodes([n for _p, n in wa], [n for _p, n in wb]):
        if op == "changed":
            assert i is not None and j is not None
            note = _attr_note(wa[i][1], wb[j][1])
            marks_a[scene_id(body_a, wa[i][0])] = (CHANGED, note)
            marks_b[scene_id(body_b, wb[j][0])] = (CHANGED, note)
        elif op == "removed":
            assert i is not None
            marks_a[scene_id(body_a, wa[i][0])] = (REMOVED, f"only in A: {wa[i][1].op_type}")
        else:
            assert j is not None
            marks_b[scene_id(body_b, wb[j][0])] = (ADDED, f"only in B: {wb[j][1].op_type}")
    ca, cb = list(body_a.constants.items()), list(body_b.constants.items())
    for (na, ta), (nb, tb) in zip(ca, cb):
        va, ka = tensor_value(ta)
        vb, kb = tensor_value(tb)
        if ka != kb:
            note = f"constant: {show_value(va)} -> {show_value(vb)}"
            marks_a[f"const:{na}"] = (CHANGED, note)
            marks_b[f"const:{nb}"] = (CHANGED, note)
    return marks_a, marks_b


def _literal_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {x.name: attribute_value(x)[0] for x in node.attribute
            if not x.ref_attr_name and x.type not in (x.GRAPH, x.GRAPHS)}


def _attr_note(a: onnx.NodeProto, b: onnx.NodeProto) -> str:
    va, vb = _literal_attrs(a), _literal_attrs(b)
    parts = [f"{a.op_type}.{k}: {show_value(va.get(k))} -> {show_value(vb.get(k))}"
             for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]
    return "; ".join(parts) or f"{a.op_type}: attributes differ"


class CompareWindow(QMainWindow):
    pair_loaded = Signal(object)
    load_failed = Signal(str)
    change_shown = Signal(object)  # Change, once both graphs are drawn and marked
    exported = Signal(object)  # Path of a diff or report written from the File menu

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Compare — ONNX Inspector")
        fit_to_screen(self, 1500, 900)
        self.pair: Pair | None = None
        self._maps: dict[int, GraphMaps] = {}
        self.jobs = Jobs()
        self.changes = QTreeWidget()
        self.changes.setHeaderLabels(["Change", "Where"])
        self.changes.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.changes.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(1, 120)
        self.changes.currentItemChanged.connect(lambda cur, _prev: self._selected(cur))
        self.summary = QLabel("")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.summary)
        lay.addWidget(self.changes, 1)
        self.side_a, self.side_b = GraphPanel(), GraphPanel()
        self.label_a, self.label_b = ElidedLabel("A"), ElidedLabel("B")
        graphs = QSplitter()
        for label, side in ((self.label_a, self.side_a), (self.label_b, self.side_b)):
            box = QWidget()
            bl = QVBoxLayout(box)
            bl.setContentsMargins(0, 0, 0, 0)
            bl.addWidget(label)
            bl.addWidget(side, 1)
            graphs.addWidget(box)
        self.details = QTextBrowser()
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(graphs)
        right.addWidget(self.details)
        right.setSizes([650, 250])
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([500, 1000])
        self.setCentralWidget(split)
        build_compare_menu(self)
        self._sync_scrolling()
        self.side_a.graph.node_selected.connect(lambda node: self._sync_selection(self.side_b, node.id))
        self.side_b.graph.node_selected.connect(lambda node: self._sync_selection(self.side_a, node.id))
        self._pending: dict[int, dict[str, tuple[str, str]]] = {}
        self._waiting = 0
        self._current: Change | None = None
        self.side_a.view_shown.connect(lambda _v: self._drawn(self.side_a))
        self.side_b.view_shown.connect(lambda _v: self._drawn(self.side_b))

    # loading -------------------------------------------------------------------------------------------
    def open_pair(self, a: str | Path, b: str | Path) -> None:
        pa, pb = Path(a), Path(b)
        self.statusBar().showMessage(f"Comparing {pa.name} with {pb.name}…")

        def done(pair: Pair) -> None:
            self.set_pair(pair)
            self.pair_loaded.emit(pair)

        def failed(reason: str) -> None:
            self.statusBar().showMessage(f"Could not compare: {reason}")
            self.load_failed.emit(reason)

        self.jobs.run(lambda: _open_pair(pa, pb), done, failed)

    def set_pair(self, pair: Pair) -> None:
        self.pair = pair
        self._maps = {}
        d = pair.diff
        self.setWindowTitle(f"{pair.a.path.name} ↔ {pair.b.path.name} — ONNX Inspector")
        self.label_a.set_full_text(f"A  {pair.a.path}")
        self.label_b.set_full_text(f"B  {pair.b.path}")
        text = verdict(d)
        if d.fold is not None:
            text += "\n" + d.fold.explanation
        self.summary.setText(text)
        self.changes.clear()
        for section, family, changes in d.grouped():
            group = QTreeWidgetItem([group_title(section, family), "", ""])
            self.changes.addTopLevelItem(group)
            for c in changes:
                more = f"  +{len(c.sites) - 1}" if len(c.sites) > 1 else ""
                row = QTreeWidgetItem([change_line(c), c.where + more])
                row.setToolTip(0, tooltip(f"{kind_title(c.kind)}: {change_line(c)}"))
                row.setToolTip(1, tooltip(sites_text(c) or c.where))
                row.setData(0, Qt.ItemDataRole.UserRole, c)
                group.addChild(row)
            group.setFirstColumnSpanned(True)
        self.changes.expandAll()
        self.side_a.set_index(pair.a)
        self.side_b.set_index(pair.b)
        self.details.setHtml(f"<p>{esc(text)}</p><p>Select a change to see it in both graphs.</p>")
        self.statusBar().showMessage(f"{len(d.changes)} changes", 5000)
        first = self.changes.topLevelItem(0)
        child = first.child(0) if first is not None and first.childCount() else None
        if child is not None:
            self.changes.setCurrentItem(child)  # start on the first change, not on two main graphs

    # showing a change ----------------------------------------------------------------------------------
    def _selected(self, item: QTreeWidgetItem | None) -> None:
        change = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if isinstance(change, Change):
            self.show_change(change)

    def show_change(self, change: Change) -> None:
        pair = self.pair
        if pair is None:
            return
        self._current = change
        scope_a, scope_b = scope_for(pair.a, change), scope_for(pair.b, change)
        marks_a: dict[str, tuple[str, str]] = {}
        marks_b: dict[str, tuple[str, str]] = {}
        body_a = body_of(pair.a, scope_a, self._graph_maps(pair.a))
        body_b = body_of(pair.b, scope_b, self._graph_maps(pair.b))
        if body_a is not None and body_b is not None:
            marks_a, marks_b = body_marks(body_a, body_b)
        self._pending = {id(self.side_a): marks_a, id(self.side_b): marks_b}
        self._waiting = 2
        self.side_a.show_scope(scope_a)
        self.side_b.show_scope(scope_b)
        self.details.setHtml(change_html(change))

    def _graph_maps(self, index: ModelIndex) -> GraphMaps:
        maps = self._maps.get(id(index))
        if maps is None:
            maps = self._maps[id(index)] = GraphMaps(index.proto.graph)
        return maps

    def _drawn(self, side: GraphPanel) -> None:
        side.graph.mark(self._pending.get(id(side), {}))
        self._waiting -= 1
        if self._waiting == 0 and self._current is not None:
            self.change_shown.emit(self._current)

    # keeping the two sides in step ----------------------------------------------------------------------
    def _sync_scrolling(self) -> None:
        busy = [False]

        def link(src: QScrollBar, dst: QScrollBar) -> None:
            def moved(value: int) -> None:
                if busy[0] or src.maximum() <= 0:
                    return
                busy[0] = True
                dst.setValue(round(value / src.maximum() * dst.maximum()))
                busy[0] = False

            src.valueChanged.connect(moved)

        ga, gb = self.side_a.graph, self.side_b.graph
        link(ga.horizontalScrollBar(), gb.horizontalScrollBar())
        link(gb.horizontalScrollBar(), ga.horizontalScrollBar())
        link(ga.verticalScrollBar(), gb.verticalScrollBar())
        link(gb.verticalScrollBar(), ga.verticalScrollBar())

    def _sync_selection(self, other: GraphPanel, node_id: str) -> None:
        selected = other.graph.selected()
        if node_id in other.graph.items_by_id and (selected is None or selected.id != node_id):
            other.graph.select(node_id)

    def closeEvent(self, event: QCloseEvent) -> None:
        QThreadPool.globalInstance().waitForDone(5000)
        super().closeEvent(event)


def change_line(c: Change) -> str:
    """One readable line naming what changed and how: ``scale (Mul.B): 0.5946 → 0.5477``, ``removed: val_82 …``."""
    if c.kind == "value_changed" and c.detail:
        return c.detail.replace(" -> ", " → ")
    if c.old is not None and c.new is not None and not c.detail:
        return f"{kind_title(c.kind)}: {show_value(c.old, 40)} → {show_value(c.new, 40)}"
    return f"{kind_title(c.kind)}: {c.detail.replace(' -> ', ' → ')}" if c.detail else kind_title(c.kind)


def change_html(c: Change) -> str:
    """Old beside new, and where (all call sites) — every model string escaped."""
    rows = [f"<h3>{esc(kind_title(c.kind))} <small>{esc(c.family)}</small></h3>"]
    if c.detail:
        rows.append(f"<p>{esc(c.detail)}</p>")
    if c.old is not None or c.new is not None:
        rows.append("<table cellspacing='6'><tr><th align='left'>A (old)</th><th align='left'>B (new)</th></tr>"
                    f"<tr><td><pre>{esc(show_value(c.old, 400))}</pre></td>"
                    f"<td><pre>{esc(show_value(c.new, 400))}</pre></td></tr></table>")
    rows.append(f"<p><b>Where:</b> {esc(sites_text(c) or c.where)}</p>")
    if c.edits:
        items = "".join(f"<li>{esc(e.op)} {esc(e.node)} {esc(e.detail)}</li>" for e in c.edits[:50])
        rows.append(f"<p><b>Node edits</b></p><ul>{items}</ul>")
    rows.append(f"<p><small><span style='color:{REMOVED}'>■ only in A</span> &nbsp; "
                f"<span style='color:{ADDED}'>■ only in B</span> &nbsp; "
                f"<span style='color:{CHANGED}'>■ changed</span></small></p>")
    return "".join(rows)
