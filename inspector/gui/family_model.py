"""Qt item model of the functions tree: families -> overloads -> call sites (functions and aten calls).

The tree stays small whatever the model's size: families and overloads are rows from the start, but the call
rows of an overload (79,670 aten calls in a 100k-node export, 14,060 in its largest overload) are made only when
the overload is expanded (``canFetchMore`` / ``fetchMore``), and then at most ``CAP`` of them, followed by a row
saying how many more there are; the filter narrows them (its matches are the rows then), and a jump to a call
beyond them adds that call's row. A tree view lays out every row of an expanded parent again on each change,
calling back into Python for each, so showing 14,060 rows would hold the GUI thread for ~0.3 s per change. What
needs every call (the filter's matches, where a call's row is) is worked out by ``FamilyTree`` off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt

from inspector.core.model.calls import RULED_OUT, AtenCall
from inspector.core.model.function_sites import CallSite
from inspector.core.model.index import ModelIndex, Overload
from inspector.core.util.units import plural
from inspector.gui.text import tooltip
from inspector.gui.theme import status_brush

Index = QModelIndex | QPersistentModelIndex
ItemKind = Literal["root", "family", "overload", "aten_call", "call_site", "more"]  # KindRole's values
Call = AtenCall | CallSite
CAP = 500  # call rows made per overload (plus the calls jumped to)
EAGER = 64  # an overload with at most this many calls has its rows from the start
_ROW = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_LEAF = _ROW | Qt.ItemFlag.ItemNeverHasChildren


class _Item:
    """A row. For an overload: ``calls`` are all its calls, ``match`` those the filter keeps (None: all),
    ``pinned`` the calls given a row by a jump; ``children`` are the rows made (``made``)."""

    __slots__ = ("calls", "children", "count", "kind", "made", "match", "obj", "parent", "pinned", "row", "text")

    def __init__(self, parent: _Item | None, row: int, kind: ItemKind, obj: Any, text: str, count: str = "") -> None:
        self.parent, self.row, self.kind, self.obj, self.text, self.count = parent, row, kind, obj, text, count
        self.children: list[_Item] = []
        self.calls: Sequence[Call] = ()
        self.match: Sequence[Call] | None = None
        self.pinned: list[Call] = []
        self.made = False

    def label(self) -> str:
        if not self.text and self.kind in ("aten_call", "call_site"):
            self.text = call_text(self.obj)  # on first show: a call's module path is read from its metadata
        return self.text

    def build_rows(self) -> list[_Item]:
        """The call rows: the first ``CAP`` calls the filter keeps, the pinned ones, and a row saying how many
        more there are."""
        shown = self.calls if self.match is None else self.match
        head = list(shown[:CAP])
        ids = {id(c) for c in head}
        rows = [self._call_row(row, call) for row, call in enumerate(head + [c for c in self.pinned
                                                                              if id(c) not in ids])]
        if len(shown) > CAP:
            more = len(shown) - CAP
            rows.append(_Item(self, len(rows), "more", None, f"… {plural(more, 'more call', 'more calls')}: "
                                                             "type in the filter to narrow them"))
        return rows

    def make_rows(self) -> None:
        self.children, self.made = self.build_rows(), True

    def _call_row(self, row: int, call: Call) -> _Item:
        if isinstance(call, AtenCall):
            return _Item(self, row, "aten_call", call, "", plural(len(call.node_paths), "node"))
        return _Item(self, row, "call_site", call, call.where)

    def has_rows(self) -> bool:
        return bool(self.children) if self.made else bool(self.calls if self.match is None else self.match)


def call_text(call: Call) -> str:
    """A call row's name: the module path and FX name of an aten call (``model.layers.1.self_attn › softmax_1``, as
    the signature panel and search write a call), the path of a function call site. The path comes first: siblings
    differ there first (which layer), and a row too long for its column keeps where it differs and its end
    (``distinct``); with the FX name first (``softmax_1  (…)``) the name was that first difference and the layer
    was cut."""
    if isinstance(call, AtenCall):
        return call.place
    return call.where


@dataclass(frozen=True, slots=True)
class Matches:
    """What the filter keeps: ``kept``, the ids of the family and overload rows kept; ``calls``, per kept overload
    row (by id) the calls it keeps when its own name does not match (a matching name keeps all its calls);
    ``call_ids``, the ids of those calls (whose name or module path matches), for the Review list to find their
    items by (``ReviewPanel.set_filter``) without reading a module path on the GUI thread."""

    text: str
    kept: frozenset[int]
    calls: dict[int, list[Call]]
    call_ids: frozenset[int] = frozenset()


class FamilyTree:
    """The rows of one model's functions tree, built off the GUI thread (pure Python, no Qt): families and
    overloads, the call rows of small overloads, and where each call is (``locate``)."""

    def __init__(self, index: ModelIndex) -> None:
        self.root = _Item(None, 0, "root", None, "")
        self.root.made = True
        self._where: dict[int, _Item] = {}  # id(call) -> its overload's row
        for fam in index.families:
            item = _Item(self.root, len(self.root.children), "family", fam, fam.label, f"{fam.call_count:,}")
            item.made = True
            self.root.children.append(item)
            for ov in fam.overloads:
                item.children.append(self._overload_item(item, ov, index))

    def _overload_item(self, parent: _Item, ov: Overload, index: ModelIndex) -> _Item:
        text = ov.label if ov.kind == "aten_call" else (ov.overload or "(default)")
        item = _Item(parent, len(parent.children), "overload", ov, text, f"{ov.call_count:,}")
        if ov.kind == "aten_call":
            item.calls = ov.aten_calls
        elif ov.function is not None:
            item.calls = index.functions.calls.get(ov.function, ())
        for call in item.calls:
            self._where[id(call)] = item
        if len(item.calls) <= EAGER:
            item.make_rows()
        return item

    def overload_of(self, call: Any) -> _Item | None:
        return self._where.get(id(call))

    def find(self, obj: Any) -> _Item | None:
        """The family or overload row of ``obj``."""
        for fam in self.root.children:
            if fam.obj is obj:
                return fam
            for ov in fam.children:
                if ov.obj is obj:
                    return ov
        return None

    def matching(self, text: str) -> Matches | None:
        """What the filter ``text`` keeps (None: all): rows whose name contains it (ignoring case), everything
        below them, and their parents. Reads nothing the GUI thread changes, so it runs off the GUI thread."""
        q = text.strip().casefold()
        if not q:
            return None
        kept: set[int] = set()
        calls: dict[int, list[Call]] = {}
        ids: set[int] = set()
        for fam in self.root.children:
            fam_hit = q in fam.text.casefold()
            for ov in fam.children:
                if fam_hit or q in ov.text.casefold():
                    kept.add(id(ov))
                    continue
                hits = [c for c in ov.calls if q in call_text(c).casefold()]
                if hits:
                    kept.add(id(ov))
                    calls[id(ov)] = hits
                    ids.update(map(id, hits))
            if fam_hit or any(id(ov) in kept for ov in fam.children):
                kept.add(id(fam))
        return Matches(text, frozenset(kept), calls, frozenset(ids))

    def item_count(self) -> int:
        """How many rows have been made (families, overloads, calls and "more" rows)."""
        count, stack = 0, [self.root]
        while stack:
            item = stack.pop()
            count += len(item.children)
            stack.extend(item.children)
        return count


class FamilyModel(QAbstractItemModel):
    """Three columns: name, calls, review. ``ObjectRole`` gives the core object behind a row."""

    ObjectRole = Qt.ItemDataRole.UserRole + 1
    KindRole = Qt.ItemDataRole.UserRole + 2

    def __init__(self, index: ModelIndex | None = None) -> None:
        super().__init__()
        self.tree: FamilyTree | None = None
        self._root = _Item(None, 0, "root", None, "")
        self._badges: dict[int, BadgeCounts] = {}
        if index is not None:
            self.set_index(index)

    def set_index(self, index: ModelIndex) -> None:
        """Build the rows here (small models, tests); the window builds a ``FamilyTree`` off the GUI thread."""
        self.set_tree(FamilyTree(index))

    def set_tree(self, tree: FamilyTree) -> None:
        self.beginResetModel()
        self.tree, self._root = tree, tree.root
        self.endResetModel()

    def matching(self, text: str) -> Matches | None:
        return self.tree.matching(text) if self.tree is not None else None

    def apply(self, matches: Matches | None) -> None:
        """Show the calls the filter keeps below each overload (the rows of collapsed overloads are made later).
        At most ``CAP`` rows per overload change: the GUI thread never walks all calls."""
        if self.tree is None:
            return
        for fam in self._root.children:
            for ov in fam.children:
                match = matches.calls.get(id(ov)) if matches is not None else None
                if match is ov.match:
                    continue
                parent = self.createIndex(ov.row, 0, ov)
                if ov.made and ov.children:
                    self.beginRemoveRows(parent, 0, len(ov.children) - 1)
                    ov.children = []
                    self.endRemoveRows()
                ov.match = match
                if ov.made:
                    ov.made = False
                    self.fetch(ov)

    def matched_overloads(self, matches: Matches, rows: int) -> list[QModelIndex]:
        """The overload rows the filter keeps for some of their calls (not for their own name or their family's), in
        the tree's order, as many as show at most ``rows`` call rows between them (the first one whatever its count,
        which ``CAP`` bounds): the rows to expand so that the calls found are in view, not a click away."""
        out: list[QModelIndex] = []
        shown = 0
        for fam in self._root.children:
            for ov in fam.children:
                found = matches.calls.get(id(ov))
                if found is None:
                    continue
                shown += min(len(found), CAP)
                if out and shown > rows:
                    return out
                out.append(self.createIndex(ov.row, 0, ov))
        return out

    def fetch(self, item: _Item) -> None:
        """Make the call rows of overload ``item`` (once)."""
        if item.made or item.kind != "overload":
            return
        rows = item.build_rows()
        if rows:
            self.beginInsertRows(self.createIndex(item.row, 0, item), 0, len(rows) - 1)
        item.children, item.made = rows, True
        if rows:
            self.endInsertRows()

    def index_of(self, obj: Any) -> QModelIndex:
        """The row showing ``obj`` (a Family, Overload, AtenCall or CallSite). A call's row is made when it has
        none: its overload's rows are made, and a call beyond the first ``CAP`` gets a row of its own."""
        if self.tree is None:
            return QModelIndex()
        found = self.tree.find(obj)
        if found is not None:
            return self.createIndex(found.row, 0, found)
        ov = self.tree.overload_of(obj)
        if ov is None:
            return QModelIndex()
        self.fetch(ov)
        for child in ov.children:
            if child.obj is obj:
                return self.createIndex(child.row, 0, child)
        ov.pinned.append(obj)
        row = len(ov.children) - (1 if ov.children and ov.children[-1].kind == "more" else 0)
        self.beginInsertRows(self.createIndex(ov.row, 0, ov), row, row)
        ov.children.insert(row, ov._call_row(row, obj))
        for k in range(row + 1, len(ov.children)):
            ov.children[k].row = k
        self.endInsertRows()
        return self.createIndex(row, 0, ov.children[row])

    def item_count(self) -> int:
        return self.tree.item_count() if self.tree is not None else 0

    def _counts(self, item: _Item) -> BadgeCounts | None:
        if item.kind == "overload":
            return self._badges.get(id(item.obj), _NONE)
        if item.kind != "family":
            return None
        counts = [self._badges.get(id(c.obj), _NONE) for c in item.children]
        return BadgeCounts(*map(sum, zip(*counts))) if counts else _NONE

    def _badge(self, item: _Item, short: bool) -> str:
        counts = self._counts(item)
        return badge_text(*counts, short=short) if counts is not None else ""

    def set_badges(self, badges: dict[int, BadgeCounts]) -> None:
        """Per ``id(overload)``: its ``BadgeCounts``, shown as "3 spec · 1 wrong · 2 open"."""
        self._badges = badges
        if self._root.children:
            last = self.index(len(self._root.children) - 1, 2)
            self.dataChanged.emit(self.index(0, 2), last)
            for row, fam in enumerate(self._root.children):
                parent = self.index(row, 0)
                if fam.children:
                    self.dataChanged.emit(self.index(0, 2, parent), self.index(len(fam.children) - 1, 2, parent))

    def item(self, index: Index) -> _Item:
        """The row behind ``index`` (the invisible root for an invalid index)."""
        return self._item(index)

    def child_texts(self, parent: Index) -> list[str]:
        """The first column's texts of ``parent``'s rows (as ``data`` gives them), in one call: the elision compares a
        row with its siblings, and asking Qt for each of an overload's 500 rows was 28 ms under the profiler."""
        return [str(child.label() or "") for child in self._item(parent).children]

    # Qt model API -------------------------------------------------------------------------------
    def _item(self, index: Index) -> _Item:
        if index.isValid():
            item = index.internalPointer()
            assert isinstance(item, _Item)
            return item
        return self._root

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        p = self._item(parent)
        if 0 <= row < len(p.children) and 0 <= column < 3:
            return self.createIndex(row, column, p.children[row])
        return QModelIndex()

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        item = self._item(index)
        if item.parent is None or item.parent is self._root:
            return QModelIndex()
        return self.createIndex(item.parent.row, 0, item.parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._item(parent).children)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        if parent.isValid() and parent.column() != 0:
            return False
        return self._item(parent).has_rows()

    def canFetchMore(self, parent: Index) -> bool:
        item = self._item(parent)
        return not item.made and item.has_rows() and parent.column() == 0

    def fetchMore(self, parent: Index) -> None:
        if parent.isValid() and parent.column() == 0:
            self.fetch(self._item(parent))

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return _LEAF if index.internalPointer().kind in ("aten_call", "call_site", "more") else _ROW

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 3

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return ("Function / overload / call", "Calls", "Review")[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        item = self._item(index)
        if role == Qt.ItemDataRole.DisplayRole and index.column() == 2:
            return self._badge(item, short=True)
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 2:
            return self._badge(item, short=False) or None
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == 2:
            counts = self._counts(item)  # (a row holding a wrong item in its colour, else a suspicious one in that)
            if counts is None or not (counts.wrong or counts.suspicious):
                return None
            return status_brush("wrong" if counts.wrong else "suspicious")
        if role == Qt.ItemDataRole.DisplayRole:
            if index.column() == 0:
                return item.label()
            # an overload the filter keeps for some of its calls: how many of them (``2 of 15``)
            return f"{len(item.match):,} of {item.count}" if item.match is not None else item.count
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 0:
            return tooltip(item.label() + recognised_note(item.obj))
        if role == self.ObjectRole:
            return item.obj
        if role == self.KindRole:
            return item.kind
        return None


def recognised_note(obj: object) -> str:
    """For a call recognised by body template (its nodes carry no fx metadata), and for an overload of such calls,
    a line naming the templates (shown escaped, as the whole tooltip is); "" for anything else."""
    calls = [obj] if isinstance(obj, AtenCall) else obj.aten_calls if isinstance(obj, Overload) else []
    names = sorted({t for c in calls for t in c.recognised})
    if not names:
        return ""
    ruled_out = sorted({t for c in calls for t in c.ruled_out})
    named = f"; also fits {', '.join(ruled_out)}: {RULED_OUT}" if ruled_out else ""
    return f"\nrecognised by template{'s' if len(names) != 1 else ''} {', '.join(names)} (no fx metadata){named}"


class BadgeCounts(NamedTuple):
    """An overload's review counts (``reviewing.badges``): its specialised values, its items left to review, and the
    items marked suspicious and wrong."""

    specialised: int
    unreviewed: int
    suspicious: int = 0
    wrong: int = 0


_NONE = BadgeCounts(0, 0)


def badge_text(specialised: int, unreviewed: int, suspicious: int = 0, wrong: int = 0, short: bool = True) -> str:
    """``3 spec · 1 wrong · 2 open`` for the Review column (``3 specialised values · 1 marked wrong · 2 unreviewed
    items`` in full): what is flagged before what is left, so that a narrow column keeps it."""
    if short:
        words = [(specialised, "spec"), (wrong, "wrong"), (suspicious, "susp"), (unreviewed, "open")]
        return " · ".join(f"{n} {w}" for n, w in words if n)
    parts = [plural(specialised, "specialised value"), f"{wrong} marked wrong", f"{suspicious} marked suspicious",
             plural(unreviewed, "unreviewed item")]
    return " · ".join(p for n, p in zip((specialised, wrong, suspicious, unreviewed), parts) if n)



class FamilyFilter(QSortFilterProxyModel):
    """Keeps the family and overload rows of ``FamilyTree.matching`` (the calls an overload keeps are its rows:
    ``FamilyModel.apply``): a case-insensitive filter that keeps the parents of matching rows and everything
    below them. The matches are computed first (off the GUI thread for large models), so Qt only looks up the
    rows the model has, never every call of a 100k-node model."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: frozenset[int] | None = None
        self.text = ""

    def set_kept(self, text: str, kept: frozenset[int] | None) -> None:
        self.beginFilterChange()
        self.text, self.kept = text, kept
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def child_texts(self, parent: Index) -> list[str] | None:
        """The first column's texts of ``parent``'s rows, from the model's rows in one call (``DistinctDelegate``);
        None when this filter hides some of them (it never reorders rows)."""
        model, source = self.sourceModel(), self.mapToSource(parent)
        if not isinstance(model, FamilyModel) or self.rowCount(parent) != model.rowCount(source):
            return None
        return model.child_texts(source)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if self.kept is None:
            return True
        model = self.sourceModel()
        parent = model.item(source_parent) if isinstance(model, FamilyModel) else None
        if parent is None or source_row >= len(parent.children):
            return False
        row = parent.children[source_row]
        return row.kind not in ("family", "overload") or id(row) in self.kept
