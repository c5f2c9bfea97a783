"""Constant operands of a graph as the template matcher reads them (``recognise.Matcher``): which values are
constants (initializers and Constant nodes), their canonical values (made once per value), and the nodes that compute
a constant operand from constants alone (what the optimizer would have folded), so that a body made without the
optimizer still fits its template. Values are read from an untrusted model and only compared, never evaluated."""

from __future__ import annotations

import math
from typing import Any

import onnx

from inspector.core.aten.templates import Slot, canonical_tensor, constant_node_value
from inspector.core.model.graph import GraphMaps
from inspector.core.model.recognise_templates import Key

CONSTANT = "Constant"
# what torchlib does to a constant operand before use, and the optimizer folds (noopt slice: Cast, Reshape)
SHAPING = frozenset({"Cast", "CastLike", "Reshape", "Unsqueeze", "Squeeze", "Concat", "Identity"})
_MAX_COMPUTED = 16  # nodes that may compute one constant operand (torchlib's slice casts and reshapes 4 operands)


class GraphConstants:
    """The constants of one graph; ``taken`` is the matcher's set of nodes that belong to calls (shared, growing)."""

    def __init__(self, graph: onnx.GraphProto, maps: GraphMaps, taken: set[int], keys: list[Key]) -> None:
        self.graph, self.maps, self.taken, self._keys = graph, maps, taken, keys
        self._values: dict[str, Any] = {}
        self.nodes: dict[str, int] = {}  # a Constant node's output -> the node
        for i, (k, outs) in enumerate(zip(keys, maps.outputs)):  # (from the keys: no node read from protobuf again)
            if k[1] == CONSTANT and k[0] in ("", "ai.onnx") and outs:
                self.nodes[outs[0]] = i

    def is_constant(self, value: str) -> bool:
        return value in self.maps.initializers or value in self.nodes

    def value(self, value: str, keep: bool = True) -> Any:
        """The constant's canonical value, kept for the next read unless ``keep`` is False (a node signature reads
        each constant once: the 100k Llama replica's 11k weights would leave 22k objects for the collector)."""
        got = self._values.get(value)
        if got is None:
            t = self.maps.initializers.get(value)
            got = canonical_tensor(t) if t is not None else constant_node_value(
                self.graph.node[self.nodes[value]])
            if keep:
                self._values[value] = got
        return got

    def folded(self, value: str, budget: list[int]) -> set[int] | None:
        """The nodes that compute ``value`` from constants alone (what the optimizer folds: torchlib's Cast and
        Reshape of ``starts``/``dim`` in an export made without it), each read only on this path; None if it is not
        such a value. A shared Constant is a leaf, not taken."""
        if value in self.maps.initializers:
            return set()
        h = self.maps.producer.get(value)
        if value in self.nodes:  # (a Constant another call made is still a constant here)
            return {h} if h is not None and h not in self.taken and self.maps.read_count[value] == 1 else set()
        if h is None or h in self.taken:
            return None
        budget[0] -= 1
        if budget[0] < 0 or self.maps.read_count[value] != 1 or len(self.maps.outputs[h]) != 1 \
                or self._keys[h][1] not in SHAPING:
            return None
        return self._with_operands(h, budget)

    def _with_operands(self, h: int, budget: list[int]) -> set[int] | None:
        """Node ``h`` and the nodes that compute each of its operands from constants alone; None if one does not."""
        out = {h}
        for v in self.maps.inputs[h]:
            if v:
                got = self.folded(v, budget)
                if got is None:
                    return None
                out |= got
        return out

    def computed(self, value: str, read_by: int, first: bool = True) -> set[int] | None:
        """The nodes that compute a masked constant operand in the graph: constant-only nodes (``_folded``), or a
        Concat of such pieces and outside values (a size list with symbolic sizes, in a dynamic-shape export).
        ``read_by``: how many times the call reads it; read more often, it is a size computed once and shared (the
        exporter reuses one Concat for the views of a layer's query, key and value: gpt2_dynamic), which belongs to
        the call of its first reader, as a Constant node does: computed here where the call is that (``first``),
        else made by another call (no nodes)."""
        h = self.maps.producer.get(value)
        if h is None or h in self.taken or value in self.maps.graph_outputs:
            return None
        node = self.graph.node[h]
        size_list = node.op_type == "Concat" and node.domain in ("", "ai.onnx") and len(self.maps.outputs[h]) == 1
        if self.maps.read_count[value] != read_by:
            if not size_list or self.maps.read_count[value] < read_by \
                    or self.computed(value, self.maps.read_count[value]) is None:
                return None
            if not first:
                return set()
        budget = [_MAX_COMPUTED]
        inputs = self.maps.inputs[h]
        if size_list:
            out = {h}
            for v in inputs:
                got = self.folded(v, budget) if v else set()
                out |= got or set()  # a piece that is not constant is an outside value
            return out
        return self._with_operands(h, budget)

    def fits(self, slot: Slot, value: str) -> bool:
        if not value or not self.is_constant(value):
            return False
        if slot.masked:  # any value; one number where the one-op exports had a scalar (alpha: not a cos table)
            kind, got = slot.value, self.value(value)
            return not isinstance(kind, dict) or kind.get("n") != 0 or not isinstance(got, dict) \
                or math.prod(got.get("s", ())) == 1
        got, want = self.value(value), slot.value
        if isinstance(want, dict) and isinstance(got, dict):
            if got.get("t") != want.get("t") or len(got.get("s", ())) != len(want.get("s", ())):
                return False
            # a constant of one element is compared by value (gelu's 0.044715, an axis); a longer one is a shape,
            # a mask or a table made for the one-op export's input shapes: compared by type and rank only
            return len(want.get("v", ())) != 1 or got.get("v") == want.get("v")
        return bool(got == want)
