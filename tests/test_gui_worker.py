"""Background jobs: results and one-line failures come back on the GUI thread; a job is kept until it reports."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from inspector.core.errors import InspectorError
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
