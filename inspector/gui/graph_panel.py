"""The centre of the window: a breadcrumb, Back, and the graph of the current scope, laid out off the GUI thread.

Large scopes stay responsive: modules and aten calls start collapsed and expand on double-click, a scene never
holds more than ``MAX_NODES`` boxes, and layouts are cached per (scope, expanded boxes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QMenu, QMessageBox, QToolButton, QVBoxLayout, QWidget

from inspector.core.bodies.body import Body
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.walk import NodePath
from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import check_output
from inspector.core.util.textsafe import one_line
from inspector.core.util.units import plural
from inspector.gui import dot_process, worker
from inspector.gui.analysis import TreeObject, scope_of
from inspector.gui.dialogs import output_path, show_message
from inspector.gui.dot_process import run_dot_elsewhere
from inspector.gui.graph_view import GraphView, export_png, export_svg
from inspector.gui.widgets import ElidedLabel
from inspector.gui.worker import Jobs
from inspector.render.layout import Layout, LayoutCache
from inspector.render.overview import Overview, module_overview
from inspector.render.scene import Scene, SceneNode, build_scene
from inspector.render.window import window_scene

MAX_NODES = 300
WHOLE_SCENE = 1_000_000  # boxes built (never laid out) to find the window around a box the first ones leave out


@dataclass(frozen=True, slots=True)
class View:
    scope: Scope
    expanded: frozenset[str] = frozenset()
    overview: bool = False  # the module overview instead of the graph (main graph of a model with modules)


def scope_label(scope: Scope) -> str:
    if scope == MAIN:
        return "main graph"
    if isinstance(scope, AtenCall):
        return f"{scope.target} ({scope.name})"
    return str(scope)


def _bar(left: list[QWidget], right: list[QWidget]) -> QHBoxLayout:
    """A row of buttons: ``left`` at its start, ``right`` at its end."""
    bar = QHBoxLayout()
    for widget in left:
        bar.addWidget(widget)
    bar.addStretch(1)
    for widget in right:
        bar.addWidget(widget)
    return bar


def location(view: View) -> str:
    """Where a view is, as a breadcrumb: the main graph, a function body, or an aten call inside its module."""
    scope = view.scope
    if view.overview:
        return "main graph › module overview"
    if isinstance(scope, FunctionKey):
        parts = [f"function {scope}"]
    elif isinstance(scope, AtenCall):
        parts = ["main graph" if scope.scope == MAIN else f"function {scope.scope}"]
        if scope.module_path:
            parts.append(scope.module_path)
        parts.append(f"{scope.target} ({scope.name})")
    else:
        parts = ["main graph"]
    n = len(view.expanded)
    return " › ".join(parts) + (f"  (+{n} open)" if n else "")


def history_label(view: View, most: int = 2) -> str:
    """A Back history entry: where it is and what was open there, by name (the innermost open boxes: an open module
    inside an open module names only the inner one): ``main graph  (+3 open: model.layers.0.self_attn)``."""
    text = location(view)
    names = sorted(i.split(":", 1)[-1] for i in view.expanded)
    inner = [n for n in names if not any(o != n and o.startswith(n + ".") for o in names)]
    if not inner:
        return text
    shown = ", ".join(inner[:most]) + (f", +{len(inner) - most} more" if len(inner) > most else "")
    return f"{text[:-1]}: {shown})"


def scope_key(scope: Scope) -> tuple[str, ...]:
    if isinstance(scope, AtenCall):
        return ("call", str(scope.scope), scope.name)
    if isinstance(scope, FunctionKey):
        return ("function", *scope)
    return ("main",)


def scene_id(body: Body, path: NodePath) -> str:
    """The scene id of the node at ``path`` in ``body`` (as ``inspector.render.scene`` names nodes)."""
    return "n:" + "/".join(str(p) for p in body.graph_path(path))


def inside(box: SceneNode) -> Callable[[SceneNode], bool]:
    """Whether a box of the expanded scene comes from ``box`` (a module or an aten call box being expanded)."""
    if isinstance(box.ref, AtenCall):
        tops = {p[0] for p in box.ref.node_paths if p}

        def of_call(n: SceneNode) -> bool:  # op boxes carry their NodePath, call boxes (callee, NodePath)
            ref = n.ref
            path = ref if n.kind == "op" else ref[1] if n.kind == "function_call" and isinstance(ref, tuple) else None
            return isinstance(path, tuple) and bool(path) and path[0] in tops

        return of_call
    prefix = f"{box.ref}."

    def of_module(n: SceneNode) -> bool:
        if n.kind == "module":
            return str(n.ref).startswith(prefix)
        if isinstance(n.ref, AtenCall):
            return n.ref.module_path == box.ref or n.ref.module_path.startswith(prefix)
        return False

    return of_module


def module_chain(root: ModuleNode, path: str) -> list[str]:
    """The box ids from the top of the module tree down to the module at ``path`` (``mod:model``,
    ``mod:model.layers.0``: a module's parent is whichever module holds it, not its path less one part)."""
    chain: list[str] = []
    module = root
    while module.path != path:
        nxt = next((c for c in module.children.values() if path == c.path or path.startswith(c.path + ".")), None)
        if nxt is None:
            return []
        module = nxt
        chain.append("mod:" + module.path)
    return chain


class History:
    """Where a panel has been (``back``, newest last) and where Back came from (``ahead``, the next one last)."""

    __slots__ = ("ahead", "back")

    def __init__(self) -> None:
        self.back: list[View] = []
        self.ahead: list[View] = []

    def left(self, current: View | None, view: View) -> None:
        """``view`` replaces ``current`` by a move of its own: Back returns to ``current``; nothing lies ahead."""
        if current is not None and current != view:
            self.back.append(current)
            self.ahead = []

    def step(self, current: View | None, forward: bool) -> View | None:
        """The view one step back (or forward), with ``current`` kept for the way back; None at the end."""
        source, other = (self.ahead, self.back) if forward else (self.back, self.ahead)
        if not source:
            return None
        if current is not None:
            other.append(current)
        return source.pop()

    def jump(self, current: View | None, n: int) -> View | None:
        """The ``n``-th view of ``back`` (0: the oldest); the ones after it, and ``current``, lie ahead."""
        if not 0 <= n < len(self.back):
            return None
        target = self.back[n]
        if current is not None:
            self.ahead.extend([current, *reversed(self.back[n + 1:])])
        del self.back[n:]
        return target


def tool_button(text: str, tip: str, slot: Callable[[], object]) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


class GraphPanel(QWidget):
    node_selected = Signal(object, object)  # (scope, SceneNode | None)
    box_unselected = Signal(object)  # scope: the user cleared the selection (a redraw clearing it is not this)
    view_requested = Signal(object)  # View, as soon as it is asked for (what the panel shows from now on)
    view_shown = Signal(object)  # View, once its layout is drawn

    def __init__(self) -> None:
        super().__init__()
        self.graph = GraphView()
        self.graph.node_selected.connect(self._box_selected)
        self.graph.selection_cleared.connect(
            lambda: None if self.graph.clearing else self.box_unselected.emit(self.current_scope()))
        self.graph.node_activated.connect(self.activate)
        self.graph.body_requested.connect(self.open_body)
        self.back_button = tool_button("◀ Back", "Back (Backspace, Alt+Left); hold or use the arrow for the history",
                                       self.back)
        self.back_button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        self.history_menu = QMenu(self.back_button)
        self.back_button.setMenu(self.history_menu)
        self.forward_button = tool_button("▶", "Forward (Alt+Right): where Back came from", self.forward)
        # the current location, elided in the middle, on a line of its own under the buttons: beside them it had
        # ~90 px of a 1366-wide window and read "main g…ntion)"
        self.crumbs = ElidedLabel()
        self.info = ElidedLabel(mode=Qt.TextElideMode.ElideRight)
        self.graph.fit_requested.connect(self.fit)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(_bar([self.back_button, self.forward_button], [
            tool_button("Collapse", "Collapse all expanded boxes", self.collapse_all),
            tool_button("Fit", "Fit the graph in the view (F); a graph too big to read whole shows the module overview",
                        self.fit),
            tool_button("Export…", "Save the view as SVG or PNG", self.export_dialog)]))
        lay.addWidget(self.crumbs)
        lay.addWidget(self.graph, 1)
        lay.addWidget(self.info)
        self.graph.back_requested.connect(self.back)
        self.graph.forward_requested.connect(self.forward)
        # Alt+Left wherever the focus is in the window; in a window with two graphs (compare), in each graph's own
        # panel (two window-wide shortcuts with one key would be ambiguous, and neither would fire)
        self.back_shortcut = QShortcut(QKeySequence("Alt+Left"), self, self.back)
        self.forward_shortcut = QShortcut(QKeySequence("Alt+Right"), self, self.forward)
        self.index: ModelIndex | None = None
        self.cache = LayoutCache(32, dot=run_dot_elsewhere)  # Graphviz in a helper process: the GUI never waits
        dot_process.start()
        self._history = History()
        self._current: View | None = None
        self._drawn: View | None = None  # the view whose boxes the graph holds
        self._token = 0
        self._jobs = Jobs()
        self._pending_focus: str | None = None
        self._pending_region: Callable[[SceneNode], bool] | None = None
        self.scene: Scene | None = None

    def set_index(self, index: ModelIndex, show_main: bool = True) -> None:
        """Show ``index``, starting on its main graph (``show_main=False``: nothing until a scope is shown, for
        a caller that shows one at once and would lay out the main graph for nothing)."""
        self.index = index
        self.cache.clear()
        self._history = History()
        self._current = None
        self._drawn = None
        if show_main:  # laid out once the window has drawn the new model (worker.after_paint)
            self.open_view(View(MAIN), after_paint=True)

    def drop_pending(self) -> None:
        """Forget the layouts still being made (another model is being opened): they are never shown."""
        self._token += 1

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        alone = len(self.window().findChildren(GraphPanel)) == 1
        for shortcut in (self.back_shortcut, self.forward_shortcut):
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut if alone
                                else Qt.ShortcutContext.WidgetWithChildrenShortcut)

    def _box_selected(self, node: SceneNode) -> None:
        """A box selected in the graph, reported with its scope; a box of a view being replaced is not."""
        if self._drawn is not None and self._drawn == self._current:
            self.node_selected.emit(self.current_scope(), node)

    def current_scope(self) -> Scope | None:
        return self._current.scope if self._current else None

    def current_view(self) -> View | None:
        return self._current

    def open_view(self, view: View, push: bool = True, focus: str | None = None,
                  region: Callable[[SceneNode], bool] | None = None, after_paint: bool = False) -> None:
        """Show ``view``; ``push`` keeps the current one for Back. Once drawn, the box ``focus`` is selected and
        centred, or the view zooms to the boxes ``region`` accepts (what an expanded box opened into).
        ``after_paint``: the layout starts once the window has been painted (a model just opened)."""
        if self.index is None:
            return
        if push:
            self._history.left(self._current, view)
        self._current = view
        self.view_requested.emit(view)
        self._pending_focus = focus
        self._pending_region = region
        self._update_crumbs()
        self._token += 1
        token, index, cache = self._token, self.index, self.cache
        key = (id(index), scope_key(view.scope), view.expanded)
        if view.overview:
            self._show_overview(view, token)
            return
        self.info.set_full_text(f"Laying out {scope_label(view.scope)}…")

        def work() -> tuple[Scene, Layout]:
            scene = build_scene(index, view.scope, view.expanded, max_nodes=MAX_NODES)
            if focus and scene.truncated and all(n.id != focus for n in scene.nodes):
                # the box to show is not among the first boxes: draw the boxes around it instead
                whole = build_scene(index, view.scope, view.expanded, max_nodes=WHOLE_SCENE)
                scene = window_scene(whole, focus, MAX_NODES)
                return scene, cache.get_or_compute((*key, focus), scene)
            return scene, cache.get_or_compute(key, scene)

        def done(result: tuple[Scene, Layout]) -> None:
            if token != self._token:
                return
            scene, layout = result
            self.scene = scene

            def drawn() -> None:
                if token != self._token:  # another view was asked for while this one was being drawn: it is not
                    return  # announced (a caller waiting for that view would take it), nor given that view's focus
                hidden = (f" · {plural(scene.hidden_nodes, 'more box', 'more boxes')} not shown (expand less, or "
                          "open a smaller scope)" if scene.truncated else "")
                too_big = (" · too big to read whole: Fit (F) shows the module overview" if view.scope == MAIN
                           and not self.graph.fits() and self.has_overview() else "")
                self.info.set_full_text(f"{plural(len(scene.nodes), 'box', 'boxes')}, "
                                        f"{plural(len(scene.edges), 'edge')}{hidden}{too_big} — double-click a module "
                                        "or aten call to expand it; click ƒ to open a call's body")
                self._shown(view)

            self.graph.show_layout(scene, layout, drawn)  # in steps: the window answers while a big graph is drawn

        def failed(reason: str) -> None:
            if token == self._token:
                self.info.set_full_text(f"Could not lay out this scope: {reason}")

        def start() -> None:
            if token == self._token:  # not replaced by another view meanwhile
                self._jobs.run(work, done, failed)

        if after_paint:
            worker.after_paint(self.info, start)
        else:
            start()

    def _show_overview(self, view: View, token: int) -> None:
        """The module overview, flowed to the view's width and, if it can be, no taller than it at 1:1."""
        index = self.index
        if index is None:
            return
        root = index.provenance.module_root
        viewport = self.graph.viewport().rect()
        width, height = max(viewport.width() - 24, 240), max(viewport.height() - 24, 160)

        def done(overview: Overview) -> None:
            if token != self._token:
                return
            self.scene = None

            def drawn() -> None:
                if token != self._token:  # replaced while it was being drawn (as for a graph)
                    return
                modules = sum(1 for b in overview.boxes if b.kind == "tile")
                self.info.set_full_text(f"Module overview: {plural(len(overview.boxes), 'box', 'boxes')} "
                                        f"({plural(modules, 'closed module')}) — double-click or Enter shows a module "
                                        "in the graph; Back returns")
                self._shown(view)

            self.graph.show_overview(overview, drawn)

        self._jobs.run(lambda: module_overview(root, width, height), done)

    def _shown(self, view: View) -> None:
        """A view is drawn: select (and centre on) the box it was opened for, and say so."""
        self._drawn = view
        if self._pending_focus:  # a jump to one box: centred at 1:1 (the whole main graph at fit read ~5 px)
            self.graph.focus(self._pending_focus)
        elif self._pending_region is not None:
            region = self._pending_region
            self.graph.show_region([i for i, item in self.graph.items_by_id.items() if region(item.node)])
        self.view_shown.emit(view)

    def has_overview(self) -> bool:
        """Whether the model has a module structure to show instead of a graph too big to fit."""
        return self.index is not None and bool(self.index.provenance.module_root.children)

    def fit(self) -> None:
        """Fit the graph in the view at a readable scale; a main graph too big for that shows the module overview
        instead (Back returns to the graph)."""
        view = self._current
        if (view is not None and not view.overview and view.scope == MAIN and not self.graph.fits()
                and self.has_overview()):
            selected = self.graph.selected()
            focus = selected.id if selected is not None and selected.kind == "module" else None
            self.open_view(View(MAIN, view.expanded, overview=True), focus=focus)
        else:
            self.graph.fit()

    def show_scope(self, scope: Scope, expanded: frozenset[str] = frozenset(), focus: str | None = None) -> None:
        self.open_view(View(scope, expanded), focus=focus)

    def show_tree_object(self, obj: TreeObject) -> None:
        """Show the scope a tree item lives in: a function body, an aten call, or a module inside main."""
        if isinstance(obj, ModuleNode) and obj.path and self.index is not None:
            chain = module_chain(self.index.provenance.module_root, obj.path) or ["mod:" + obj.path]
            self.show_scope(MAIN, frozenset(chain[:-1]), focus=chain[-1])
            return
        scope = scope_of(obj)
        if isinstance(scope, (FunctionKey, AtenCall)):
            self.show_scope(scope)

    def collapse_all(self) -> None:
        if self._current is not None:
            self.open_view(View(self._current.scope), push=False)

    def back(self) -> None:
        view = self._history.step(self._current, forward=False)
        if view is not None:
            self.open_view(view, push=False)

    def forward(self) -> None:
        """Return to where Back came from (Alt+Right)."""
        view = self._history.step(self._current, forward=True)
        if view is not None:
            self.open_view(view, push=False)

    def activate(self, node: SceneNode) -> None:
        """Double-click: expand/collapse a module or aten call box; enter a function call's body."""
        if self._current is None:
            return
        if self._current.overview:
            if node.kind == "module" and self.index is not None:
                chain = module_chain(self.index.provenance.module_root, str(node.ref))
                self.open_view(View(MAIN, frozenset(chain[:-1])), focus=chain[-1] if chain else None)
            return
        if node.kind == "function_call" and isinstance(node.ref, tuple) and node.ref:
            callee = node.ref[0]
            if isinstance(callee, FunctionKey):
                self.open_view(View(callee))
            return
        if node.kind in ("module", "aten_call") and node.expandable:
            expanded = self._current.expanded ^ {node.id}
            self.open_view(View(self._current.scope, frozenset(expanded)), push=True, region=inside(node))

    def open_body(self, node: SceneNode) -> None:
        """ƒ (or Enter) on a call box: a function call opens the function's body, an aten call its own nodes; the
        details show the call."""
        self.node_selected.emit(self.current_scope(), node)
        if node.kind == "function_call" and isinstance(node.ref, tuple) and node.ref:
            callee = node.ref[0]
            if isinstance(callee, FunctionKey):
                self.open_view(View(callee))
        elif node.kind == "aten_call" and isinstance(node.ref, AtenCall):
            self.open_view(View(node.ref))
        else:
            self.activate(node)

    def _update_crumbs(self) -> None:
        """The breadcrumb names where the view is; the Back button's menu lists where it has been."""
        self.crumbs.set_full_text(location(self._current) if self._current is not None else "")
        back = self._history.back
        self.back_button.setEnabled(bool(back))
        self.forward_button.setEnabled(bool(self._history.ahead))
        self.history_menu.clear()
        for n in range(len(back) - 1, max(len(back) - 16, 0) - 1, -1):
            action = self.history_menu.addAction(history_label(back[n]))
            action.triggered.connect(lambda _=False, k=n: self.go_back_to(k))

    def history(self) -> list[str]:
        """The Back history, most recent first, as the menu shows it."""
        return [history_label(v) for v in reversed(self._history.back)]

    def go_back_to(self, n: int) -> None:
        """Return to the ``n``-th view of the history (0: the oldest), dropping the ones after it."""
        target = self._history.jump(self._current, n)
        if target is not None:
            self.open_view(target, push=False)

    def export_dialog(self) -> None:
        overview = self._current is not None and self._current.overview  # drawn by Qt only: PNG
        index = self.index
        path = output_path(self, "Export graph", self.export_name() + (".png" if overview else ".svg"),
                           "PNG (*.png)" if overview else "SVG (*.svg);;PNG (*.png)",
                           index.protected_files() if index is not None else [], "the graph")
        if path is not None:
            try:
                self.export(path)
            except InspectorError as e:
                show_message(self, QMessageBox.Icon.Warning, "Export graph", one_line(str(e), 300))

    def export_name(self) -> str:
        return export_name(self._current)

    def export(self, path: Path) -> None:
        export_view(self.graph, self._current, path, self.index)


def export_name(view: View | None) -> str:
    """A file name for the shown scope: ``local.tr_perm_0231``, ``aten_transpose.int_transpose_2``."""
    if view is not None and view.overview:
        return "module_overview"
    label = "graph" if view is None else scope_label(view.scope).replace(" ", "_")
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in label).strip("._")
    return re.sub("_+", "_", name)[:80] or "graph"


def export_view(graph: GraphView, view: View | None, path: Path, index: ModelIndex | None = None) -> None:
    """The drawing as SVG, or as PNG by its suffix; the module overview (drawn by Qt only) always as PNG. Written
    atomically, never over the open model's files (``paths.check_output``)."""
    if view is not None and view.overview:
        path = path.with_suffix(".png")
    check_output(path, index.protected_files() if index is not None else [], "the graph")
    if path.suffix.lower() == ".png":
        export_png(graph, path)
    else:
        export_svg(graph, path)
