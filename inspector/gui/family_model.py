"""Qt item model of the functions tree: families -> overloads -> call sites (functions and aten calls)."""

from __future__ import annotations

from typing import Any, Literal

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt

from inspector.core.index import Family, ModelIndex, Overload
from inspector.gui.text import tooltip

Index = QModelIndex | QPersistentModelIndex
ItemKind = Literal["root", "family", "overload", "aten_call", "call_site"]  # KindRole's values


class _Item:
    __slots__ = ("children", "count", "kind", "obj", "parent", "row", "text")

    def __init__(self, parent: _Item | None, row: int, kind: ItemKind, obj: Any, text: str, count: str = "") -> None:
        self.parent, self.row, self.kind, self.obj, self.text, self.count = parent, row, kind, obj, text, count
        self.children: list[_Item] = []


class FamilyModel(QAbstractItemModel):
    """Two columns: name and calls. ``ObjectRole`` gives the core object behind a row."""

    ObjectRole = Qt.ItemDataRole.UserRole + 1
    KindRole = Qt.ItemDataRole.UserRole + 2

    def __init__(self, index: ModelIndex | None = None) -> None:
        super().__init__()
        self._root = _Item(None, 0, "root", None, "")
        self._badges: dict[int, tuple[int, int]] = {}
        if index is not None:
            self.set_index(index)

    def set_index(self, index: ModelIndex) -> None:
        self.beginResetModel()
        self._root = _Item(None, 0, "root", None, "")
        for fam in index.families:
            self._add_family(fam)
        self.endResetModel()

    def _add_family(self, fam: Family) -> None:
        item = _Item(self._root, len(self._root.children), "family", fam, fam.label, str(fam.call_count))
        self._root.children.append(item)
        for ov in fam.overloads:
            item.children.append(self._overload_item(item, ov))

    def _overload_item(self, parent: _Item, ov: Overload) -> _Item:
        text = ov.label if ov.kind == "aten_call" else (ov.overload or "(default)")
        item = _Item(parent, len(parent.children), "overload", ov, text, str(ov.call_count))
        if ov.kind == "aten_call":
            for call in ov.aten_calls:
                where = f"{call.name}  ({call.module_path or 'root'})"
                item.children.append(_Item(item, len(item.children), "aten_call", call, where,
                                           _plural(len(call.node_paths), "node")))
        return item

    def add_call_sites(self, index: ModelIndex) -> None:
        """Attach function call sites below their overloads (done once after ``set_index``)."""
        self.beginResetModel()
        for fam_item in self._root.children:
            for ov_item in fam_item.children:
                ov = ov_item.obj
                if ov.kind == "function" and ov.function is not None:
                    for site in index.functions.calls.get(ov.function, ()):
                        ov_item.children.append(_Item(ov_item, len(ov_item.children), "call_site", site, site.where))
        self.endResetModel()

    def matching(self, text: str) -> set[int] | None:
        """``id`` of every row the filter ``text`` keeps (None: all): rows whose name contains it (ignoring
        case), everything below them, and their parents. Pure Python over the rows: safe off the GUI thread."""
        q = text.strip().casefold()
        if not q:
            return None
        kept: set[int] = set()
        for fam in self._root.children:
            fam_hit = q in fam.text.casefold()
            for ov in fam.children:
                ov_hit = fam_hit or q in ov.text.casefold()
                for call in ov.children:
                    if ov_hit or q in call.text.casefold():
                        kept.add(id(call))
                if ov_hit or any(id(c) in kept for c in ov.children):
                    kept.add(id(ov))
            if fam_hit or any(id(o) in kept for o in fam.children):
                kept.add(id(fam))
        return kept

    def _badge(self, item: _Item, short: bool) -> str:
        if item.kind == "overload":
            return badge_text(*self._badges.get(id(item.obj), (0, 0)), short=short)
        if item.kind != "family":
            return ""
        counts = [self._badges.get(id(c.obj), (0, 0)) for c in item.children]
        return badge_text(sum(c[0] for c in counts), sum(c[1] for c in counts), short=short)

    def index_of(self, obj: Any) -> QModelIndex:
        """The row showing ``obj`` (a Family, Overload, AtenCall or CallSite), searched breadth first."""
        stack = [self._root]
        while stack:
            item = stack.pop(0)
            for child in item.children:
                if child.obj is obj:
                    return self.createIndex(child.row, 0, child)
                stack.append(child)
        return QModelIndex()

    def set_badges(self, badges: dict[int, tuple[int, int]]) -> None:
        """Per ``id(overload)``: (specialised values, unreviewed items), shown as "3 spec · 2 open"."""
        self._badges = badges
        if self._root.children:
            last = self.index(len(self._root.children) - 1, 2)
            self.dataChanged.emit(self.index(0, 2), last)
            for row, fam in enumerate(self._root.children):
                parent = self.index(row, 0)
                if fam.children:
                    self.dataChanged.emit(self.index(0, 2, parent), self.index(len(fam.children) - 1, 2, parent))

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
        if role == Qt.ItemDataRole.DisplayRole:
            return item.text if index.column() == 0 else item.count
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 0:
            return tooltip(item.text)
        if role == self.ObjectRole:
            return item.obj
        if role == self.KindRole:
            return item.kind
        return None


def badge_text(specialised: int, unreviewed: int, short: bool = True) -> str:
    """``3 spec · 2 open`` for the Review column (``3 specialised values · 2 unreviewed items`` in full)."""
    words = ("spec", "open") if short else ("specialised values", "unreviewed items")
    parts = [f"{specialised} {words[0]}"] if specialised else []
    if unreviewed:
        parts.append(f"{unreviewed} {words[1]}")
    return " · ".join(parts)


class FamilyFilter(QSortFilterProxyModel):
    """Keeps the rows of ``FamilyModel.matching``: a case-insensitive filter that keeps the parents of matching
    rows and everything below them. The set is computed first (off the GUI thread for large models), so Qt only
    looks up the rows it shows, never walks every call of a 100k-node model."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: set[int] | None = None
        self.text = ""

    def set_kept(self, text: str, kept: set[int] | None) -> None:
        self.beginFilterChange()
        self.text, self.kept = text, kept
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if self.kept is None:
            return True
        item = self.sourceModel().index(source_row, 0, source_parent).internalPointer()
        return id(item) in self.kept


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"
