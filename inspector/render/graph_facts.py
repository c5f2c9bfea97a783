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


class GraphFacts:
    """One graph's lookup tables, each built on first use by one pass over the graph."""

    def __init__(self, nodes: Sequence[onnx.NodeProto], outputs: list[str],
                 value_infos: Callable[[], Sequence[Sequence[onnx.ValueInfoProto]]],
                 initializers: Sequence[onnx.TensorProto] | None, fcalls: dict[int, FunctionKey],
                 read_count: Callable[[], Counter[str]] | None = None) -> None:
        """``read_count``: the graph's read counts when they are shared (the main graph's ``GraphMaps``)."""
        self.nodes = nodes
        self._read_count = read_count
        self.outputs = outputs
        self.initializers = initializers
        self.fcalls = fcalls  # top-level node index -> the local function it calls
        self._value_infos = value_infos
        self._infos: dict[str, onnx.ValueInfoProto] | None = None  # the first value info of each name
        self._more_infos: dict[str, list[onnx.ValueInfoProto]] = {}  # the later ones of a repeated name
        self._scanned = False  # the first scene's types were read by a pass over the value infos
        self._small: dict[str, tuple[int, onnx.TensorProto]] | None = None
        self._reads: Counter[str] | None = None
        self._deep_readers: dict[str, list[NodePath]] | None = None

    def types(self, needed: Iterable[str]) -> dict[str, str]:
        """Tensor types of ``needed`` values: the first value info of that name that has a type."""
        infos = self._infos
        if infos is None and not self._scanned:  # one scene: a pass reading names is cheaper than a map of all
            self._scanned = True
            return _types(itertools.chain.from_iterable(self._value_infos()), set(needed))
        if infos is None:
            # names read in C: a 100k-node export has 100k value infos
            seq = list(itertools.chain.from_iterable(self._value_infos()))
            names = list(map(attrgetter("name"), seq))
            infos = self._infos = dict(zip(names, seq))
            if len(infos) < len(seq):  # a repeated name: keep the first, and the later ones for when it has no type
                infos = self._infos = {}
                for name, v in zip(names, seq):
                    if name in infos:
                        self._more_infos.setdefault(name, []).append(v)
                    else:
                        infos[name] = v
        out: dict[str, str] = {}
        for name in needed:
            first = infos.get(name)
            if first is None:
                continue
            for v in (first, *self._more_infos.get(name, ())):
                text = type_text(v.type)
                if text:
                    out[name] = text
                    break
        return out

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


def _types(infos: Iterable[onnx.ValueInfoProto], needed: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if not needed:
        return out
    for v in infos:
        name = v.name
        if name in needed and name not in out:
            text = type_text(v.type)
            if text:
                out[name] = text
    return out
