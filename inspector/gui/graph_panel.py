"""The centre of the window: a breadcrumb, Back, and the graph of the current scope, laid out off the GUI thread.

Large scopes stay responsive: modules and aten calls start collapsed and expand on double-click, a scene never
holds more than ``MAX_NODES`` boxes, and layouts are cached per (scope, expanded boxes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from inspector.core.body import Body
from inspector.core.index import ModelIndex
from inspector.core.keys import MAIN, FunctionKey, Scope
from inspector.core.provenance import AtenCall
from inspector.core.walk import NodePath
from inspector.gui.graph_view import GraphView
from inspector.gui.worker import Jobs
from inspector.render.layout import Layout, LayoutCache
from inspector.render.scene import Scene, SceneNode, build_scene

MAX_NODES = 300


@dataclass(frozen=True, slots=True)
class View:
    scope: Scope
    expanded: frozenset[str] = frozenset()


def scope_label(scope: Scope) -> str:
    if scope == MAIN:
        return "main graph"
    if isinstance(scope, AtenCall):
        return f"{scope.target} ({scope.name})"
    return str(scope)


def scope_key(scope: Scope) -> tuple[str, ...]:
    if isinstance(scope, AtenCall):
        return ("call", str(scope.scope), scope.name)
    if isinstance(scope, FunctionKey):
        return ("function", *scope)
    return ("main",)


def scene_id(body: Body, path: NodePath) -> str:
    """The scene id of the node at ``path`` in ``body`` (as ``inspector.render.scene`` names nodes)."""
    return "n:" + "/".join(str(p) for p in body.graph_path(path))


class GraphPanel(QWidget):
    node_selected = Signal(object, object)  # (scope, SceneNode | None)
    view_shown = Signal(object)  # View, once its layout is drawn

    def __init__(self) -> None:
        super().__init__()
        self.graph = GraphView()
        self.graph.node_selected.connect(lambda node: self.node_selected.emit(self.current_scope(), node))
        self.graph.node_activated.connect(self.activate)
        self.back_button = QPushButton("◀ Back")
        self.back_button.setToolTip("Back (Backspace, Alt+Left)")
        self.back_button.clicked.connect(self.back)
        self.crumbs = QLabel()
        self.crumbs.setTextFormat(Qt.TextFormat.RichText)
        self.crumbs.linkActivated.connect(self._crumb)
        self.info = QLabel()
        self.info.setTextFormat(Qt.TextFormat.PlainText)
        fit = QPushButton("Fit")
        fit.setToolTip("Fit the graph in the view (F)")
        fit.clicked.connect(self.graph.fit)
        collapse = QPushButton("Collapse all")
        collapse.clicked.connect(self.collapse_all)
        export = QPushButton("Export…")
        export.setToolTip("Save the view as SVG or PNG")
        export.clicked.connect(self.export_dialog)
        bar = QHBoxLayout()
        bar.addWidget(self.back_button)
        bar.addWidget(self.crumbs, 1)
        bar.addWidget(collapse)
        bar.addWidget(fit)
        bar.addWidget(export)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(bar)
        lay.addWidget(self.graph, 1)
        lay.addWidget(self.info)
        self.graph.back_requested.connect(self.back)
        back_action = QShortcut(QKeySequence("Alt+Left"), self)  # also when focus is on the toolbar
        back_action.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        back_action.activated.connect(self.back)
        self.index: ModelIndex | None = None
        self.cache = LayoutCache(32)
        self._stack: list[View] = []
        self._current: View | None = None
        self._token = 0
        self._jobs = Jobs()
        self._pending_focus: str | None = None
        self.scene: Scene | None = None

    def set_index(self, index: ModelIndex) -> None:
        self.index = index
        self.cache.clear()
        self._stack = []
        self._current = None
        self.open_view(View(MAIN))

    def current_scope(self) -> Scope | None:
        return self._current.scope if self._current else None

    def current_view(self) -> View | None:
        return self._current

    def open_view(self, view: View, push: bool = True, focus: str | None = None) -> None:
        """Show ``view``; ``push`` keeps the current one for Back."""
        if self.index is None:
            return
        if push and self._current is not None and self._current != view:
            self._stack.append(self._current)
        self._current = view
        self._pending_focus = focus
        self._update_crumbs()
        self._token += 1
        token, index, cache = self._token, self.index, self.cache
        key = (id(index), scope_key(view.scope), view.expanded)
        self.info.setText(f"Laying out {scope_label(view.scope)}…")

        def work() -> tuple[Scene, Layout]:
            scene = build_scene(index, view.scope, view.expanded, max_nodes=MAX_NODES)
            return scene, cache.get_or_compute(key, scene)

        def done(result: tuple[Scene, Layout]) -> None:
            if token != self._token:
                return
            scene, layout = result
            self.scene = scene
            self.graph.show_layout(scene, layout)
            hidden = (f" · {scene.hidden_nodes} more not shown (expand less, or open a smaller scope)"
                      if scene.truncated else "")
            self.info.setText(f"{len(scene.nodes)} boxes, {len(scene.edges)} edges{hidden} — double-click a "
                              "module or aten call to expand it, a function call to enter it")
            if self._pending_focus:
                self.graph.select(self._pending_focus)
            self.view_shown.emit(view)

        def failed(reason: str) -> None:
            if token == self._token:
                self.info.setText(f"Could not lay out this scope: {reason}")

        self._jobs.run(work, done, failed)

    def show_scope(self, scope: Scope, expanded: frozenset[str] = frozenset(), focus: str | None = None) -> None:
        self.open_view(View(scope, expanded), focus=focus)

    def collapse_all(self) -> None:
        if self._current is not None:
            self.open_view(View(self._current.scope), push=False)

    def back(self) -> None:
        if self._stack:
            self.open_view(self._stack.pop(), push=False)

    def activate(self, node: SceneNode) -> None:
        """Double-click: expand/collapse a module or aten call box; enter a function call's body."""
        if self._current is None:
            return
        if node.kind == "function_call" and isinstance(node.ref, tuple) and node.ref:
            callee = node.ref[0]
            if isinstance(callee, FunctionKey):
                self.open_view(View(callee))
            return
        if node.kind in ("module", "aten_call") and node.expandable:
            expanded = self._current.expanded ^ {node.id}
            self.open_view(View(self._current.scope, frozenset(expanded)), push=True)

    def _update_crumbs(self) -> None:
        parts = []
        for k, v in enumerate(self._stack[-4:]):
            n = len(self._stack) - min(len(self._stack), 4) + k
            parts.append(f"<a href='{n}'>{_esc(scope_label(v.scope))}</a>")
        if self._current is not None:
            extra = f" (+{len(self._current.expanded)} open)" if self._current.expanded else ""
            parts.append(f"<b>{_esc(scope_label(self._current.scope))}</b>{_esc(extra)}")
        self.crumbs.setText(" › ".join(parts))
        self.back_button.setEnabled(bool(self._stack))

    def _crumb(self, link: str) -> None:
        if link.isdigit() and int(link) < len(self._stack):
            target = self._stack[int(link)]
            del self._stack[int(link):]
            self.open_view(target, push=False)

    def export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export graph", "graph.svg", "SVG (*.svg);;PNG (*.png)")
        if path:
            self.export(Path(path))

    def export(self, path: Path) -> None:
        if path.suffix.lower() == ".png":
            self.graph.export_png(path)
        else:
            self.graph.export_svg(path)


def _esc(text: str) -> str:
    from inspector.gui.text import esc

    return esc(text)
