"""A stable topological order of nodes given by what each reads and makes: the one home of the Kahn sort that
fold (a folded graph's new node order, a module fold's units) and diff (a module fold's calls inlined back in the
flat export's order) each kept a copy of.

Stable: among the nodes ready at a step, the one of least key goes first (its position, unless the caller gives
keys), so a graph already in a valid order keeps it and a repaired one moves as little as it can. A value read but
made by none of the nodes is outside (a graph input, an initializer); a value made by several nodes is the last
one's. Where there is no order (a cycle), the nodes that could not be placed are left out of ``order`` and keep a
non-zero ``waiting``; what the caller does then is its own concern. Linear in nodes and reads (plus a log factor
for the heap).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from typing import NamedTuple


class Kahn(NamedTuple):
    order: list[int]  # positions in a stable topological order (shorter than the nodes where a cycle is)
    waiting: list[int]  # per position: how many of the nodes it reads from were never placed (0 once placed)
    users: list[list[int]]  # per position: the positions that read what it makes
    deps: list[set[int]]  # per position: the positions whose values it reads (itself left out)


def dependencies(reads_of: Sequence[Collection[str]], makes_of: Sequence[Collection[str]]) -> list[set[int]]:
    """Per node, the other nodes whose values it reads (a value made by several nodes: the last one's)."""
    producer = {o: i for i, outs in enumerate(makes_of) for o in outs if o}
    return [{producer[r] for r in reads if r in producer and producer[r] != i} for i, reads in enumerate(reads_of)]


def kahn(deps: Sequence[set[int]], keys: Sequence[float] | None = None) -> Kahn:
    """The nodes whose dependencies are ``deps`` (``dependencies``) in a stable topological order: by least key
    among those ready (``keys``, else the position)."""
    users: list[list[int]] = [[] for _ in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    waiting = [len(d) for d in deps]
    out: list[int] = []
    if keys is None:
        ready = [i for i, w in enumerate(waiting) if w == 0]
        heapq.heapify(ready)
        while ready:
            i = heapq.heappop(ready)
            out.append(i)
            for u in users[i]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
    else:
        keyed = [(keys[i], i) for i, w in enumerate(waiting) if w == 0]
        heapq.heapify(keyed)
        while keyed:
            _k, i = heapq.heappop(keyed)
            out.append(i)
            for u in users[i]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(keyed, (keys[u], u))
    return Kahn(out, waiting, users, list(deps))
