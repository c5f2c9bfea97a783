"""Background analyses pause while a job the user waits for runs, and never hold up such a job that needs them.

The Review panel's listing analyses every family in the background; on 2 cores, beside a click's jobs, it left the
GUI thread a third of the GIL. ``Specialiser.pause`` lets it wait between calls of a family; a job the user waits
for that needs the analyses' lock meanwhile must not wait for those pauses.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("PySide6")

import inspector.core.specialise as specialise
from inspector.core.index import open_index
from inspector.gui.analysis import Analyses
from inspector.gui.worker import Jobs, give_way
from tests.conftest import ZOO


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> Analyses:
    monkeypatch.setattr(specialise, "PAUSE_EVERY", 1)  # pause between every two calls (zoo families are small)
    return Analyses(open_index(ZOO / "llama_gqa.onnx"))


def _family(analyses: Analyses, name: str):
    return next(f for f in analyses.index.families if f.name == name)


def _blocking_job(jobs: Jobs) -> threading.Event:
    """A job the user waits for, running until the returned event is set."""
    release, running = threading.Event(), threading.Event()
    jobs.run(lambda: (running.set(), release.wait(30)), lambda _r: None)
    assert running.wait(10)
    return release


def test_a_background_analysis_waits_while_a_job_the_user_waits_for_runs(qtbot, analyses: Analyses):
    jobs = Jobs()
    release = _blocking_job(jobs)
    mul = _family(analyses, "mul")  # 20 calls
    assert sum(len(o.aten_calls) for o in mul.overloads) == 20
    done: list[int] = []
    background = threading.Thread(target=lambda: done.append(len(analyses.family(mul).bodies)))
    background.start()
    background.join(1.5)
    assert background.is_alive() and done == []  # pausing (2 pauses of at most 0.5 s so far)
    release.set()
    background.join(20)
    assert done and done[0] >= 1
    qtbot.waitUntil(lambda: not jobs, timeout=10000)


def test_a_job_the_user_waits_for_that_needs_the_lock_is_not_held_up_by_the_pauses(qtbot, analyses: Analyses):
    jobs = Jobs()
    release = _blocking_job(jobs)
    mul, linear = _family(analyses, "mul"), _family(analyses, "linear")
    background = threading.Thread(target=lambda: analyses.family(mul))
    background.start()
    time.sleep(0.2)  # the background analysis holds the lock and pauses
    got: list[object] = []
    started = time.monotonic()
    jobs.run(lambda: analyses.family(linear), got.append)
    # without the pauses giving way to a waiting job: 20 calls x 0.5 s
    qtbot.waitUntil(lambda: bool(got), timeout=6000)
    assert time.monotonic() - started < 6
    release.set()
    background.join(20)
    assert not background.is_alive()
    qtbot.waitUntil(lambda: not jobs, timeout=10000)


def test_give_way_returns_at_once_on_the_thread_of_a_job_the_user_waits_for(qtbot):
    jobs = Jobs()
    release = _blocking_job(jobs)  # another job the user waits for is running
    took: list[float] = []

    def interactive() -> None:
        t = time.monotonic()
        give_way(5.0)
        took.append(time.monotonic() - t)

    jobs.run(interactive, lambda _r: None)
    qtbot.waitUntil(lambda: bool(took), timeout=10000)
    assert took[0] < 0.5
    release.set()
    qtbot.waitUntil(lambda: not jobs, timeout=10000)
