"""Start the desktop app (imported only when the app is opened)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QApplication, QMainWindow

from inspector.core.util.errors import InspectorError
from inspector.gui import dot_process
from inspector.gui.binding import check_binding
from inspector.gui.compare import CompareWindow
from inspector.gui.main_window import MainWindow
from inspector.gui.theme import apply_theme


def run(paths: Sequence[str]) -> int:
    _check_display()
    check_binding()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("ONNX Inspector")
    app.setOrganizationName("onnx-inspector")
    apply_theme(app)
    window: QMainWindow
    if len(paths) >= 2:  # onnx-inspector A B: side by side
        compare = CompareWindow()
        compare.show()
        compare.open_pair(paths[0], paths[1])
        window = compare
    else:
        main = MainWindow()
        main.show_as_before()
        if paths:
            main.open_path(paths[0])
        window = main
    window.raise_()
    code = int(app.exec())
    QThreadPool.globalInstance().waitForDone(10000)  # let running jobs finish before Python tears down
    dot_process.shut_down()
    return code


def _check_display() -> None:
    """Qt aborts the process when it cannot reach a display; say so in one line instead."""
    if sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM"):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            raise InspectorError("no display (DISPLAY/WAYLAND_DISPLAY unset); run under a desktop session or "
                                 "xvfb-run, or set QT_QPA_PLATFORM=offscreen")
