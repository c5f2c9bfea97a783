"""The two sides of a diff cut as a pair, reading only around the nodes that differ.

The second model of a diff is mostly the first one again (a re-export: its index is made like the first one's,
``inspector.core.model.scan_like``, and knows which of its nodes differ). A unit whose nodes are equal on both sides
reads, bakes in and keeps the same values on both, unless something it touches stands otherwise on one side. Cut on
its own, each side resolved every aten call's reads and kept outputs up front (at 100k nodes 0.61 + 0.26 s of the
diff's 2.6 s CPU, for 3 calls that differ); the diff then found the units that are the same by the identity of lists
one cut had taken over from the other. As a pair, neither cut resolves a unit until it is used, and the pair says which
units may differ (``Follow.suspect``):

- those with a node that differs in more than its name, metadata and doc string; those producing or reading a
  value whose producer moved (the outputs of a differing node that changed); those reading a small initializer
  baked on one side only or of other content (``small_constants``); those whose outputs a differing node reads on
  one side only, or that make a graph output of one side only (whether they keep an output may differ).

Any other unit is the same on both sides in all the diff reads of it, and matching, comparison and the wiring check
pass it by (they ask the pair, ``UnitPairs.follow``). A unit used is resolved as a cut of its own resolves it
(``resolve``): its reads from a producer map of each side (one pass over A's outputs, B's made from it), an output
kept when a node outside the unit reads it: found among the next ``WINDOW`` nodes, else by counting the reads of
the whole side once. Who reads a value is found by one pass over the nodes, only for values whose standing differs
(``equal_readers``); a C loop over one side's inputs proves most such sets unread.

Only for what the pair covers exactly: no local functions, one node count, the same aten call groups, at most half
of the nodes differing, and one producer per value on A's side (B's made twice take the last, as a cut of its own
does). Anything else is cut on its own (``cut_pair``).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from operator import attrgetter, methodcaller
from typing import Any, TypeVar

from onnx import NodeProto

from inspector.core.diff.cut import UNREAD, GraphCut, Unit, agree_small
from inspector.core.model.index import ModelIndex
from inspector.core.model.scan_like import unequal_nodes
from inspector.core.util.progress import Progress

STEP = 4096  # nodes per step of a pass over a whole side with a checkpoint (``core.util.progress``): one C loop over
# 100k nodes held the interpreter for 165-370 ms while the app's GUI thread waited (its compare at 100k, make bench)
WINDOW = 256  # nodes after a unit where a reader of its outputs is looked for, before counting the side's reads
WITNESSED = 32  # units of a side whose outputs are looked for so; past them, the side's reads are counted
_INPUTS, _OUTPUTS, _NODE_PATHS = attrgetter("input"), attrgetter("output"), attrgetter("node_paths")
# a repeated field copied into a list in C: iterating the field itself ends in an IndexError that upb formats a message
# for (``PyErr_Format``, about 1,800 instructions a field under callgrind), once per node of a pass over a whole side
_ALL = methodcaller("__getitem__", slice(None))
T = TypeVar("T")


def cut_pair(a: ModelIndex, b: ModelIndex,
             progress: Progress | None = None) -> tuple[GraphCut, GraphCut, Follow | None]:
    """The cuts of a diff's two sides: as a pair when ``b`` is mostly ``a`` at equal places (see the module doc),
    with the pair; else each a cut of its own, and None. ``progress``: a checkpoint (``core.util.progress``), in
    nodes: the pair's passes over a whole side then read ``STEP`` nodes at a time, with ``progress`` after each."""
    ca, cb = GraphCut(a, alone=False), GraphCut(b, alone=False, calls=False)
    shared = _share_units(ca, cb)
    if not shared:
        cb.cut_calls()
    agree_small(ca, cb)
    follow = Follow.make(ca, cb, shared, progress)
    if follow is None:
        if shared:
            cb.cut_calls()
        ca.finish()
        cb.finish()
    return ca, cb, follow


def _share_units(a: GraphCut, b: GraphCut) -> bool:
    """Give ``b`` the units of ``a``'s aten calls when its calls are ``a``'s, node for node (each main-graph call
    of both a unit, with the same node paths): B's index made like A's shares the paths of the calls it took over,
    so this is one C comparison, and B makes its own units only for the suspect ones (``Follow.make``). A unit of A
    stands for B's where the pair does not name it: the same nodes (equal), reads, constants (of equal content) and
    outputs, and a call of the same FX text (0.05 s at 100k nodes: 80k units not made)."""
    calls_a, calls_b = a.index.provenance.calls, b.index.provenance.calls
    if a.functions or b.functions or not a.n_calls or len(calls_a) != a.n_calls or len(calls_b) != a.n_calls \
            or len(a.graph.node) != len(b.graph.node) \
            or list(map(_NODE_PATHS, calls_a)) != list(map(_NODE_PATHS, calls_b)):
        return False
    b.units = list(a.units)
    b.n_calls = a.n_calls
    b.unit_of_node = array("q", a.unit_of_node)
    return True


class Follow:
    """Two cuts of one layout (``a`` and ``b``, whose main-graph nodes differ at ``differ`` only)."""

    def __init__(self, a: GraphCut, b: GraphCut, differ: list[int], progress: Progress | None = None) -> None:
        self.a, self.b = a, b
        self._progress = progress  # (also for the passes made later, when a unit is first used)
        self.differ = differ
        self._differ_set = set(differ)
        self.suspect: set[int] = set()  # units that may differ between the sides (see the module doc)
        self.reshaped: list[int] = []  # differing nodes that differ in more than names and metadata
        self._readers: dict[str, list[int]] = {}  # value -> the equal nodes that read it (alike on both sides)
        self._counts: dict[int, Counter[str]] = {}  # id of a cut -> how often each value is read on its side
        self._searched: dict[int, int] = {}  # id of a cut -> units whose readers were looked for nearby
        self._all_suspects: set[int] = set()  # ids of the cuts whose suspect units are resolved
        self._graph_outputs: dict[int, set[str]] = {}

    @classmethod
    def make(cls, a: GraphCut, b: GraphCut, shared: bool = False, progress: Progress | None = None) -> Follow | None:
        """Finish ``a`` and ``b`` (cut with their calls' units only; ``shared``: b's are a's, ``_share_units``) as a
        pair; None when the pair does not cover them (they are left as they were)."""
        if a.functions or b.functions or not a.n_calls or a.n_calls != b.n_calls \
                or a.unit_of_node != b.unit_of_node:
            return None
        nodes_a, nodes_b = a.graph.node, b.graph.node
        # (known already when b was indexed like a: inspector.core.model.scan_like)
        differ = b.index.unequal if b.index.followed is a.index else unequal_nodes(nodes_b, nodes_a)
        if differ is None:
            return None
        follow = cls(a, b, differ, progress)
        # the differing nodes that differ in more than names, metadata and doc strings: only these can make a unit
        # read, bake in or keep other values (a re-export after an edit moves the stack traces of many nodes)
        reshaped = follow.reshaped = [i for i in differ if not _same_structure(nodes_a[i], nodes_b[i])]
        outs_a = {i: list(nodes_a[i].output) for i in reshaped}
        outs_b = {i: list(nodes_b[i].output) for i in reshaped}
        moved = [i for i in reshaped if outs_a[i] != outs_b[i]]
        touched, standing = follow._standing(outs_a, outs_b, moved)
        io = a.index.node_io()
        producer_a = _producers(nodes_a, progress, io[1] if io is not None else None)
        if producer_a is None:
            return None
        # b's producers: a's, with the outputs of the differing nodes that changed replaced (a's have one producer
        # each, so removing a node's outputs removes only its own); the same map when none did
        producer_b = dict(producer_a) if moved else producer_a
        for i in moved:
            for name in outs_a[i]:
                if name:
                    del producer_b[name]
        for i in moved:
            for name in outs_b[i]:
                if name:  # (made twice now: the last producer wins, as in GraphCut._cut)
                    p = producer_b.get(name)
                    producer_b[name] = i if p is None or p < i else p
        a.producer, b.producer = producer_a, producer_b
        _number_plain_nodes(a, b)
        b.followed = a
        b.unequal = {a.unit_of_node[i] for i in differ}
        follow.suspect = follow._suspects(touched, standing)
        if shared:  # b's own units where it may differ
            calls_b, units_a, units_b = b.index.provenance.calls, a.units, b.units
            for k in follow.suspect | b.unequal:  # (an unequal call may have another FX text: its own call)
                unit = units_a[k] if k < a.n_calls else None
                if unit is not None:
                    call = calls_b[k]
                    units_b[k] = Unit(unit.kind, unit.nodes, call.name, None, None, call, None)
        return follow

    def _standing(self, outs_a: dict[int, list[str]], outs_b: dict[int, list[str]],
                  moved: list[int]) -> tuple[set[str], set[str]]:
        """The values whose producer may differ between the sides (outputs of differing nodes that changed), and
        those with the values baked on one side only or of other content: the values whose standing differs."""
        touched: set[str] = set()
        for i in moved:
            touched.update(outs_a[i])
            touched.update(outs_b[i])
        touched.discard("")
        small_a, small_b = self.a.small, self.b.small
        baked = small_a.keys() ^ small_b.keys()
        baked.update(name for name in small_a.keys() & small_b.keys() if small_a[name] != small_b[name])
        return touched, touched | baked

    def _suspects(self, touched: set[str], standing: set[str]) -> set[int]:
        a, b = self.a, self.b
        unit_of_node = a.unit_of_node
        assert a.producer is not None and b.producer is not None and b.unequal is not None
        suspect = {unit_of_node[i] for i in self.reshaped}
        # values a differing node reads on one side only, and graph outputs of one side: whether their producers
        # keep them may differ
        reread: set[str] = {v.name for v in a.graph.output} ^ {v.name for v in b.graph.output}
        nodes_a, nodes_b = a.graph.node, b.graph.node
        for i in self.reshaped:
            reread.update(set(a.reads_of(nodes_a[i])).symmetric_difference(b.reads_of(nodes_b[i])))
        for name in chain(touched, reread):
            for producer in (a.producer, b.producer):
                p = producer.get(name)
                if p is not None:
                    suspect.add(unit_of_node[p])
        if standing:
            suspect.update(map(unit_of_node.__getitem__, self.readers(standing)))
        return suspect

    def readers(self, names: set[str]) -> set[int]:
        """The nodes that read any of ``names`` on either side."""
        found = set(chain.from_iterable(self.equal_readers(names).values()))
        nodes_a, nodes_b, reads_a, reads_b = self.a.graph.node, self.b.graph.node, self.a.reads_of, self.b.reads_of
        found.update(i for i in self.differ if not names.isdisjoint(reads_a(nodes_a[i]))
                     or not names.isdisjoint(reads_b(nodes_b[i])))
        return found

    def equal_readers(self, names: set[str]) -> dict[str, list[int]]:
        """The nodes equal on both sides that read each of ``names`` (kept per value)."""
        cache = self._readers
        todo = {name for name in names if name not in cache}
        if todo:
            found: dict[str, list[int]] = {name: [] for name in todo}
            if not self._none_read(todo):
                differ, reads_of = self._differ_set, self.a.reads_of
                for j, node in enumerate(self.a.graph.node):
                    reads = reads_of(node)
                    if not todo.isdisjoint(reads) and j not in differ:
                        for name in todo.intersection(reads):
                            found[name].append(j)
            cache.update(found)
        return {name: cache[name] for name in names}

    def _none_read(self, names: set[str]) -> bool:
        """Whether no node equal on both sides reads any of ``names``, shown by one C loop over the inputs of a side
        whose differing nodes read none of them (0.09 s at 100k nodes, against 0.11 for the Python pass that finds
        the readers)."""
        for cut in (self.a, self.b):
            nodes = cut.graph.node
            if not cut.nested and all(names.isdisjoint(nodes[i].input) for i in self.differ):
                io = cut.index.node_io()  # (as the scan read them: not read from protobuf again)
                if io is not None:
                    return all(names.isdisjoint(chain.from_iterable(part)) for part in _parts(io[0], self._progress))
                return all(names.isdisjoint(chain.from_iterable(map(_ALL, map(_INPUTS, part))))
                           for part in _parts(nodes, self._progress))
        return False

    def resolve_on_use(self, cut: GraphCut, uid: int) -> None:
        """Resolve unit ``uid`` of ``cut``, and with the first suspect one all the suspect ones of its side (the
        diff uses them all: resolved in one go, not one call each)."""
        key = id(cut)
        if uid in self.suspect and key not in self._all_suspects:
            self._all_suspects.add(key)
            self.resolve(cut, sorted(k for k in self.suspect if k < cut.n_calls))
        else:
            self.resolve(cut, (uid,))

    def resolve(self, cut: GraphCut, uids: Iterable[int]) -> None:
        """Resolve units ``uids`` of ``cut`` (one of the pair): reads and baked constants as ``GraphCut._cut``
        finds them, outputs kept when read outside the unit or graph outputs."""
        nodes, units, small = cut.graph.node, cut.units, cut.small
        graph_outputs = self._graph_outputs.get(id(cut))
        if graph_outputs is None:
            graph_outputs = self._graph_outputs[id(cut)] = {v.name for v in cut.graph.output}
        scratch: set[str] = set()
        for uid in uids:
            unit = units[uid]
            assert unit is not None
            if unit.reads is not UNREAD:
                continue
            top = unit.nodes
            if len(top) == 1:
                node = nodes[top[0]]
                cut.resolve_reads(uid, unit, cut.reads_of(node), small, scratch)
                outputs = list(node.output)
            else:
                cut.resolve_reads(uid, unit, [name for i in top for name in cut.reads_of(nodes[i])], small, scratch)
                outputs = [name for i in top for name in nodes[i].output]
            outside = self._read_outside(cut, unit, {o for o in outputs if o and o not in graph_outputs})
            unit.outputs = [o for o in outputs if o and (o in graph_outputs or o in outside)]

    def _read_outside(self, cut: GraphCut, unit: Unit, outputs: set[str]) -> set[str]:
        """Those of ``outputs`` (of ``unit``) that some unit other than their producer's reads (a node of no aten
        call, or of another call than the one of the value's last producer, as ``GraphCut._cut`` counts): for the
        first ``WITNESSED`` units of a side looked for among the next ``WINDOW`` nodes (a value is mostly read soon
        after it is made), else counted (a side's reads are counted once: 0.12 s at 100k nodes; searching instead
        made a pair whose 40% of nodes differ in metadata 2.4x as slow to diff, the units' own values searched for
        in vain)."""
        if not outputs:
            return outputs
        nodes, producer, unit_of_node, n_calls = cut.graph.node, cut.producer, cut.unit_of_node, cut.n_calls
        units = cut.units
        assert producer is not None
        # the call each output's last producer is part of (-1: a plain node, whose every reader counts)
        maker = {o: w if (w := unit_of_node[producer[o]]) < n_calls else -1 for o in outputs}
        found: set[str] = set()
        key = id(cut)
        counts = self._counts.get(key)
        if counts is None:
            searched = self._searched[key] = self._searched.get(key, 0) + 1
            if searched <= WITNESSED:
                start = max(unit.nodes) + 1
                for j in range(start, min(len(nodes), start + WINDOW)):
                    reads = cut.reads_of(nodes[j])
                    if not outputs.isdisjoint(reads):
                        hit = {o for o in outputs.intersection(reads) if maker[o] != unit_of_node[j]}
                        found |= hit
                        outputs = outputs - hit
                        if not outputs:
                            return found
            reads_of = _INPUTS if not cut.nested else cut.reads_of
            counts = self._counts[key] = Counter()
            for part in _parts(nodes, self._progress):
                counts.update(chain.from_iterable(map(_ALL, map(reads_of, part)) if reads_of is _INPUTS
                                                  else map(reads_of, part)))
        own: dict[int, Counter[str]] = {}  # what the maker's own nodes read
        for o in outputs:
            w = maker[o]
            if w == -1:
                mine = 0
            else:
                maker_unit = units[w]
                assert maker_unit is not None
                if len(maker_unit.nodes) == 1:  # (most calls: no Counter made)
                    mine = list(cut.reads_of(nodes[maker_unit.nodes[0]])).count(o)
                else:
                    read = own.get(w)
                    if read is None:
                        read = own[w] = Counter(chain.from_iterable(cut.reads_of(nodes[i]) for i in maker_unit.nodes))
                    mine = read[o]
            if counts[o] > mine:
                found.add(o)
        return found

    def baked(self, cut: GraphCut, names: set[str]) -> set[str]:
        """Those of ``names`` that an aten call of ``cut`` bakes in (``Side.baked``): small initializers that no
        node makes and a call reads."""
        small, producer = cut.small, cut.producer
        assert producer is not None
        candidates = {name for name in names if name in small and name not in producer}
        if not candidates:
            return set()
        n_calls, unit_of_node, nodes = cut.n_calls, cut.unit_of_node, cut.graph.node
        readers = self.equal_readers(candidates)
        out: set[str] = set()
        for name in candidates:
            if any(unit_of_node[j] < n_calls for j in readers[name]) or any(
                    unit_of_node[i] < n_calls and name in cut.reads_of(nodes[i]) for i in self.differ):
                out.add(name)
        return out


def _parts(nodes: Sequence[T], progress: Progress | None) -> Iterator[Sequence[T]]:
    """``nodes`` (or what was read of each) whole (one C loop each), or with a checkpoint ``STEP`` at a time,
    ``progress`` after each step."""
    if progress is None:
        yield nodes
        return
    total = len(nodes)
    for start in range(0, total, STEP):
        yield nodes[start:start + STEP]
        progress(min(start + STEP, total), total)


def _producers(nodes: Sequence[NodeProto], progress: Progress | None = None,
               read: Sequence[Sequence[str]] | None = None) -> dict[str, int] | None:
    """Value name -> the node that makes it, made in C loops (0.12 s at 100k nodes, against 0.25 for reading each
    node's outputs into lists); None when a value has several producers. ``read``: each node's outputs as the scan
    read them (``ModelIndex.node_io``), not read from protobuf again."""
    outputs: list[Sequence[str]] = []
    names: list[str] = []
    producer: dict[str, int] = {}
    parts: Iterator[Sequence[Any]] = _parts(nodes, progress) if read is None else _parts(read, progress)
    for part in parts:
        first, first_name = len(outputs), len(names)
        outputs.extend(map(_ALL, map(_OUTPUTS, part)) if read is None else part)
        names.extend(chain.from_iterable(outputs[first:]))
        producer.update(zip(names[first_name:], chain.from_iterable(
            map(repeat, range(first, len(outputs)), map(len, outputs[first:])))))
    empty = names.count("")  # an unused optional output produces nothing
    if empty:
        del producer[""]
    return producer if len(producer) == len(names) - empty else None


def _same_structure(x: NodeProto, y: NodeProto) -> bool:
    """Whether two nodes differ at most in their names, metadata and doc strings (what they read, make and do
    the same)."""
    return x.op_type == y.op_type and x.domain == y.domain and x.overload == y.overload and x.input == y.input \
        and x.output == y.output and x.attribute == y.attribute


def _number_plain_nodes(a: GraphCut, b: GraphCut) -> None:
    """Units for the nodes of no aten call, in graph order (one per node on each side, with the same ids)."""
    plain = [i for i, u in enumerate(a.unit_of_node) if u == -1]
    for cut in (a, b):
        unit_of_node = cut.unit_of_node
        for uid, i in enumerate(plain, cut.n_calls):
            unit_of_node[i] = uid
        cut.node_of_unit.extend(plain)
        cut.units.extend(repeat(None, len(plain)))

