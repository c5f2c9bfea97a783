"""Lazy Qt item model of the module hierarchy recorded by torch (``nn.Module`` paths and classes).

Rows are made only when a view asks for them, so a model with tens of thousands of modules opens instantly.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt

from inspector.core.model.module_tree import ModuleNode
from inspector.gui.text import tooltip

Index = QModelIndex | QPersistentModelIndex
ObjectRole = Qt.ItemDataRole.UserRole + 1
HEADERS = ("Module", "Class", "Nodes")


class ModuleModel(QAbstractItemModel):
    """``totals``: nodes per module (``module_totals``, one pass off the GUI thread); without it, each shown row
    walks its subtree."""

    def __init__(self, root: ModuleNode | None, totals: dict[int, int] | None = None) -> None:
        """``root`` None: the model names no modules (no pkg.torch.onnx metadata), and the tree has no rows."""
        super().__init__()
        self._top = [root] if root is not None else []  # one visible root row: the model itself
        self._children: dict[int, list[ModuleNode]] = {}
        self._parent: dict[int, tuple[ModuleNode | None, int]] = {id(root): (None, 0)} if root is not None else {}
        self._totals: dict[int, int] = totals if totals is not None else {}

    def total(self, node: ModuleNode) -> int:
        """Nodes in ``node`` and its submodules."""
        total = self._totals.get(id(node))
        if total is None:
            total = self._totals[id(node)] = node.total_nodes()
        return total

    def _kids(self, node: ModuleNode | None) -> list[ModuleNode]:
        if node is None:
            return self._top
        kids = self._children.get(id(node))
        if kids is None:
            kids = self._children[id(node)] = list(node.children.values())
            for row, child in enumerate(kids):
                self._parent[id(child)] = (node, row)
        return kids

    def _node(self, index: Index) -> ModuleNode | None:
        if not index.isValid():
            return None
        node = index.internalPointer()
        assert isinstance(node, ModuleNode)
        return node

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        kids = self._kids(self._node(parent))
        if 0 <= row < len(kids) and 0 <= column < len(HEADERS):
            return self.createIndex(row, column, kids[row])
        return QModelIndex()

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        node = self._node(index)
        if node is None:
            return QModelIndex()
        parent, _row = self._parent.get(id(node), (None, 0))
        if parent is None:
            return QModelIndex()
        _grand, prow = self._parent.get(id(parent), (None, 0))
        return self.createIndex(prow, 0, parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        node = self._node(parent)
        return len(self._top) if node is None else len(node.children)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return len(HEADERS)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        node = self._node(parent)
        return True if node is None else bool(node.children) and parent.column() == 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        node = self._node(index)
        if node is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if index.column() == 0:
                return node.name or "(model)"
            if index.column() == 1:
                return node.class_name.rsplit(".", 1)[-1]
            return str(self.total(node))
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(f"{node.path or '(root)'}\n{node.class_name}")
        if role == ObjectRole:
            return node
        return None


def object_of(index: QModelIndex) -> ModuleNode | None:
    return index.siblingAtColumn(0).data(ObjectRole) if index.isValid() else None
