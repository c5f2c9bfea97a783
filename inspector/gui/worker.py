"""Run long core work (load + index) off the GUI thread and report back through signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from inspector.core.errors import InspectorError


class _Signals(QObject):
    finished = Signal(object)
    failed = Signal(str)


class Job(QRunnable):
    """A callable run on the global thread pool; emits ``finished(result)`` or ``failed(one-line reason)``."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self.fn = fn
        # The pool deletes the runnable after run() returns; results reach the GUI thread as queued signals.
        self.signals = _Signals()

    def run(self) -> None:
        try:
            result = self.fn()
        except InspectorError as e:
            self.signals.failed.emit(str(e))
        except Exception as e:  # the app must never die on bad input
            self.signals.failed.emit(f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
        else:
            self.signals.finished.emit(result)


def start(job: Job) -> None:
    QThreadPool.globalInstance().start(job)
