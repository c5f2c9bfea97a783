"""Background jobs: results and one-line failures come back on the GUI thread; a job is kept until it reports."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from inspector.core.util.errors import InspectorError
from inspector.gui.worker import Jobs


def _raise(exc: Exception) -> None:
    raise exc


def test_result_reaches_done_and_the_job_is_dropped(qtbot):
    jobs, got = Jobs(), []
    jobs.run(lambda: None, got.append, lambda r: got.append(("failed", r)))
    assert jobs and len(jobs) == 1  # referenced until it reports
    qtbot.waitUntil(lambda: got == [None], timeout=5000)  # a bare None travels boxed
    assert not jobs


@pytest.mark.parametrize(("exc", "reason"), [
    (InspectorError("bad model"), "bad model"),
    (ValueError("x\n  y"), "internal error: ValueError: x y"),
])
def test_failure_reaches_failed_as_one_line(qtbot, exc: Exception, reason: str):
    jobs, got = Jobs(), []
    jobs.run(lambda: _raise(exc), lambda r: got.append(("done", r)), got.append)
    qtbot.waitUntil(lambda: got == [reason], timeout=5000)
    assert not jobs


def test_failure_without_handler_is_dropped(qtbot):
    jobs, got = Jobs(), []
    jobs.run(lambda: _raise(InspectorError("gone")), got.append)
    qtbot.waitUntil(lambda: not jobs, timeout=5000)
    assert got == []


def test_background_work_gives_way_while_a_job_the_user_waits_for_runs(qtbot):
    """``give_way`` (called by long background work between its steps) sleeps while a job of priority 0 or more
    runs, and returns at once when none does."""
    import threading
    import time

    from inspector.gui.worker import Jobs, give_way

    release, running = threading.Event(), threading.Event()

    def interactive() -> None:
        running.set()
        release.wait(10)

    jobs = Jobs()
    jobs.run(interactive, lambda _r: None)
    assert running.wait(10)
    waited: list[float] = []
    background = threading.Thread(target=lambda: (t := time.monotonic(), give_way(5.0),
                                                  waited.append(time.monotonic() - t)))
    background.start()
    background.join(0.3)
    assert background.is_alive() and waited == []  # still giving way to the running job
    release.set()
    background.join(10)
    assert len(waited) == 1 and 0.3 <= waited[0] < 5.0  # released by the job's end, not by the limit
    qtbot.waitUntil(lambda: not jobs, timeout=10000)
    t = time.monotonic()
    give_way(5.0)
    assert time.monotonic() - t < 1.0  # nothing to give way to


def test_after_paint_waits_for_the_widgets_next_paint(qtbot):
    from PySide6.QtWidgets import QWidget

    from inspector.gui.worker import after_paint

    events: list[str] = []

    class Probe(QWidget):
        def paintEvent(self, event) -> None:
            events.append("paint")

    w = Probe()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: "paint" in events, timeout=5000)
    events.clear()
    after_paint(w, lambda: events.append("fn"), most_ms=60_000)
    w.update()
    assert events == []  # never at once for a shown widget
    qtbot.waitUntil(lambda: "fn" in events, timeout=5000)
    assert events[0] == "paint" and events.count("fn") == 1
    w.update()
    qtbot.waitUntil(lambda: events.count("paint") >= 2, timeout=5000)
    qtbot.wait(50)
    assert events.count("fn") == 1  # once only


def test_after_paint_runs_at_once_for_a_hidden_widget_and_at_most_late_for_an_unpainted_one(qtbot):
    from PySide6.QtWidgets import QWidget

    from inspector.gui.worker import after_paint

    hidden, got = QWidget(), []
    qtbot.addWidget(hidden)
    after_paint(hidden, lambda: got.append("hidden"))
    assert got == ["hidden"]
    shown = QWidget()
    qtbot.addWidget(shown)
    shown.show()
    qtbot.waitExposed(shown)
    qtbot.wait(100)  # its first paints are over; nothing asks for another one
    after_paint(shown, lambda: got.append("late"), most_ms=200)
    qtbot.wait(50)
    assert got == ["hidden"]
    qtbot.waitUntil(lambda: got == ["hidden", "late"], timeout=5000)


def test_a_cancelled_load_stops_at_its_next_checkpoint(qtbot, monkeypatch):
    """A job that loads with ``progress=checkpoint`` stops at the first piece after ``Jobs.cancel``: the rest of
    the file is never parsed and no callback runs."""
    import threading

    from inspector.core.model import loader
    from inspector.gui.worker import checkpoint
    from tests.conftest import ROOT

    monkeypatch.setattr(loader, "PIECEWISE_BYTES", 0)
    monkeypatch.setattr(loader, "_PIECE_BYTES", 4096)
    path = ROOT / "tests" / "zoo" / "gpt2.onnx"
    cancelled, seen, got = threading.Event(), [], []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if len(seen) == 3:
            jobs.cancel()
            cancelled.set()
        checkpoint(done, total)

    jobs = Jobs()
    jobs.run(lambda: loader.load_model(path, progress=progress), got.append, got.append)
    qtbot.waitUntil(lambda: not jobs, timeout=10000)
    assert cancelled.is_set() and len(seen) == 3 and seen[-1] < path.stat().st_size
    assert got == []
