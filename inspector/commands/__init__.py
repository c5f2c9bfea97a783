"""Subcommands of ``onnx-inspector``; each module has ``main(argv) -> int``.

A subcommand run by the console script (``inspector.cli.entry``) ends the process as soon as its output is
written, and leaves what it built to the operating system, which takes the memory back at once. Freed object by
object, a 100k-node model and its index (about a million Python objects) cost 0.1 s at the end of a summary, and a
diff's two models and their units 0.3 s. ``keep`` is how a command hands those objects over; run in-process (tests,
the Python API) nothing is kept, so nothing outlives the call.

Such a process also runs without the cyclic garbage collector. Indexing pauses it anyway (``paused_gc``),
so everything indexed sits in its youngest generation, and the first collection after the pause walked all of it:
0.13-0.2 s of a 100k-node summary, report or diff, to find no garbage. A command's cycles (few) go with the process.
"""

from __future__ import annotations

import gc

_kept: list[object] | None = None  # a list once the process is to end after this command


def leave_to_exit() -> None:
    """This process ends after the command (``os._exit``): what commands keep is never freed one by one, and the
    cyclic collector is off."""
    global _kept
    if _kept is None:
        _kept = []
    gc.disable()


def kept() -> list[object] | None:
    """Where a command puts what it built when the process ends after it; None when it runs in-process."""
    return _kept


def keep(*objects: object) -> None:
    """Hold ``objects`` until the process ends, when it ends after this command; otherwise do nothing."""
    if _kept is not None:
        _kept.extend(objects)
