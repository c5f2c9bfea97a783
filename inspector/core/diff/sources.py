"""Aten calls from different sources: an export whose fx metadata was stripped has its calls recognised by body
template (``core.model.recognise``), named by the templates' candidates (``recognised::_unsafe_view_or_view``), over
the nodes the templates claim; the same export with its metadata groups the same nodes under the targets fx names
(``aten::view``). Diffed against each other, the two read as dozens of families added and removed, calls rewired and
bare nodes removed, for nodes that are bit for bit the same (a stripped T5 against its original: 32 changes, one of
them real: where the calls come from, ``diff.facts``).

So where the sides' calls come from different sources (recognised on one side and from fx metadata on the other, or
recognised on both with other candidates), a call is matched to the other side's call over the same nodes (found at
the same place: a node of one operator making the same outputs, at its index or making its first output) whose
target is among its candidates, before calls are aligned by position. Such a pair is one call: no family added or
removed, no rewiring, and no body change when its nodes are equal but for metadata, a Constant node one side's
template claims and the other side's metadata leaves outside the call apart. When one side's calls are recognised
and the other's are not, a call whose every node is on the other side, equal but for metadata (bare, or in calls the
templates group otherwise: SDPA recognised as the matmuls and softmax it lowers to, a batch norm the optimizer folded
into a Conv), is not added or removed, nor its family, nor the calls in the branches of an If equal on the other
side; nor is a bare node equal to a node of the other side's calls. What differs still shows: an edited node is not
equal, so its call is reported (an edited eps as a value change, a MatMul's swapped inputs as its call removed and
the SDPA call added). Calls of one source on both sides are matched as before, so two exports with their metadata, or
two stripped ones, diff byte for byte as they did.

Only calls left unmatched by key are looked at, and only when a side has recognised calls: a diff of two exports
with their metadata does no more work than before. Model files are untrusted: subgraphs compared without their
metadata are walked with a stack, not by recursion (a branch nested hundreds deep), and only for nodes whose
attributes differ.
"""

from __future__ import annotations

import onnx

from inspector.core.diff.units import Side, aten_family
from inspector.core.diff.values import same_content
from inspector.core.model.calls import AtenCall


def same_node(x: onnx.NodeProto, y: onnx.NodeProto) -> bool:
    """Equal but for name and metadata (what stripping the metadata changes), that of the nodes of its subgraphs
    too (an If whose branches hold fx calls on one side)."""
    if not (x.op_type == y.op_type and x.domain == y.domain and x.overload == y.overload and x.input == y.input
            and x.output == y.output):
        return False
    if x.attribute == y.attribute:
        return True
    return any(a.g.node or a.graphs for a in x.attribute) and _bare_attributes(x) == _bare_attributes(y)


def _bare_attributes(node: onnx.NodeProto) -> list[onnx.AttributeProto]:
    """A copy of the node's attributes with every node of their subgraphs, at any depth, without metadata."""
    out = []
    for a in node.attribute:
        copy = onnx.AttributeProto()
        copy.CopyFrom(a)
        stack = [copy.g, *copy.graphs] if copy.HasField("g") else list(copy.graphs)
        while stack:
            graph = stack.pop()
            for n in graph.node:
                del n.metadata_props[:]
                for b in n.attribute:
                    if b.HasField("g"):
                        stack.append(b.g)
                    stack.extend(b.graphs)
        out.append(copy)
    return out


def same_place(x: onnx.NodeProto, y: onnx.NodeProto) -> bool:
    """One operator making the same outputs: the node at this place, whatever its attributes and inputs."""
    return x.op_type == y.op_type and x.domain == y.domain and x.overload == y.overload and x.output == y.output


def _targets(call: AtenCall) -> set[str]:
    return set(call.candidates) or {call.target}


def other_source(a: AtenCall, b: AtenCall) -> bool:
    """Whether two calls come from different sources (template and fx metadata, or templates with other candidates)
    and may stand for one aten call: one target among the other's candidates."""
    if bool(a.recognised) == bool(b.recognised) and (not a.recognised or a.candidates == b.candidates):
        return False
    return not _targets(a).isdisjoint(_targets(b))


def _is_constant(node: onnx.NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")


class Sources:
    """The calls of A matched to B's across sources (``pairs``), and what either side holds otherwise than the
    other: unmatched calls whose nodes are all on the other side (``calls_*``), bare nodes in the other side's calls
    (``nodes_*``) and the targets of calls in branches of nodes equal on the other side (``nested_*``)."""

    def __init__(self, A: Side, B: Side) -> None:
        self.A, self.B = A, B
        ra, rb = A.index.provenance.recognised, B.index.provenance.recognised
        self.active = bool(ra or rb)
        self.mixed = (ra > 0) != (rb > 0)  # one side recognised, the other not: bare nodes may be calls there
        self.pairs: dict[int, int] = {}  # call of A -> call of B, matched across sources
        self.calls_a: set[int] = set()  # unmatched calls whose nodes are all on the other side
        self.calls_b: set[int] = set()
        self.nodes_a: set[int] = set()  # plain-node units whose node is in a call of the other side
        self.nodes_b: set[int] = set()
        self.nested_a: set[str] = set()  # targets of calls nested in main-graph nodes equal on the other side
        self.nested_b: set[str] = set()
        self._same: dict[int, bool] = {}
        self._places: tuple[dict[int, int | None], dict[int, int | None]] = ({}, {})  # A's nodes in B, B's in A
        self._targets: tuple[set[str], set[str]] | None = None

    def _place(self, side: Side, other: Side, i: int, strict: bool = True) -> int | None:
        """The node of ``other`` at the place of node ``i`` of ``side``: of one operator making the same outputs, at
        its index, else the one making its first output (kept: matching, comparing and covering ask again); when
        ``strict``, only if equal to it but for metadata."""
        places = self._places[0 if side is self.A else 1]
        j = places.get(i, -1)
        if j == -1:
            node, nodes = side.graph.node[i], other.graph.node
            if i < len(nodes) and same_place(node, nodes[i]):
                j = i
            else:
                j = other.producer.get(node.output[0]) if node.output else None
                j = j if j is not None and same_place(node, nodes[j]) else None
            places[i] = j
        if j is None or not strict:
            return j
        return j if same_node(side.graph.node[i], other.graph.node[j]) else None

    def match(self, rest_a: dict[str, list[int]], rest_b: dict[str, list[int]], umap: dict[int, int]) -> None:
        """Match the calls left after the key step (per target, in order) to the other side's call over the same
        nodes when they come from different sources; take them out of ``rest_a`` and ``rest_b``."""
        if not self.active:
            return
        left_b = {k for ks in rest_b.values() for k in ks}
        for ks in rest_a.values():
            for ka in ks:
                kb = self._partner(ka, left_b)
                if kb is not None:
                    umap[ka] = kb
                    self.pairs[ka] = kb
                    left_b.discard(kb)
        if not self.pairs:
            return
        for rest, taken in ((rest_a, set(self.pairs)), (rest_b, set(self.pairs.values()))):
            for target in list(rest):
                rest[target] = [k for k in rest[target] if k not in taken]
                if not rest[target]:
                    del rest[target]

    def _partner(self, ka: int, left_b: set[int]) -> int | None:
        """B's call over the nodes of A's call ``ka`` (Constants apart), when the two come from different sources."""
        A, B = self.A, self.B
        ua = A.units[ka]  # (nodes and call: known before the unit is resolved)
        assert ua is not None
        hit: set[int] = set()
        places = []
        for i in ua.nodes:
            j = self._place(A, B, i, strict=False)
            if j is None:
                return None
            places.append(j)
            kb = B.unit_of_node[j]
            if kb < B.n_calls:
                hit.add(kb)
            elif not _is_constant(A.graph.node[i]):
                return None  # a node of A's call that B leaves bare: not the same call
        if len(hit) != 1:
            return None
        kb = hit.pop()
        ub = B.units[kb]
        assert ub is not None
        if kb not in left_b or ua.call is None or ub.call is None or not other_source(ua.call, ub.call):
            return None
        if places == ub.nodes:
            return kb  # B's call is at the places of A's nodes and has no other
        for j in ub.nodes:
            at = self._place(B, A, j, strict=False)
            if at is None:
                return None
            k = A.unit_of_node[at]
            if k != ka and (k < A.n_calls or not _is_constant(B.graph.node[j])):
                return None  # a node of B's call that is in another call of A, or bare there and no Constant
        return kb

    def cover(self, umap: dict[int, int]) -> None:
        """When one side's calls are recognised and the other's are not: each unmatched call whose every node is
        on the other side, bare or in its calls (the templates grouped them otherwise: a stripped GPT-2's SDPA is
        recognised as the matmul, softmax and where calls it lowers to), and each bare node equal to a node of the
        other side's calls."""
        if not self.mixed:
            return
        A, B = self.A, self.B
        matched_b = set(umap.values())
        for side, other, calls, nodes, skip in ((A, B, self.calls_a, self.nodes_b, umap.keys()),
                                                (B, A, self.calls_b, self.nodes_a, matched_b)):
            units, unit_of_node, n_calls = other.units, other.unit_of_node, other.n_calls
            place = self._place
            for k in range(side.n_calls):
                matched = k in skip  # (its nodes in the other side's calls need no closer look)
                inside = True  # every node of the call is on the other side, bare or in a call
                for i in side.units[k].nodes:  # type: ignore[union-attr]
                    j = place(side, other, i, False)
                    uid = unit_of_node[j] if j is not None else -1
                    if uid < 0 or (uid >= n_calls and units[uid] is not None):
                        inside = False  # not there, or a function call of the other side
                    elif units[uid] is None or not matched:
                        if place(side, other, i) is None:
                            inside = False  # edited
                        elif units[uid] is None:
                            nodes.add(uid)
                if inside and not matched:
                    calls.add(k)
        for side, other, nested in ((A, B, self.nested_a), (B, A, self.nested_b)):
            for call in side.index.provenance.calls:  # calls in the subgraphs of a main-graph node equal on the other
                path = call.node_paths[0] if call.node_paths else ()
                if len(path) > 1 and isinstance(path[0], int) and self._place(side, other, path[0]) is not None:
                    nested.add(call.target)

    def same_body(self, ka: int, kb: int) -> bool:
        """Whether a pair matched across sources has the same nodes but for metadata, in order, Constants one side
        claims and the other leaves outside apart, and the same baked constants."""
        hit = self._same.get(ka)
        if hit is None:
            hit = self._same[ka] = self._compare(ka, kb)
        return hit

    def _compare(self, ka: int, kb: int) -> bool:
        A, B = self.A, self.B
        ua, ub = A.unit(ka), B.unit(kb)
        place = self._place
        own_a, own_b = ua.nodes, ub.nodes
        if [place(A, B, i, False) for i in own_a] != own_b:  # (the common case: the same nodes, in order)
            own_a = [i for i in ua.nodes if (j := place(A, B, i, False)) is not None and B.unit_of_node[j] == kb]
            own_b = [j for j in ub.nodes if (i := place(B, A, j, False)) is not None and A.unit_of_node[i] == ka]
            if len(own_a) != len(ua.nodes) and len(own_b) != len(ub.nodes):
                return False  # each claims a Constant the other leaves outside: not one call
        nodes_a, nodes_b = A.graph.node, B.graph.node
        if len(own_a) != len(own_b) or not all(same_node(nodes_a[i], nodes_b[j]) for i, j in zip(own_a, own_b)):
            return False
        ca, cb = dict(ua.constants), dict(ub.constants)
        return list(ca) == list(cb) and all(t == cb[name] or same_content(t, cb[name]) for name, t in ca.items())

    def covered_targets(self) -> tuple[set[str], set[str]]:
        """The targets of A's and B's calls matched across sources or covered: a family or overload of them that
        one side lacks is the same nodes under another target, or none, on the other side (so a call of such a
        family that is neither is a call removed or added, not lost with its family)."""
        if self._targets is not None:
            return self._targets
        A, B = self.A, self.B
        out: tuple[set[str], set[str]] = (set(self.nested_a), set(self.nested_b))
        for side, ids, targets in ((A, [*self.pairs, *self.calls_a], out[0]),
                                   (B, [*self.pairs.values(), *self.calls_b], out[1])):
            for k in ids:
                call = side.units[k].call  # type: ignore[union-attr]
                assert call is not None
                targets.add(call.target)
        self._targets = out
        return out

    def families(self) -> tuple[set[str], set[str]]:
        """The family labels of ``covered_targets``."""
        targets_a, targets_b = self.covered_targets()
        return {aten_family(t) for t in targets_a}, {aten_family(t) for t in targets_b}
