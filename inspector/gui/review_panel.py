"""Reviewing: a bar to mark the current overload or specialised value, and a panel listing everything to review."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import FunctionKey
from inspector.core.review.store import Review, ReviewKey
from inspector.core.specialise.categories import short_where, value_text
from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis, SpecialisedValue
from inspector.core.util.units import plural
from inspector.gui.text import tooltip
from inspector.gui.theme import status_brush, status_colour
from inspector.gui.widgets import ElidedLabel, LineEdit

OPEN = ("unreviewed", "changed")  # left to review (``reviewing.OPEN``, which imports this module)
SHOWN = {"unreviewed": "Unreviewed", "flagged": "Flagged", "all": "All"}  # what the Review list shows
FLAGGED = ("wrong", "suspicious")
SHOWN_STATUSES: dict[str, tuple[str, ...] | None] = {"unreviewed": OPEN, "flagged": FLAGGED, "all": None}
SHORTCUTS = {"ok": "Ctrl+1", "suspicious": "Ctrl+2", "wrong": "Ctrl+3", "unreviewed": "Ctrl+0"}
NEXT_SHORTCUT = "Ctrl+N"  # the next unreviewed item of the Review list
ITEM, STATUS, NOTE = 0, 1, 2  # the Review panel's columns


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
        return f"{plural(n, 'call')}, e.g. {getattr(first, 'name', first)}"

    @property
    def label(self) -> str:
        """What the item is, whose (the review bar and the status line): a value as the Signature tab writes it
        (``value_text``: ``0.5477226``; its repr read ``0.54772258`` beside it, a large tensor a dict)."""
        if isinstance(self.obj, SpecialisedValue):
            return f"{short_where(self.obj)} = {value_text(self.obj.literal.value)}  — {self.owner}"
        return f"body of {self.owner}"

    @property
    def lines(self) -> str:
        """The label on two lines, as the Review panel shows it: what (and its value), then whose."""
        if isinstance(self.obj, SpecialisedValue):
            return f"{short_where(self.obj)} = {value_text(self.obj.literal.value)}\n{self.owner}"
        return f"body of {self.owner}"


class ReviewBar(QWidget):
    """Marks the current target ok / suspicious / wrong with a note, by mouse or Ctrl+1/2/3 (Ctrl+0 resets); Next
    (Ctrl+N) asks for the next unreviewed item, so that a review goes through the list from the keyboard."""

    review_requested = Signal(str, str)  # status, note
    next_requested = Signal()

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
            b.clicked.connect(lambda _=False, s=status: self.request(s))
            sc = QShortcut(QKeySequence(SHORTCUTS[status]), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)
            sc.activated.connect(lambda s=status: self.request(s))
            self.buttons[status] = b
            row.addWidget(b)
        # on the target's line, as small as a link: a fifth button in the row widened the panel's least width, and
        # at 1024 px the graph gave up the room
        self.next = QToolButton()
        self.next.setText("Next ▸")
        self.next.setAutoRaise(True)
        self.next.setToolTip(tooltip(f"Show the next unreviewed item of the Review list ({NEXT_SHORTCUT})"))
        self.next.clicked.connect(self.next_requested)
        next_key = QShortcut(QKeySequence(NEXT_SHORTCUT), self)
        next_key.setContext(Qt.ShortcutContext.WindowShortcut)
        next_key.activated.connect(self.next_requested)
        self.note.returnPressed.connect(lambda: self.request(self._current or "ok"))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        top.addWidget(self.target, 1)
        top.addWidget(self.status)
        top.addWidget(self.next)
        lay.addLayout(top)
        lay.addLayout(row)
        lay.addWidget(self.note)
        self._current: str | None = None
        # the bar's widget that had the keyboard focus when its target went away for a moment (another body being
        # analysed): Qt moves the focus off a widget it disables, along the tab chain, and from the bar's last one
        # that is the filter box, its text selected for the next key to replace (Ok clicked, then Ctrl+N to the
        # next family's body). The bar holds the focus meanwhile and gives it back.
        self._refocus: QWidget | None = None
        self.set_target(None, None)

    def set_target(self, label: str | None, review: Review | None, why: str = "", value: bool = False) -> None:
        """Name the target (``label``) and its review; with none, the buttons are disabled and say ``why``. A
        ``value``'s label (``val_30 (Reshape) = [1, 8, -1, 8]  — 12 calls, e.g. …``) is elided at its end, so that
        the value stays whole and the calls it belongs to go first; an overload's in the middle; the sentence that
        says why there is nothing to review at its end, so that it reads from its start."""
        enabled = label is not None
        self._hold_focus(enabled)
        for status, b in self.buttons.items():
            b.setEnabled(enabled)
            b.setToolTip(tooltip(f"Mark {status} ({SHORTCUTS[status]})" if enabled else
                                 why or "Nothing to review is shown"))
        self.note.setEnabled(enabled)
        self.target.set_full_text(label or why or "Select an overload or click a highlighted value to review it",
                                  Qt.TextElideMode.ElideRight if value or label is None else
                                  Qt.TextElideMode.ElideMiddle)
        own = review is not None and review.status in SHORTCUTS  # (not "changed": carried over, no status to save)
        self._current = review.status if review is not None and own else None
        self.status.setText(review.status if review else "")
        self.status.setToolTip(tooltip(review.note) if review is not None and not own and review.note else "")
        self.status.setStyleSheet(f"color: {status_colour(review.status)}; font-weight: bold"
                                  if review else "")
        self.note.setText(review.note if review is not None and own else "")
        if enabled and self._refocus is not None:
            if self.hasFocus():  # (still held here: nobody took it meanwhile)
                self._refocus.setFocus(Qt.FocusReason.OtherFocusReason)
            self._refocus = None

    def _hold_focus(self, enabled: bool) -> None:
        """Before the bar's widgets are disabled, keep the keyboard focus in the bar if one of them has it
        (``_refocus``). ``setFocus`` gives a widget the focus whatever its focus policy."""
        focused = QApplication.focusWidget()
        if not enabled and focused is not None and focused is not self and self.isAncestorOf(focused):
            self._refocus = focused
            self.setFocus(Qt.FocusReason.OtherFocusReason)

    def request(self, status: str) -> None:
        if self.note.isEnabled():
            self.review_requested.emit(status, self.note.text())


class ReviewPanel(QWidget):
    """Everything reviewable in the model; a click (or Enter) jumps to it, as in the Search list. The filter box above
    the tabs filters this list as it filters the functions tree (``set_filter``): an item is listed when its family's
    name, its own label (where, value, overload or calls), the name of a call of its body or its note contains the
    text, ignoring case, or a call of its body is one the Functions tree keeps (by its name or module path: typing
    ``layers.3`` lists the items of the calls made in that module)."""

    jump = Signal(object)  # ReviewItem

    def __init__(self) -> None:
        super().__init__()
        # which items the list shows: those left to review, those a reviewer flagged, or all
        self.showing = QComboBox()
        for key, label in SHOWN.items():
            self.showing.addItem(label, key)
        self.showing.setToolTip(tooltip("Unreviewed: left to review (changed since reviewed too); Flagged: marked "
                                        "wrong or suspicious; All"))
        self.showing.currentIndexChanged.connect(self._refill)
        self.summary = QLabel("")
        self.tree = QTreeWidget()
        # the Item column comes first and takes the width the status and note leave; its text wraps (the value on
        # one line, the overload or calls it belongs to on the next), so no part of it is cut
        self.tree.setHeaderLabels(["Item", "Status", "Note"])
        self.tree.setRootIsDecorated(True)
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.setItemDelegateForColumn(ITEM, WrappedItems(self.tree))
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(ITEM, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(STATUS, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(NOTE, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(NOTE, 60)
        header.sectionResized.connect(lambda column, _old, _new: self.tree.doItemsLayout() if column == ITEM else None)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)  # one click: a double-click was needed before
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.showing)
        top.addWidget(self.summary, 1)
        lay.addLayout(top)
        lay.addWidget(self.tree)
        self._items: list[tuple[ReviewItem, Review]] = []
        self._filter = ""  # casefolded
        self._texts: dict[int, str] = {}  # id of an item of ``_items`` -> what the filter reads of it (``_text``)
        self._calls: frozenset[int] = frozenset()  # ids of the calls the filter keeps in the Functions tree
        self._kept_bodies: dict[int, bool] = {}  # id of a body -> whether one of its calls is in ``_calls``
        self._target: ReviewKey | None = None  # the item the review bar marks: its row is the current one
        self._listed = False  # ``_items`` are the model's whole list

    def show_target(self, key: ReviewKey | None) -> None:
        """Make the row of the item the review bar marks the current one (none where it is not listed), without a
        jump: the list shows where Ctrl+N goes on from."""
        self._target = key
        row = next((r for r in self._rows() if r.data(0, Qt.ItemDataRole.UserRole).key == key), None) if key else None
        if row is None:
            self.tree.setCurrentIndex(QModelIndex())
            self.tree.clearSelection()
        else:
            self.tree.setCurrentItem(row)
            self.tree.scrollToItem(row)

    def _rows(self) -> list[QTreeWidgetItem]:
        """Every item's row (the rows under the families' rows)."""
        tree, out = self.tree, []
        for k in range(tree.topLevelItemCount()):
            family = tree.topLevelItem(k)
            if family is not None:
                out += [row for j in range(family.childCount()) if (row := family.child(j)) is not None]
        return out

    def set_filter(self, text: str, calls: frozenset[int] = frozenset()) -> None:
        """List only the items that ``text`` matches (all when it is blank); ``calls``: the ids of the calls the
        Functions tree keeps for it (``Matches.call_ids``, worked out off the GUI thread, module paths included)."""
        q = text.strip().casefold()
        if q != self._filter or calls != self._calls:
            self._filter, self._calls = q, calls if q else frozenset()
            self._refill()

    def _matches(self, item: ReviewItem, review: Review) -> bool:
        q = self._filter
        return not q or q in self._text(item) or q in review.note.casefold() or self._keeps_a_call(item)

    def _keeps_a_call(self, item: ReviewItem) -> bool:
        """Whether a call of ``item``'s body is one the filter keeps: once per body and filter (a body's items share
        it; an 80k-call export's bodies hold each call once)."""
        body = item.body
        if not self._calls or body is None:
            return False
        got = self._kept_bodies.get(id(body))
        if got is None:
            calls = self._calls
            got = self._kept_bodies[id(body)] = any(map(calls.__contains__, map(id, body.members)))  # (in C)
        return got

    def _text(self, item: ReviewItem) -> str:
        """What the filter reads of ``item``, casefolded, made once per item: its family's name, its label, and the
        names of the calls (or overloads) of its body, as the Functions tree's filter reads call rows by name (one
        text per body: an 80k-call export's names are joined once, then each filter is one search in C)."""
        text = self._texts.get(id(item))
        if text is None:
            body = item.body
            names = [m.name if isinstance(m, AtenCall) else m.overload or m.name for m in body.members] if body else []
            text = self._texts[id(item)] = "\n".join([item.family.family.label, item.label, *names]).casefold()
        return text

    def set_items(self, items: list[tuple[ReviewItem, Review]], listed: bool = True) -> None:
        """The model's reviewable items; ``listed``: they are all of them (False while the list is being made)."""
        self._items, self._listed = items, listed
        self._texts = {}
        self._refill()

    def items(self) -> list[tuple[ReviewItem, Review]]:
        return list(self._items)

    def _refill(self) -> None:
        self._kept_bodies = {}
        self.tree.clear()
        counts = Counter(r.status for _i, r in self._items)
        matching = [(i, r) for i, r in self._items if self._matches(i, r)]
        summary = f"{counts['unreviewed']} of {len(self._items)} unreviewed" + "".join(
            f" · {counts[s]} {s}" for s in ("changed", "wrong", "suspicious") if counts[s])
        if self._filter:  # (what the filter keeps, whatever the list shows of it)
            kept = [r.status for _i, r in matching]
            summary += f" · filter: {len(matching)} ({kept.count('unreviewed')} unreviewed" + (
                f", {kept.count('changed')} changed)" if "changed" in kept else ")")
        self.summary.setText(summary)
        families: dict[str, QTreeWidgetItem] = {}
        for item, review in matching:
            if (shown := SHOWN_STATUSES[self.showing.currentData()]) is not None and review.status not in shown:
                continue
            fam_label = item.family.family.label
            parent = families.get(fam_label)
            if parent is None:
                parent = families[fam_label] = QTreeWidgetItem([fam_label, "", ""])
                parent.setToolTip(ITEM, tooltip(fam_label))
                self.tree.addTopLevelItem(parent)
            row = QTreeWidgetItem([item.lines, "" if review.status == "unreviewed" else review.status, review.note])
            row.setForeground(STATUS, status_brush(review.status))
            row.setToolTip(ITEM, tooltip(item.label))
            if review.note:
                row.setToolTip(NOTE, tooltip(review.note))
            row.setData(0, Qt.ItemDataRole.UserRole, item)
            parent.addChild(row)
        self.tree.expandAll()
        self.tree.setColumnHidden(NOTE, not any(r.note for _i, r in self._items))
        self.show_target(self._target)

    def jump_next(self, after: ReviewKey | None) -> str:
        """Jump to the first unreviewed item the list keeps (its filter) after the item ``after`` (the review target)
        in the list's order, wrapping round; from the top without one. "" when it jumped, else why it did not (a 100k
        export's list is made for seconds after it opens: "none left" then would be wrong)."""
        items = self._items
        start = next((k + 1 for k, (item, _r) in enumerate(items) if item.key == after), 0) if after else 0
        for k in range(len(items)):
            item, review = items[(start + k) % len(items)]
            if review.status in OPEN and item.key != after and self._matches(item, review):
                self.jump.emit(item)
                return ""
        if not self._listed:
            return "The Review list is not made yet: try again in a moment"
        return "No unreviewed item matches the filter" if self._filter else "No unreviewed item left in the Review list"

    def _activated(self, row: QTreeWidgetItem, _column: int) -> None:
        item = row.data(0, Qt.ItemDataRole.UserRole)
        if isinstance(item, ReviewItem):
            self.jump.emit(item)


class WrappedItems(QStyledItemDelegate):
    """Rows of the Item column as tall as their text wrapped to the column's width (Qt's views measure a row
    before they know its width, so the column's width is looked up here)."""

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self.tree = tree

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        hint = super().sizeHint(option, index)
        width = self.text_width(index)
        text = str(index.data() or "")
        height = option.fontMetrics.boundingRect(QRect(0, 0, width, 1 << 20), WRAP, text).height()
        return QSize(hint.width(), max(hint.height(), height + 6))

    def text_width(self, index: QModelIndex | QPersistentModelIndex) -> int:
        """The width the text of ``index`` gets: its column less the indentation of its depth and margins."""
        depth = 0
        parent = index.parent()
        while parent.isValid():
            depth += 1
            parent = parent.parent()
        indent = self.tree.indentation() * (depth + (1 if self.tree.rootIsDecorated() else 0))
        return max(self.tree.columnWidth(index.column()) - indent - 8, 20)


WRAP = Qt.TextFlag.TextWordWrap | Qt.TextFlag.TextWrapAnywhere

