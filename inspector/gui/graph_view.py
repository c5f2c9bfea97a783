"""Interactive graph of one scope: QGraphicsItems drawn from a render layout (not a static image).

Zoom with the wheel (Ctrl not needed), pan by dragging, F fits, click selects and traces the node's inputs
(upstream) and outputs (downstream), hover shows a tooltip, double-click expands a box or enters a body, a click on
a call's ƒ opens its body. By keyboard: Tab and Shift+Tab visit the boxes in reading order, the arrow keys move to
the nearest box in their direction, Enter opens (a call's body; a module in place), Space expands in place;
Backspace or Alt+Left asks for Back, Alt+Right for Forward. The same view draws the module overview
(``show_overview``), shown instead of a graph too big to fit readably. The boxes and edges are ``graph_items``;
moving by keyboard and tracing are ``graph_keys``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QKeyEvent, QPainter, QPalette, QWheelEvent
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView

from inspector.core.util.errors import InspectorError
from inspector.core.util.fileio import write_atomic
from inspector.gui.graph_items import DOWNSTREAM, UPSTREAM, EdgeItem, NodeItem, group_items, opens_body
from inspector.gui.graph_keys import ARROWS, distance, next_box, reach, reading_order
from inspector.render.layout import Layout, to_svg
from inspector.render.overview import Overview, title
from inspector.render.scene import Scene, SceneNode

MIN_FIT_SCALE = 0.6  # below this, 7.5 pt box labels are unreadable
MAX_FIT_SCALE = 1.0  # small graphs are not blown up
JUMP_SCALE = 1.0  # a box jumped to: its 7.5 pt title ~12 px tall on screen (at MIN_FIT_SCALE, ~7 px: hard to read)
DRAW_STEP = 0.02  # seconds of drawing per turn of the event loop (show_layout with done)


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
    forward_requested = Signal()  # Alt+Right
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
        self.clearing = False  # the boxes are being dropped: the selection cleared meanwhile is not the user's
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
        self.clearing = True
        try:
            s.clearSelection()
        finally:
            self.clearing = False
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
            for group in group_items(scene, layout):
                s.addItem(group)
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
        kept = selected[0] if selected else None
        if kept is not None:
            self.centerOn(kept)
        elif scale == MIN_FIT_SCALE:
            kept = _top_of(self, rect, scale)
        else:
            self.centerOn(rect.center())
        whole_boxes(self, kept.sceneBoundingRect() if kept is not None else None)

    def show_region(self, ids: list[str]) -> None:
        """Zoom to the boxes ``ids`` (what an expanded box opened into): all of them at up to 1:1 when they fit
        at a readable scale, else the first of them at the readable scale."""
        items = [self.items_by_id[i] for i in ids if i in self.items_by_id]
        if not items:
            return
        rect = around(items, self.items_by_id.values()).adjusted(-20, -20, 20, 20)
        view = self.viewport().rect()
        scale = min(view.width() / rect.width(), view.height() / rect.height(), MAX_FIT_SCALE)
        scale = max(scale, MIN_FIT_SCALE)
        self.resetTransform()
        self.scale(scale, scale)
        if rect.width() * scale <= view.width() and rect.height() * scale <= view.height():
            self.centerOn(rect.center())
            whole_boxes(self, rect)
        else:
            top = min(items, key=lambda i: (i.sceneBoundingRect().top(), i.sceneBoundingRect().left()))
            self.centerOn(top)
            whole_boxes(self, top.sceneBoundingRect())

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

    def focus(self, node_id: str, scale: float = JUMP_SCALE) -> None:
        """Select a box and centre it at ``scale``, whatever the drawing's size: a jump to one box (a change row)."""
        if node_id in self.items_by_id:
            self.set_scale(scale)
            self.select(node_id)

    def set_scale(self, scale: float) -> None:
        self.resetTransform()
        self.scale(scale, scale)

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
            up = reach(node.id, self.edges, self.items_by_id, upstream=True)
            down = reach(node.id, self.edges, self.items_by_id, upstream=False)
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
        elif key == Qt.Key.Key_Right and alt:
            self.forward_requested.emit()
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
        return reading_order(self.items_by_id.values())

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
        """Arrow keys (``graph_keys.next_box``); with nothing selected, the box nearest the middle of the view."""
        items = list(self.items_by_id.values())
        selected = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        if not items:
            return
        if not selected:
            middle = self.mapToScene(self.viewport().rect().center())
            best = min(items, key=lambda i: distance(i.rect().center(), middle))
            self.select(best.node.id, centre=False)
            return
        found = next_box(selected[0], dx, dy, self.edges, self.items_by_id)
        if found is not None:
            self.select(found, centre=False)


def around(items: list[NodeItem], others: Iterable[NodeItem]) -> QRectF:
    """The rectangle of ``items``, grown to hold whole the ``others`` that reach into it (a region's constants)."""
    rect = items[0].sceneBoundingRect()
    for item in items[1:]:
        rect = rect.united(item.sceneBoundingRect())
    for item in others:
        if item.sceneBoundingRect().intersects(rect):
            rect = rect.united(item.sceneBoundingRect())
    return rect


def _top_of(view: GraphView, rect: QRectF, scale: float) -> NodeItem | None:
    """Centre ``view`` (at ``scale``) on the top of the drawing ``rect``; where it shows less than half its width, on
    its first input, which is returned to be kept whole in view. Centred on the whole width, then slid to cut fewest
    boxes, Inception's main graph (onnx's light_inception_v1, 239 boxes, 2,168 px wide) opened on a column of
    ConstantOfShape and Conv boxes 400 px below its top, its input just past the right edge; a body a little wider than
    the view stays centred (llama's SDPA body, 553 px in 521, cuts one box so, four from its input)."""
    height = view.viewport().height() / scale
    wide = rect.width() * scale > 2 * view.viewport().width()
    first = next((i for i in view.items_by_id.values() if i.node.kind == "input"), None) if wide else None
    x = first.sceneBoundingRect().center().x() if first is not None else rect.center().x()
    view.centerOn(QPointF(x, rect.top() - 10 + min(height / 2, rect.height() / 2)))  # (the fit's margin)
    return first


def whole_boxes(view: GraphView, keep: QRectF | None) -> None:
    """Slide the view sideways (never out of ``keep``) so that its left and right edges cut as few boxes as can
    be: llama's SDPA body at 1024x700 is 553 px of boxes in 521 px of view at the readable scale, and centred it
    showed four boxes cut, two at each edge; slid, one."""
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    boxes = [i.sceneBoundingRect() for i in view.items_by_id.values()]
    dx = sideways(boxes, visible, view.sceneRect(), keep)
    if dx:
        view.centerOn(visible.center() + QPointF(dx, 0))


def sideways(boxes: list[QRectF], visible: QRectF, bounds: QRectF, keep: QRectF | None) -> float:
    """How far to slide ``visible`` sideways, within ``bounds``, so that its edges cut the fewest ``boxes`` (ties:
    the shortest slide), keeping ``keep`` inside it when it was; 0 when no slide does better. A box is cut when it
    shows in part."""
    def cut(dx: float) -> int:
        left, right = visible.left() + dx, visible.right() + dx
        return sum(1 for b in boxes if b.bottom() > visible.top() and b.top() < visible.bottom()
                   and b.right() > left and b.left() < right and (b.left() < left or b.right() > right))

    if not cut(0):
        return 0.0
    near = [b for b in boxes if b.bottom() > visible.top() and b.top() < visible.bottom()]
    moves = {0.0}
    for b in near:  # each box brought whole inside, or pushed whole out, at either edge
        moves |= {b.left() - visible.left(), b.right() - visible.right(), b.right() - visible.left(),
                  b.left() - visible.right()}
    # never past the drawing's sides (nor its scroll range: all boxes pushed out would cut none)
    moves = {m for m in moves if bounds.left() <= visible.left() + m and visible.right() + m <= bounds.right()}
    if keep is not None and visible.left() <= keep.left() and keep.right() <= visible.right():
        moves = {m for m in moves if visible.left() + m <= keep.left() and keep.right() <= visible.right() + m}
    return min(moves | {0.0}, key=lambda m: (cut(m), abs(m)))


def export_png(view: GraphView, path: Path, scale: float = 2.0) -> None:
    """The drawing as it is (marks and traces kept) as a PNG at ``scale``."""
    rect = view.scene().itemsBoundingRect().adjusted(-10, -10, 10, 10)
    image = QImage(int(rect.width() * scale), int(rect.height() * scale), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    view.scene().render(painter, QRectF(image.rect()), rect)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]  # PySide6 takes str; its stubs say bytes
        raise InspectorError(f"could not draw {path.name}")
    write_atomic(path, bytes(data.data()))


def export_svg(view: GraphView, path: Path) -> None:
    """The drawn layout as SVG, with the boxes traced or marked in their colours."""
    if view.current is None:
        return
    scene, layout = view.current
    highlights = {i: colour for i, item in view.items_by_id.items() if (colour := item.trace or item.mark)}
    write_atomic(path, to_svg(scene, layout, highlights).encode("utf-8"))
