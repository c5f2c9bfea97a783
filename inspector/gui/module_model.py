"""Lazy Qt item model of the module hierarchy recorded by torch (``nn.Module`` paths and classes).

Rows are made only when a view asks for them, so a model with tens of thousands of modules opens instantly. The filter
box above the tabs filters it too (``module_matches``, worked out off the GUI thread when the Modules tab is shown):
a module whose path or class contains the text is kept with its submodules and the modules above it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt

from inspector.core.model.module_tree import ModuleNode
from inspector.gui.text import tooltip

Index = QModelIndex | QPersistentModelIndex
ObjectRole = Qt.ItemDataRole.UserRole + 1
HEADERS = ("Module", "Class", "Nodes")
# matching modules the filtered tree expands its way down to: expanding all of them (a 100k-node export's "linear":
# 15.6k of 20k modules) held the GUI thread for 0.24-0.26 s; the rest are a click away
SHOWN_MATCHES = 100
OPENED_AT_MOST = 1000  # modules expanded for them at most (a hostile model's paths may nest 100k deep)


class ModuleModel(QAbstractItemModel):
    """``totals``: nodes per module (``module_totals``, one pass off the GUI thread), and ``call_totals`` its aten
    calls with its submodules' (``module_call_totals``); without them, each shown row walks its subtree."""

    def __init__(self, root: ModuleNode | None, totals: dict[int, int] | None = None,
                 call_totals: dict[int, int] | None = None) -> None:
        """``root`` None: the model names no modules (no pkg.torch.onnx metadata), and the tree has no rows."""
        super().__init__()
        self.root = root
        self._top = [root] if root is not None else []  # one visible root row: the model itself
        self._children: dict[int, list[ModuleNode]] = {}
        self._parent: dict[int, tuple[ModuleNode | None, int]] = {id(root): (None, 0)} if root is not None else {}
        self._totals: dict[int, int] = totals if totals is not None else {}
        self._calls: dict[int, int] = call_totals if call_totals is not None else {}
        self.kept: frozenset[int] | None = None  # ids of the modules a filter keeps (``module_matches``); None: all

    def set_kept(self, kept: frozenset[int] | None) -> None:
        """Show only the modules ``kept`` (ids, as ``module_matches`` gives them), or all of them (None)."""
        if kept == self.kept:
            return
        self.beginResetModel()
        self.kept = kept
        root = self.root
        self._top = [root] if root is not None and (kept is None or id(root) in kept) else []
        self._children = {}
        self._parent = {id(root): (None, 0)} if root is not None else {}
        self.endResetModel()

    def calls(self, node: ModuleNode) -> int:
        """Aten calls of ``node`` and its submodules."""
        total = self._calls.get(id(node))
        if total is None:
            total = self._calls[id(node)] = node.total_calls()
        return total

    def total(self, node: ModuleNode) -> int:
        """Nodes in ``node`` and its submodules."""
        total = self._totals.get(id(node))
        if total is None:
            total = self._totals[id(node)] = node.total_nodes()
        return total

    def child_index(self, parent: QModelIndex, above: ModuleNode, node: ModuleNode) -> QModelIndex:
        """The row of ``node`` under ``parent`` (the row of ``above``); invalid where the filter hides it."""
        kids = self._kids(above)
        up, row = self._parent.get(id(node), (None, -1))
        return self.index(row, 0, parent) if up is above and 0 <= row < len(kids) else QModelIndex()

    def _kids(self, node: ModuleNode | None) -> list[ModuleNode]:
        if node is None:
            return self._top
        kids = self._children.get(id(node))
        if kids is None:
            kept = self.kept
            kids = self._children[id(node)] = list(node.children.values()) if kept is None else \
                [m for m in node.children.values() if id(m) in kept]
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
        if node is None:
            return len(self._top)
        return len(node.children) if self.kept is None else len(self._kids(node))

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return len(HEADERS)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        node = self._node(parent)
        if node is None:
            return True
        return parent.column() == 0 and (bool(node.children) if self.kept is None else bool(self._kids(node)))

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
                return node.name_under(self._parent.get(id(node), (None, 0))[0]) or "(model)"
            if index.column() == 1:
                return node.class_name.rsplit(".", 1)[-1]
            return f"{self.total(node):,}"  # (as the Details tab and the graph's boxes count: 9,992 nodes)
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(f"{node.path or '(root)'}\n{node.class_name}")
        if role == ObjectRole:
            return node
        return None


def object_of(index: QModelIndex) -> ModuleNode | None:
    return index.siblingAtColumn(0).data(ObjectRole) if index.isValid() else None


def module_matches(root: ModuleNode, text: str, shown: int = SHOWN_MATCHES,
                   budget: int = OPENED_AT_MOST) -> tuple[frozenset[int], list[tuple[ModuleNode, ModuleNode]]]:
    """What the filter ``text`` (casefolded) keeps of the tree under ``root``: the ids of the modules whose path or
    class contains it, of every module under them and of the modules above them; and the modules to expand so that
    the first ``shown`` modules that match themselves (in the tree's order) are in view, each after its parent, as
    (parent, module) pairs, at most ``budget`` of them. Pure Python, no Qt: it runs off the GUI thread (a 100k-node
    export's 20k modules: 0.03-0.06 s), without recursion, and every module is looked at a bounded number of times (a
    hostile model's paths may nest 100k deep)."""
    kept: set[int] = set()
    hits: list[ModuleNode] = []
    parent: dict[int, ModuleNode] = {}
    stack: list[tuple[ModuleNode, bool]] = [(root, False)]
    while stack:
        node, under = stack.pop()
        own = text in node.path.casefold() or text in node.class_name.casefold()
        if own:
            hits.append(node)
        if (own or under) and id(node) not in kept:
            kept.add(id(node))
            up = parent.get(id(node))
            while up is not None and id(up) not in kept:  # (each module above is added once)
                kept.add(id(up))
                up = parent.get(id(up))
        for child in reversed(node.children.values()):  # (popped in the tree's order)
            parent[id(child)] = node
            stack.append((child, own or under))
    return frozenset(kept), _opened(hits[:shown], parent, budget)


def _opened(hits: list[ModuleNode], parent: dict[int, ModuleNode],
            budget: int) -> list[tuple[ModuleNode, ModuleNode]]:
    """The modules above ``hits`` (the root's children down), each after its parent and once, as (parent, module):
    none beyond ``budget`` (a chain that would pass it is left out)."""
    out: list[tuple[ModuleNode, ModuleNode]] = []
    seen: set[int] = set()
    for hit in hits:
        chain: list[tuple[ModuleNode, ModuleNode]] = []
        up = parent.get(id(hit))
        while up is not None and id(up) not in seen and len(out) + len(chain) <= budget:
            above = parent.get(id(up))
            if above is not None:  # (the root's row is open already)
                chain.append((above, up))
            seen.add(id(up))
            up = above
        if len(out) + len(chain) > budget:
            break
        out += chain[::-1]
    return out
