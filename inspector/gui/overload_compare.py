"""Overload against overload: two members of one family (two function overloads, two aten calls, or the calls
behind two rows of the functions tree) side by side, with the values that differ lit.

The bodies are aligned by the diff engine (``core.diff.align_nodes``, through ``pairing.pair_bodies``, as the
compare window aligns a body of two models); each side shows its graph, its aten signature with the arguments
that differ lit, and its body with the differing values lit. Which aten argument a value came from is what the
family analysis linked it to (``core.specialise.links``); equal values alone never name an argument.

In the main window: select two rows of the functions tree (Ctrl+click) and press Ctrl+D, or right-click a row
and pick "Compare with…" and one of its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx
from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QSplitter,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from inspector.core.bodies.body import Body, function_body
from inspector.core.bodies.literals import attribute_value, tensor_value
from inspector.core.diff import show_value
from inspector.core.diff.bodies import reader
from inspector.core.diff.values import unwrap
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.function_sites import CallSite
from inspector.core.model.index import Family, Overload
from inspector.core.model.keys import FunctionKey
from inspector.core.model.signature import CallSignature
from inspector.core.model.walk import resolve_path
from inspector.core.specialise.bodytext import Line, body_lines, signature_line
from inspector.core.specialise.specialiser import SpecialisedValue
from inspector.core.util.units import plural
from inspector.gui.analysis import Analyses, TreeObject, site_node
from inspector.gui.family_model import FamilyModel
from inspector.gui.graph_panel import scene_id
from inspector.gui.menus import add_action
from inspector.gui.pairing import ADDED, CHANGED, REMOVED, BodyPairing, Slot, pair_bodies
from inspector.gui.session import Session
from inspector.gui.text import Rich, pre, rich, tag, tooltip
from inspector.gui.twin import TwinGraphs
from inspector.gui.widgets import fit_to_screen
from inspector.gui.worker import Jobs

LIT_TEXT = "#000000"  # text on a lit value, in light and dark themes
MAX_CALLS_LISTED = 12


@dataclass(slots=True)
class Member:
    """One side: what is compared (an aten call, or a function overload), its graph and its analysed body."""

    obj: AtenCall | FunctionKey
    title: str  # "layer_norm_1  (blocks.1.norm)", "local.tr:perm_0231"
    body: Body  # this member's own body (its node paths are where its nodes sit in its graph)
    specialised: list[SpecialisedValue]
    signature: CallSignature | None
    calls: tuple[str, ...]  # every call with exactly this body
    site: CallSite | None = None  # a function's call compared, not the function alone
    passed: dict[str, str] = field(default_factory=dict)  # the attributes the call site passes, as text

    @property
    def scope(self) -> Scope:
        return self.obj


@dataclass(slots=True)
class DiffRow:
    """A row of the differences: an aten argument (``kind="argument"``), a literal of the body (``"value"``) or
    nodes only on one side (``"node"``)."""

    kind: str
    label: str
    a: str
    b: str


@dataclass(slots=True)
class MemberComparison:
    family: Family
    a: Member
    b: Member
    pairing: BodyPairing
    rows: list[DiffRow] = field(default_factory=list)
    arguments: set[str] = field(default_factory=set)  # aten parameters, and attributes passed, whose values differ

    @property
    def identical(self) -> bool:
        return not self.rows


def member_of(obj: TreeObject) -> AtenCall | FunctionKey | None:
    """What a row of the functions tree compares as: a call, an overload's function (or its first aten call),
    a call site's callee; None for a family (pick one of its overloads) and for anything else."""
    if isinstance(obj, Overload):
        if obj.function is not None:
            return obj.function
        return obj.aten_calls[0] if obj.aten_calls else None
    if isinstance(obj, CallSite):
        return obj.callee
    if isinstance(obj, (AtenCall, FunctionKey)):
        return obj
    return None


def check_members(analyses: Analyses, obj_a: TreeObject, obj_b: TreeObject
                  ) -> tuple[AtenCall | FunctionKey, AtenCall | FunctionKey, Family]:
    """The two members and their family, at once (no analysis); ``ValueError`` says why they cannot be compared."""
    ma, mb = member_of(obj_a), member_of(obj_b)
    if ma is None or mb is None:
        raise ValueError("pick two overloads or two calls (not a whole family)")
    fam = analyses.family_of(ma)
    if fam is None or analyses.family_of(mb) is not fam:
        raise ValueError("the two are not of one family")
    return ma, mb, fam


def compare_members(analyses: Analyses, obj_a: TreeObject, obj_b: TreeObject) -> MemberComparison:
    """Align the bodies of two members of one family and list what differs; ``ValueError`` says why two objects
    cannot be compared (not members, or not of one family)."""
    ma, mb, fam = check_members(analyses, obj_a, obj_b)
    a = _member(analyses, ma, obj_a if isinstance(obj_a, CallSite) else None)
    b = _member(analyses, mb, obj_b if isinstance(obj_b, CallSite) else None)
    pairing = pair_bodies(a.body, b.body)
    out = MemberComparison(fam, a, b, pairing)
    out.rows.extend(_argument_rows(a.signature, b.signature))
    out.rows.extend(_value_rows(a, b, pairing.changed))
    out.rows.extend(_passed(a, b, pairing, {r.label for r in out.rows if r.kind == "argument"}))
    out.arguments = {r.label for r in out.rows if r.kind in ("argument", "passed")}
    only_a = [note for colour, note in pairing.marks_a.values() if colour == REMOVED]
    only_b = [note for colour, note in pairing.marks_b.values() if colour == ADDED]
    if only_a or only_b:
        out.rows.append(DiffRow("node", "nodes on one side only", _counted(only_a), _counted(only_b)))
    return out


def _passed(a: Member, b: Member, pairing: BodyPairing, arguments: set[str]) -> list[DiffRow]:
    """Attributes two call sites pass with different values (TorchScript passes each instance's eps this way),
    lit where the body refers to them (``epsilon = @inferred::LayerNormalization_epsilon``); a folded function's
    attributes are its aten arguments, listed as such already."""
    rows = []
    for name in dict.fromkeys([*a.passed, *b.passed]):
        va, vb = a.passed.get(name, "-"), b.passed.get(name, "-")
        if va == vb or name in arguments:
            continue
        rows.append(DiffRow("passed", name, va, vb))
        refs_a = [s.literal for s in a.specialised if s.literal.kind == "parametric" and s.literal.ref == name]
        refs_b = [s.literal for s in b.specialised if s.literal.kind == "parametric" and s.literal.ref == name]
        for la, lb in zip(refs_a, refs_b):
            note = f"@{name}: {va} -> {vb}"
            pairing.marks_a[scene_id(a.body, la.path)] = (CHANGED, note)
            pairing.marks_b[scene_id(b.body, lb.path)] = (CHANGED, note)
            pairing.changed.append(((la.path, la.name), (lb.path, lb.name)))
    return rows


def _member(analyses: Analyses, obj: AtenCall | FunctionKey, site: CallSite | None) -> Member:
    row: TreeObject = site or obj
    if site is None and isinstance(obj, FunctionKey):  # the tree's row for a function is its overload
        fam = analyses.family_of(obj)
        row = next((o for o in fam.overloads if o.function == obj), None) if fam is not None else None
    sel = analyses.selection(row)
    if sel is None:
        raise ValueError(f"{obj} has no body to compare")
    passed: dict[str, str] = {}
    if isinstance(obj, AtenCall):
        body = analyses.specialiser.body_of_call(obj)
        title = obj.place
    else:
        proto = analyses.index.functions.functions.get(obj)
        if proto is None:
            raise ValueError(f"{obj} is not defined in this model")
        body = function_body(obj, proto)
        title = str(obj) if site is None else f"{obj} at {site.where}"
        node = site_node(analyses.index, site) if site is not None else None
        passed = {x.name: show_value(unwrap(attribute_value(x)[0])) for x in (node.attribute if node else ())
                  if not x.ref_attr_name and x.type not in (x.GRAPH, x.GRAPHS)}
    return Member(obj, title, body, list(sel.analysis.specialised), sel.signature, tuple(sel.calls), site, passed)


def argument_values(sig: CallSignature | None) -> dict[str, str]:
    """Non-tensor aten arguments as the signature line shows them (``eps`` -> ``1e-05``)."""
    if sig is None:
        return {}
    out: dict[str, str] = {}
    for seg in signature_line(sig):
        b = seg.argument
        if b is not None and not seg.text.endswith("=") and not (b.parameter.is_tensor and not _number(b.value)):
            out[b.parameter.name] = seg.text
    return out


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def tensor_arguments(sig: CallSignature | None) -> dict[str, tuple[bool, str]]:
    """Tensor aten arguments: whether one is passed, and the text the signature line shows (``%expand_1``,
    ``None (default)``). Their names differ from call to call, so only whether one is passed is compared: it is
    what makes Whisper's decoder SDPA call have the Add, IsNaN and Where its encoder call has not."""
    if sig is None:
        return {}
    return {seg.argument.parameter.name: (seg.argument.value is not None, seg.text) for seg in signature_line(sig)
            if seg.argument is not None and not seg.text.endswith("=") and seg.argument.parameter.is_tensor
            and not _number(seg.argument.value)}


def _argument_rows(sa: CallSignature | None, sb: CallSignature | None) -> list[DiffRow]:
    va, vb = argument_values(sa), argument_values(sb)
    rows = [DiffRow("argument", p, va.get(p, "-"), vb.get(p, "-")) for p in dict.fromkeys([*va, *vb])
            if va.get(p) != vb.get(p)]
    ta, tb = tensor_arguments(sa), tensor_arguments(sb)
    rows += [DiffRow("argument", p, ta.get(p, (False, "-"))[1], tb.get(p, (False, "-"))[1])
             for p in dict.fromkeys([*ta, *tb]) if ta.get(p, (False, ""))[0] != tb.get(p, (False, ""))[0]]
    return rows


def _value_rows(a: Member, b: Member, changed: Sequence[tuple[Slot, Slot]]) -> list[DiffRow]:
    spec_a = {(s.literal.path, s.literal.name): s for s in a.specialised}
    spec_b = {(s.literal.path, s.literal.name): s for s in b.specialised}
    rows = []
    for slot_a, slot_b in changed:
        sa, sb = spec_a.get(slot_a), spec_b.get(slot_b)
        params = list(dict.fromkeys(x.parameter for s in (sa, sb) if s is not None for x in s.links))
        where = _where(a.body, slot_a, sa)
        label = f"{', '.join(params)} ({where})" if params else where
        rows.append(DiffRow("value", label, _literal(a.body, slot_a, sa), _literal(b.body, slot_b, sb)))
    return rows


def _where(body: Body, slot: Slot, spec: SpecialisedValue | None) -> str:
    """``LayerNormalization.epsilon``, or for a baked constant the input it feeds (``Mul.B``), as the diff names it."""
    path, name = slot
    if not path:
        return reader(body.nodes, name)[0]
    if spec is not None:
        return f"{spec.literal.op_type}.{name}"
    node = _node(body, path)
    return f"{node.op_type}.{name}" if node is not None else name


def _literal(body: Body, slot: Slot, spec: SpecialisedValue | None) -> str:
    if spec is not None:
        return show_value(unwrap(spec.literal.value))
    path, name = slot
    if not path:
        tensor = body.constants.get(name)
        return show_value(unwrap(tensor_value(tensor)[0])) if tensor is not None else "-"
    node = _node(body, path)
    attr = next((x for x in node.attribute if x.name == name), None) if node is not None else None
    return show_value(unwrap(attribute_value(attr)[0])) if attr is not None else "-"


def _node(body: Body, path: tuple[Any, ...]) -> onnx.NodeProto | None:
    try:
        return resolve_path(body.nodes, path)
    except KeyError:
        return None


def _counted(notes: list[str]) -> str:
    counts: dict[str, int] = {}
    for n in notes:
        op = n.split(": ", 1)[-1]
        counts[op] = counts.get(op, 0) + 1
    return ", ".join(f"{op} ×{c}" if c > 1 else op for op, c in counts.items()) or "-"


# HTML -----------------------------------------------------------------------------------------------------------
def side_html(name: str, m: Member, lit_slots: set[Slot], lit_arguments: set[str]) -> Rich:
    """A side's info: its title, its aten signature (differing arguments lit), its body (differing values lit)."""
    parts = [tag("h3", f"{name}: {m.title}")]
    if m.signature is not None:
        line = signature_line(m.signature, m.specialised)
        html = rich(*(_lit(seg.text) if seg.argument is not None and not seg.text.endswith("=")
                      and seg.argument.parameter.name in lit_arguments else seg.text for seg in line))
        parts += [tag("p", tag("b", "Aten signature")), pre(html)]
    if m.site is not None and m.passed:
        shown = [_lit(f"{k} = {v}") if k in lit_arguments else f"{k} = {v}" for k, v in m.passed.items()]
        parts += [tag("p", tag("b", "This call"), f" ({m.site.where}) passes"),
                  pre(*(rich(", " if k else "", part) for k, part in enumerate(shown)))]
    n = len(m.calls)
    parts.append(tag("p", tag("b", "ONNX body"), " ", tag("small", f"{plural(n, 'call')} with this body")))
    parts.append(_pre(body_lines(m.body, m.specialised), lit_slots))
    if n > 1:
        more = [tag("li", f"… {n - MAX_CALLS_LISTED} more")] if n > MAX_CALLS_LISTED else []
        differ = any(s.varies and s.call_values for s in m.specialised)  # each call passes its own values
        head = (tag("b", f"Calls ({n})"), " ", tag("small", "the values they pass differ")) if differ else \
            (tag("b", f"Identical calls ({n})"), " ", tag("small"))
        parts += [tag("p", *head), tag("ul", *(tag("li", c) for c in m.calls[:MAX_CALLS_LISTED]), *more)]
    return rich(*parts)


def _lit(text: str) -> Rich:
    return tag("span", text, style=f"background-color:{CHANGED};color:{LIT_TEXT}")


def _pre(lines: list[Line], lit_slots: set[Slot]) -> Rich:
    out = [rich(*(_lit(seg.text) if seg.spec is not None and (seg.spec.literal.path, seg.spec.literal.name)
                  in lit_slots else seg.text for seg in line)) for line in lines]
    return pre(*(rich("\n" if k else "", line) for k, line in enumerate(out)))


# the window -----------------------------------------------------------------------------------------------------
class OverloadCompareWindow(QMainWindow):
    """Two members of one family: the differences on top, both graphs (aligned, synced) and both bodies below."""

    shown = Signal(object)  # MemberComparison, once both graphs are drawn and marked

    def __init__(self, analyses: Analyses) -> None:
        super().__init__()
        self.analyses = analyses
        self.comparison: MemberComparison | None = None
        self.jobs = Jobs()
        fit_to_screen(self, 1366, 768)
        self.header = QLabel("")
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        self.header.setWordWrap(True)
        self.rows = QTreeWidget()
        self.rows.setHeaderLabels(["What differs", "A", "B"])
        self.rows.setRootIsDecorated(False)
        self.rows.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.rows.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        top = QWidget()
        lay = QVBoxLayout(top)
        lay.setContentsMargins(4, 4, 4, 0)
        lay.addWidget(self.header)
        lay.addWidget(self.rows, 1)
        self.twin = TwinGraphs()
        self.twin.drawn.connect(self._drawn)
        self.ready = False  # both graphs of the comparison are drawn and marked
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.twin)
        split.setSizes([110, 640])  # a few rows of differences; the graphs and bodies get the rest
        self.setCentralWidget(split)
        menu = self.menuBar().addMenu("&File")
        add_action(menu, "&Close", QKeySequence.StandardKey.Close, self.close)

    def start(self, a: TreeObject, b: TreeObject) -> None:
        """Compare ``a`` with ``b`` off the GUI thread (the family's first analysis can take seconds on a large
        model), then show the comparison."""
        self.header.setText("Comparing… (analysing the family)")
        analyses = self.analyses

        def failed(reason: str) -> None:
            self.header.setText(f"Cannot compare: {reason}")

        def work() -> MemberComparison:
            return compare_members(analyses, a, b)  # (the app's collector runs on the GUI thread only)

        self.jobs.run(work, self.show_comparison, failed)

    def show_comparison(self, c: MemberComparison) -> None:
        self.comparison = c
        self.ready = False
        self.twin.set_indexes(self.analyses.index, self.analyses.index)
        self.setWindowTitle(f"{c.family.label}: {c.a.title} ↔ {c.b.title} — ONNX Inspector")
        verdict = "identical bodies and arguments" if c.identical else \
            plural(len(c.rows), 'difference')
        self.header.setText(f"{c.family.label} — A: {c.a.title}   B: {c.b.title}   ({verdict})")
        self.rows.clear()
        for r in c.rows:
            label = f"argument {r.label}" if r.kind == "argument" else r.label
            item = QTreeWidgetItem([label, r.a, r.b])
            for col, text in enumerate((label, r.a, r.b)):
                item.setToolTip(col, tooltip(text))
            self.rows.addTopLevelItem(item)
        if c.identical:
            self.rows.addTopLevelItem(QTreeWidgetItem(["nothing differs: same body, same values", "", ""]))
        self.twin.a.label.set_full_text(f"A  {c.a.title}")
        self.twin.b.label.set_full_text(f"B  {c.b.title}")
        lit_a = {sa for sa, _sb in c.pairing.changed}
        lit_b = {sb for _sa, sb in c.pairing.changed}
        self.twin.show_pair(c.a.scope, c.b.scope, c.pairing, side_html("A", c.a, lit_a, c.arguments),
                            side_html("B", c.b, lit_b, c.arguments))


    def closeEvent(self, event: QCloseEvent) -> None:
        """Close at once: a comparison still being worked out reports to no one, and the graphs being laid out are
        never drawn (a layout that finished after the window was deleted drew on a deleted view: 3 runs in 12 of
        tests/test_gui_overload_compare.py printed "Internal C++ object (GraphView) already deleted")."""
        self.jobs.cancel()
        for side in (self.twin.a, self.twin.b):
            side.panel.drop_pending()
        super().closeEvent(event)

    def _drawn(self) -> None:
        if self.comparison is not None:
            self.ready = True
            self.shown.emit(self.comparison)


# the main window's side: picking two rows ----------------------------------------------------------------------
class FamilyCompare(QObject):
    """Ctrl+click two rows of the functions tree and press Ctrl+D (File → Compare Two Selected), or right-click
    a row → Compare with… one of its siblings. A child of ``parent`` (the main window: ``findChild(FamilyCompare)``)
    over the session's analyses; keeps the windows it opens referenced while they are open, and forgets each one
    when Qt deletes it (a closed window is deleted: asking it anything then raised ``Internal C++ object already
    deleted``, and Ctrl+D opened nothing)."""

    def __init__(self, session: Session, view: QTreeView, parent: QWidget) -> None:
        super().__init__(parent)
        self.session, self.view, self.parent_widget = session, view, parent
        self.windows: list[OverloadCompareWindow] = []
        view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._context_menu)

    def selected_objects(self) -> list[TreeObject]:
        rows = self.view.selectionModel().selectedRows(0)
        return [r.data(self._role()) for r in sorted(rows, key=lambda r: self.view.visualRect(r).top())]

    def compare_selected(self) -> OverloadCompareWindow | None:
        objs = self.selected_objects()
        if len(objs) != 2:
            self.session.message.emit("Select two overloads or calls of one family (Ctrl+click) to compare", 5000)
            return None
        return self.compare(objs[0], objs[1])

    def compare(self, a: TreeObject, b: TreeObject) -> OverloadCompareWindow | None:
        analyses = self.session.analyses
        if analyses is None:
            return None
        try:
            check_members(analyses, a, b)
        except ValueError as e:
            self.session.message.emit(f"Cannot compare: {e}", 5000)
            return None
        window = OverloadCompareWindow(analyses)
        window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        window.destroyed.connect(self._window_gone)
        self.windows = [*self.windows, window]
        window.show()
        window.start(a, b)
        return window

    def _window_gone(self) -> None:
        """A comparison window was deleted: forget it once it is gone, unless this helper went first (the main
        window closed before the comparison did)."""
        if isValid(self):
            QTimer.singleShot(0, self, self._forget_deleted)

    def _forget_deleted(self) -> None:
        """Drop the windows Qt has deleted (their Python wrappers must never be asked anything again)."""
        self.windows = [x for x in self.windows if isValid(x)]

    def siblings(self, obj: TreeObject) -> list[tuple[str, TreeObject]]:
        """What ``obj`` can be compared with: the other overloads of its function family and their call sites, or
        the other calls of its aten family, as (label, object)."""
        analyses = self.session.analyses
        me = member_of(obj)
        if analyses is None or me is None:
            return []
        fam = analyses.family_of(me)
        if fam is None:
            return []
        calls = analyses.index.functions.calls
        out: list[tuple[str, TreeObject]] = []
        for ov in fam.overloads:
            if ov.kind == "function" and ov.function is not None:
                if ov.function != me:
                    out.append((str(ov.function), ov.function))
                if ov.function != me or isinstance(obj, CallSite):  # a call: the other calls of its function too
                    out.extend((f"call {site.where}", site) for site in calls.get(ov.function, ()) if site != obj)
            for call in ov.aten_calls:
                if call is not me:
                    out.append((call.place, call))
        return out

    def _role(self) -> int:
        return int(FamilyModel.ObjectRole)

    def _context_menu(self, pos: QPoint) -> None:
        view = self.view
        index: QModelIndex = view.indexAt(pos)
        menu = QMenu(view)
        two = len(self.selected_objects()) == 2
        act = menu.addAction("Compare the Two Selected Side by Side")
        act.setEnabled(two)
        act.triggered.connect(self.compare_selected)
        obj = index.siblingAtColumn(0).data(self._role()) if index.isValid() else None
        others = self.siblings(obj)
        pick = menu.addAction("Compare with…")
        pick.setEnabled(bool(others))
        pick.triggered.connect(lambda: self._pick(obj, others))
        menu.exec(view.viewport().mapToGlobal(pos))

    def _pick(self, obj: TreeObject, others: list[tuple[str, TreeObject]]) -> None:
        labels = [label for label, _o in others]
        label, ok = QInputDialog.getItem(self.parent_widget, "Compare with…", "Compare with", labels, 0, False)
        if ok and label in labels:
            self.compare(obj, others[labels.index(label)][1])
