"""What two recognised calls may share: the nodes the exporter's optimizer computed once for both (common
subexpressions), which belong to the call of their first reader.

A leaf of a body (a node reading only outside values: a mask converted once for every layer's attention) read by later
calls is one case (``unshare``). The other is a whole part of a body: transformers indexes a mask twice with the same
positions, and after the optimizer the second ``index.Tensor`` is a lone GatherND reading the positions (Max, Shape,
Expand, Unsqueeze, Concat) that the first call computed (gpt2_dynamic's, and every dynamic-shape export with a mask). A
value made inside a body and read outside it is then allowed where each outside reader is the body's own reader's
twin: a node of the same key reading it at the same operand (``twin_escapes``), the one the optimizer's merge leaves;
any other escaping value still says the nodes are not one call. The later call is found again once the first is
taken, its shared part matched against the taken nodes (``Matcher._match`` with ``reuse``).

The threat is a hostile model: each check is a pass over the body's nodes and the readers of the values they make
(``GraphMaps.consumers``, built once, on the first escape seen: none in the zoo's other exports); nothing recurses.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

from inspector.core.aten.templates import Template
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise_templates import Key


class FirstReaders:
    """The first node reading each value, from one pass over the reads on first use (the map of every value's readers,
    ``GraphMaps.consumers``, costs 4x that at 100k nodes)."""

    def __init__(self, maps: GraphMaps) -> None:
        self.maps = maps
        self._first: dict[str, int] | None = None

    def first(self, value: str, default: int) -> int:
        """The first node reading ``value`` (``default`` if none)."""
        if self._first is None:
            first: dict[str, int] = {}
            for i, ins in enumerate(self.maps.inputs):
                for v in ins:
                    first.setdefault(v, i)
            for i, names in self.maps.captured.items():
                for v in names:
                    first[v] = min(first.get(v, i), i)
            self._first = first
        return self._first.get(value, default)


def unshare(maps: GraphMaps, t: Template, nodes: dict[int, int], shared: set[int], leaves: list[bool],
            readers: FirstReaders) -> None:
    """A leaf of the body (``nodes``: template node -> graph node) that is read outside it too is a common
    subexpression (a mask converted once for every layer's attention): it belongs to the call of its first reader,
    as the exporter made it there; to the others it is ``shared``."""
    members = set(nodes.values())
    for j, g in list(nodes.items()):
        if j == len(t.nodes) - 1 or not leaves[j]:
            continue
        read = [v for v in maps.outputs[g] if v and v in maps.read_count]
        if any(maps.read_count[v] > _reads_of(maps, members, v) for v in read) \
                and min(readers.first(v, g) for v in read) not in members:
            del nodes[j]
            shared.add(j)


def twin_escapes(maps: GraphMaps, keys: Sequence[Key], t: Template, template_keys: Sequence[Key],
                 nodes: dict[int, int], readers: FirstReaders,
                 seen: dict[tuple[str, frozenset[tuple[Key, int]]], list[int]]) -> bool | None:
    """Where a body (``nodes``) is not closed: True if every value it makes that others read too is read by twins of
    its own readers only and first read inside it (a common subexpression computed for this call and reused by later
    ones); None if so but one is first read before it (this is such a later call: it is matched again, reusing the
    nodes, once the first call is taken); False otherwise. ``seen``: per value and set of twins, the readers that are
    none of them, found once (a value a hostile graph has 100k nodes read, anchoring as many matches, is read once,
    not once per match)."""
    members = set(nodes.values())
    inside: dict[tuple[int, int], set[tuple[Key, int]]] = {}  # (template node, output) -> (reader's key, operand)
    uses: dict[tuple[int, int], int] = {}
    for k in nodes:
        for p, r in enumerate(t.nodes[k].inputs):
            if r.kind == "n" and r.a in nodes:
                inside.setdefault((r.a, r.b), set()).add((template_keys[k], p))
                uses[(r.a, r.b)] = uses.get((r.a, r.b), 0) + 1
    outputs, later = set(t.outputs), False
    for j, g in nodes.items():
        for o, v in enumerate(maps.outputs[g]):
            if (j, o) in outputs or not v:
                continue
            if maps.read_count.get(v, 0) == uses.get((j, o), 0) and v not in maps.graph_outputs:
                continue  # (read inside alone)
            twins = inside.get((j, o))
            if twins is None or v in maps.graph_outputs:
                return False
            key = (v, frozenset(twins))
            others = seen.get(key)
            if others is None:
                others = seen[key] = [c for c in dict.fromkeys(maps.consumers.get(v, ())) if c in maps.captured or not
                                      any(x == v and (keys[c], p) in twins for p, x in enumerate(maps.inputs[c]))]
            if len(others) > len(members) or any(c not in members for c in others):
                return False
            later = later or readers.first(v, g) not in members
    return None if later else True


def _reads_of(maps: GraphMaps, members: set[int], value: str) -> int:
    """How often the nodes ``members`` read ``value`` (not absent: ``GraphMaps.reads`` of each, counted in C)."""
    n = sum(map(list.count, map(maps.inputs.__getitem__, members), repeat(value)))
    return n + sum(maps.captured[c].count(value) for c in members if c in maps.captured) if maps.captured else n
