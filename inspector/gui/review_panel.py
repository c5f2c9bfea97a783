"""Reviewing: a bar to mark the current overload or specialised value, and a panel listing everything to review."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.categories import short_where
from inspector.core.keys import FunctionKey
from inspector.core.review import Review, ReviewKey
from inspector.core.specialise import BodyAnalysis, FamilyAnalysis, SpecialisedValue
from inspector.gui.widgets import ElidedLabel, LineEdit

STATUS_COLOURS = {"ok": "#6aa84f", "suspicious": "#e69138", "wrong": "#cc0000", "unreviewed": "#999999"}
SHORTCUTS = {"ok": "Ctrl+1", "suspicious": "Ctrl+2", "wrong": "Ctrl+3", "unreviewed": "Ctrl+0"}


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One reviewable thing: an overload's body, or one specialised value, with its family."""

    key: ReviewKey
    obj: BodyAnalysis | SpecialisedValue
    family: FamilyAnalysis

    @property
    def body(self) -> BodyAnalysis | None:
        if isinstance(self.obj, BodyAnalysis):
            return self.obj
        return next((b for b in self.family.bodies if any(s is self.obj for s in b.specialised)), None)

    @property
    def owner(self) -> str:
        """The overload (function) or the calls (aten) the item belongs to."""
        body = self.body
        if body is None or not body.members:
            return ""
        first = body.members[0]
        if isinstance(first, FunctionKey):
            return f"overload {first.overload or first.name}"
        n = len(body.members)
        return f"{n} call{'s' if n != 1 else ''}, e.g. {getattr(first, 'name', first)}"

    @property
    def label(self) -> str:
        if isinstance(self.obj, SpecialisedValue):
            return f"{short_where(self.obj)} = {self.obj.literal.value!r}  — {self.owner}"
        return f"body of {self.owner}"


class ReviewBar(QWidget):
    """Marks the current target ok / suspicious / wrong with a note, by mouse or Ctrl+1/2/3 (Ctrl+0 resets)."""

    review_requested = Signal(str, str)  # status, note

    def __init__(self) -> None:
        super().__init__()
        self.target = ElidedLabel("Nothing to review selected")
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.note = LineEdit(placeholderText="Note (Enter saves it with the current status)")
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        for status in ("ok", "suspicious", "wrong", "unreviewed"):
            b = QPushButton(status.capitalize() if status != "unreviewed" else "Reset")
            b.setToolTip(f"Mark {status} ({SHORTCUTS[status]})")
            b.clicked.connect(lambda _=False, s=status: self.request(s))
            sc = QShortcut(QKeySequence(SHORTCUTS[status]), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)
            sc.activated.connect(lambda s=status: self.request(s))
            self.buttons[status] = b
            row.addWidget(b)
        self.note.returnPressed.connect(lambda: self.request(self._current or "ok"))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        top.addWidget(self.target, 1)
        top.addWidget(self.status)
        lay.addLayout(top)
        lay.addLayout(row)
        lay.addWidget(self.note)
        self._current: str | None = None
        self.set_target(None, None)

    def set_target(self, label: str | None, review: Review | None) -> None:
        enabled = label is not None
        for b in self.buttons.values():
            b.setEnabled(enabled)
        self.note.setEnabled(enabled)
        self.target.set_full_text(label or "Select an overload or click a highlighted value to review it")
        self._current = review.status if review else None
        self.status.setText(review.status if review else "")
        self.status.setStyleSheet(f"color: {STATUS_COLOURS.get(review.status, '#999')}; font-weight: bold"
                                  if review else "")
        self.note.setText(review.note if review else "")

    def request(self, status: str) -> None:
        if self.note.isEnabled():
            self.review_requested.emit(status, self.note.text())


class ReviewPanel(QWidget):
    """Everything reviewable in the model; double-click (or Enter) jumps to it."""

    jump = Signal(object)  # ReviewItem

    def __init__(self) -> None:
        super().__init__()
        self.only_open = QCheckBox("Only unreviewed")
        self.only_open.setChecked(True)
        self.only_open.toggled.connect(self._refill)
        self.summary = QLabel("")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Status", "Item", "Note"])
        self.tree.setRootIsDecorated(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.tree.itemActivated.connect(self._activated)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.only_open)
        top.addWidget(self.summary, 1)
        lay.addLayout(top)
        lay.addWidget(self.tree)
        self._items: list[tuple[ReviewItem, Review]] = []

    def set_items(self, items: list[tuple[ReviewItem, Review]]) -> None:
        self._items = items
        self._refill()

    def items(self) -> list[tuple[ReviewItem, Review]]:
        return list(self._items)

    def _refill(self) -> None:
        self.tree.clear()
        open_count = sum(1 for _i, r in self._items if r.status == "unreviewed")
        self.summary.setText(f"{open_count} of {len(self._items)} unreviewed")
        families: dict[str, QTreeWidgetItem] = {}
        for item, review in self._items:
            if self.only_open.isChecked() and review.status != "unreviewed":
                continue
            fam_label = item.family.family.label
            parent = families.get(fam_label)
            if parent is None:
                parent = families[fam_label] = QTreeWidgetItem(["", fam_label, ""])
                self.tree.addTopLevelItem(parent)
            row = QTreeWidgetItem([review.status, item.label, review.note])
            row.setForeground(0, _brush(review.status))
            row.setData(0, Qt.ItemDataRole.UserRole, item)
            parent.addChild(row)
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self.tree.resizeColumnToContents(1)

    def _activated(self, row: QTreeWidgetItem, _column: int) -> None:
        item = row.data(0, Qt.ItemDataRole.UserRole)
        if isinstance(item, ReviewItem):
            self.jump.emit(item)


def _brush(status: str) -> Any:
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(STATUS_COLOURS.get(status, "#999999")))
