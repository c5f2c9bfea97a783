"""The data flow of one body, as link evidence reads it: where each constant lands (through value-preserving
ops such as Cast, Reshape and Concat) and which of the body's inputs each value derives from; and the static shapes
of a graph's typed values, read on first use.

Model files are untrusted: a body's nodes may name values that nothing produces or form long chains; every walk
here is bounded (``_MAX_VIA`` steps) and never recurses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import onnx

from inspector.core.bodies.body import Body
from inspector.core.model.graph import declared_names
from inspector.core.util.progress import Progress

if TYPE_CHECKING:
    from inspector.core.specialise.constant_uses import Use

_STEP = 4096  # declarations per step of shapes read with progress (as GraphMaps reads nodes)

Shape = list[int | None]

_PASS_THROUGH = {"Cast": 0, "CastLike": 0, "Identity": 0, "Sqrt": 0, "Reshape": 0}
_MAX_VIA = 4


class BodyFlow:
    """Consumers of each value of a body and which of the body's inputs each value derives from (one pass)."""

    def __init__(self, body: Body, shapes: Mapping[str, Shape]) -> None:
        self.body = body
        self.shapes = shapes
        self.consumers: dict[str, list[tuple[int, int]]] = {}
        self.producer: dict[str, int] = {}
        self.derives: dict[str, frozenset[int]] = {name: frozenset((k,)) for k, name in enumerate(body.inputs)}
        for i, node in enumerate(body.nodes):
            src: frozenset[int] = frozenset()
            for slot, name in enumerate(node.input):
                if name:
                    self.consumers.setdefault(name, []).append((i, slot))
                    src |= self.derives.get(name, frozenset())
            for name in node.output:
                if name:
                    self.producer[name] = i
                    self.derives[name] = src

    def uses(self, name: str) -> list[Use]:
        """Where the value ``name`` lands, following value-preserving ops (bounded, no cycles in a body)."""
        from inspector.core.specialise.constant_uses import Use  # (where a constant is followed: start-up)

        out: list[Use] = []
        stack: list[tuple[str, tuple[str, ...]]] = [(name, ())]
        while stack:
            value, via = stack.pop()
            for i, slot in self.consumers.get(value, ()):
                node = self.body.nodes[i]
                if _PASS_THROUGH.get(node.op_type) == slot and len(via) < _MAX_VIA and node.output:
                    stack.append((node.output[0], (*via, node.op_type)))
                elif node.op_type == "Concat" and len(via) < _MAX_VIA and node.output:
                    stack.append((node.output[0], (*via, f"Concat[{slot}]")))
                else:
                    out.append(Use(i, node.op_type, slot, via))
        return out

    def input_shape(self, k: int) -> Shape | None:
        """The static shape of the body's ``k``-th input (the call's ``k``-th tensor argument), if typed."""
        if k >= len(self.body.inputs):
            return None
        return self.shapes.get(self.body.inputs[k])

    def from_inputs(self, name: str) -> frozenset[int]:
        return self.derives.get(name, frozenset())


class GraphShapes(Mapping[str, Shape]):
    """Static shapes (None for symbolic dims) of the typed values of a graph, each read on first use.

    Typing every value of a 100k-node graph costs about as much as parsing it, and the link rules ask for the
    shapes of a few hundred: so only where each name is declared is read up front, on the first look-up. The last
    typed declaration among inputs, value infos and outputs wins; ``outer`` (the enclosing graph's shapes, for a
    branch or loop body) answers for names this graph does not type."""

    def __init__(self, graph: onnx.GraphProto, outer: GraphShapes | None = None,
                 progress: Progress | None = None, names: Callable[[], list[str]] | None = None) -> None:
        """``progress``: a checkpoint (``core.util.progress``), in declarations: they are then read ``_STEP`` at a
        time, with ``progress(done, total)`` after each step (as ``GraphMaps`` reads nodes). ``names``: where to get
        the names ``graph`` declares when they were read already (``ModelIndex.declared_names``), on first look-up."""
        self._graph = graph
        self._outer = outer
        self._progress = progress
        self._names = names
        # name -> where its last declaration is (inputs, value infos, outputs, counted in turn): positions, not the
        # declarations, so that no wrapper of 100k value infos is kept (0.075 -> 0.05 s at 100k nodes, CPU)
        self._where: dict[str, int] | None = None
        self._repeated: dict[str, list[int]] = {}
        self._known: dict[str, Shape | None] = {}

    def _declared(self) -> dict[str, int]:
        """Name -> where its last declaration is; names declared more than once keep all theirs in ``_repeated``."""
        if self._where is None:
            g, progress = self._graph, self._progress
            given = self._names() if self._names is not None else None
            total = len(g.input) + len(g.value_info) + len(g.output)
            if given is not None and len(given) == total:  # read already: only the map is made, in steps too
                names = given
            else:
                names, progress = declared_names(g, progress, _STEP), None
            where: dict[str, int] = {}  # the last declaration of a name wins
            step = _STEP if progress is not None else max(total, 1)
            for start in range(0, total, step):
                where.update(zip(names[start:start + step] if step < total else names, range(start, start + step)))
                if progress is not None:
                    progress(min(start + step, total), total)
            self._where = where
            if len(where) < len(names):
                for k, name in enumerate(names):
                    self._repeated.setdefault(name, []).append(k)
        return self._where

    def _at(self, k: int) -> onnx.ValueInfoProto:
        """The declaration at position ``k`` of ``_declared``."""
        g = self._graph
        for declared in (g.input, g.value_info):
            if k < len(declared):
                return declared[k]
            k -= len(declared)
        return g.output[k]

    def _shape(self, name: str) -> Shape | None:
        known = self._known
        if name in known:
            return known[name]
        shape: Shape | None = None
        last = self._declared().get(name)
        if last is not None:
            for k in reversed(self._repeated.get(name, (last,))):
                shape = value_shape(self._at(k))
                if shape is not None:
                    break
        if shape is None and self._outer is not None:
            shape = self._outer._shape(name)
        known[name] = shape
        return shape

    def __getitem__(self, name: str) -> Shape:
        shape = self._shape(name) if isinstance(name, str) else None
        if shape is None:
            raise KeyError(name)
        return shape

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(self._outer or ())
        names.update(dict.fromkeys(self._declared()))
        return (n for n in names if self._shape(n) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def value_shape(v: onnx.ValueInfoProto) -> Shape | None:
    """The static shape of one typed value (None for symbolic dims), or None when it has no tensor shape."""
    t = v.type.tensor_type
    if v.type.HasField("tensor_type") and t.HasField("shape"):
        return [int(d.dim_value) if d.HasField("dim_value") else None for d in t.shape.dim]
    return None
