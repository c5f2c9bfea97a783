"""The app's garbage collector (gui/collector.py): Python's own rules, on the GUI thread, never walking more than
SCAN_LIMIT objects at once (more are frozen), and closed models still freed."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QThreadPool

from inspector.gui import collector as collector_module
from inspector.gui.collector import SCAN_LIMIT, GuiThreadCollector
from tests.conftest import FIXTURES, ZOO


class Cycle:
    """A weak-referenceable object that refers to itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs (automatic collection off)."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)
        gc.unfreeze()  # what a test froze is collectable again
        if was_enabled and not collector_module.gui_collects():
            gc.enable()


@pytest.fixture
def rule(qtbot: Any, collections: list[int]) -> GuiThreadCollector:
    """A collector without its timer; every generation is due after one collection of the one below it."""
    gc.collect(1)
    gc.collect(1)  # generation 2's count: 2
    gc.collect(0)
    gc.collect(0)  # generation 1's count: 2
    c = GuiThreadCollector(start=False)
    c.thresholds = (1, 1, 1)
    collections.clear()
    return c


def _allocate(n: int) -> list[list[int]]:
    return [[i] for i in range(n)]


def test_a_full_collection_waits_until_a_quarter_of_the_long_lived_objects_are_new(
        rule: GuiThreadCollector, collections: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython skips a due full collection while the objects promoted into generation 2 since the last one are
    at most 25% of those it kept then (``gc.collect(2)`` alone would walk them all every time). The scan limit
    is lifted here: this test process holds more objects than one collection may walk in the app."""
    monkeypatch.setattr(collector_module, "SCAN_LIMIT", 10**9)
    kept = _allocate(50)
    rule.long_lived_total, rule.long_lived_pending = 4000, 1000
    assert rule.due() == 1
    rule.collect()
    assert collections == [1]
    assert rule.long_lived_pending > 1000  # the survivors of generations 0 and 1 were promoted
    gc.collect(1)
    gc.collect(0)
    gc.collect(0)
    kept += _allocate(50)
    collections.clear()
    rule.long_lived_total, rule.long_lived_pending = 4000, 1001
    assert rule.due() == 2
    rule.collect()
    assert collections == [2]
    assert rule.long_lived_pending == 0 and rule.long_lived_total > 0
    del kept


def test_young_objects_past_the_limit_are_frozen_not_walked(rule: GuiThreadCollector,
                                                            collections: list[int]) -> None:
    kept = _allocate(SCAN_LIMIT + 1000)
    before = gc.get_freeze_count()
    assert rule.due() >= 0 and rule.examined(rule.due()) > SCAN_LIMIT
    rule.collect()
    assert collections == []  # nothing walked
    assert rule.frozen == 1 and gc.get_freeze_count() >= before + len(kept)
    assert gc.get_count()[0] == 0 and rule.examined(2) < 100
    # what was frozen is out of reach: the next young collection walks only what came after
    gc.collect(1)
    gc.collect(0)
    gc.collect(0)
    garbage = Cycle()
    freed = weakref.ref(garbage)
    del garbage
    kept2 = _allocate(10)
    collections.clear()
    assert rule.examined(rule.due()) < 100
    rule.collect()
    assert collections == [1] and freed() is None
    del kept, kept2


def test_a_collection_counts_generation_0_rather_than_trust_its_count(rule: GuiThreadCollector,
                                                                       collections: list[int]) -> None:
    """Frozen objects that die (a model's temporaries, frozen while it loaded) count generation 0's count down:
    the young objects it then hides are counted before a collection, which becomes a freeze."""
    temporaries = _allocate(3 * SCAN_LIMIT)
    rule.freeze()
    young = _allocate(2 * SCAN_LIMIT)
    del temporaries
    more = _allocate(1000)  # generation 0 due again
    assert 1 < gc.get_count()[0] < SCAN_LIMIT < len(gc.get_objects(0))
    rule.collect()
    assert collections == [] and rule.frozen == 2
    del young, more


def test_a_frozen_cycle_is_freed_when_its_model_is_released_and_everything_fits(
        rule: GuiThreadCollector, collections: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector_module, "SCAN_LIMIT", gc.get_count()[0] + len(gc.get_objects()) + 10_000)
    model = [Cycle()]
    freed = weakref.ref(model[0])
    rule.freeze()
    del model
    rule.collect()  # nothing due: the frozen cycle stays
    assert freed() is not None
    rule.release()
    rule.collect()
    assert collections == [2] and freed() is None and gc.get_freeze_count() == 0


def test_a_release_that_would_walk_more_than_the_limit_keeps_the_freeze(
        rule: GuiThreadCollector, collections: list[int]) -> None:
    kept = _allocate(SCAN_LIMIT + 1000)  # the model still open
    rule.freeze()
    frozen = gc.get_freeze_count()
    rule.release()
    rule.collect()
    assert collections == [] and gc.get_freeze_count() >= frozen
    del kept


def test_after_a_release_the_young_objects_are_frozen_though_deaths_hid_them_from_the_count(
        rule: GuiThreadCollector, collections: list[int]) -> None:
    """The old model's objects, freed when it is replaced, count generation 0's count down while the new
    model's objects are still young: a collection would then walk far more than the count says."""
    old = _allocate(3 * SCAN_LIMIT)
    rule.freeze()  # the old model, frozen while it was open
    new = _allocate(2 * SCAN_LIMIT)  # the new one, young
    del old  # replaced
    assert gc.get_count()[0] < SCAN_LIMIT < len(gc.get_objects(0))
    rule.release()
    rule.collect()
    assert collections == [] and len(gc.get_objects(0)) < 100 and rule.frozen == 2
    del new


def test_a_release_for_a_model_larger_than_the_limit_does_not_count_the_frozen_objects(
        rule: GuiThreadCollector, collections: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Its nodes alone exceed the limit: counting the permanent generation (30 ms with 1.1M objects) could only
    say so again."""
    counted: list[int] = []
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or 0)
    rule.release(open_nodes=SCAN_LIMIT)
    rule.collect()
    assert counted == [] and collections == [] and rule.frozen == 1
    rule.release(open_nodes=SCAN_LIMIT - 1)
    rule.collect()
    assert counted == [1] and collections == [2]


def test_a_closed_compare_window_frees_its_other_model_although_it_was_frozen(qtbot: Any, window: Any) -> None:
    """The models hold no reference cycles: frozen or not, closing the window frees the other model (B) by
    reference counting (the main window forgets a closed compare window once it is deleted). Side A is the main
    window's own model, which stays while it is shown."""
    from inspector.gui.collector import _collector

    class Mark:
        pass

    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(FIXTURES / "dynamo_block.onnx")
    cw = window.open_compare(FIXTURES / "dynamo_block_h4.onnx")
    with qtbot.waitSignal(cw.pair_loaded, timeout=60000):
        pass
    assert cw.pair.a is window.index
    marks = [Mark(), Mark()]
    cw.pair.a.findings.append(marks[0])
    cw.pair.b.findings.append(marks[1])
    alive = [weakref.ref(m) for m in marks]
    del marks
    QThreadPool.globalInstance().waitForDone(30000)
    _collector[0].freeze()
    cw.close()
    del cw
    qtbot.waitUntil(lambda: alive[1]() is None, timeout=5000)
    assert window._compare_windows == []
    assert alive[0]() is not None and window.index.findings[-1] is alive[0]()
    gc.unfreeze()


def test_replacing_a_model_releases_the_frozen_one(qtbot: Any, window: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A cycle that hangs off the replaced model, frozen with it, is unfrozen once the next model is shown, and
    collected on the GUI thread (the limit raised so that this test process fits it; the old model's last jobs
    may still hold it at the release's own collection)."""
    import threading

    from inspector.gui.collector import _collector

    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(ZOO / "gpt2.onnx")
    freed_on: list[str] = []
    cycle = Cycle()
    weakref.finalize(cycle, lambda: freed_on.append(threading.current_thread().name))
    window.index.findings.append(cycle)
    del cycle
    QThreadPool.globalInstance().waitForDone(30000)
    _collector[0].freeze()
    monkeypatch.setattr(collector_module, "SCAN_LIMIT", 10**9)
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.open_path(FIXTURES / "dynamo_block.onnx")
    qtbot.waitUntil(lambda: gc.get_freeze_count() == 0, timeout=5000)
    QThreadPool.globalInstance().waitForDone(30000)
    qtbot.waitUntil(lambda: bool(freed_on) or gc.collect() < 0, timeout=5000)
    assert freed_on == [threading.main_thread().name]


def test_counting_never_holds_an_object_another_thread_is_building(rule: GuiThreadCollector) -> None:
    """While the collector counts a generation, a worker building a tuple from a generator (as layouts do) must not
    find its tuple referenced from the GUI thread's count: with the list of objects left on the stack between two
    instructions, the tuple's next resize failed with ``SystemError ... bad argument to internal function`` within
    0.1-0.5 s here (a layout failed so in about one test run in five). Threads switch as often as they can."""
    errors: list[BaseException] = []
    done = threading.Event()

    def build() -> None:
        while not done.is_set():
            try:
                tuple(x for x in range(200))
            except SystemError as e:
                errors.append(e)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    worker = threading.Thread(target=build)
    worker.start()
    try:
        end = time.perf_counter() + 2.0
        while time.perf_counter() < end and not errors:
            rule.examined(2)
    finally:
        done.set()
        worker.join()
        sys.setswitchinterval(interval)
    assert errors == []
