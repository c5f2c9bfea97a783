"""The boxes and edges of the interactive graph, as QGraphicsItems: a box's fill by kind, its label and detail
lines (plain text, never markup: labels are model strings), the ƒ badge that opens a call's body, and an edge with
its arrow head and label. The view that holds them (``graph_view.GraphView``) is reached through ``BoxHost``, the
two signals a box emits."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QPointF, QRectF, Qt, SignalInstance
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsSceneHoverEvent,
    QGraphicsSceneMouseEvent,
    QGraphicsSimpleTextItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

from inspector.gui.text import tooltip
from inspector.render.dot import CLUSTER_FONT_SIZE
from inspector.render.layout import (
    DETAIL_FONT_SIZE,
    EDGE_FONT_SIZE,
    KIND_COLOURS,
    LABEL_FONT_SIZE,
    Layout,
    box_colours,
    edge_label_text,
    elide,
    group_label,
    small_lines,
)
from inspector.render.scene import ATEN_CALL, FUNCTION_CALL, MODULE, Scene, SceneNode

UPSTREAM = "#2a6fb0"
DOWNSTREAM = "#b0512a"
SELECTED = "#f1c232"


class BoxHost(Protocol):
    """What a box tells its view: a double-click (``node_activated``) and a click on its ƒ (``body_requested``)."""

    @property
    def node_activated(self) -> SignalInstance: ...

    @property
    def body_requested(self) -> SignalInstance: ...


class GroupItem(QGraphicsRectItem):
    """The outline of an expanded module or aten call, behind its boxes, named along its top (plain text)."""

    def __init__(self, rect: QRectF, label: str, kind: str) -> None:
        super().__init__(rect)
        fill, stroke = KIND_COLOURS[kind]
        self.setPen(QPen(QColor(stroke), 1.2, Qt.PenStyle.DashLine))
        self.setBrush(QBrush(QColor(fill).lighter(103)))
        self.setZValue(-1)
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.Monospace)
        font.setPointSizeF(CLUSTER_FONT_SIZE * 0.75)
        self.label = QGraphicsSimpleTextItem(group_label(label), self)  # plain text: never markup
        self.label.setFont(font)
        self.label.setBrush(QBrush(QColor(stroke).darker(130)))
        self.label.setPos(rect.left() + 6, rect.top() + 2)
        self.setToolTip(tooltip(label))


def group_items(scene: Scene, layout: Layout) -> list[GroupItem]:
    """The outlines of ``scene``'s expanded groups as laid out, parents first (drawn below their children)."""
    labels = {g.id: g.label for g in scene.groups}
    return [GroupItem(QRectF(g.left, g.top, g.width, g.height), labels.get(g.id, ""),
                      ATEN_CALL if g.id.startswith("call:") else MODULE) for g in layout.groups]


class NodeItem(QGraphicsRectItem):
    """One box: fill by kind, a label and an optional detail line; a highlight border for specialised values."""

    def __init__(self, node: SceneNode, rect: QRectF, view: BoxHost, title: str | None = None) -> None:
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
        self.setToolTip(tooltip("\n".join([headline(node), *small_lines(node)]) + hint(node)))

    def set_mark(self, colour: str | None, note: str = "") -> None:
        """A thick border in ``colour`` (specialised values), with the note added to the tooltip."""
        self.mark = colour
        if note:
            self.setToolTip(tooltip("\n".join([headline(self.node), *small_lines(self.node)]) + hint(self.node)
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


def headline(node: SceneNode) -> str:
    """A box's tooltip's first line: its label; for a module, its whole path (its box names it past the module it is
    drawn in)."""
    return node.ref if node.kind == MODULE and isinstance(node.ref, str) and node.ref else node.label


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


