"""Pausing Python's cyclic garbage collector around passes that allocate an object or more per node or call.

Those passes (indexing, the module tree, search's tables, summary, fold, report, diff) make many small objects and
no garbage cycles worth finding, yet the collector's thresholds are absolute counts: every 70k allocations a full
collection may come due, which walks every object alive, the whole index of the model. On a 10k-node model a pass
ends before one comes due; on a 100k-node one several do, so left on, the collector makes linear passes grow faster
than the model (search's first query: 0.11 s of a 0.95 s search at 100k, none at 10k). This module is the one home
of that pause; the GUI runs its own collector (``inspector.gui.collector``), which leaves it off, and
``paused_gc`` leaves the collector off when it finds it off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Run the body with the cyclic collector off, and turn it back on after only if it was on before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
