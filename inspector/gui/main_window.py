"""The main window: functions and module trees on the left, details on the right; loads off the GUI thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QSettings, QThreadPool, Signal
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

from inspector.core.index import ModelIndex, open_index
from inspector.core.torchlib import torchlib_functions
from inspector.gui import details
from inspector.gui.analysis import Analyses, Selection
from inspector.gui.family_model import FamilyFilter, FamilyModel
from inspector.gui.module_model import module_model, object_of
from inspector.gui.signature_panel import SignaturePanel
from inspector.gui.worker import Job, start

MAX_RECENT = 10
FILE_FILTER = "ONNX models (*.onnx *.onnxtxt *.onnxtext *.txt);;All files (*)"


class MainWindow(QMainWindow):
    model_loaded = Signal(object)
    load_failed = Signal(str)
    selection_shown = Signal(object)

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("onnx-inspector", "onnx-inspector")
        self.index: ModelIndex | None = None
        self._jobs: list[Job] = []
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
        self.trees.addTab(self.family_view, "Functions")
        self.trees.addTab(self.module_view, "Modules")
        lay.addWidget(self.trees)

        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.details.setHtml(_welcome())
        self.signature = SignaturePanel()
        self.right = QTabWidget()
        self.right.addTab(self.signature, "Signature")
        self.right.addTab(self.details, "Details")
        self.right.setCurrentWidget(self.details)
        self.center = QWidget()
        self.center_layout = QVBoxLayout(self.center)
        self.center_layout.setContentsMargins(0, 0, 0, 0)
        self.split = QSplitter()
        self.split.addWidget(left)
        self.split.addWidget(self.center)
        self.split.addWidget(self.right)
        self.split.setSizes([360, 560, 560])
        self.setCentralWidget(self.split)
        self.analyses: Analyses | None = None
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
        job = Job(lambda: _open_for_display(p))
        job.signals.finished.connect(lambda index, job=job: self._loaded(job, index))
        job.signals.failed.connect(lambda reason, job=job: self._failed(job, p, reason))
        self._jobs.append(job)
        start(job)

    def _loaded(self, job: Job, index: ModelIndex) -> None:
        self._jobs.remove(job)
        self.progress.setVisible(bool(self._jobs))
        self.set_index(index)
        self._remember(index.path)
        self.model_loaded.emit(index)

    def _failed(self, job: Job, path: Path, reason: str) -> None:
        self._jobs.remove(job)
        self.progress.setVisible(bool(self._jobs))
        self.statusBar().showMessage(f"Could not open {path.name}", 5000)
        self.load_failed.emit(reason)
        if QApplication.platformName() != "offscreen":
            QMessageBox.critical(self, "Could not open model", reason)

    def set_index(self, index: ModelIndex) -> None:
        self.index = index
        self.analyses = Analyses(index)
        self.signature.clear()
        self.families.set_index(index)
        self.families.add_call_sites(index)
        self.family_view.expandToDepth(0)
        self.family_view.resizeColumnToContents(0)
        modules = module_model(index.provenance.module_root)
        self.module_view.setModel(modules)
        self.module_view.expandToDepth(1)
        self.module_view.resizeColumnToContents(0)
        self.module_view.selectionModel().currentChanged.connect(
            lambda cur, _prev: self.show_object(object_of(modules.itemFromIndex(cur.siblingAtColumn(0)))))
        self.setWindowTitle(f"{index.path.name} — ONNX Inspector")
        f = index.facts
        self.counts.setText(f"{f.total_nodes:,} nodes · {f.function_count} functions · "
                            f"{len(index.provenance.calls):,} aten calls · {len(index.findings)} findings")
        self.statusBar().showMessage(f"Opened {index.path}", 5000)
        self.details.setHtml(details.model_overview(index))

    def _family_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.show_object(current.siblingAtColumn(0).data(FamilyModel.ObjectRole))

    def show_object(self, obj: Any) -> None:
        if self.index is None:
            return
        self.details.setHtml(details.describe(self.index, obj))
        self._show_signature(obj)

    def _show_signature(self, obj: Any) -> None:
        """Analyse the selected family off the GUI thread, then show its body; stale results are dropped."""
        analyses = self.analyses
        if analyses is None:
            return
        self._selection_token += 1
        token = self._selection_token
        job = Job(lambda: analyses.selection(obj))

        def done(selection: Selection | None, job: Job = job) -> None:
            self._jobs.remove(job)
            if token != self._selection_token:
                return
            if selection is None:
                self.signature.clear("No ONNX body for this item.")
                return
            self.signature.show_body(selection.title, selection.analysis, selection.signature, selection.family_note)
            self.right.setCurrentWidget(self.signature)
            self.selection_shown.emit(selection)
            if selection.target:
                self._show_torchlib(selection.target)

        def failed(reason: str, job: Job = job) -> None:
            self._jobs.remove(job)
            self.signature.clear(reason)

        job.signals.finished.connect(done)
        job.signals.failed.connect(failed)
        self._jobs.append(job)
        start(job)

    def _show_torchlib(self, target: str) -> None:
        if target in self._torchlib_cache:
            self.signature.show_source(target, self._torchlib_cache[target])
            return
        job = Job(lambda: torchlib_functions(target))

        def done(functions: Any, job: Job = job) -> None:
            self._jobs.remove(job)
            self._torchlib_cache[target] = functions
            self.signature.show_source(target, functions)

        job.signals.finished.connect(done)
        job.signals.failed.connect(lambda _r, job=job: self._jobs.remove(job))
        self._jobs.append(job)
        start(job)

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


def _open_for_display(path: Path) -> ModelIndex:
    """Index a model and compute, still off the GUI thread, what the overview shows first."""
    index = open_index(path)
    index.parameters()
    return index


def _welcome() -> str:
    return ("<h2>ONNX Inspector</h2><p>Open a model with <b>File → Open</b> (Ctrl+O) or drop a file here.</p>"
            "<p>Functions and their overloads, aten calls of flat dynamo exports and the module hierarchy "
            "appear on the left; details and aten signatures appear here.</p>")
