"""The main window: functions and module trees on the left, details on the right; loads off the GUI thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from PySide6.QtCore import QModelIndex, QSettings, Qt, QThreadPool, QUrl, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from inspector.core.categories import classify, explain
from inspector.core.errors import InspectorError
from inspector.core.fileio import write_atomic
from inspector.core.functions import CallSite
from inspector.core.index import Family, ModelIndex, Overload, open_index
from inspector.core.keys import MAIN, FunctionKey, GraphScope, Scope
from inspector.core.provenance import AtenCall, ModuleNode
from inspector.core.review import Review, ReviewStore, review_keys, sidecar_path
from inspector.core.search import Hit, SearchIndex
from inspector.core.specialise import BodyAnalysis, SpecialisedValue
from inspector.core.tensors import read_tensor
from inspector.core.torchlib import torchlib_functions
from inspector.core.values import graph_value_types
from inspector.core.walk import resolve_path
from inspector.gui import details
from inspector.gui.analysis import Analyses, Selection
from inspector.gui.compare import CompareWindow
from inspector.gui.family_model import FamilyFilter, FamilyModel
from inspector.gui.graph_panel import GraphPanel, scope_label
from inspector.gui.module_model import ModuleModel, object_of
from inspector.gui.node_details import node_html, tensor_preview
from inspector.gui.pdf import html_to_pdf
from inspector.gui.review_panel import ReviewBar, ReviewItem, ReviewPanel
from inspector.gui.search_panel import SearchPanel
from inspector.gui.signature_panel import SignaturePanel
from inspector.gui.worker import Jobs
from inspector.render.scene import SceneNode
from inspector.report.render import SUFFIXES as REPORT_SUFFIXES
from inspector.report.render import render_text

MAX_RECENT = 10
FILE_FILTER = "ONNX models (*.onnx *.onnxtxt *.onnxtext *.txt);;All files (*)"


class MainWindow(QMainWindow):
    model_loaded = Signal(object)
    load_failed = Signal(str)
    selection_shown = Signal(object)
    report_exported = Signal(object)  # Path
    reviews_listed = Signal(int)
    review_saved = Signal(object, object)

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("onnx-inspector", "onnx-inspector")
        self.index: ModelIndex | None = None
        self._jobs = Jobs()
        self.setWindowTitle("ONNX Inspector")
        self.setAcceptDrops(True)
        self.resize(1280, 800)

        self.families = FamilyModel()
        self.family_filter = FamilyFilter()
        self.family_filter.setSourceModel(self.families)
        self.filter_box = QLineEdit(placeholderText="Filter functions, overloads, aten targets…")
        self.filter_box.setClearButtonEnabled(True)
        self.filter_box.textChanged.connect(self.family_filter.setFilterFixedString)
        self.family_view = QTreeView()
        self.family_view.setModel(self.family_filter)
        self.family_view.setUniformRowHeights(True)
        self.family_view.selectionModel().currentChanged.connect(self._family_selected)
        self.module_view = QTreeView()
        self.module_view.setUniformRowHeights(True)

        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.filter_box)
        self.trees = QTabWidget()
        self.review_panel = ReviewPanel()
        self.review_panel.jump.connect(self.jump_to_review)
        self.search_panel = SearchPanel()
        self.search_panel.jump.connect(self.jump_to_hit)
        self.trees.addTab(self.family_view, "Functions")
        self.trees.addTab(self.module_view, "Modules")
        self.trees.addTab(self.review_panel, "Review")
        self.trees.addTab(self.search_panel, "Search")
        lay.addWidget(self.trees)

        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.details.anchorClicked.connect(self._details_link)
        self._node_shown: tuple[GraphScope, tuple[Any, ...], str] | None = None
        self._values: tuple[dict[str, str], dict[str, onnx.TensorProto]] | None = None
        self.details.setHtml(_welcome())
        self.signature = SignaturePanel()
        self.signature.value_clicked.connect(self._review_value)
        self.right = QTabWidget()
        self.right.addTab(self.signature, "Signature")
        self.right.addTab(self.details, "Details")
        self.right.setCurrentWidget(self.details)
        self.review_bar = ReviewBar()
        self.review_bar.review_requested.connect(self.set_review)
        right_box = QWidget()
        right_lay = QVBoxLayout(right_box)
        right_lay.setContentsMargins(0, 0, 0, 0)
        right_lay.addWidget(self.right, 1)
        right_lay.addWidget(self.review_bar)
        self.center = GraphPanel()
        self.center.node_selected.connect(self._graph_node_selected)
        self.center.view_shown.connect(self._view_shown)
        self._reviews_pending = False
        self.split = QSplitter()
        self.split.addWidget(left)
        self.split.addWidget(self.center)
        self.split.addWidget(right_box)
        self.split.setSizes([360, 560, 560])
        self.setCentralWidget(self.split)
        self.analyses: Analyses | None = None
        self.reviews: ReviewStore | None = None
        self._selection: Selection | None = None
        self._review_target: tuple[ReviewItem, Any] | None = None
        self._pending_review_obj: Any = None
        self._selection_token = 0
        self._torchlib_cache: dict[str, Any] = {}

        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.counts = QLabel()
        self.statusBar().addPermanentWidget(self.counts)
        self.statusBar().addPermanentWidget(self.progress)
        self._build_menus()

    # menus -----------------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_action = QAction("&Open…", self)
        open_action.setShortcut(QKeySequence.StandardKey.Open)
        open_action.triggered.connect(self.choose_file)
        file_menu.addAction(open_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._refresh_recent()
        file_menu.addSeparator()
        compare_action = QAction("&Compare with…", self)
        compare_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        compare_action.triggered.connect(self.compare_with)
        file_menu.addAction(compare_action)
        export_action = QAction("&Export Report…", self)
        export_action.setShortcut(QKeySequence("Ctrl+E"))
        export_action.triggered.connect(self.export_report)
        file_menu.addAction(export_action)
        find_action = QAction("&Find…", self)
        find_action.setShortcut(QKeySequence.StandardKey.Find)
        find_action.triggered.connect(self.start_search)
        file_menu.addAction(find_action)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def _remember(self, path: Path) -> None:
        recent = [str(path), *[p for p in self.recent_files() if p != str(path)]][:MAX_RECENT]
        self.settings.setValue("recent", recent)
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self.recent_files():
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", "", FILE_FILTER)
        if path:
            self.open_path(path)

    # loading ---------------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Load and index ``path`` on a worker thread; the window stays responsive meanwhile."""
        p = Path(path)
        self.statusBar().showMessage(f"Opening {p.name}…")
        self.progress.show()
        self._jobs.run(lambda: _open_for_display(p), self._loaded, lambda reason: self._failed(p, reason))

    def _loaded(self, opened: Opened) -> None:
        self.progress.setVisible(bool(self._jobs))
        self.set_index(opened.index)
        self.reviews = opened.reviews
        self._values = opened.values
        self.search_panel.set_index(opened.search)
        if opened.review_error:
            self.statusBar().showMessage(f"Reviews disabled: {opened.review_error}")
            self.review_bar.setEnabled(False)
        else:
            self.review_bar.setEnabled(True)
            self._reviews_pending = True  # listed once the first graph is drawn, so it never delays it
        self._remember(opened.index.path)
        self.model_loaded.emit(opened.index)

    def _failed(self, path: Path, reason: str) -> None:
        self.progress.setVisible(bool(self._jobs))
        self.statusBar().showMessage(f"Could not open {path.name}", 5000)
        self.load_failed.emit(reason)
        if QApplication.platformName() != "offscreen":
            show_message(self, QMessageBox.Icon.Critical, "Could not open model", reason)

    def set_index(self, index: ModelIndex) -> None:
        self.index = index
        self.analyses = Analyses(index)
        self.signature.clear()
        self._selection = None
        self.center.set_index(index)
        self.families.set_index(index)
        self.families.add_call_sites(index)
        self.family_view.expandToDepth(0)
        self.family_view.resizeColumnToContents(0)
        modules = ModuleModel(index.provenance.module_root)
        self.module_view.setModel(modules)
        self.module_view.expand(modules.index(0, 0))
        self.module_view.setColumnWidth(0, 220)
        self.module_view.selectionModel().currentChanged.connect(lambda cur, _prev: self.show_object(object_of(cur)))
        self.setWindowTitle(f"{index.path.name} — ONNX Inspector")
        f = index.facts
        self.counts.setText(f"{f.total_nodes:,} nodes · {f.function_count} functions · "
                            f"{len(index.provenance.calls):,} aten calls · {len(index.findings)} findings")
        self.statusBar().showMessage(f"Opened {index.path}", 5000)
        self.details.setHtml(details.model_overview(index))

    # reviews -------------------------------------------------------------------------------------------
    def _list_reviews(self) -> None:
        """Analyse every family off the GUI thread; then fill the Review panel and the tree's badges."""
        analyses, store = self.analyses, self.reviews
        if analyses is None or store is None:
            return

        def done(result: tuple[list[tuple[ReviewItem, Review]], dict[int, tuple[int, int]]]) -> None:
            self.progress.setVisible(bool(self._jobs))
            if analyses is not self.analyses:
                return
            items, badges = result
            self.review_panel.set_items(items)
            self.families.set_badges(badges)
            self.reviews_listed.emit(len(items))

        self._jobs.run(lambda: review_items(analyses, store), done, self.statusBar().showMessage,
                       priority=-1)  # after layouts and selections

    def _set_review_target(self, obj: Any) -> None:
        """Point the review bar at an overload body or a specialised value of the shown selection."""
        sel, store, analyses = self._selection, self.reviews, self.analyses
        if sel is None or store is None or analyses is None:
            self.review_bar.set_target(None, None)
            return
        fam = analyses.family_of(sel.analysis.members[0]) if sel.analysis.members else None
        family_analysis = analyses.family(fam) if fam is not None else None
        if family_analysis is None:
            return
        for key, thing in review_keys(family_analysis):
            if thing is obj:
                item = ReviewItem(key, thing, family_analysis)
                self._review_target = (item, obj)
                self.review_bar.set_target(item.label if key.kind == "value" else f"overload {sel.title}",
                                           store.get(key))
                return
        self.review_bar.set_target(None, None)

    def _review_value(self, spec: SpecialisedValue) -> None:
        self._set_review_target(spec)

    def set_review(self, status: str, note: str) -> None:
        """Record a review and save the sidecar at once (atomically); a failure is shown, never swallowed."""
        if self._review_target is None or self.reviews is None:
            return
        item, _obj = self._review_target
        try:
            self.reviews.set(item.key, status, note)
        except (InspectorError, OSError, ValueError) as e:
            self.statusBar().showMessage(f"Review not saved: {e}")
            if QApplication.platformName() != "offscreen":
                show_message(self, QMessageBox.Icon.Warning, "Review not saved", str(e))
            return
        review = self.reviews.get(item.key)
        self.review_bar.set_target(self.review_bar.target.text(), review)
        items = [(i, self.reviews.get(i.key)) for i, _r in self.review_panel.items()]
        self.review_panel.set_items(items)
        self.families.set_badges(_badges(items, self.index))
        self.statusBar().showMessage(f"Marked {status}: {item.label}", 4000)
        self.review_saved.emit(item.key, review)

    def jump_to_review(self, item: ReviewItem) -> None:
        obj = item.obj
        body = obj if isinstance(obj, BodyAnalysis) else next(
            (b for b in item.family.bodies if any(s is obj for s in b.specialised)), None)
        if body is None or not body.members:
            return
        self._pending_review_obj = obj
        self.select_in_tree(body.members[0])

    def select_in_tree(self, member: Any) -> bool:
        """Select the tree row of an AtenCall, a FunctionKey's overload, a Family or an Overload."""
        target = member
        if isinstance(member, FunctionKey) and self.index is not None:
            target = next((o for fam in self.index.families for o in fam.overloads if o.function == member), None)
        src = self.families.index_of(target)
        if not src.isValid():
            return False
        proxy = self.family_filter.mapFromSource(src)
        if not proxy.isValid():
            self.filter_box.clear()
            proxy = self.family_filter.mapFromSource(src)
        self.trees.setCurrentWidget(self.family_view)
        self.family_view.scrollTo(proxy)
        self.family_view.setCurrentIndex(proxy)
        return True

    # comparing -------------------------------------------------------------------------------------------
    def compare_with(self) -> None:
        if self.index is None:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Compare with…", str(self.index.path.parent), FILE_FILTER)
        if path:
            self.open_compare(Path(path))

    def open_compare(self, other: Path) -> CompareWindow | None:
        """A side-by-side window: this model as A, ``other`` as B."""
        if self.index is None:
            return None
        window = CompareWindow()
        window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._compare_windows = [w for w in getattr(self, "_compare_windows", []) if w.isVisible()] + [window]
        window.show()
        window.open_pair(self.index.path, other)
        return window

    # reports ---------------------------------------------------------------------------------------------
    def export_report(self) -> None:
        if self.index is None:
            return
        suggested = str(self.index.path.with_name(self.index.path.stem + ".report.html"))
        path, _ = QFileDialog.getSaveFileName(self, "Export report", suggested,
                                              "HTML (*.html);;Markdown (*.md);;JSON (*.json);;PDF (*.pdf)")
        if path:
            self.export_report_to(Path(path))

    def export_report_to(self, path: Path) -> None:
        """The same report as ``onnx-inspector report``, with the reviews made in this window."""
        index, reviews = self.index, self.reviews
        if index is None:
            return
        fmt = REPORT_SUFFIXES.get(path.suffix.lower(), "html")
        if path.resolve() in (index.path, sidecar_path(index.path).resolve()):
            self.statusBar().showMessage("Refusing to overwrite the model or its review file")
            return
        self.statusBar().showMessage(f"Writing {path.name}…")

        def done(text: str) -> None:
            try:
                if fmt == "pdf":
                    html_to_pdf(text, path)
                else:
                    write_atomic(path, text.encode("utf-8"))
            except (OSError, InspectorError) as e:
                self.statusBar().showMessage(f"Report not written: {e}")
                return
            self.statusBar().showMessage(f"Wrote {path}", 5000)
            self.report_exported.emit(path)

        def failed(reason: str) -> None:
            self.statusBar().showMessage(f"Report not written: {reason}")

        self._jobs.run(lambda: render_report(index, reviews, fmt), done, failed)

    # search ----------------------------------------------------------------------------------------------
    def start_search(self) -> None:
        self.trees.setCurrentWidget(self.search_panel)
        self.search_panel.focus()

    def jump_to_hit(self, hit: Hit) -> None:
        if self.index is None:
            return
        if hit.kind in ("aten_target", "function") and self.select_in_tree(hit.ref):
            self.search_panel.box.setFocus()
            return
        if hit.kind == "module":
            self.show_object(_module_node(self.index, str(hit.ref)))
            return
        if hit.kind in ("node", "op_type") and hit.scope is not None and hit.path:
            self.show_node(hit.scope, hit.path, hit.where)

    def show_node(self, scope: GraphScope, path: tuple[Any, ...], where: str) -> None:
        """Node details (attributes, types, metadata, operator docs, tensors) in the Details tab."""
        if self.index is None:
            return
        self._node_shown = (scope, path, where)
        if self._render_node(scope, path, where, {}):
            self.right.setCurrentWidget(self.details)

    def _render_node(self, scope: GraphScope, path: tuple[Any, ...], where: str, loaded: dict[str, str]) -> bool:
        """Node details with previews of its inline initializers (and of external ones already ``loaded``)."""
        if self.index is None or self._values is None:
            return False
        graph = self.index.proto.graph
        nodes = self.index.functions.functions[scope].node if isinstance(scope, FunctionKey) else graph.node
        try:
            node = resolve_path(nodes, path)
        except KeyError:
            return False
        types, initializers = self._values
        inits = {n: initializers[n] for n in node.input if n in initializers}
        previews = {n: self._preview(t, inline_only=True) for n, t in inits.items()} | loaded
        self.details.setHtml(node_html(self.index, node, where, types, inits,
                                       {k: v for k, v in previews.items() if v}))
        return True

    def _preview(self, tensor: Any, inline_only: bool) -> str:
        if inline_only and tensor.data_location == onnx.TensorProto.EXTERNAL:
            return ""
        try:
            return tensor_preview(read_tensor(tensor, self.index.path.parent if self.index else Path(".")))
        except InspectorError as e:
            return f"cannot read: {e}"

    def _details_link(self, url: QUrl) -> None:
        """'load values' links read external tensor data on demand (only from inside the model's folder)."""
        text = url.toString()
        if not text.startswith("tensor:") or self.index is None or self._node_shown is None:
            return
        name = text[len("tensor:"):]
        tensor = self._values[1].get(name) if self._values else None
        if tensor is None:
            return
        scope, path, where = self._node_shown

        def done(preview: str) -> None:
            if self._node_shown == (scope, path, where):
                self._render_node(scope, path, where, {name: preview})

        self._jobs.run(lambda: self._preview(tensor, inline_only=False), done)

    def _family_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.show_object(current.siblingAtColumn(0).data(FamilyModel.ObjectRole))

    def show_object(self, obj: Any) -> None:
        if self.index is None:
            return
        self.details.setHtml(details.describe(self.index, obj))
        self._show_signature(obj)
        self._show_graph_for(obj)

    def _show_graph_for(self, obj: Any) -> None:
        """Show the scope a tree item lives in: a function body, an aten call, or a module inside main."""
        if isinstance(obj, Family) and obj.overloads:
            obj = obj.overloads[0]
        if isinstance(obj, Overload):
            obj = obj.function if obj.function is not None else (obj.aten_calls[0] if obj.aten_calls else None)
        if isinstance(obj, CallSite):
            obj = obj.callee
        if isinstance(obj, (FunctionKey, AtenCall)):
            self.center.show_scope(obj)
        elif isinstance(obj, ModuleNode) and obj.path:
            chain, node = [], obj.path
            parts = node.split(".")
            for k in range(1, len(parts) + 1):
                chain.append("mod:" + ".".join(parts[:k]))
            opened = frozenset(c for c in chain[:-1])
            self.center.show_scope(MAIN, opened, focus=chain[-1])

    def _graph_node_selected(self, scope: Scope, node: SceneNode | None) -> None:
        if node is None or self.index is None:
            return
        if node.kind == "op" and isinstance(node.ref, tuple):
            root_nodes = self._scope_nodes(scope)
            if root_nodes is not None:
                where = f"{scope_label(scope)} / {node.detail or node.label}"
                self.show_node(scope if not isinstance(scope, AtenCall) else MAIN, node.ref, where)
        elif node.kind == "aten_call" and isinstance(node.ref, AtenCall):
            self.details.setHtml(details.describe(self.index, node.ref))
            self.right.setCurrentWidget(self.details)
        elif node.kind == "function_call" and isinstance(node.ref, tuple):
            self.show_node(scope if not isinstance(scope, AtenCall) else MAIN, node.ref[1],
                           f"{scope_label(scope)} / call of {node.ref[0]}")
        elif node.kind == "module":
            self.details.setHtml(details.describe(self.index, _module_node(self.index, str(node.ref))))
            self.right.setCurrentWidget(self.details)

    def _scope_nodes(self, scope: Scope) -> Sequence[onnx.NodeProto] | None:
        if self.index is None:
            return None
        if isinstance(scope, FunctionKey):
            f = self.index.functions.functions.get(scope)
            return f.node if f is not None else None
        return self.index.proto.graph.node

    def _view_shown(self, _view: Any) -> None:
        self._mark_graph()
        if self._reviews_pending:
            self._reviews_pending = False
            self._list_reviews()

    def _mark_graph(self) -> None:
        """Highlight, in the graph, the nodes of the shown body that carry specialised values."""
        sel, scene = self._selection, self.center.scene
        view = self.center.current_view()
        if sel is None or scene is None or view is None:
            self.center.graph.mark({})
            return
        body = sel.analysis.body
        scope = view.scope
        same = (isinstance(scope, FunctionKey) and scope in sel.analysis.members) or (
            isinstance(scope, AtenCall) and any(m is scope for m in sel.analysis.members))
        if not same:
            self.center.graph.mark({})
            return
        marks: dict[str, tuple[str, str]] = {}
        for spec in sel.analysis.specialised:
            lit = spec.literal
            if lit.kind == "initializer":
                node_id = f"const:{lit.name}"
            elif lit.path:
                first = lit.path[0]
                assert isinstance(first, int)
                graph_path = (body.node_paths[first] if isinstance(scope, AtenCall) else (first,)) + lit.path[1:]
                node_id = "n:" + "/".join(str(p) for p in graph_path)
            else:
                continue
            colour = classify(spec).colour
            note = explain(spec)
            if node_id in marks:
                note = marks[node_id][1] + "\n\n" + note
            marks[node_id] = (colour, note)
        self.center.graph.mark(marks)

    def _show_signature(self, obj: Any) -> None:
        """Analyse the selected family off the GUI thread, then show its body; stale results are dropped."""
        analyses = self.analyses
        if analyses is None:
            return
        self._selection_token += 1
        token = self._selection_token

        def done(selection: Selection | None) -> None:
            if token != self._selection_token:
                return
            if selection is None:
                self.signature.clear("No ONNX body for this item.")
                return
            self.signature.show_body(selection.title, selection.analysis, selection.signature, selection.family_note)
            self.right.setCurrentWidget(self.signature)
            self._selection = selection
            self._mark_graph()
            pending, self._pending_review_obj = self._pending_review_obj, None
            self._set_review_target(pending if pending is not None else selection.analysis)
            self.selection_shown.emit(selection)
            if selection.target:
                self._show_torchlib(selection.target)

        self._jobs.run(lambda: analyses.selection(obj), done, self.signature.clear)

    def _show_torchlib(self, target: str) -> None:
        if target in self._torchlib_cache:
            self.signature.show_source(target, self._torchlib_cache[target])
            return

        def done(functions: Any) -> None:
            self._torchlib_cache[target] = functions
            self.signature.show_source(target, functions)

        self._jobs.run(lambda: torchlib_functions(target), done)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Let running jobs finish (they report to this window) before it goes away."""
        QThreadPool.globalInstance().waitForDone(5000)
        super().closeEvent(event)

    # drag and drop ---------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_path(urls[0].toLocalFile())
            event.acceptProposedAction()


@dataclass(slots=True)
class Opened:
    index: ModelIndex
    reviews: ReviewStore | None
    review_error: str
    search: SearchIndex
    values: tuple[dict[str, str], dict[str, onnx.TensorProto]]  # value types; initializers by name


def _open_for_display(path: Path) -> Opened:
    """Index a model and prepare, still off the GUI thread, what the window shows first."""
    index = open_index(path)
    index.parameters()
    _ = index.provenance.module_root
    search = SearchIndex(index)
    search.build()
    reviews: ReviewStore | None = ReviewStore(index.path)
    error = ""
    try:
        reviews.load()  # type: ignore[union-attr]
    except InspectorError as e:  # a sidecar we cannot read is left untouched, and reviewing is disabled
        reviews, error = None, str(e)
    graph = index.proto.graph
    values = (graph_value_types(graph), {t.name: t for t in graph.initializer})
    return Opened(index, reviews, error, search, values)


def review_items(analyses: Analyses, store: ReviewStore
                 ) -> tuple[list[tuple[ReviewItem, Review]], dict[int, tuple[int, int]]]:
    """Every reviewable item of every family with its review, and per-overload badge counts."""
    items: list[tuple[ReviewItem, Review]] = []
    for fam in analyses.index.families:
        fa = analyses.family(fam)
        for key, obj in review_keys(fa):
            items.append((ReviewItem(key, obj, fa), store.get(key)))  # type: ignore[arg-type]
    return items, _badges(items, analyses.index)


def _badges(items: list[tuple[ReviewItem, Review]], index: ModelIndex | None) -> dict[int, tuple[int, int]]:
    """(specialised values, unreviewed items) per overload, keyed by id(overload)."""
    if index is None:
        return {}
    owner: dict[int, int] = {}
    for fam in index.families:
        for ov in fam.overloads:
            if ov.function is not None:
                owner[hash(ov.function)] = id(ov)
            for call in ov.aten_calls:
                owner[id(call)] = id(ov)
    counts: dict[int, list[int]] = {}
    for item, review in items:
        body = item.obj if isinstance(item.obj, BodyAnalysis) else None
        if body is None:
            body = next((b for b in item.family.bodies if any(s is item.obj for s in b.specialised)), None)
        if body is None:
            continue
        ovs = {owner.get(hash(m) if isinstance(m, FunctionKey) else id(m)) for m in body.members}
        for ov_id in ovs - {None}:
            c = counts.setdefault(ov_id, [0, 0])  # type: ignore[arg-type]
            if item.key.kind == "value":
                c[0] += 1
            if review.status == "unreviewed":
                c[1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def show_message(parent: QWidget, icon: QMessageBox.Icon, title: str, text: str) -> None:
    """A message box that shows ``text`` literally (error messages can quote model text, which may hold markup)."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.exec()


def render_report(index: ModelIndex, reviews: ReviewStore | None, fmt: str) -> str:
    """Report text (HTML for PDF, which Qt prints on the GUI thread)."""
    from inspector.report.data import build_report

    return render_text(build_report(index, reviews, graphs=fmt in ("html", "pdf")), fmt)


def _module_node(index: ModelIndex, path: str) -> Any:
    stack = [index.provenance.module_root]
    while stack:
        m = stack.pop()
        if m.path == path:
            return m
        stack.extend(m.children.values())
    return None


def _welcome() -> str:
    return ("<h2>ONNX Inspector</h2><p>Open a model with <b>File → Open</b> (Ctrl+O) or drop a file here.</p>"
            "<p>Functions and their overloads, aten calls of flat dynamo exports and the module hierarchy "
            "appear on the left; details and aten signatures appear here.</p>")
