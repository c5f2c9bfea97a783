"""The app's cyclic garbage collector: on the GUI thread only, and never examining more than a bounded number of
objects at once.

Python collects on whichever thread happens to allocate past the threshold. When that is a worker (building a
report, indexing) while the GUI thread is tearing down graph items, the collection frees Qt wrappers that sit in
reference cycles under the GUI thread's feet: the test suite aborted ("Fatal Python error: Aborted",
"Garbage-collecting" in ``build_report``'s thread, ``GraphView._clear`` in the GUI thread). So once workers run,
automatic collection is switched off and a timer on the GUI thread collects instead, by Python's own rules:
each generation past its threshold, and the oldest (a *full* collection) only once the objects promoted into it
since the last full collection exceed 25% of those it kept then (CPython's ``long_lived_pending`` /
``long_lived_total``; ``gc.collect(2)`` alone skips that test).

A collection holds the GIL for as long as it walks its objects (~0.2-1.5 µs each), and on the GUI thread that
is a stall: the workers allocate millions of long-lived objects (indexes, analyses, a diff), and walking them
took 0.4-0.8 s at a time with a 100k-node model open. So a collection that would examine more than
``SCAN_LIMIT`` objects is replaced by ``gc.freeze()`` (constant time): everything alive then moves to the
permanent generation, which collections skip. The models hold no reference cycles (a whole scripted session on
a 100k-node export, compare window included, left 186 objects of cyclic garbage, all graph items; closed models
were freed by reference counting), so frozen models are still freed when closed; what a freeze keeps is the
little cyclic garbage alive at that moment. When the main window's model is replaced (``release``), the
permanent generation is unfrozen and collected in full if everything in it and in the young generations fits
the limit; with a large model open it stays frozen, since that collection would walk the open model (the stall
this module exists to avoid). Closing a compare window releases nothing: the main window's model is still
open, and counting the permanent generation alone took 64 ms with 2.3M objects frozen at 100k nodes.
Core never touches the collector: with automatic collection off, indexing, analyses and diffs on the workers run
without the full collections that would walk a whole large index (``gui/worker.py`` starts this collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterable

from PySide6.QtCore import QCoreApplication, QObject, QTimer

# Objects one collection may examine on the GUI thread: at most 21 ms measured in the 100k session (the app
# holds ~57k objects at start: they are frozen with the first model)
SCAN_LIMIT = 50_000


class GuiThreadCollector(QObject):
    INTERVAL_MS = 250

    def __init__(self, parent: QObject | None = None, *, start: bool = True) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self.long_lived_total = _count((2,))  # objects generation 2 kept at the last full collection
        self.long_lived_pending = 0  # objects promoted into generation 2 since
        self.frozen = 0  # freezes so far
        self._release_due = False
        self._open_nodes = 0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect)
        if start:
            gc.disable()
            self._timer.start(self.INTERVAL_MS)

    def due(self) -> int:
        """The generation Python would collect now, -1 for none."""
        counts, limits = gc.get_count(), self.thresholds
        generation = -1
        for g in range(3):
            if limits[g] and counts[g] > limits[g]:
                generation = g
            else:
                break
        if generation == 2 and self.long_lived_pending <= self.long_lived_total // 4:
            generation = 1  # CPython: a full collection waits until a quarter of the long-lived objects are new
        return generation

    def examined(self, generation: int) -> int:
        """How many objects a collection of ``generation`` would walk, counted (~20 ns an object, a few % of
        collecting them). Generation 0's count says less: every tracked object freed counts it down, a frozen
        one too, so while a model's frozen temporaries die it can stay near 0 above a million young objects."""
        return _count(range(generation + 1))

    def release(self, open_nodes: int = 0) -> None:
        """A model was replaced by one of ``open_nodes`` nodes: at the next tick, unfreeze and collect everything
        if that fits. An indexed model holds more objects than nodes (3.4 per node at 100k nodes, the index
        alone), so with ``open_nodes`` past the limit the permanent generation is not even counted (30 ms)."""
        self._release_due = True
        self._open_nodes = open_nodes

    def collect(self) -> None:
        if self._release_due:
            self._release_due = False
            # the young objects too: each object of the old model freed counted generation 0's count down, so
            # how many are young now (the new model's) is not known, and a collection could walk a million
            self.freeze()
            if self._open_nodes >= SCAN_LIMIT:
                return
            frozen = gc.get_freeze_count()  # a walk of the permanent generation: ~25 ns an object
            if frozen <= SCAN_LIMIT:
                gc.unfreeze()
                self._collect(2, frozen)
            return
        generation = self.due()
        if generation < 0:
            return
        walked = self.examined(generation)
        if walked > SCAN_LIMIT:
            self.freeze()
        else:
            self._collect(generation, walked)

    def freeze(self) -> None:
        """Everything alive now moves out of reach of collections (constant time)."""
        gc.freeze()
        self.long_lived_total = self.long_lived_pending = 0
        self.frozen += 1

    def _collect(self, generation: int, walked: int) -> None:
        survivors = max(walked - gc.collect(generation), 0)
        if generation == 1:  # generations 0 and 1 move into 2
            self.long_lived_pending += survivors
        elif generation == 2:
            self.long_lived_total = survivors
            self.long_lived_pending = 0


_collector: list[GuiThreadCollector] = []


def gui_collects() -> bool:
    """Whether the GUI thread's collector is installed (automatic collection is then off for good)."""
    return bool(_collector)


def collect_on_gui_thread() -> None:
    """Install the GUI thread's collector once per application (called on the GUI thread)."""
    app = QCoreApplication.instance()
    if app is not None and not _collector:
        _collector.append(GuiThreadCollector(app))


def release_model(open_nodes: int) -> None:
    """Called on the GUI thread when the main window's model is replaced by one of ``open_nodes`` nodes (see
    ``GuiThreadCollector.release``)."""
    if _collector:
        _collector[0].release(open_nodes)


def _count(generations: Iterable[int]) -> int:
    """How many objects ``generations`` hold, counted without holding them across a switch of threads.

    ``len(gc.get_objects(g))`` in Python code leaves the list of every object on the stack between two
    instructions, where the interpreter may hand the GIL to another thread; a tuple that thread is building from a
    generator (``tuple(x for ...)``) is in that list, and its next resize, which requires the only reference,
    fails: ``SystemError: Objects/tupleobject.c:927: bad argument to internal function`` (a layout failed so in
    about one test run in five). Chained in C (``sum(map(len, map(gc.get_objects, ...)))``) the lists are made,
    measured and freed with no instruction in between."""
    return sum(map(len, map(gc.get_objects, generations)))
