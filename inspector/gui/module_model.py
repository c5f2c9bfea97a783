"""Qt item model of the module hierarchy recorded by torch (``nn.Module`` paths and classes)."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QStandardItem, QStandardItemModel

from inspector.core.provenance import ModuleNode
from inspector.gui.text import tooltip

ObjectRole = 0x0101


def module_model(root: ModuleNode) -> QStandardItemModel:
    """A two-column model (module, class); built iteratively since module trees can be deep."""
    model = QStandardItemModel()
    model.setHorizontalHeaderLabels(["Module", "Class", "Nodes"])
    top = _row(root, "(model)")
    model.appendRow(top)
    stack: list[tuple[ModuleNode, QStandardItem]] = [(root, top[0])]
    while stack:
        node, item = stack.pop()
        for child in node.children.values():
            row = _row(child, child.name)
            item.appendRow(row)
            stack.append((child, row[0]))
    return model


def _row(node: ModuleNode, label: str) -> list[QStandardItem]:
    cells = [QStandardItem(label), QStandardItem(node.class_name.rsplit(".", 1)[-1]),
             QStandardItem(str(node.total_nodes()))]
    for c in cells:
        c.setEditable(False)
        c.setToolTip(tooltip(f"{node.path or '(root)'}\n{node.class_name}"))
    cells[0].setData(node, ObjectRole)
    return cells


def object_of(item: QStandardItem | None) -> Any:
    return item.data(ObjectRole) if item is not None else None
