"""Run long core work (load, index, analysis, layout) off the GUI thread and report back through signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from inspector.core.errors import InspectorError


class _Box:
    """Results travel boxed: a bare None through a Signal(object) is best avoided with PySide."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Signals(QObject):
    finished = Signal(object)
    failed = Signal(str)


class _Relay:
    """``job.signals.finished.connect(fn)`` calls ``fn(result)`` with the unboxed result."""

    def __init__(self, signal: Any) -> None:
        self._signal = signal

    def connect(self, fn: Callable[[Any], None]) -> None:
        self._signal.connect(lambda box: fn(box.value))


class JobSignals:
    def __init__(self) -> None:
        self.qt = _Signals()
        self.finished = _Relay(self.qt.finished)
        self.failed = self.qt.failed


class Job(QRunnable):
    """A callable run on the global thread pool; emits ``finished(result)`` or ``failed(one-line reason)``.

    The pool deletes the runnable after run() returns; results reach the GUI thread as queued signals.
    """

    def __init__(self, fn: Callable[[], Any], priority: int = 0) -> None:
        super().__init__()
        self.fn = fn
        self.priority = priority
        self.signals = JobSignals()

    def run(self) -> None:
        try:
            result = self.fn()
        except InspectorError as e:
            self.signals.qt.failed.emit(str(e))
        except Exception as e:  # the app must never die on bad input
            self.signals.qt.failed.emit(f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
        else:
            self.signals.qt.finished.emit(_Box(result))


def start(job: Job) -> None:
    """Queue ``job``; higher priority runs first (background analysis uses a negative priority)."""
    QThreadPool.globalInstance().start(job, job.priority)
