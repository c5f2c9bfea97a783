"""Long sequences read a slice at a time, so that another thread can take the GIL between two slices.

Why: a C call (``list(...)``, ``map`` with an ``attrgetter``, ``Counter.update``) that walks the 100k nodes or value
infos of a large export runs without returning to the interpreter, and the interpreter is where the GIL changes
hands: such a call held the GIL for 15-100 ms, and the app's GUI thread, waiting for it, froze. A slice of
``SLICE`` entries costs a few milliseconds at most.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

SLICE = 4096  # entries per C call


def in_slices(seq: Sequence[T], size: int = SLICE) -> Iterator[Sequence[T]]:
    """``seq[0:size]``, ``seq[size:2 * size]``, …"""
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def listed(parts: Iterable[Sequence[T]], size: int = SLICE) -> list[T]:
    """The entries of ``parts`` (long sequences, such as a graph's inputs and value infos) in one list."""
    out: list[T] = []
    for part in parts:
        for piece in in_slices(part, size):
            out += piece
    return out
