"""Two graphs side by side with an info panel under each, kept in step: a click on a box in one graph selects and
reveals the aligned box in the other (``pairing.BodyPairing``, from the diff engine's node alignment), both info
panels show the selected box of their side, and scrolling one graph scrolls the other.

Used by the compare window (a body in each of two models) and the overload comparison (two members of one
family in one model)."""

from __future__ import annotations

from collections.abc import Mapping

import onnx
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QScrollBar, QSplitter, QTextBrowser, QVBoxLayout, QWidget

from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.model.tensors import read_tensor, tensor_facts
from inspector.core.model.values import GraphValues, graph_values
from inspector.core.model.walk import resolve_path
from inspector.core.util.errors import InspectorError
from inspector.gui import details
from inspector.gui.graph_panel import GraphPanel, scope_label
from inspector.gui.graph_view import JUMP_SCALE
from inspector.gui.node_details import node_html, tensor_preview
from inspector.gui.pairing import BodyPairing, Marks
from inspector.gui.text import HR, Rich, rich, tag
from inspector.gui.widgets import ElidedLabel
from inspector.render.scene import SceneNode

MAX_PREVIEW_BYTES = 1 << 16  # inline tensors previewed in the info panels without asking


class Side(QWidget):
    """One side: a label naming what is shown, the graph, and below it (in the twin's lower splitter) its info."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.label = ElidedLabel(name)
        self.panel = GraphPanel()
        # scroll bars that appeared after a jump's zoom narrowed the viewport by ~15 px once laid out, moving the
        # box just centred off centre: they are always there
        self.panel.graph.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.panel.graph.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.info = QTextBrowser()
        self.info.setOpenLinks(False)
        self.index: ModelIndex | None = None
        self.summary_html = Rich()  # what the info panel shows when no box is selected
        self._values: GraphValues | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.label)
        lay.addWidget(self.panel, 1)

    def set_index(self, index: ModelIndex, values: GraphValues | None = None) -> None:
        """Show ``index``; ``values``: its main graph's value types and initializers when they were made off the GUI
        thread (else made on the first box shown: 0.14 s at 100k nodes, a stall)."""
        if index is not self.index or values is not None:
            self.index = index
            self._values = values
        self.panel.set_index(index, show_main=False)  # a pair of scopes is shown next, never the main graph

    def show_info(self, node: SceneNode | None) -> None:
        """The info panel: the side's summary, then the selected box's details (scrolled into view)."""
        if node is None:
            self.info.setHtml(self.summary_html)
            return
        body = box_html(self.index, self.panel.current_scope(), node, self.values())
        self.info.setHtml(rich(self.summary_html, tag("a", name="box"), HR, body))
        self.info.scrollToAnchor("box")  # the box's details in view, the side's summary above them

    def values(self) -> GraphValues:
        if self._values is None:
            graph = self.index.proto.graph if self.index is not None else onnx.GraphProto()
            self._values = graph_values(graph)
        return self._values


class TwinGraphs(QSplitter):
    """Graphs above, info panels below; ``drawn`` fires once both graphs of ``show_pair`` are laid out and marked."""

    drawn = Signal()

    def __init__(self, names: tuple[str, str] = ("A", "B")) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self.a, self.b = Side(names[0]), Side(names[1])
        self.graphs, self.infos = QSplitter(), QSplitter()
        for side in (self.a, self.b):
            self.graphs.addWidget(side)
            self.infos.addWidget(side.info)
        self.addWidget(self.graphs)
        self.addWidget(self.infos)
        self.setStretchFactor(0, 4)  # the graphs get the room: at 3:2 they were ~280 px tall at 1366x768
        self.setStretchFactor(1, 1)
        self.graphs.splitterMoved.connect(lambda _p, _i: self.infos.setSizes(self.graphs.sizes()))
        self.infos.splitterMoved.connect(lambda _p, _i: self.graphs.setSizes(self.infos.sizes()))
        self.pairing: BodyPairing | None = None
        self._marks: dict[int, Marks] = {}
        self._waiting = 0
        self._busy = False  # one side is following the other: do not echo back
        self._link_scrolling()
        for side, other, from_a in ((self.a, self.b, True), (self.b, self.a, False)):
            side.panel.graph.node_selected.connect(
                lambda node, side=side, other=other, from_a=from_a: self._selected(side, other, node, from_a))
            side.panel.graph.selection_cleared.connect(lambda side=side: side.show_info(None))
            side.panel.view_shown.connect(lambda _v, side=side: self._drawn(side))

    @property
    def side_a(self) -> GraphPanel:
        return self.a.panel

    @property
    def side_b(self) -> GraphPanel:
        return self.b.panel

    def set_indexes(self, index_a: ModelIndex, index_b: ModelIndex,
                    values: tuple[GraphValues, GraphValues] | None = None) -> None:
        self.pairing = None
        self.a.set_index(index_a, values[0] if values else None)
        self.b.set_index(index_b, values[1] if values else None)

    def show_pair(self, scope_a: Scope, scope_b: Scope, pairing: BodyPairing | None,
                  summary_a: Rich = Rich(), summary_b: Rich = Rich()) -> None:
        """Show one scope on each side, marked as ``pairing`` says (None: nothing to align, boxes pair by id)."""
        self.pairing = pairing
        self._marks = {id(self.a): pairing.marks_a if pairing else {}, id(self.b): pairing.marks_b if pairing else {}}
        self._waiting = 2
        for side, scope, summary in ((self.a, scope_a, summary_a), (self.b, scope_b, summary_b)):
            side.summary_html = summary or tag("p", tag("b", side.name), ": ", scope_label(scope))
            side.info.setHtml(rich(side.summary_html, tag("p", tag("i", "Click a box to see its details here and "
                                                                   "the aligned box on the other side."))))
            side.panel.show_scope(scope)

    def jump(self, node_id: str, from_a: bool = True) -> None:
        """Select ``node_id`` on one side and its aligned box on the other, both centred at a readable zoom."""
        first, second = (self.a, self.b) if from_a else (self.b, self.a)
        second.panel.graph.set_scale(JUMP_SCALE)
        first.panel.graph.focus(node_id)  # selects the aligned box on the other side too (_selected)
        self._busy = True  # centre each side on its box, without the scroll link moving the other one after
        try:
            for side in (self.a, self.b):
                graph = side.panel.graph
                selected = graph.selected()
                if selected is not None:
                    graph.centerOn(graph.items_by_id[selected.id])
        finally:
            self._busy = False

    def partner(self, node_id: str, from_a: bool) -> str | None:
        """The aligned box on the other side; with nothing aligned, the box of the same id."""
        if self.pairing is None:
            return node_id
        return self.pairing.partner(node_id, from_a)

    def _selected(self, side: Side, other: Side, node: SceneNode, from_a: bool) -> None:
        side.show_info(node)
        if self._busy:
            return
        target = self.partner(node.id, from_a)
        graph = other.panel.graph
        current = graph.selected()
        if self.pairing is None and target in graph.items_by_id and graph.items_by_id[target].node.label != node.label:
            target = None  # nothing aligned (two main graphs): a box pairs with the same box only if it is the same op
        if target is not None and target not in graph.items_by_id:
            target = other_form(target, graph.items_by_id)
        if target is None or target not in graph.items_by_id:
            if current is not None:
                graph.scene().clearSelection()
            other.info.setHtml(rich(other.summary_html, tag("p", tag("i", "No aligned box on this side: the "
                                                                          "selected box has no counterpart here."))))
            return
        if current is None or current.id != target:
            self._busy = True
            try:
                graph.select(target)
            finally:
                self._busy = False

    def _drawn(self, side: Side) -> None:
        side.panel.graph.mark(self._marks.get(id(side), {}))
        if self._waiting > 0:
            self._waiting -= 1
            if self._waiting == 0:
                self.drawn.emit()

    def _link_scrolling(self) -> None:
        def link(src: QScrollBar, dst: QScrollBar) -> None:
            def moved(value: int) -> None:
                if self._busy or src.maximum() <= 0:
                    return
                self._busy = True
                try:
                    dst.setValue(round(value / src.maximum() * dst.maximum()))
                finally:
                    self._busy = False

            src.valueChanged.connect(moved)

        ga, gb = self.a.panel.graph, self.b.panel.graph
        link(ga.horizontalScrollBar(), gb.horizontalScrollBar())
        link(gb.horizontalScrollBar(), ga.horizontalScrollBar())
        link(ga.verticalScrollBar(), gb.verticalScrollBar())
        link(gb.verticalScrollBar(), ga.verticalScrollBar())


def box_html(index: ModelIndex | None, scope: Scope | None, node: SceneNode,
             values: tuple[Mapping[str, str], Mapping[str, onnx.TensorProto]]) -> Rich:
    """Details of one box of a graph: an ONNX node (attributes, typed inputs and outputs, metadata, operator),
    a function call, an aten call, a constant's value, or an input/output with its type."""
    if index is None or scope is None:
        return Rich()
    types, initializers = values
    path = node.ref[1] if node.kind == "function_call" and isinstance(node.ref, tuple) else node.ref
    if node.kind in ("op", "function_call") and isinstance(path, tuple):
        nodes = (index.functions.functions[scope].node if isinstance(scope, FunctionKey)
                 and scope in index.functions.functions else index.proto.graph.node)
        try:
            proto = resolve_path(nodes, path)
        except KeyError:
            return Rich()
        inits = {n: initializers[n] for n in proto.input if n in initializers}
        return node_html(index, proto, f"{scope_label(scope)} / {node.detail or node.label}", types, inits,
                         {n: _preview(index, t) for n, t in inits.items()})
    if node.kind == "aten_call" and isinstance(node.ref, AtenCall):
        return details.describe(index, node.ref)
    name = str(node.ref)
    text = tag("h3", node.kind, " ", tag("code", name))
    if name in initializers:
        return rich(text, tag("p", _preview(index, initializers[name])))
    return rich(text, tag("p", types.get(name, node.detail)))


def _preview(index: ModelIndex, tensor: onnx.TensorProto) -> str:
    """Values of an inline tensor up to ``MAX_PREVIEW_BYTES`` (external data is never read here)."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor_facts(tensor).nbytes > MAX_PREVIEW_BYTES:
        return "(not read here)"
    try:
        return tensor_preview(read_tensor(tensor, index.path.parent))
    except InspectorError as e:
        return f"cannot read: {e}"


def other_form(box: str, boxes: Mapping[str, object]) -> str | None:
    """The box of the same value drawn the other way on this side, if there is one: a weight small enough to show its
    values on one side (``const:NAME``) and drawn as an input on the other (``in:NAME``), as T5's position bias is
    with 16 elements and with 64; None otherwise."""
    kind, _colon, name = box.partition(":")
    swapped = {"in": "const", "const": "in"}.get(kind)
    found = f"{swapped}:{name}" if swapped else None
    return found if found is not None and found in boxes else None
