"""The compare window's File menu: export the diff or A's report with the diff (off the GUI thread), close."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QMenuBar, QStatusBar, QWidget

from inspector.core.model.index import ModelIndex
from inspector.core.review.check import load_reviews
from inspector.core.review.store import ReviewStore
from inspector.core.util.errors import InspectorError
from inspector.core.util.paths import check_output, sidecar_path
from inspector.gui.dialogs import output_path
from inspector.gui.dot_process import run_dot_elsewhere
from inspector.gui.menus import add_action
from inspector.gui.worker import Jobs
from inspector.pdf import write_report
from inspector.report.diff_render import DIFF_SUFFIXES, render_diff
from inspector.report.render import SUFFIXES as REPORT_SUFFIXES
from inspector.report.render import render_text


class ExportingWindow(Protocol):
    """What the menu needs of the compare window (``compare.CompareWindow``): its pair, jobs, status bar and
    ``exported`` signal; named by shape, so that this module and the window's do not import each other."""

    pair: Any  # compare.Pair | None: A and B with their diff
    jobs: Jobs

    @property
    def exported(self) -> SignalInstance: ...

    def statusBar(self) -> QStatusBar: ...

    def menuBar(self) -> QMenuBar: ...

    def close(self) -> bool: ...

DIFF_FILTER = "HTML (*.html);;Markdown (*.md);;JSON (*.json);;Text (*.txt)"
REPORT_FILTER = "HTML (*.html);;Markdown (*.md);;JSON (*.json);;PDF (*.pdf)"


def build_compare_menu(window: ExportingWindow) -> None:
    """File: Export Diff (Ctrl+E), Export Report with the diff (Ctrl+Shift+E), Close (Ctrl+W), Quit (Ctrl+Q: every
    window of the app, as from the main window; ``onnx-inspector A B`` opens this window alone, and Ctrl+Q did
    nothing there)."""
    menu = window.menuBar().addMenu("&File")
    add_action(menu, "Export &Diff…", QKeySequence("Ctrl+E"), lambda: _ask(window, "diff"))
    add_action(menu, "Export &Report with the Diff…", QKeySequence("Ctrl+Shift+E"), lambda: _ask(window, "report"))
    menu.addSeparator()
    add_action(menu, "&Close", QKeySequence.StandardKey.Close, window.close)
    add_action(menu, "&Quit", QKeySequence.StandardKey.Quit, QApplication.closeAllWindows)


def _ask(window: ExportingWindow, what: str) -> None:
    pair = window.pair
    if pair is None:
        return
    a, b = pair.a.path, pair.b.path
    suggested = a.with_name(f"{a.stem}-vs-{b.stem}.{'diff' if what == 'diff' else 'report'}.html")
    parent = window if isinstance(window, QWidget) else None
    if parent is None:
        return
    path = output_path(parent, f"Export {what}", str(suggested), DIFF_FILTER if what == "diff" else REPORT_FILTER,
                       [*pair.a.protected_files(), *pair.b.protected_files()], f"the {what}")
    if path is not None:
        export(window, what, path)


def export(window: ExportingWindow, what: str, path: Path) -> None:
    """Write the diff (``what="diff"``) or A's report with the diff; the format follows the suffix."""
    pair = window.pair
    if pair is None:
        return
    status = window.statusBar()
    try:
        check_output(path, [*pair.a.protected_files(), *pair.b.protected_files()], f"the {what}")
    except InspectorError as e:
        status.showMessage(f"Not written: {e}")
        return
    if what == "diff":
        fmt = DIFF_SUFFIXES.get(path.suffix.lower(), "html")

        def work() -> str:
            return render_diff(pair.diff, fmt)
    else:
        fmt = REPORT_SUFFIXES.get(path.suffix.lower(), "html")

        def work() -> str:
            from inspector.report.build import build_report

            return render_text(build_report(pair.a, _reviews_of(pair.a), compare=pair.diff,
                                            graphs=fmt in ("html", "pdf"), dot=run_dot_elsewhere), fmt)

    def done(text: str) -> None:
        try:
            write_report(text, fmt, path)
        except (OSError, InspectorError) as e:
            status.showMessage(f"Not written: {e}")
            return
        status.showMessage(f"Wrote {path}", 5000)
        window.exported.emit(path)

    status.showMessage(f"Writing {path.name}…")
    window.jobs.run(work, done, lambda reason: status.showMessage(f"Not written: {reason}"))


def _reviews_of(index: ModelIndex) -> ReviewStore | None:
    """A's reviews, as ``onnx-inspector report A --compare B`` reads them: its sidecar, read only (the report said
    "No review file was used" beside a sidecar holding a suspicious value); none when there is no sidecar, or it
    cannot be read (the report then says so, as for a model without one)."""
    if index.path is None or not os.path.lexists(sidecar_path(index.path)):
        return None
    try:
        return load_reviews(index.path, None)
    except InspectorError:
        return None
