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

import inspector.core.specialise.specialiser as specialise
from inspector.core.model.index import open_index
from inspector.gui.analysis import Analyses
from inspector.gui.worker import Job, Jobs, give_way
from tests.conftest import ZOO


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> Analyses:
    monkeypatch.setattr(specialise, "PAUSE_EVERY", 1)  # pause between every two calls (zoo families are small)
    return Analyses(open_index(ZOO / "llama_gqa.onnx"))


def _family(analyses: Analyses, name: str):
    return next(f for f in analyses.index.families if f.name == name)


def _blocking_job(_jobs: Jobs) -> threading.Event:
    """A job the user waits for, running until the returned event is set: on a thread of its own, so that both
    threads of the pool (2 on 2 cores) stay free for the jobs under test."""
    release, running = threading.Event(), threading.Event()
    job = Job(lambda: (running.set(), release.wait(30)), interactive=True)
    threading.Thread(target=job.run, daemon=True).start()
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
    qtbot.waitUntil(analyses._lock.locked, timeout=10000)  # the background analysis holds the lock and pauses
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


def test_a_background_job_gives_up_a_family_when_a_job_the_user_waits_for_needs_the_lock(qtbot, analyses):
    from inspector.gui.analysis import Preempted

    jobs = Jobs()
    release = _blocking_job(jobs)
    mul, linear = _family(analyses, "mul"), _family(analyses, "linear")
    outcome: list[str] = []

    def background() -> str:
        try:
            analyses.family(mul)
        except Preempted:
            return "preempted"
        return "analysed"

    jobs.run(background, outcome.append, priority=-1)
    qtbot.waitUntil(analyses._lock.locked, timeout=10000)  # holding the lock, pausing in mul's calls
    got: list[object] = []
    jobs.run(lambda: analyses.family(linear), got.append)
    qtbot.waitUntil(lambda: bool(got) and bool(outcome), timeout=5000)
    assert outcome == ["preempted"]
    assert got[0].family is linear  # type: ignore[attr-defined]
    release.set()
    assert len(analyses.family(mul).bodies) >= 1  # nothing half-made was kept: analysed again in full
    qtbot.waitUntil(lambda: not jobs, timeout=10000)


def test_the_review_listing_lists_every_family_although_a_selection_preempted_it(qtbot, analyses, tmp_path):
    import shutil

    from inspector.core.review.store import ReviewStore
    from inspector.gui.reviewing import review_items

    model = tmp_path / "m.onnx"
    shutil.copyfile(ZOO / "llama_gqa.onnx", model)
    store = ReviewStore(model)
    undisturbed = review_items(Analyses(open_index(model)), store)[0]
    jobs = Jobs()
    release = _blocking_job(jobs)
    listed: list[tuple[list[object], object]] = []
    jobs.run(lambda: review_items(analyses, store), listed.append, priority=-1)
    qtbot.waitUntil(analyses._lock.locked, timeout=10000)  # the listing pauses inside a family, holding the lock
    got: list[object] = []
    jobs.run(lambda: analyses.family(_family(analyses, "linear")), got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    release.set()
    qtbot.waitUntil(lambda: bool(listed), timeout=30000)
    items = listed[0][0]
    assert len(undisturbed) > 20
    assert [i.key for i, _r in items] == [i.key for i, _r in undisturbed]  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: not jobs, timeout=10000)


def test_give_way_never_sleeps_on_the_gui_thread(qtbot):
    # the GUI thread may analyse a family itself (a review target not analysed yet): it must not wait there
    release = _blocking_job(Jobs())
    t = time.monotonic()
    give_way(5.0)
    assert time.monotonic() - t < 0.5
    release.set()
