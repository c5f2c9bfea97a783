"""Long sequences read a slice at a time. Left for ``core/specialise/links.py`` alone, whose change is another's:
that change reads its value infos in one go, as ``render/graph_facts.py`` now does, and then this module goes.

It was a GUI concern in core (a C call over 100k entries keeps other threads waiting until it returns); how the app
stays responsive is now arranged in ``gui/worker.py``.
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
