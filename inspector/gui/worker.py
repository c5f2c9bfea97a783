"""Run long core work (load, index, analysis, layout) off the GUI thread and report back through signals.

The one place where the app's responsiveness is arranged (core is plain Python and knows nothing of it). The GUI
thread and the workers share one GIL. Qt asks Python for every row a view lays out or paints, and each of those
calls takes the GIL again: behind a busy worker, each waits for it. So workers hand the GIL over quickly
(``GIL_SWITCH_S``), the cyclic collector runs on the GUI thread only (``collector.py``, started here), long core
work is driven through its progress checkpoints (``checkpoint``: a large file is parsed in pieces, and a cancelled
job stops), Graphviz runs in a helper process (``dot_process.py``), background work gives way to jobs the user
waits for (``give_way``), and work that would start while the window is about to draw a whole new model starts once
it has been drawn (``after_paint``).
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import shiboken6
from PySide6.QtCore import QEvent, QObject, QRunnable, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QWidget

from inspector.core.util.errors import InspectorError
from inspector.gui.collector import collect_on_gui_thread

T = TypeVar("T")
# How long a thread waiting for the GIL waits before the holder must hand it over. Qt calls into Python once per
# row for a view's layout and painting, and each call waits for the GIL anew: behind a busy worker, Python's
# default of 5 ms per hand-over made the GUI thread's 30 ms of work take 1-2 s (a convoy); at 0.2 ms, the ~1,800
# calls of drawing a 100k-node model's trees still took 150 ms beside a layout job. 10 us: 50-80 ms. Two workers
# running Python side by side lose up to a third of their speed to the extra hand-overs (measured on 2 cores).
GIL_SWITCH_S = 0.00001


class Cancelled(Exception):
    """Raised by ``checkpoint`` in a job that was cancelled: the job stops there (its result would be dropped)."""


def checkpoint(done: int = 0, total: int = 0) -> None:
    """What a job passes as core's progress checkpoint (``load_model(path, progress=checkpoint)``): a cancelled job
    stops here. Core then parses a large file in pieces of 256 KB, and between two pieces the interpreter runs, so
    the GUI thread takes the GIL within ``GIL_SWITCH_S``: one protobuf parse of a whole 167 MB file held it for
    0.7-2.6 s, each piece holds it at most 4 ms."""
    job = getattr(_on_this_thread, "job", None)
    if job is not None and job.cancelled:
        raise Cancelled


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


_interactive_lock = threading.Lock()
_interactive = [0]  # jobs of priority 0 or more running now


_on_this_thread = threading.local()  # .interactive / .background: what the job on this thread is


def on_background_job() -> bool:
    """Whether this thread runs a background job (negative priority) now."""
    return bool(getattr(_on_this_thread, "background", False))


def give_way(most_s: float = 0.5, unless: Callable[[], bool] | None = None) -> None:
    """For long background work (negative priority), between two of its steps: while jobs the user is waiting
    for run, sleep, so that they and the GUI thread have the GIL and the CPUs (on 2 cores, a background analysis
    beside a click's job left the GUI thread waiting 100-200 ms); at most ``most_s`` at a time, and not once
    ``unless()`` is true (the job waited for needs what this work holds). Code shared with jobs the user waits
    for, and with the GUI thread, may call it too: on their threads it returns at once."""
    if getattr(_on_this_thread, "interactive", False) or threading.current_thread() is threading.main_thread():
        return
    end = time.monotonic() + most_s
    while _interactive[0] > 0 and time.monotonic() < end and not (unless is not None and unless()):
        time.sleep(0.005)


_waiting: set[_AfterPaint] = set()  # kept referenced here until they have fired


class _AfterPaint(QObject):
    """Calls ``fn`` once: on the turn after ``widget`` is next painted, or after ``most_ms`` if it is not, and
    never once the widget is gone. Owned by Python, not by the widget, and freed a turn after it fired, never
    inside its own timer's signal (deleting a timer's owner during its timeout crashed PySide 1 run in 4)."""

    def __init__(self, widget: QWidget, fn: Callable[[], None], most_ms: int) -> None:
        super().__init__()
        self._widget = widget
        self._fn: Callable[[], None] | None = fn
        self._timer = QTimer()
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fire)
        self._timer.start(most_ms)
        widget.installEventFilter(self)
        _waiting.add(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._fn is not None:
            self._timer.start(0)  # after the rest of the window is painted too
        return False

    def _fire(self) -> None:
        fn, self._fn = self._fn, None
        if fn is None:
            return
        if shiboken6.isValid(self._widget):
            self._widget.removeEventFilter(self)
            fn()
        QTimer.singleShot(0, lambda: _waiting.discard(self))


def after_paint(widget: QWidget, fn: Callable[[], None], most_ms: int = 250) -> None:
    """Call ``fn`` on the GUI thread once the window of ``widget`` (which must be among what it repaints) has
    been painted, at once if the widget is not shown. For work that would start just as the window draws a new
    model: beside a worker, every row Qt asks the Python models for waits for the GIL (the open of a 100k-node
    model stalled the window 150 ms with the main graph's layout started alongside, 15-30 ms without)."""
    if not widget.isVisible():
        fn()
        return
    _AfterPaint(widget, fn, most_ms)  # keeps itself referenced until it has fired


def _count_interactive(step: int) -> None:
    with _interactive_lock:
        _interactive[0] += step


class Job(QRunnable):
    """A callable run on the global thread pool; emits ``finished(result)`` or ``failed(one-line reason)``.

    The pool deletes the runnable after run() returns; results reach the GUI thread as queued signals.
    """

    def __init__(self, fn: Callable[[], Any], interactive: bool = True) -> None:
        super().__init__()
        self.fn = fn
        self.signals = JobSignals()
        self.cancelled = False  # set by Jobs.cancel: the result is dropped
        self.interactive = interactive  # background work gives way to it (give_way)

    def run(self) -> None:
        if self.cancelled:  # dropped before it started: report at once, run nothing
            self.signals.qt.finished.emit(_Box(None))
            return
        if self.interactive:
            _count_interactive(1)
        _on_this_thread.interactive, _on_this_thread.background = self.interactive, not self.interactive
        _on_this_thread.job = self
        try:
            result = self.fn()
        except Cancelled:  # stopped at a checkpoint: nothing to report but that it ended
            self.signals.qt.finished.emit(_Box(None))
        except InspectorError as e:
            self.signals.qt.failed.emit(str(e))
        except Exception as e:  # the app must never die on bad input
            self.signals.qt.failed.emit(f"internal error: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
        else:
            self.signals.qt.finished.emit(_Box(result))
        finally:
            _on_this_thread.interactive = _on_this_thread.background = False
            _on_this_thread.job = None
            if self.interactive:
                _count_interactive(-1)


def _nothing() -> None:
    return None


def _ended(job: Job) -> Job:
    """A job that has reported lets go of its function and callbacks, on the GUI thread. PySide sometimes keeps
    the wrapper of a finished runnable referenced after the pool deleted it (seen ~1 run in 10 for a layout job
    of a compare window): through its function's closure and the callbacks' (the window), it kept a closed
    window's models alive for good."""
    job.fn = _nothing
    job.signals.qt.finished.disconnect()
    job.signals.qt.failed.disconnect()
    return job


class Jobs:
    """The running jobs of one owner (a window or a panel).

    ``run`` queues a job and keeps a reference to it until it has reported (its signals must outlive the
    queued delivery), then drops it before calling back; ``bool(jobs)`` says whether any is still running.
    """

    def __init__(self) -> None:
        self._running: list[Job] = []

    def __bool__(self) -> bool:
        return bool(self._running)

    def __len__(self) -> int:
        return len(self._running)

    def run(self, fn: Callable[[], T], done: Callable[[T], None], failed: Callable[[str], None] | None = None,
            priority: int = 0) -> Job:
        """Run ``fn`` on the global thread pool, then ``done(result)`` or ``failed(one-line reason)`` on the GUI
        thread (a failure is dropped without ``failed``). Higher priority runs first (background analysis uses
        a negative priority)."""
        if sys.getswitchinterval() > GIL_SWITCH_S:  # once, when workers first run beside the GUI thread
            sys.setswitchinterval(GIL_SWITCH_S)
            # a closed window no longer waits for its jobs: Python must not finalize under a running one
            atexit.register(QThreadPool.globalInstance().waitForDone, 60_000)
        collect_on_gui_thread()
        job = Job(fn, interactive=priority >= 0)
        # the callbacks reach the job through this list, emptied when it reports: no reference cycle is left
        # through the job's signals, so the job and its QObject are freed at once on the GUI thread, never by a
        # garbage collection that happens to run on a worker thread (a segfault)
        holder = [job]

        def finished(result: T) -> None:
            if holder:
                ended = _ended(holder.pop())
                self._running.remove(ended)
                if not ended.cancelled:
                    done(result)

        def fail(reason: str) -> None:
            if holder:
                ended = _ended(holder.pop())
                self._running.remove(ended)
                if failed is not None and not ended.cancelled:
                    failed(reason)

        job.signals.finished.connect(finished)
        job.signals.failed.connect(fail)
        self._running.append(job)
        QThreadPool.globalInstance().start(job, priority)
        return job

    def cancel(self) -> None:
        """Drop every job: no callback of any runs, those not started yet run nothing, and a running one
        finishes on its thread (kept referenced until it reports). Nothing waits here."""
        for job in self._running:
            job.cancelled = True
