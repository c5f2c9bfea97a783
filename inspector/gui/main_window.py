"""The main window: the trees on the left, the graph in the centre, the Signature and Details tabs with the review
bar on the right, all following one session (``gui.session``: the model, what is shown, the review target). The
window builds the widgets and connects them to the session; it keeps no state of the model itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from inspector.core.model.calls import AtenCall
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey, GraphScope
from inspector.core.review.store import ReviewStore
from inspector.core.search import NODE_KINDS, Hit
from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import check_output
from inspector.core.util.textsafe import one_line
from inspector.core.util.units import plural
from inspector.gui import details
from inspector.gui.analysis import TreeObject
from inspector.gui.body_view import BodyView
from inspector.gui.compare import CompareWindow
from inspector.gui.dialogs import output_path, show_message
from inspector.gui.dot_process import run_dot_elsewhere
from inspector.gui.graph_panel import GraphPanel
from inspector.gui.menus import FILE_FILTER, FileActions, build_file_menu
from inspector.gui.nodes import NodeView, module_node
from inspector.gui.overload_compare import FamilyCompare
from inspector.gui.review_panel import ReviewBar, ReviewItem
from inspector.gui.session import Session
from inspector.gui.signature_panel import SignaturePanel
from inspector.gui.text import Rich, rich, tag
from inspector.gui.trees import Trees
from inspector.gui.widgets import ElidedLabel, fit_to_screen
from inspector.gui.worker import Jobs
from inspector.pdf import write_report
from inspector.report.render import SUFFIXES as REPORT_SUFFIXES
from inspector.report.render import render_text

MAXIMISED = "window/maximised"  # settings key: the main window was maximised when last closed


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
        self.session = session = Session()
        self.setWindowTitle("ONNX Inspector")
        self.setAcceptDrops(True)
        fit_to_screen(self, 1280, 800)
        self.left = Trees(session)
        self.trees, self.filter_box, self.search_panel = self.left.tabs, self.left.filter_box, self.left.search_panel
        self.families, self.family_filter, self.family_view = (self.left.families, self.left.family_filter,
                                                               self.left.family_view)
        self.module_view, self.review_panel = self.left.module_view, self.left.review_panel
        self.center = GraphPanel()
        self.split = QSplitter()
        self.split.addWidget(self.left)
        self.split.addWidget(self.center)
        self.split.addWidget(self._build_right())
        self.split.setSizes([480, 460, 540])  # the trees keep a third: ~330 px at 1024 wide
        self.setCentralWidget(self.split)
        self.nodes = NodeView(session, self.details, self.right, self.center, self.left.module_total,
                              self.left.module_calls)
        self.bodies = BodyView(session, self.signature, self.right, self.center)
        self.signature.call_requested.connect(self.select_in_tree)  # (another body of the target: its first call)
        self.family_compare = FamilyCompare(session, self.family_view, self)
        self._compare_windows: list[CompareWindow] = []  # kept referenced while open
        self._opening = Path()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.counts = ElidedLabel(mode=Qt.TextElideMode.ElideRight, min_chars=20)
        self.statusBar().addPermanentWidget(self.counts)
        self.statusBar().addPermanentWidget(self.progress)
        self.recent = build_file_menu(self.menuBar(), self.settings, FileActions(
            self.choose_file, self.open_path, self.compare_with, self.family_compare.compare_selected,
            self.export_report, self.start_search, self.quit))
        self.recent_menu = self.recent.menu
        self._connect()

    def _build_right(self) -> QWidget:
        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.details.setHtml(_welcome())
        self.signature = SignaturePanel()
        self.right = QTabWidget()
        self.right.addTab(self.signature, "Signature")
        self.right.addTab(self.details, "Details")
        self.right.setCurrentWidget(self.details)
        self.review_bar = ReviewBar()
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.right, 1)
        lay.addWidget(self.review_bar)
        return box

    def _connect(self) -> None:
        """Widgets tell the session what the user did; the session's signals update the widgets."""
        s = self.session
        self.left.chosen.connect(self.show_object)
        self.review_panel.jump.connect(self.jump_to_review)
        self.search_panel.jump.connect(self.jump_to_hit)
        self.review_bar.review_requested.connect(s.set_review)
        self.review_bar.next_requested.connect(self._next_unreviewed)
        self.center.view_requested.connect(lambda view: s.follow_view(view.scope))
        self.center.node_selected.connect(s.pick)
        self.center.node_selected.connect(self.nodes.graph_node_selected)
        self.center.box_unselected.connect(lambda scope: s.pick(scope, None))
        self.center.view_shown.connect(self._view_shown)
        s.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        s.model_loaded.connect(self._loaded)
        s.load_failed.connect(self._failed)
        s.target_changed.connect(self._target_changed)
        s.selection_shown.connect(self.selection_shown)
        s.review_saved.connect(self.review_saved)
        s.reviews_listed.connect(self._listed)
        s.review_failed.connect(lambda reason: None if QApplication.platformName() == "offscreen" else show_message(
            self, QMessageBox.Icon.Warning, "Review not saved", reason))

    @property
    def index(self) -> ModelIndex | None:
        return self.session.index

    @property
    def reviews(self) -> ReviewStore | None:
        return self.session.reviews

    @property
    def jobs(self) -> Jobs:
        return self.session.jobs

    def recent_files(self) -> list[str]:
        return self.recent.paths()

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", "", FILE_FILTER)
        if path:
            self.open_path(path)

    # loading ---------------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Load and index ``path`` on a worker thread; the window stays responsive meanwhile."""
        self._opening = Path(path)
        self.center.drop_pending()  # a graph of the previous model still being laid out is not shown any more
        self.progress.show()
        self.session.open_path(path)

    def _loaded(self, index: ModelIndex) -> None:
        self.progress.setVisible(bool(self.session.jobs))
        self.center.set_index(index)
        self.setWindowTitle(f"{index.path.name} — ONNX Inspector")
        f = index.facts
        self.counts.set_full_text(f"{plural(f.total_nodes, 'node')} · {plural(f.function_count, 'function')} · "
                                  f"{plural(len(index.provenance.calls), 'aten call')} · "
                                  f"{plural(len(index.findings), 'finding')}")
        self.statusBar().showMessage(f"Opened {index.path}", 5000)
        self.details.setHtml(details.model_overview(index))
        if self.session.review_error:
            self.statusBar().showMessage(f"Reviews disabled: {self.session.review_error}")
        self.review_bar.setEnabled(self.session.reviews is not None)
        self.recent.remember(index.path)
        self.model_loaded.emit(index)

    def _failed(self, reason: str) -> None:
        self.progress.setVisible(bool(self.session.jobs))
        self.statusBar().showMessage(f"Could not open {self._opening.name}", 5000)
        self.load_failed.emit(reason)
        if QApplication.platformName() != "offscreen":
            show_message(self, QMessageBox.Icon.Critical, "Could not open model", reason)

    def _listed(self, n: int) -> None:
        self.progress.setVisible(bool(self.session.jobs))
        self.reviews_listed.emit(n)

    def _target_changed(self) -> None:
        s, target = self.session, self.session.target
        self.review_bar.set_target(s.target_text() if target is not None else None, s.target_review(),
                                   why=s.target_text(), value=target is not None and target.item.key.kind == "value")

    def select_in_tree(self, member: TreeObject) -> bool:
        """Select the tree row of an AtenCall, a FunctionKey's overload, a Family or an Overload (a call's row is
        made if it has none yet), and show it."""
        return self.left.select(member)

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
        window.destroyed.connect(lambda: QTimer.singleShot(0, self, self._forget_closed_compares))
        self._compare_windows = [w for w in self._compare_windows if shiboken6.isValid(w)] + [window]
        window.show()
        window.open_pair(self.index, other)  # this model as shown: not read from its file again
        return window

    def _forget_closed_compares(self) -> None:
        self._compare_windows = [w for w in self._compare_windows if shiboken6.isValid(w)]

    def quit(self) -> None:
        """File > Quit: close the windows this one opened (model and overload comparisons), then this one. Quit used
        to close only the main window: an open comparison kept the app running with no main window to come back to
        (seen under Xvfb)."""
        for window in [*self._compare_windows, *self.family_compare.windows]:
            if shiboken6.isValid(window):
                window.close()
        self.close()

    # reports ---------------------------------------------------------------------------------------------
    def export_report(self) -> None:
        if self.index is None:
            return
        suggested = str(self.index.path.with_name(self.index.path.stem + ".report.html"))
        path = output_path(self, "Export report", suggested,
                           "HTML (*.html);;Markdown (*.md);;JSON (*.json);;PDF (*.pdf)", self.index.protected_files(),
                           "the report")
        if path is not None:
            self.export_report_to(path)

    def export_report_to(self, path: Path) -> None:
        """The same report as ``onnx-inspector report``, with the reviews made in this window."""
        index, reviews = self.index, self.session.reviews
        if index is None:
            return
        fmt = REPORT_SUFFIXES.get(path.suffix.lower(), "html")
        try:
            check_output(path, index.protected_files(), "the report")
        except InspectorError as e:
            self.statusBar().showMessage(one_line(str(e), 200))
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

        self.session.jobs.run(lambda: render_report(index, reviews, fmt), done, failed)

    # moving ----------------------------------------------------------------------------------------------
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

    def _next_unreviewed(self) -> None:
        target = self.session.target
        missing = self.review_panel.jump_next(target.item.key if target is not None else None)
        if missing:
            self.statusBar().showMessage(missing if self.index is not None else "Open a model to review it", 4000)

    def jump_to_review(self, item: ReviewItem) -> None:
        """Show the body of a Review list item (its row selected in the tree) and target the item itself."""
        body = item.body
        if body is None or not body.members:
            return
        self.session.jump_to_review(item)
        self.center.show_tree_object(body.members[0])

    def show_node(self, scope: GraphScope, path: tuple[Any, ...], where: str) -> None:
        """Node details (attributes, types, metadata, operator docs, tensors) in the Details tab."""
        self.nodes.show(scope, path, where)

    def show_object(self, obj: TreeObject) -> None:
        """A tree row chosen: its details, its body (Signature tab) and its graph."""
        if self.index is None:
            return
        self.details.setHtml(details.describe(self.index, obj, self.left.module_total, self.left.module_calls))
        self.session.show_object(obj)
        self.center.show_tree_object(obj)

    def _view_shown(self, _view: Any) -> None:
        self.bodies.mark_graph()
        if self.session.listing_pending:
            self.session.list_reviews()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close at once: jobs not started yet are dropped, running ones report to no one (the app waits for
        them after its last window, so Python never tears down under a worker)."""
        for jobs in (self.session.jobs, self.filter_box.jobs):
            jobs.cancel()
        self.center.drop_pending()  # a layout still running (or waiting for a paint) is never shown
        self.settings.setValue(MAXIMISED, self.isMaximized())
        self.settings.sync()
        super().closeEvent(event)

    def show_as_before(self) -> None:
        """Show the window maximised when it was maximised as it was last closed, else at its fitted size."""
        if self.settings.value(MAXIMISED, False, type=bool):
            self.showMaximized()
        else:
            self.show()

    # drag and drop ---------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_path(urls[0].toLocalFile())
            event.acceptProposedAction()


def render_report(index: ModelIndex, reviews: ReviewStore | None, fmt: str) -> str:
    """Report text (HTML for PDF, which Qt prints on the GUI thread)."""
    from inspector.report.build import build_report

    return render_text(build_report(index, reviews, graphs=fmt in ("html", "pdf"), dot=run_dot_elsewhere), fmt)


def _welcome() -> Rich:
    return rich(tag("h2", "ONNX Inspector"),
                tag("p", "Open a model with ", tag("b", "File → Open"), " (Ctrl+O) or drop a file here."),
                tag("p", "Functions and their overloads, aten calls of flat dynamo exports and the module hierarchy "
                         "appear on the left; details and aten signatures appear here."))
