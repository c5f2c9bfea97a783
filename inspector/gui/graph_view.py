"""Interactive graph of one scope: QGraphicsItems drawn from a render layout (not a static image).

Zoom with the wheel (Ctrl not needed), pan by dragging, F fits, click selects and traces the node's inputs
(upstream) and outputs (downstream), hover shows a tooltip, double-click expands a box or enters a body, a click on
a call's ƒ opens its body. By keyboard: Tab and Shift+Tab visit the boxes in reading order, the arrow keys move to
the nearest box in their direction, Enter opens (a call's body; a module in place), Space expands in place.
The same view draws the module overview (``show_overview``), shown instead of a graph too big to fit readably.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPolygonF,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSceneHoverEvent,
    QGraphicsSceneMouseEvent,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QStyleOptionGraphicsItem,
    QWidget,
)

from inspector.gui.text import tooltip
from inspector.render.layout import (
    DETAIL_FONT_SIZE,
    EDGE_FONT_SIZE,
    LABEL_FONT_SIZE,
    Layout,
    box_colours,
    edge_label_text,
    elide,
    small_lines,
    to_svg,
)
from inspector.render.overview import Overview, title
from inspector.render.scene import ATEN_CALL, FUNCTION_CALL, MODULE, Scene, SceneNode

UPSTREAM = "#2a6fb0"
DOWNSTREAM = "#b0512a"
SELECTED = "#f1c232"
MIN_FIT_SCALE = 0.6  # below this, 7.5 pt box labels are unreadable
MAX_FIT_SCALE = 1.0  # small graphs are not blown up
DRAW_STEP = 0.02  # seconds of drawing per turn of the event loop (show_layout with done)


ARROWS = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}


def _distance(a: QPointF, b: QPointF) -> float:
    return float(((a.x() - b.x()) ** 2 + (a.y() - b.y()) ** 2) ** 0.5)


class NodeItem(QGraphicsRectItem):
    """One box: fill by kind, a label and an optional detail line; a highlight border for specialised values."""

    def __init__(self, node: SceneNode, rect: QRectF, view: GraphView, title: str | None = None) -> None:
        """``title``: a group of the module overview, its one line of text at the top instead of in the middle."""
        super().__init__(rect)
        self.node = node
        self.view = view
        fill, stroke = box_colours(node)
        self.fill, self.stroke = QColor(fill), QColor(stroke)
        self.mark: str | None = None
        self.trace: str | None = None
        self.setBrush(QBrush(self.fill))
        self.setPen(QPen(self.stroke, 1.2))
        self.setAcceptHoverEvents(True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.Monospace)
        font.setPointSizeF(LABEL_FONT_SIZE * 0.75)
        label = QGraphicsSimpleTextItem(elide(title or node.label, rect.width()), self)  # plain text: never markup
        label.setFont(font)
        label.setBrush(QBrush(QColor("#000000")))
        lines = [label]
        small = QFont(font)
        small.setPointSizeF(DETAIL_FONT_SIZE * 0.75)
        if title is not None:
            self.setBrush(QBrush(self.fill.lighter(104)))
            label.setPos(rect.left() + 6, rect.top() + 3)
            lines = []
        for text in small_lines(node) if title is None else ():  # attributes (ops), then the detail
            line = QGraphicsSimpleTextItem(elide(text, rect.width(), DETAIL_FONT_SIZE), self)
            line.setFont(small)
            line.setBrush(QBrush(QColor("#1f4e8c" if text is node.attrs else "#444444")))
            lines.append(line)
        total = sum(t.boundingRect().height() for t in lines)
        y = rect.center().y() - total / 2
        for t in lines:
            br = t.boundingRect()
            t.setPos(rect.center().x() - br.width() / 2, y)
            y += br.height()
        self.badge = DrillBadge(self) if opens_body(node) and title is None else None
        self.setToolTip(tooltip("\n".join([node.label, *small_lines(node)]) + hint(node)))

    def set_mark(self, colour: str | None, note: str = "") -> None:
        """A thick border in ``colour`` (specialised values), with the note added to the tooltip."""
        self.mark = colour
        if note:
            self.setToolTip(tooltip("\n".join([self.node.label, *small_lines(self.node)]) + hint(self.node)
                                    + f"\n\n{note}"))
        self._restyle()

    def set_trace(self, colour: str | None) -> None:
        self.trace = colour
        self._restyle()

    def _restyle(self) -> None:
        if self.trace:
            self.setPen(QPen(QColor(self.trace), 3.0))
        elif self.mark:
            self.setPen(QPen(QColor(self.mark), 3.5))
        else:
            self.setPen(QPen(self.stroke, 1.2))

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setBrush(self.brush().color().darker(108) if self.isUnderMouse() else self.brush())
        painter.setPen(QPen(QColor(SELECTED), 3.0) if self.isSelected() else self.pen())
        painter.drawRoundedRect(self.rect(), 6, 6)

    def hoverEnterEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.update()
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.update()
        super().hoverLeaveEvent(event)

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self.view.node_activated.emit(self.node)
        event.accept()


def opens_body(node: SceneNode) -> bool:
    """Whether a box has a body to open: a function call (the function's body) or an aten call (its nodes)."""
    return node.kind in (FUNCTION_CALL, ATEN_CALL) and node.expandable


def hint(node: SceneNode) -> str:
    """What the mouse and keyboard do with a box, for its tooltip."""
    if node.kind == FUNCTION_CALL:
        return "\n(click ƒ, double-click or Enter: open the function's body)"
    if node.kind == ATEN_CALL and node.expandable:
        return "\n(click ƒ or Enter: open the call's nodes; double-click or Space: expand in place)"
    if node.kind == MODULE and node.expandable:
        return "\n(double-click, Enter or Space: expand in place)"
    return ""


class DrillBadge(QGraphicsEllipseItem):
    """Netron's ƒ: a round badge on the top-right corner of a call box; one click opens the body."""

    RADIUS = 6.5

    def __init__(self, box: NodeItem) -> None:
        r = self.RADIUS
        # on the middle of the box's right side: clear of its text (which keeps a padding wider than r) and of the
        # edge labels, which dot places between the ranks; in the layout's units, so it scales with the boxes
        rect = box.rect()
        super().__init__(QRectF(rect.right() - r, rect.center().y() - r, 2 * r, 2 * r), box)
        self.box = box
        self.setBrush(QBrush(box.stroke))
        self.setPen(QPen(QColor("#ffffff"), 1.2))
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(tooltip("Open the body (click)"))
        glyph = QGraphicsSimpleTextItem("ƒ", self)
        font = QFont()
        font.setPointSizeF(8.0)
        font.setBold(True)
        glyph.setFont(font)
        glyph.setBrush(QBrush(QColor("#ffffff")))
        br = glyph.boundingRect()
        glyph.setPos(self.rect().center() - QPointF(br.width() / 2, br.height() / 2))

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()  # the box under it is not selected or dragged

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.contains(event.pos()):
            self.box.view.body_requested.emit(self.box.node)
        event.accept()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()  # the second click of a double-click on the badge is not a second request


class EdgeItem(QGraphicsPathItem):
    def __init__(self, source: str, target: str, points: tuple[tuple[float, float], ...], label: str,
                 colour: QColor, label_at: tuple[float, float] | None = None) -> None:
        path = QPainterPath()
        if points:
            path.moveTo(QPointF(*points[0]))
            rest = points[1:]
            while len(rest) >= 3:
                path.cubicTo(QPointF(*rest[0]), QPointF(*rest[1]), QPointF(*rest[2]))
                rest = rest[3:]
            for p in rest:
                path.lineTo(QPointF(*p))
        super().__init__(path)
        self.source, self.target = source, target
        self.colour = colour
        self.setPen(QPen(colour, 1.0))
        self.setZValue(-1)
        self.arrow = QGraphicsPathItem(self)
        if len(points) >= 2:
            tip, prev = QPointF(*points[-1]), QPointF(*points[-2])
            d = tip - prev
            length = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            u = QPointF(d.x() / length, d.y() / length)
            n = QPointF(-u.y(), u.x())
            a = QPolygonF([tip, tip - u * 7 + n * 3.5, tip - u * 7 - n * 3.5])
            head = QPainterPath()
            head.addPolygon(a)
            self.arrow.setPath(head)
            self.arrow.setBrush(QBrush(colour))
            self.arrow.setPen(QPen(colour, 1.0))
        if label:
            self.setToolTip(tooltip(label))
            text = QGraphicsSimpleTextItem(edge_label_text(label), self)  # plain text: never markup
            f = QFont("monospace")
            f.setStyleHint(QFont.StyleHint.Monospace)
            f.setPointSizeF(EDGE_FONT_SIZE * 0.75)  # as the boxes: points of the layout at 96 dpi
            text.setFont(f)
            text.setBrush(QBrush(colour.darker(130)))
            br = text.boundingRect()
            centre = QPointF(*label_at) if label_at is not None else path.pointAtPercent(0.5) + QPointF(
                br.width() / 2 + 4, 0)
            text.setPos(centre - QPointF(br.width() / 2, br.height() / 2))

    def set_trace(self, colour: str | None) -> None:
        c = QColor(colour) if colour else self.colour
        self.setPen(QPen(c, 2.2 if colour else 1.0))
        self.arrow.setBrush(QBrush(c))
        self.arrow.setPen(QPen(c, 1.0))


class _Steps:
    """One drawing in steps: draws for ``DRAW_STEP`` seconds, then queues itself for the next turn of the event
    loop. A callable object, not a closure that names itself: such a closure is a reference cycle, which would keep
    the drawn model alive after its window is closed, until a full collection (never, once it is frozen)."""

    __slots__ = ("done", "items", "token", "view")

    def __init__(self, view: GraphView, items: Iterator[None], done: Callable[[], None], token: object) -> None:
        self.view, self.items, self.done, self.token = view, items, done, token

    def __call__(self) -> None:
        view = self.view
        if view._drawing is not self.token:  # replaced by another drawing
            return
        end = time.perf_counter() + DRAW_STEP
        for _ in self.items:
            if time.perf_counter() >= end:
                QTimer.singleShot(0, view, self)  # dropped if the view is deleted meanwhile
                return
        view._drawing = None
        view.viewport().setUpdatesEnabled(True)
        self.done()


class GraphView(QGraphicsView):
    node_selected = Signal(object)  # SceneNode
    selection_cleared = Signal()
    back_requested = Signal()  # Backspace or Alt+Left
    node_activated = Signal(object)  # SceneNode (double-click, Space): expand in place, or enter a function call
    body_requested = Signal(object)  # SceneNode (a click on ƒ, Enter): open a call's body
    fit_requested = Signal()  # F

    def __init__(self) -> None:
        super().__init__()
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.items_by_id: dict[str, NodeItem] = {}
        self.edges: list[EdgeItem] = []
        self.current: tuple[Scene, Layout] | None = None
        self._drawing: object | None = None  # the token of a drawing in steps, until its last step
        self.scene().selectionChanged.connect(self._selection_changed)
        self._warm_up()

    def _warm_up(self) -> None:
        """Draw one box and one edge and drop them, now, before any model is shown: PySide makes the Python types
        of Qt's enums on their first use, 50-80 ms of GUI-thread work in all that the first graph drawn would
        otherwise do while a model opens (the window stalled that long)."""
        self.viewport().setUpdatesEnabled(True)
        node = SceneNode("warm-up", "Add", "op", None, "x", True, "alpha=1")
        NodeItem(node, QRectF(0, 0, 80, 40), self)
        EdgeItem("a", "b", ((0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0)), "x", QColor("#000000"), (1.0, 1.0))

    def _clear(self) -> QGraphicsScene:
        s = self.scene()
        # forget the old boxes before deleting them: clearing a selection emits selectionChanged, whose handler
        # must not reach deleted items
        self.items_by_id = {}
        self.edges = []
        if self._drawing is not None:  # a drawing in steps is replaced: it stops
            self._drawing = None
            self.viewport().setUpdatesEnabled(True)
        s.clearSelection()
        s.clear()
        return s

    def show_overview(self, overview: Overview, done: Callable[[], None] | None = None) -> None:
        """The module overview: groups (frames named on top) holding tiles, one box per module or run. With
        ``done``, drawn in steps (see ``show_layout``)."""
        self._clear()
        self.current = None

        def items() -> Iterator[None]:
            s = self.scene()
            for box in overview.boxes:
                rect = QRectF(box.x, box.y, box.width, box.height)
                item = NodeItem(box.node, rect, self, title(box) if box.kind == "group" else None)
                s.addItem(item)
                self.items_by_id[box.node.id] = item
                yield
            s.setSceneRect(QRectF(-20, -20, overview.width + 40, overview.height + 40))
            self.fit()

        self._draw(items(), done)

    def fits(self) -> bool:
        """Whether the whole drawing fits the view at a readable scale."""
        rect, view = self.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10), self.viewport().rect()
        if rect.isEmpty():
            return True
        return min(view.width() / rect.width(), view.height() / rect.height()) >= MIN_FIT_SCALE

    def show_layout(self, scene: Scene, layout: Layout, done: Callable[[], None] | None = None) -> None:
        """Draw ``layout``. Without ``done``, at once; with it, in steps of at most ``DRAW_STEP`` seconds, one per
        turn of the event loop, then ``done()`` (a 300-box graph takes 50-80 ms to draw: in one go, the window
        would not answer meanwhile). A view drawn in steps shows the previous picture until the new one is whole;
        another drawing (or ``show_overview``) started meanwhile replaces it, and its ``done`` is never called."""
        self._clear()
        self.current = (scene, layout)

        def items() -> Iterator[None]:
            s = self.scene()
            edge_colour = self.palette().color(QPalette.ColorRole.Text)
            edge_colour.setAlpha(170)
            for node in scene.nodes:
                laid = layout.nodes.get(node.id)
                if laid is None:
                    continue
                rect = QRectF(laid.x - laid.width / 2, laid.y - laid.height / 2, laid.width, laid.height)
                item = NodeItem(node, rect, self)
                s.addItem(item)
                self.items_by_id[node.id] = item
                yield
            labels = {(e.source, e.target): e.label for e in scene.edges}
            for e in layout.edges:
                edge = EdgeItem(e.source, e.target, e.points, labels.get((e.source, e.target), ""), edge_colour,
                                e.label_at)
                s.addItem(edge)
                self.edges.append(edge)
                yield
            s.setSceneRect(QRectF(-20, -20, layout.width + 40, layout.height + 40))
            self.fit()

        self._draw(items(), done)

    def _draw(self, items: Iterator[None], done: Callable[[], None] | None) -> None:
        """Run ``items`` (one step per item drawn) at once, or, with ``done``, ``DRAW_STEP`` seconds per turn of the
        event loop; the viewport keeps its old picture until the last step (no half-drawn, unfitted frames)."""
        if done is None:
            for _ in items:
                pass
            return
        self._drawing = object()
        self.viewport().setUpdatesEnabled(False)
        _Steps(self, items, done, self._drawing)()

    def mark(self, marks: dict[str, tuple[str, str]]) -> None:
        """Highlight nodes by id: ``{id: (colour, note)}``; others lose their mark."""
        for node_id, item in self.items_by_id.items():
            colour, note = marks.get(node_id, (None, ""))
            item.set_mark(colour, note)

    def fit(self) -> None:
        """Fit the graph in the view, but never above 1:1 (small graphs) nor below a readable scale (large ones:
        then the selection, or the top of the graph, is shown at the readable scale)."""
        rect = self.scene().itemsBoundingRect()
        if rect.isEmpty():
            return
        self.fitInView(rect.adjusted(-10, -10, 10, 10), Qt.AspectRatioMode.KeepAspectRatio)
        scale = self.transform().m11()
        if MIN_FIT_SCALE <= scale <= MAX_FIT_SCALE:
            return
        scale = min(max(scale, MIN_FIT_SCALE), MAX_FIT_SCALE)
        self.resetTransform()
        self.scale(scale, scale)
        selected = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        if selected:
            self.centerOn(selected[0])
        elif scale == MIN_FIT_SCALE:
            height = self.viewport().height() / scale
            self.centerOn(QPointF(rect.center().x(), rect.top() + min(height / 2, rect.height() / 2)))
        else:
            self.centerOn(rect.center())

    def show_region(self, ids: list[str]) -> None:
        """Zoom to the boxes ``ids`` (what an expanded box opened into): all of them at up to 1:1 when they fit
        at a readable scale, else the first of them at the readable scale."""
        items = [self.items_by_id[i] for i in ids if i in self.items_by_id]
        if not items:
            return
        rect = items[0].sceneBoundingRect()
        for item in items[1:]:
            rect = rect.united(item.sceneBoundingRect())
        rect = rect.adjusted(-20, -20, 20, 20)
        view = self.viewport().rect()
        scale = min(view.width() / rect.width(), view.height() / rect.height(), MAX_FIT_SCALE)
        scale = max(scale, MIN_FIT_SCALE)
        self.resetTransform()
        self.scale(scale, scale)
        if rect.width() * scale <= view.width() and rect.height() * scale <= view.height():
            self.centerOn(rect.center())
        else:
            top = min(items, key=lambda i: (i.sceneBoundingRect().top(), i.sceneBoundingRect().left()))
            self.centerOn(top)

    def readable(self) -> bool:
        """Whether box labels are drawn at a readable size (the scale ``fit`` never goes below)."""
        return self.transform().m11() >= MIN_FIT_SCALE - 1e-9

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11() * factor
        if 0.02 <= scale <= 8:
            self.scale(factor, factor)

    def select(self, node_id: str, centre: bool = True) -> None:
        """Select a box and bring it into view: centred (navigation), or just scrolled into view (keys)."""
        item = self.items_by_id.get(node_id)
        if item is not None:
            self.scene().clearSelection()
            item.setSelected(True)
            if centre:
                self.centerOn(item)
            else:
                self.ensureVisible(item, 40, 40)

    def selected(self) -> SceneNode | None:
        items = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        return items[0].node if items else None

    def traced(self) -> tuple[set[str], set[str]]:
        """Ids currently traced upstream and downstream of the selection."""
        up = {i for i, item in self.items_by_id.items() if item.trace == UPSTREAM}
        down = {i for i, item in self.items_by_id.items() if item.trace == DOWNSTREAM}
        return up, down

    def _selection_changed(self) -> None:
        node = self.selected()
        for item in self.items_by_id.values():
            item.set_trace(None)
        for e in self.edges:
            e.set_trace(None)
        if node is not None:
            up = self._reach(node.id, upstream=True)
            down = self._reach(node.id, upstream=False)
            for i in up:
                self.items_by_id[i].set_trace(UPSTREAM)
            for i in down:
                self.items_by_id[i].set_trace(DOWNSTREAM)
            for e in self.edges:
                if e.target == node.id or (e.target in up and e.source in up):
                    e.set_trace(UPSTREAM)
                elif e.source == node.id or (e.source in down and e.target in down):
                    e.set_trace(DOWNSTREAM)
        if node is not None:
            self.node_selected.emit(node)
        else:
            self.selection_cleared.emit()

    def _reach(self, start: str, upstream: bool) -> set[str]:
        step: dict[str, list[str]] = {}
        for e in self.edges:
            a, b = (e.target, e.source) if upstream else (e.source, e.target)
            step.setdefault(a, []).append(b)
        seen: set[str] = set()
        stack = list(step.get(start, ()))
        while stack:
            n = stack.pop()
            if n in seen or n == start or n not in self.items_by_id:
                continue
            seen.add(n)
            stack.extend(step.get(n, ()))
        return seen

    # input ----------------------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        self.zoom(1.15 if event.angleDelta().y() > 0 else 1 / 1.15)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, alt = event.key(), bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)
        node = self.selected()
        if key == Qt.Key.Key_F:
            self.fit_requested.emit()
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom(0.8)
        elif key == Qt.Key.Key_Backspace or (key == Qt.Key.Key_Left and alt):
            self.back_requested.emit()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and node is not None:
            (self.body_requested if opens_body(node) else self.node_activated).emit(node)
        elif key == Qt.Key.Key_Space and node is not None:
            self.node_activated.emit(node)
        elif key in ARROWS and not alt:
            self.move_selection(*ARROWS[Qt.Key(key)])
        elif key == Qt.Key.Key_Escape and node is not None:
            self.scene().clearSelection()
        else:
            super().keyPressEvent(event)

    def focusNextPrevChild(self, next: bool) -> bool:
        """Tab and Shift+Tab visit the boxes in reading order; past the last (first) one they leave the graph."""
        if self.hasFocus() and self.step(1 if next else -1):
            return True
        return super().focusNextPrevChild(next)

    def reading_order(self) -> list[NodeItem]:
        """The boxes top to bottom, then left to right (as Tab visits them)."""
        return sorted(self.items_by_id.values(), key=lambda i: (round(i.rect().center().y()), i.rect().center().x()))

    def step(self, delta: int) -> bool:
        """Select the next (``delta`` 1) or previous (-1) box in reading order; False past either end."""
        order = self.reading_order()
        if not order:
            return False
        current = next((k for k, item in enumerate(order) if item.isSelected()), None)
        k = (0 if delta > 0 else len(order) - 1) if current is None else current + delta
        if not 0 <= k < len(order):
            return False
        self.select(order[k].node.id, centre=False)
        return True

    def move_selection(self, dx: int, dy: int) -> None:
        """Arrow keys: Down and Up follow the edges (to the successor or predecessor nearest in x; the nearest box
        below or above when there is none), Left and Right go to the nearest box on that side, rows first. With
        nothing selected, the box nearest the middle of the view."""
        items = list(self.items_by_id.values())
        selected = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        if not items:
            return
        if not selected:
            middle = self.mapToScene(self.viewport().rect().center())
            best = min(items, key=lambda i: _distance(i.rect().center(), middle))
            self.select(best.node.id, centre=False)
            return
        here, current = selected[0].rect().center(), selected[0].node.id
        if dy:
            linked = {e.target if dy > 0 else e.source for e in self.edges
                      if (e.source if dy > 0 else e.target) == current} - {current}
            near = [self.items_by_id[i] for i in linked if i in self.items_by_id]
            if near:
                best = min(near, key=lambda i: (abs(i.rect().center().x() - here.x()), i.rect().center().y() * dy))
                self.select(best.node.id, centre=False)
                return
        candidates = []
        for item in items:
            c = item.rect().center()
            along = (c.x() - here.x()) * dx + (c.y() - here.y()) * dy  # distance in the direction asked
            across = abs((c.x() - here.x()) * dy) + abs((c.y() - here.y()) * dx)
            if along > 1.0:
                candidates.append((along + 4 * across, item.node.id))
        if candidates:
            self.select(min(candidates)[1], centre=False)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        super().mousePressEvent(event)

    # export ---------------------------------------------------------------------------------------------
    def export_png(self, path: Path, scale: float = 2.0) -> None:
        rect = self.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10)
        image = QImage(int(rect.width() * scale), int(rect.height() * scale), QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.scene().render(painter, QRectF(image.rect()), rect)
        painter.end()
        if not image.save(str(path)):
            raise OSError(f"could not write {path}")

    def export_svg(self, path: Path) -> None:
        if self.current is None:
            return
        scene, layout = self.current
        highlights = {i: colour for i, item in self.items_by_id.items() if (colour := item.trace or item.mark)}
        path.write_text(to_svg(scene, layout, highlights), encoding="utf-8")
