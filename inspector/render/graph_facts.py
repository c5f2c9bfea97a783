"""One graph's lookup tables for drawing its scenes: value types by name, small initializers, read counts, readers.

Each table needs a pass over a whole graph (100k nodes and value infos in a large export), so each is built on first
use and kept by ``Scenes`` for every scene of that graph; a single scene reads only the names it needs.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

import onnx

from inspector.core.model.graph import is_small_constant, node_reads
from inspector.core.model.keys import FunctionKey
from inspector.core.model.values import type_text
from inspector.core.model.walk import NodePath, iter_nodes, may_have_subgraphs

_NAME = attrgetter("name")


class GraphFacts:
    """One graph's lookup tables, each built on first use by one pass over the graph."""

    def __init__(self, nodes: Sequence[onnx.NodeProto], outputs: list[str],
                 value_infos: Callable[[], Sequence[Sequence[onnx.ValueInfoProto]]],
                 initializers: Sequence[onnx.TensorProto] | None, fcalls: dict[int, FunctionKey],
                 read_count: Callable[[], Counter[str]] | None = None,
                 names: Callable[[], list[str]] | None = None) -> None:
        """``read_count``: the graph's read counts when they are shared (the main graph's ``GraphMaps``). ``names``:
        the names of ``value_infos``' declarations in its order, when they were read already (the main graph's
        ``ModelIndex.declared_names``)."""
        self.nodes = nodes
        self._read_count = read_count
        self.outputs = outputs
        self.initializers = initializers
        self.fcalls = fcalls  # top-level node index -> the local function it calls
        self._value_infos = value_infos
        self._names = names
        # name -> where its first declaration is (the sequences of value_infos counted in turn), and where the later
        # ones of a repeated name are: positions, not 100k value infos, made once for every scene of the graph
        self._first: dict[str, int] | None = None
        self._later: dict[str, list[int]] = {}
        self._small: dict[str, tuple[int, onnx.TensorProto]] | None = None
        self._reads: Counter[str] | None = None
        self._deep_readers: dict[str, list[NodePath]] | None = None

    def types(self, needed: Iterable[str]) -> dict[str, str]:
        """Tensor types of ``needed`` values: the first value info of that name that has a type."""
        first = self._positions()
        later = self._later
        out: dict[str, str] = {}
        for name in needed:
            k = first.get(name)
            if k is None:
                continue
            for at in (k, *later.get(name, ())):
                text = type_text(self._at(at).type)
                if text:
                    out[name] = text
                    break
        return out

    def _positions(self) -> dict[str, int]:
        """Name -> where its first declaration is, made on first use from the names read already when there are
        (the report's scenes: the specialiser's maps read them; two passes over 100k value infos, one for the first
        scene and one for a map, cost 0.09 s of a 100k-node report), else read here, in C."""
        if self._first is None:
            seqs = self._value_infos()
            total = sum(map(len, seqs))
            names = self._names() if self._names is not None else None
            if names is None or len(names) != total:
                names = list(map(_NAME, itertools.chain.from_iterable(seqs)))
            first = self._first = dict(zip(reversed(names), range(total - 1, -1, -1)))  # the first of a name wins
            if len(first) < total:  # a repeated name: the later declarations, for when the first has no type
                for k, name in enumerate(names):
                    if first[name] != k:
                        self._later.setdefault(name, []).append(k)
        return self._first

    def _at(self, k: int) -> onnx.ValueInfoProto:
        """The declaration at position ``k`` (``_positions``)."""
        for declared in self._value_infos():
            if k < len(declared):
                return declared[k]
            k -= len(declared)
        raise IndexError(k)

    def small_initializers(self) -> dict[str, tuple[int, onnx.TensorProto]]:
        """Small initializers by name (the first small one of a repeated name), with their position."""
        if self._small is None:
            self._small = {}
            for k, t in enumerate(self.initializers or ()):
                if t.name not in self._small and is_small_constant(t):
                    self._small[t.name] = (k, t)
        return self._small

    def reads(self) -> Counter[str]:
        """Value -> how many times top-level nodes read it (captured names of subgraphs included), counted in C."""
        if self._reads is None and self._read_count is not None:
            self._reads = self._read_count()
        if self._reads is None:
            nodes = self.nodes
            reads = Counter(itertools.chain.from_iterable(
                node_reads(node) if may_have_subgraphs(node) else node.input for node in nodes))
            self._reads = reads
        return self._reads

    def deep_readers(self) -> dict[str, list[NodePath]]:
        """Value -> the nodes at any depth whose inputs name it."""
        if self._deep_readers is None:
            readers: dict[str, list[NodePath]] = {}
            for p, node, _depth in iter_nodes(self.nodes):
                for v in node.input:
                    readers.setdefault(v, []).append(p)
            self._deep_readers = readers
        return self._deep_readers
