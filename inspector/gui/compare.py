"""Two models side by side: the list of changes grouped by family, the selected change old beside new, both
graphs with added / removed / changed nodes coloured and an info panel under each; a click on a box selects the
aligned box on the other side (``twin.TwinGraphs``), scrolling is kept in step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QCloseEvent, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.bodies.body import Body, function_body, group_body
from inspector.core.diff import Change, ModelDiff, diff_models, show_value
from inspector.core.diff.scopes import READ, calls_by_name, lacking_calls, scope_for
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex, build_index
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.loader import ReadBuffer, load_model
from inspector.core.model.values import GraphValues, graph_values
from inspector.core.reviewed_changes import Reviewed, reviewed_place, reviews_of_changes
from inspector.core.util.units import arrowed, plural
from inspector.gui.compare_export import build_compare_menu
from inspector.gui.graph_panel import GraphPanel, scope_label
from inspector.gui.pairing import ADDED, CHANGED, REMOVED, changed_box, pair_bodies
from inspector.gui.text import Rich, rich, tag, tooltip
from inspector.gui.theme import status_text
from inspector.gui.twin import TwinGraphs
from inspector.gui.widgets import fit_to_screen
from inspector.gui.worker import Jobs, checkpoint
from inspector.report.diff_text import group_title, kind_title, sites_text, verdict

__all__ = ["ADDED", "CHANGED", "REMOVED", "CompareWindow", "body_of", "change_html", "change_line"]


@dataclass(slots=True)
class Pair:
    a: ModelIndex
    b: ModelIndex
    diff: ModelDiff
    maps: dict[int, GraphMaps] = field(default_factory=dict)  # per id(index), built off the GUI thread
    calls: dict[int, dict[str, AtenCall]] = field(default_factory=dict)  # per id(index): aten calls by name
    kept: list[object] = field(default_factory=list)  # what the diff built (its sides): goes with the window
    values: tuple[GraphValues, GraphValues] | None = None  # both main graphs' value types and initializers
    reviewed: dict[int, Reviewed] = field(default_factory=dict)  # per id(change): A's reviews of its body


def _open_pair(a: Path | ModelIndex, b: Path) -> Pair:
    """Both models (large files parsed in pieces, so the GUI thread runs meanwhile), their diff, and the maps of
    their main graphs (seconds for 100k nodes: never on the GUI thread). ``a`` may be a model already open: the
    main window's, compared as shown (not read again from a file that may have changed since; 1.8 s at 100k)."""
    # two files: B's bytes go where A's went (loader.ReadBuffer), and the memory is let go before B is indexed
    buffer = None if isinstance(a, ModelIndex) else ReadBuffer((a, b))
    ia = a if isinstance(a, ModelIndex) else build_index(load_model(a, buffer=buffer, progress=checkpoint))
    model_b = load_model(b, buffer=buffer, progress=checkpoint)
    del buffer
    ib = build_index(model_b, like=ia)  # two exports of one model: equal nodes are read once
    # each index's own maps: the scenes of both main graphs read them too (built twice per side before)
    kept: list[object] = []  # freed with B's index, not at the end of the job (0.11-0.5 s in one go at 100k)
    maps = {id(ia): ia.graph_maps(progress=checkpoint), id(ib): ib.graph_maps(progress=checkpoint)}
    diff = diff_models(ia, ib, keep=kept, progress=checkpoint)
    if any(c.section in READ for c in diff.changes):  # (who reads each value: ``scope_for``, here once)
        for m in maps.values():
            m.consumers  # noqa: B018  # (a property made on first use)
    calls = {id(ia): calls_by_name(ia), id(ib): calls_by_name(ib)}
    reviewed = reviews_of_changes(ia, diff.changes, lambda c: scope_for(ia, c, calls[id(ia)], maps[id(ia)]))
    return Pair(ia, ib, diff, maps, calls, kept,
                (graph_values(ia.proto.graph), graph_values(ib.proto.graph)),  # a box's details: off the GUI thread
                reviewed)


def value_box(boxes: Mapping[str, object], name: str) -> str | None:
    """The box of the value ``name`` where the graph shows it read from outside: as an input (``in:<name>``) or, a
    small initializer, with its value (``const:<name>``); None where it does not."""
    return next((box for box in (f"in:{name}", f"const:{name}") if box in boxes), None)


def body_of(index: ModelIndex, scope: Scope, maps: GraphMaps | None) -> Body | None:
    if isinstance(scope, FunctionKey) and scope in index.functions.functions:
        return function_body(scope, index.functions.functions[scope])
    if isinstance(scope, AtenCall) and maps is not None:
        return group_body(scope, maps)
    return None


class ChangeRowDelegate(QStyledItemDelegate):
    """A change row on two lines, each elided in the middle only if the list is narrower than it: what changed
    (``scale (Mul.B): 0.59460354 → 0.70710677``) above, where (the call, and how many more) below, so the values
    keep the whole width of the list. Family rows are drawn as usual."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        if index.parent().isValid():
            size.setHeight(2 * option.fontMetrics.height() + 6)
        return size

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        if not index.parent().isValid():
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget).adjusted(2, 2, -2, -2)
        fm, line = opt.fontMetrics, opt.fontMetrics.height()
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        active = bool(opt.state & QStyle.StateFlag.State_Active)
        group = QPalette.ColorGroup.Active if active else QPalette.ColorGroup.Inactive
        text = opt.palette.color(group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        what, where = self.lines(index, fm, rect.width())
        painter.save()
        painter.setPen(text)
        painter.drawText(rect.x(), rect.y() + fm.ascent(), what)
        if not selected:
            text.setAlpha(160)
        painter.setPen(text)
        painter.drawText(rect.x(), rect.y() + line + fm.ascent(), where)
        painter.restore()

    @staticmethod
    def lines(index: QModelIndex | QPersistentModelIndex, fm: QFontMetrics, width: int) -> tuple[str, str]:
        """The change row's two lines as drawn ``width`` wide: what changed, elided in the middle where it reads
        ``old → new`` (both ends are the values) and at its end otherwise (``body changed: 2 → 6 nodes: +5 (Constant
        x4, Concat) -1 (…)`` lost its edits to a middle elision), and where."""
        change = index.data(Qt.ItemDataRole.UserRole)
        mode = Qt.TextElideMode.ElideMiddle if isinstance(change, Change) and reads_old_to_new(change) else \
            Qt.TextElideMode.ElideRight
        what, where = str(index.data() or ""), str(index.sibling(index.row(), 1).data() or "")
        return fm.elidedText(what, mode, width), fm.elidedText(f"in {where}", Qt.TextElideMode.ElideMiddle, width)


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
        self.changes = QTreeWidget()  # columns: the change, where; a change row draws both, on two lines
        self.changes.setHeaderLabels(["Change (old → new) and where", "Where"])
        self.changes.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.changes.setColumnHidden(1, True)
        self.changes.setItemDelegateForColumn(0, ChangeRowDelegate(self.changes))
        self.changes.currentItemChanged.connect(lambda cur, _prev: self._selected(cur))
        self.summary = QLabel("")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.details = QTextBrowser()  # the selected change: old beside new, every call site
        lists = QSplitter(Qt.Orientation.Vertical)
        lists.addWidget(self.changes)
        lists.addWidget(self.details)
        lists.setSizes([450, 250])
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.summary)
        lay.addWidget(lists, 1)
        self.twin = TwinGraphs()
        self.twin.drawn.connect(self._drawn)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.twin)
        split.setSizes([500, 1000])
        self.setCentralWidget(split)
        build_compare_menu(self)
        self._current: Change | None = None

    @property
    def side_a(self) -> GraphPanel:
        return self.twin.side_a

    @property
    def side_b(self) -> GraphPanel:
        return self.twin.side_b

    # loading -------------------------------------------------------------------------------------------
    def open_pair(self, a: str | Path | ModelIndex, b: str | Path) -> None:
        """Compare ``a`` (a file, or a model already open) with the file ``b``, off the GUI thread."""
        pa: Path | ModelIndex = a if isinstance(a, ModelIndex) else Path(a)
        pb = Path(b)
        name_a = pa.path.name if isinstance(pa, ModelIndex) else pa.name
        self.statusBar().showMessage(f"Comparing {name_a} with {pb.name}…")

        def done(pair: Pair) -> None:
            self.set_pair(pair)
            self.pair_loaded.emit(pair)

        def failed(reason: str) -> None:
            self.statusBar().showMessage(f"Could not compare: {reason}")
            self.load_failed.emit(reason)

        self.jobs.run(lambda: _open_pair(pa, pb), done, failed)

    def set_pair(self, pair: Pair) -> None:
        self.pair = pair
        self._maps = dict(pair.maps)
        d = pair.diff
        self.setWindowTitle(f"{pair.a.path.name} ↔ {pair.b.path.name} — ONNX Inspector")
        self.twin.a.label.set_full_text(f"A  {pair.a.path}")
        self.twin.b.label.set_full_text(f"B  {pair.b.path}")
        text = verdict(d)
        if d.fold is not None:
            text += "\n" + d.fold.explanation
        self.summary.setText(text)
        self.changes.clear()
        named = pair.calls.get(id(pair.a), {}), pair.calls.get(id(pair.b), {})
        for section, family, changes in d.grouped():
            group = QTreeWidgetItem([group_title(section, family), "", ""])
            self.changes.addTopLevelItem(group)
            for c in changes:
                # (an initializer the optimizer named, ``val_35``: where its layer reads it; the name is above)
                row = QTreeWidgetItem([change_line(c), c.read_by or where_line(c, named)])
                row.setToolTip(0, tooltip(f"{kind_title(c.kind)}: {change_line(c)}"))
                row.setToolTip(1, tooltip(sites_text(c) or c.where))
                row.setData(0, Qt.ItemDataRole.UserRole, c)
                group.addChild(row)
            group.setFirstColumnSpanned(True)
        self.changes.expandAll()
        self.twin.set_indexes(pair.a, pair.b, pair.values)
        self.details.setHtml(rich(tag("p", text), tag("p", "Select a change to see it in both graphs.")))
        self.statusBar().showMessage(plural(len(d.changes), "change"), 5000)
        first = self.changes.topLevelItem(0)
        child = first.child(0) if first is not None and first.childCount() else None
        if child is not None:
            self.changes.setCurrentItem(child)  # start on the first change, not on two main graphs
        else:
            self.twin.show_pair(MAIN, MAIN, None)  # nothing changed: the two main graphs

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
        scope_a = scope_for(pair.a, change, pair.calls.get(id(pair.a)), pair.maps.get(id(pair.a)), "a")
        scope_b = scope_for(pair.b, change, pair.calls.get(id(pair.b)), pair.maps.get(id(pair.b)), "b")
        body_a = body_of(pair.a, scope_a, self._graph_maps(pair.a))
        body_b = body_of(pair.b, scope_b, self._graph_maps(pair.b))
        pairing = pair_bodies(body_a, body_b) if body_a is not None and body_b is not None else None
        self.twin.show_pair(scope_a, scope_b, pairing, stand_in("A", change, scope_a), stand_in("B", change, scope_b))
        self.details.setHtml(change_html(change, pair.reviewed.get(id(change), [])))

    def _graph_maps(self, index: ModelIndex) -> GraphMaps:
        maps = self._maps.get(id(index))
        if maps is None:
            maps = self._maps[id(index)] = index.graph_maps()
        return maps

    def _drawn(self) -> None:
        if self._current is not None:
            pairing = self.twin.pairing
            if pairing is not None:
                found = changed_box(pairing.marks_a, self._current)
                other = None if found else changed_box(pairing.marks_b, self._current)
                if not (found or other) and self._current.section in READ:
                    found = value_box(self.side_a.graph.items_by_id, self._current.where)  # (the value read)
                if found or other:
                    self.twin.jump(found or other or "", from_a=bool(found))
            self.change_shown.emit(self._current)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close at once, as the main window does: the pair still being opened reports to no one, and the graphs
        being laid out are never drawn (waiting for the thread pool here froze the window up to 5 s, and the main
        window with it, whose jobs share the pool; the app waits for running jobs after its last window)."""
        self.jobs.cancel()
        for side in (self.side_a, self.side_b):
            side.drop_pending()
        super().closeEvent(event)


# kinds of change whose call, overload or family one side does not have: that side shows what stands in for it
_ONLY_IN_B, _ONLY_IN_A = lacking_calls("a"), lacking_calls("b")


def stand_in(side: str, c: Change, scope: Scope) -> Rich:
    """The head of the side a change's call is not on (a call added: A): what is shown there instead, so a sibling
    of the family is not taken for the changed call's counterpart. Empty for the side that has it (its default)."""
    if c.kind not in (_ONLY_IN_B if side == "A" else _ONLY_IN_A):
        return Rich()
    standing = isinstance(scope, AtenCall) and scope.name == c.stand_in  # (``Change.stand_in``)
    shown = "the main graph" if scope == MAIN else scope_label(scope) + (
        ", read where it is read" if standing else ", of the same family")
    return tag("p", tag("b", side), ": ", tag("i", f"not in {side}"), "; shown for comparison: ", shown)


def reads_old_to_new(c: Change) -> bool:
    """Whether ``change_line`` reads ``… old → new``: a value, or both sides shown."""
    return (c.kind == "value_changed" and bool(c.detail)) or (c.old is not None and c.new is not None and not c.detail)


def where_line(c: Change, named: tuple[Mapping[str, AtenCall], Mapping[str, AtenCall]]) -> str:
    """A change row's second line: the call it is in, with its module (``model.layers.0.input_layernorm › add_3``),
    and how many more sites, as a weight's readers say it (``… and 4 more``): Gemma's changed RMSNorm epsilon read
    ``add_3  +4`` beside ``model.layers.0.self_attn › mul_6 and 3 more``. ``named``: A's and B's aten calls by FX
    name (a call B added is B's)."""
    call = named[c.kind == "call_added"].get(c.where) if c.section == "aten_call" else None
    place = call.place if call is not None and call.module_path else c.where
    return place + (f" and {len(c.sites) - 1} more" if len(c.sites) > 1 else "")


def change_line(c: Change) -> str:
    """One readable line naming what changed and how: ``scale (Mul.B): 0.5946 → 0.5477``, ``removed: val_82 …``."""
    if c.kind == "value_changed" and c.detail:
        return arrowed(c.detail)
    if reads_old_to_new(c):
        return f"{kind_title(c.kind)}: {show_value(c.old, 40)} → {show_value(c.new, 40)}"
    return f"{kind_title(c.kind)}: {arrowed(c.detail)}" if c.detail else kind_title(c.kind)


def _shown(value: object) -> str:
    """A side of a change: a mapping (the folding's facts) one ``key: value`` a line, not ``{folded: b, …}``; where
    external data lies, as its file, offset and length, each on a line (``external: {location: clip.weights, offset:
    14592, length: 2048}`` on one line pushed the new side out of a 440 px panel)."""
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            if k == "external" and isinstance(v, dict):
                lines += [f"{key}: {show_value(x, 200)}" for key, x in v.items()]
            else:
                lines.append(f"{k}: {show_value(v, 200)}")
        return "\n".join(lines)
    return show_value(value, 400)


def change_html(c: Change, reviewed: Reviewed | None = None) -> Rich:
    """Old beside new, and where (all call sites), built from escaped parts: every model string is text.
    ``reviewed``: what A's reviews said of the change's body (``core.reviewed_changes``), each status in its
    colour."""
    rows = [tag("h3", kind_title(c.kind), " ", tag("small", c.family))]
    if c.detail:
        rows.append(tag("p", arrowed(c.detail)))  # (as its row reads it: ``change_line``)
    if c.old is not None or c.new is not None:
        rows.append(tag("table", tag("tr", tag("th", "A (old)", align="left"), tag("th", "B (new)", align="left")),
                        tag("tr", tag("td", tag("pre", _shown(c.old))), tag("td", tag("pre", _shown(c.new)))),
                        cellspacing=6))
    rows.append(tag("p", tag("b", "Where:"), " ", sites_text(c) or c.where))
    if reviewed:
        rows += [tag("p", tag("b", "Reviewed in A"), f" ({reviewed_place(c)})"),  # (as the report says it: A may be
                 # the newer export, and a rewiring or a value read elsewhere leaves the body as it was)
                 tag("ul", *(tag("li", what, ": ", status_text(r.status), f" — {r.note}" if r.note else "")
                             for what, r in reviewed))]
    if c.edits:
        rows += [tag("p", tag("b", "Node edits")), tag("ul", *(tag("li", f"{e.op} {e.node} {e.detail}")
                                                            for e in c.edits[:50]))]
    gap = Rich(" &nbsp; ")
    rows.append(tag("p", tag("small", tag("span", "■ only in A", style=f"color:{REMOVED}"), gap,
                             tag("span", "■ only in B", style=f"color:{ADDED}"), gap,
                             tag("span", "■ changed", style=f"color:{CHANGED}"))))
    return rich(*rows)
