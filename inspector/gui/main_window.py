"""The main window: functions and module trees on the left, details on the right; loads off the GUI thread."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QModelIndex, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHeaderView,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.torchlib import torchlib_version
from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex, build_index
from inspector.core.model.keys import FunctionKey, GraphScope
from inspector.core.model.loader import load_model
from inspector.core.model.provenance import ModuleNode
from inspector.core.model.values import GraphValues, graph_values
from inspector.core.review.store import ReviewStore, sidecar_path
from inspector.core.search import NODE_KINDS, Hit, SearchIndex
from inspector.core.util.errors import InspectorError
from inspector.gui import details
from inspector.gui.analysis import Analyses, TreeObject
from inspector.gui.body_view import BodyView
from inspector.gui.collector import release_model
from inspector.gui.compare import CompareWindow
from inspector.gui.dialogs import show_message
from inspector.gui.dot_process import run_dot_elsewhere
from inspector.gui.family_model import FamilyFilter, FamilyModel, FamilyTree
from inspector.gui.filtering import FilterBox
from inspector.gui.graph_panel import GraphPanel
from inspector.gui.menus import FILE_FILTER, build_file_menu
from inspector.gui.module_model import ModuleModel, object_of
from inspector.gui.nodes import NodeView, module_node
from inspector.gui.pdf import write_report
from inspector.gui.review_panel import ReviewBar, ReviewPanel
from inspector.gui.reviewing import Reviewing
from inspector.gui.search_panel import SearchPanel
from inspector.gui.signature_panel import SignaturePanel
from inspector.gui.text import plural
from inspector.gui.widgets import ElidedLabel, HintedTreeView, fit_to_screen
from inspector.gui.worker import Jobs, checkpoint
from inspector.render.overview import module_totals
from inspector.report.render import SUFFIXES as REPORT_SUFFIXES
from inspector.report.render import render_text


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
        self.jobs = Jobs()
        self.reviewing = Reviewing(self)
        self.nodes = NodeView(self)
        self.bodies = BodyView(self)
        self.setWindowTitle("ONNX Inspector")
        self.setAcceptDrops(True)
        fit_to_screen(self, 1280, 800)

        self.families = FamilyModel()
        self.family_filter = FamilyFilter()
        self.family_filter.setSourceModel(self.families)
        self.filter_box = FilterBox(self.family_filter)
        self.family_view = HintedTreeView(self._families_hint)
        self.family_view.setModel(self.family_filter)
        self.family_view.setUniformRowHeights(True)
        self.family_view.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # calls differ at the end (_1, _2)
        header = self.family_view.header()  # names take the room left by the counts, so Review stays visible
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)  # fitted per model (_fit_counts)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(2, 100)  # "3 spec · 6 open"; the whole words in the tooltip
        self.family_view.selectionModel().currentChanged.connect(self._family_selected)
        self.module_view = HintedTreeView(self._modules_hint)
        self.module_view.setUniformRowHeights(True)
        self.module_view.setTextElideMode(Qt.TextElideMode.ElideMiddle)

        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.filter_box)
        self.trees = QTabWidget()
        self.review_panel = ReviewPanel()
        self.review_panel.jump.connect(self.reviewing.jump_to)
        self.search_panel = SearchPanel()
        self.search_panel.jump.connect(self.jump_to_hit)
        self.trees.addTab(self.family_view, "Functions")
        self.trees.addTab(self.module_view, "Modules")
        self.trees.addTab(self.review_panel, "Review")
        self.trees.addTab(self.search_panel, "Search")
        lay.addWidget(self.trees)

        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.details.anchorClicked.connect(self.nodes.link_clicked)
        self.details.setHtml(_welcome())
        self.signature = SignaturePanel()
        self.signature.value_clicked.connect(self.reviewing.set_target)
        self.right = QTabWidget()
        self.right.addTab(self.signature, "Signature")
        self.right.addTab(self.details, "Details")
        self.right.setCurrentWidget(self.details)
        self.review_bar = ReviewBar()
        self.review_bar.review_requested.connect(self.reviewing.set_review)
        right_box = QWidget()
        right_lay = QVBoxLayout(right_box)
        right_lay.setContentsMargins(0, 0, 0, 0)
        right_lay.addWidget(self.right, 1)
        right_lay.addWidget(self.review_bar)
        self.center = GraphPanel()
        self.center.node_selected.connect(self.nodes.graph_node_selected)
        self.center.view_shown.connect(self._view_shown)
        self.split = QSplitter()
        self.split.addWidget(left)
        self.split.addWidget(self.center)
        self.split.addWidget(right_box)
        self.split.setSizes([400, 520, 560])
        self.setCentralWidget(self.split)
        self.analyses: Analyses | None = None
        self.reviews: ReviewStore | None = None
        self._compare_windows: list[CompareWindow] = []  # kept referenced while open

        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.counts = ElidedLabel(mode=Qt.TextElideMode.ElideRight, min_chars=20)
        self.statusBar().addPermanentWidget(self.counts)
        self.statusBar().addPermanentWidget(self.progress)
        self.recent = build_file_menu(self)
        self.recent_menu = self.recent.menu

    def recent_files(self) -> list[str]:
        return self.recent.paths()

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", "", FILE_FILTER)
        if path:
            self.open_path(path)

    # loading ---------------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Load and index ``path`` on a worker thread; the window stays responsive meanwhile."""
        p = Path(path)
        self.statusBar().showMessage(f"Opening {p.name}…")
        self.center.drop_pending()  # a graph of the previous model still being laid out is not shown any more
        self.progress.show()
        self.jobs.run(lambda: _open_for_display(p), self._loaded, lambda reason: self._failed(p, reason))

    def _loaded(self, opened: Opened) -> None:
        self.progress.setVisible(bool(self.jobs))
        replacing = self.index is not None
        self.reset_model_state()
        self.set_index(opened.index, opened.tree, opened.totals)
        if replacing:
            release_model(opened.index.facts.total_nodes)
        self.reviews = opened.reviews
        self.nodes.values = opened.values
        self.search_panel.set_index(opened.search)
        if opened.review_error:
            self.statusBar().showMessage(f"Reviews disabled: {opened.review_error}")
            self.review_bar.setEnabled(False)
        else:
            self.review_bar.setEnabled(True)
            self.reviewing.listing_pending = True
        self.recent.remember(opened.index.path)
        self.model_loaded.emit(opened.index)

    def _failed(self, path: Path, reason: str) -> None:
        self.progress.setVisible(bool(self.jobs))
        self.statusBar().showMessage(f"Could not open {path.name}", 5000)
        self.load_failed.emit(reason)
        if QApplication.platformName() != "offscreen":
            show_message(self, QMessageBox.Icon.Critical, "Could not open model", reason)

    def reset_model_state(self) -> None:
        """Forget everything that belonged to the previous model: review target, search, filter, selection,
        graph history, node details. Called before another model is shown."""
        self.reviews = None
        self.reviewing.reset()
        self.bodies.reset()
        self.nodes.shown = None
        self.filter_box.set_now("")
        self.search_panel.set_index(None)
        self.search_panel.box.clear()
        self.family_view.clearSelection()
        self.trees.setCurrentWidget(self.family_view)

    def set_index(self, index: ModelIndex, tree: FamilyTree | None = None,
                  totals: dict[int, int] | None = None) -> None:
        """Show ``index``; ``tree`` holds the functions tree's rows and ``totals`` the modules' node counts, both
        worked out off the GUI thread (here when not given). Nothing here walks every node or call."""
        self.index = index
        self.analyses = Analyses(index)
        self.signature.clear()
        self.bodies.selection = None
        self.center.set_index(index)
        self.families.set_tree(tree or FamilyTree(index))
        self.family_view.expandToDepth(0)  # families show their overloads; calls are rows only once expanded
        self._fit_counts()
        modules = ModuleModel(index.provenance.module_root if index.provenance.has_provenance else None, totals)
        self.module_view.setModel(modules)
        self.module_view.expand(modules.index(0, 0))
        self.module_view.setColumnWidth(0, 220)
        self.module_view.selectionModel().currentChanged.connect(lambda cur, _prev: self.show_object(object_of(cur)))
        self.setWindowTitle(f"{index.path.name} — ONNX Inspector")
        f = index.facts
        self.counts.set_full_text(f"{plural(f.total_nodes, 'node')} · {plural(f.function_count, 'function')} · "
                                  f"{plural(len(index.provenance.calls), 'aten call')} · "
                                  f"{plural(len(index.findings), 'finding')}")
        self.statusBar().showMessage(f"Opened {index.path}", 5000)
        self.details.setHtml(details.model_overview(index))

    def _families_hint(self) -> str:
        """Why the functions tree has no rows."""
        if self.index is None:
            return "Open a model (File › Open, or drop a file here) to see its local functions and aten calls."
        if self.family_filter.text:
            return f"No function, overload or aten call matches “{self.family_filter.text}”."
        if self.index.provenance.has_provenance:
            return "No local functions or aten calls in this model."
        return ("No local functions or aten calls: this model carries no pkg.torch.onnx metadata (a TorchScript "
                "export, or one whose metadata was removed), so its nodes cannot be grouped by the aten call they "
                "came from. The graph, node details, search and diff work as usual.")

    def _modules_hint(self) -> str:
        """Why the modules tree has no rows."""
        if self.index is None:
            return "Open a model to see the PyTorch modules its nodes came from."
        return ("No module tree: this model carries no pkg.torch.onnx metadata, which names the module each node "
                "came from (a TorchScript export, or one whose metadata was removed).")

    def _fit_counts(self) -> None:
        """Size the Calls column to its widest text: a family's count, or a call's node count. Qt's
        ResizeToContents measured every shown row again on each change (4x the work of expanding 500 calls)."""
        model, metrics = self.families, self.family_view.fontMetrics()
        texts = ["Calls", *(["99 nodes"] if self.index is not None and self.index.provenance.calls else []),
                 *(model.index(r, 1).data() for r in range(model.rowCount()))]
        self.family_view.header().resizeSection(1, max(metrics.horizontalAdvance(t) for t in texts) + 16)

    def select_in_tree(self, member: TreeObject) -> bool:
        """Select the tree row of an AtenCall, a FunctionKey's overload, a Family or an Overload (a call's row is
        made if it has none yet)."""
        target = member
        if isinstance(member, FunctionKey) and self.index is not None:
            target = next((o for fam in self.index.families for o in fam.overloads if o.function == member), None)
        src = self.families.index_of(target)
        if not src.isValid():
            return False
        proxy = self.family_filter.mapFromSource(src)
        if not proxy.isValid():
            self.filter_box.set_now("")
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
        # once a closed window is deleted, its wrapper goes too, and with it both models (no cycle holds them)
        window.destroyed.connect(lambda: QTimer.singleShot(0, self._forget_closed_compares))
        self._compare_windows = [w for w in self._compare_windows if w.isVisible()] + [window]
        window.show()
        window.open_pair(self.index, other)  # this model as shown: not read from its file again
        return window

    def _forget_closed_compares(self) -> None:
        self._compare_windows = [w for w in self._compare_windows if shiboken6.isValid(w)]

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
                write_report(text, fmt, path)
            except (OSError, InspectorError) as e:
                self.statusBar().showMessage(f"Report not written: {e}")
                return
            self.statusBar().showMessage(f"Wrote {path}", 5000)
            self.report_exported.emit(path)

        def failed(reason: str) -> None:
            self.statusBar().showMessage(f"Report not written: {reason}")

        self.jobs.run(lambda: render_report(index, reviews, fmt), done, failed)

    # search ----------------------------------------------------------------------------------------------
    def start_search(self) -> None:
        self.trees.setCurrentWidget(self.search_panel)
        self.search_panel.focus()

    def jump_to_hit(self, hit: Hit) -> None:
        if self.index is None:
            return
        if isinstance(hit.ref, (AtenCall, FunctionKey)) and self.select_in_tree(hit.ref):
            self.search_panel.box.setFocus()
            return
        if hit.kind == "module":
            self.show_object(module_node(self.index, str(hit.ref)))
            return
        if hit.kind in NODE_KINDS and hit.scope is not None and hit.path:  # name, op, stack trace, metadata
            self.show_node(hit.scope, hit.path, hit.where)
            self.nodes.reveal(hit.scope, hit.path, self.search_panel.owner(hit))

    def show_node(self, scope: GraphScope, path: tuple[Any, ...], where: str) -> None:
        """Node details (attributes, types, metadata, operator docs, tensors) in the Details tab."""
        self.nodes.show(scope, path, where)

    def _family_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self.filter_box.filtering:  # rows came and went under the filter: not a choice of the user
            return
        self.show_object(current.siblingAtColumn(0).data(FamilyModel.ObjectRole))

    def show_object(self, obj: TreeObject) -> None:
        if self.index is None:
            return
        self.details.setHtml(details.describe(self.index, obj, self.module_total))
        self.bodies.show(obj)
        self.center.show_tree_object(obj)

    def module_total(self, node: ModuleNode) -> int:
        """Nodes in a module and its submodules, as the modules tree counted them (off the GUI thread)."""
        model = self.module_view.model()
        return model.total(node) if isinstance(model, ModuleModel) else node.total_nodes()

    def _view_shown(self, _view: Any) -> None:
        self.bodies.mark_graph()
        if self.reviewing.listing_pending:
            self.reviewing.listing_pending = False
            self.reviewing.list_all()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close at once: jobs not started yet are dropped, running ones report to no one (the app waits for
        them after its last window, so Python never tears down under a worker)."""
        for jobs in (self.jobs, self.filter_box.jobs):
            jobs.cancel()
        self.center.drop_pending()  # a layout still running (or waiting for a paint) is never shown
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
    values: GraphValues
    tree: FamilyTree  # the functions tree's rows
    totals: dict[int, int]  # nodes per module (module_totals)


def _open_for_display(path: Path) -> Opened:
    """Index a model and prepare, still off the GUI thread, what the window shows first."""
    index = build_index(load_model(path, progress=checkpoint))  # a large file in pieces (worker.checkpoint)
    index.parameters()
    totals = module_totals(index.provenance.module_root)
    torchlib_version()  # parses the torchlib catalogue here, not on the GUI thread at the first selection
    SchemaCatalogue.default()  # and the aten schemas (60 ms), which the family analyses read
    tree = FamilyTree(index)
    search = SearchIndex(index)  # its tables are built by the first search, on the search's worker (0.16 s at 100k)
    reviews: ReviewStore | None = ReviewStore(index.path)
    error = ""
    try:
        reviews.load()  # type: ignore[union-attr]
    except InspectorError as e:  # a sidecar we cannot read is left untouched, and reviewing is disabled
        reviews, error = None, str(e)
    return Opened(index, reviews, error, search, graph_values(index.proto.graph), tree, totals)


def render_report(index: ModelIndex, reviews: ReviewStore | None, fmt: str) -> str:
    """Report text (HTML for PDF, which Qt prints on the GUI thread)."""
    from inspector.report.data import build_report

    return render_text(build_report(index, reviews, graphs=fmt in ("html", "pdf"), dot=run_dot_elsewhere), fmt)


def _welcome() -> str:
    return ("<h2>ONNX Inspector</h2><p>Open a model with <b>File → Open</b> (Ctrl+O) or drop a file here.</p>"
            "<p>Functions and their overloads, aten calls of flat dynamo exports and the module hierarchy "
            "appear on the left; details and aten signatures appear here.</p>")
