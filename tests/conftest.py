"""Shared test helpers: fixture paths and in-memory model builders; GUI tests fail on any Qt warning or Python
exception printed while they run."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
ZOO = FIXTURES.parent / "zoo"  # the committed real exports (tests/zoo/README.md)
SAMPLE = ROOT / "resources" / "samples" / "sample_export.onnx"
# torch's placeholder for an empty nn_module_stack (``_EMPTY_NN_MODULE_STACK_KEY``, torch/_export/passes/
# _node_metadata_hook.py): a node a pass adds with no argument to copy the stack from gets this one "module". The
# truth files record torch's stacks as torch wrote them; read through ``torch_module``, it is no module.
TORCH_EMPTY_MODULE_STACK = "_empty_nn_module_stack_from_metadata_hook"


def torch_module(path: str) -> str:
    """A module path of a truth file as torch means it: its placeholder for no module is the root ("")."""
    return "" if path == TORCH_EMPTY_MODULE_STACK else path


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def window(qtbot: Any, tmp_path: Path) -> Iterator[Any]:
    """A shown main window with its own settings file; its jobs are finished before the next test."""
    from PySide6.QtCore import QSettings, QThreadPool

    from inspector.gui.main_window import MainWindow

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    yield w
    QThreadPool.globalInstance().waitForDone(30000)


def open_copy(qtbot: Any, window: Any, tmp_path: Path, name: str) -> Path:
    """A copy of the zoo's export ``name`` (its sidecar written beside the copy, not in the zoo), opened in ``window``
    and its reviews listed (the last step of opening a model)."""
    model = tmp_path / f"{name}.onnx"
    shutil.copy(ZOO / f"{name}.onnx", model)
    with qtbot.waitSignal(window.reviews_listed, timeout=60000):
        window.open_path(model)
    return model


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use Qt fail on a Qt warning (pytest-qt's capture, raised to WARNING for them). The offscreen
    platform's notice that it cannot resize windows to their hints is about the test platform, not the app."""
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(r"^This plugin does not support propagateSizeHints\(\)$"))


@pytest.fixture(autouse=True)
def no_printed_exceptions(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test when a Python exception escapes to a hook that would only print it: an exception in a Qt
    slot or virtual method (sys.excepthook), in a thread (threading.excepthook) or in a destructor
    (sys.unraisablehook). Jobs still running at the end are waited for, so their exceptions count too."""
    seen: list[str] = []
    old = sys.excepthook, threading.excepthook, sys.unraisablehook

    def on_exception(kind: type[BaseException], value: BaseException, _tb: Any) -> None:
        seen.append(f"{kind.__name__}: {value}")

    def on_thread(args: Any) -> None:
        seen.append(f"{args.exc_type.__name__} in thread: {args.exc_value}")

    def on_unraisable(args: Any) -> None:
        seen.append(f"{args.exc_type.__name__} (unraisable): {args.exc_value}")

    sys.excepthook, threading.excepthook, sys.unraisablehook = on_exception, on_thread, on_unraisable
    try:
        yield
        if "qtbot" in request.fixturenames:
            from PySide6.QtCore import QThreadPool
            from PySide6.QtWidgets import QApplication

            QThreadPool.globalInstance().waitForDone(30000)
            QApplication.processEvents()  # deliver the last results, whose slots may raise
    finally:
        sys.excepthook, threading.excepthook, sys.unraisablehook = old
    if seen:
        pytest.fail("exceptions printed during the test:\n" + "\n".join(seen), pytrace=False)



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that used a main window (or a compare window) reports what the window last said (the graph
    panel's line, the status bar) and what was still running: a wait for a signal that timed out then tells where
    it stopped (a layout never started, still running, failed, or drawn without the signal)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    window = getattr(item, "funcargs", {}).get("window")
    compare = getattr(item, "funcargs", {}).get("compare")
    if report.failed and call.when == "call" and compare is not None and hasattr(compare, "twin"):
        from PySide6.QtCore import QThreadPool

        from inspector.gui import dot_process, worker

        pool = QThreadPool.globalInstance()
        lines = [f"status bar: {compare.statusBar().currentMessage()!r}; window jobs {len(compare.jobs)}; "
                 f"drawn sides still awaited: {compare.twin._waiting}"]
        for name, panel in (("A", compare.side_a), ("B", compare.side_b)):
            lines.append(f"side {name}: {panel.info.full_text()!r}; view {panel.current_view()!r}; layout token "
                         f"{panel._token}; panel jobs {len(panel._jobs)}")
        lines.append(f"pool: {pool.activeThreadCount()} of {pool.maxThreadCount()} threads busy; waiting for a "
                     f"paint: {len(worker._waiting)}; layout helper pid {dot_process.helper_pid()}, busy "
                     f"{dot_process._lock.locked()}")
        report.sections.append(("compare window state", "\n".join(lines)))
    if report.failed and call.when == "call" and window is not None:
        from PySide6.QtCore import QThreadPool

        from inspector.gui import dot_process, worker

        center = window.center
        pool = QThreadPool.globalInstance()
        report.sections.append(("window state", "\n".join([
            f"graph panel: {center.info.full_text()!r}; status bar: {window.statusBar().currentMessage()!r}",
            f"view: {center.current_view()!r}; layout token {center._token}; panel jobs {len(center._jobs)}; "
            f"window jobs {len(window.jobs)}; drawing in steps: {center.graph._drawing is not None}",
            f"pool: {pool.activeThreadCount()} of {pool.maxThreadCount()} threads busy; waiting for a paint: "
            f"{len(worker._waiting)}; layout helper pid {dot_process.helper_pid()}, busy {dot_process._lock.locked()}",
        ])))


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End a run that used Qt with its own exit status, skipping the interpreter's finalization.

    With PySide 6.12 on Python 3.11, a run of the whole suite (every test passed, the summary printed) aborted in
    the final garbage collection with ``Fatal Python error: bool_dealloc`` about one run in two: a reference-count
    error in a C extension while interpreter shutdown tears Qt wrappers down, with no Python frame of ours on the
    stack. The run's verdict is decided by then; the status returned here is pytest's own, so a failed test still
    fails ``make test``."""
    if "PySide6" in sys.modules and _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
