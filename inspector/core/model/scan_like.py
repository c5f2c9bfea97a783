"""The scan of a model that is mostly another model already indexed: the second model of a diff.

Two exports of one model have mostly equal nodes at equal places. Where a node equals the first model's node at its
place (one comparison in C, metadata included), what a scan would read from it is what the first model's scan read:
its operator, its fx_node text and so its aten call. So the second scan is the first one's aten calls, with only the
nodes that differ read, and the calls they were or are part of made again from the second model's nodes. At 100k
nodes this replaces a 0.3-0.5 s pass over every node's metadata by a comparison of the two node lists (0.1 s), which
the diff's cut then takes over (``ModelIndex.unequal``).

The calls the first model's templates recognised (no metadata: their fx texts are ours) are taken over only where
none of their nodes differs; else none is, and the template matcher reads the nodes without metadata again
(``index._recognise``): a stripped SegFormer's GELU, taken over at the place where the second export has a ReLU,
read as ``aten::gelu`` there.

Only for what the shortcut covers exactly: flat main graphs (no node with a subgraph: every node path is ``(i,)``) of
one length, no local functions, and the first scan having read what this one must (name scopes). Anything else, or
more than half of the nodes differing, gets a scan of its own. The result must be the one a scan of its own gives
(tests/test_scan_like.py checks it on edited copies of zoo exports).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, islice
from operator import ne

import onnx

from inspector.core.model.calls import FX_NODE, NAME_SCOPES, RULE_NAME, AtenCall, add_rules
from inspector.core.model.keys import MAIN
from inspector.core.model.scan import GroupKey, ScanResult
from inspector.core.model.walk import STANDARD_DOMAINS, SUBGRAPH_OPS, NodePath, as_text


@dataclass(frozen=True, slots=True)
class Earlier:
    """What the scan of the first model found that the second scan can take over."""

    nodes: Sequence[onnx.NodeProto]  # its main graph's nodes
    calls: Sequence[AtenCall]
    histogram: dict[tuple[str, str], int]  # its main graph's op histogram
    nodes_with_metadata: int
    nodes_without_fx: int
    scopes_read: bool  # its calls carry their name_scopes text
    damaged_texts: frozenset[str]  # fx texts of its calls that could not be read as FX
    has_functions: bool


def unequal_nodes(nodes: Sequence[onnx.NodeProto], others: Sequence[onnx.NodeProto],
                  step: int = 4096) -> list[int] | None:
    """Where ``nodes`` and ``others`` (of one length) differ; None as soon as more than half of those compared so
    far do (a renamed copy differs everywhere: it is found out within the first few thousand nodes)."""
    out: list[int] = []
    n = len(nodes)
    unequal = map(ne, nodes, others)  # (each pair compared in C: 0.10 -> 0.09 s at 100k nodes)
    for start in range(0, n, step):
        end = min(start + step, n)
        out.extend(compress(range(start, end), islice(unequal, end - start)))
        if 2 * len(out) > end:
            return None
    return out


def scan_like(model: onnx.ModelProto, earlier: Earlier, modules: bool) -> tuple[ScanResult, list[int]] | None:
    """The scan of ``model`` made from ``earlier``'s, and the main-graph nodes that differ; None when the shortcut
    does not cover the pair."""
    nodes = model.graph.node
    if (model.functions or earlier.has_functions or len(nodes) != len(earlier.nodes)
            or (modules and not earlier.scopes_read)
            or any(d not in STANDARD_DOMAINS or op in SUBGRAPH_OPS for d, op in earlier.histogram)):
        return None
    differ = unequal_nodes(nodes, earlier.nodes)
    if differ is None:
        return None
    histogram = dict(earlier.histogram)
    with_meta, without_fx = earlier.nodes_with_metadata, earlier.nodes_without_fx
    touched: set[str] = set()  # fx texts of the calls a differing node was or is part of
    own: dict[str, list[NodePath]] = {}  # fx text -> the differing nodes that carry it, in order
    for i in differ:
        before, node = earlier.nodes[i], nodes[i]
        domain, op = node.domain, node.op_type
        if domain not in STANDARD_DOMAINS or op in SUBGRAPH_OPS:
            return None  # a node that could hold a subgraph or call something: a scan of its own
        op_key = (before.domain, before.op_type)
        histogram[op_key] -= 1
        if not histogram[op_key]:
            del histogram[op_key]
        histogram[(domain, op)] = histogram.get((domain, op), 0) + 1
        had, fx_before, _rule = _read(before.metadata_props)
        has, fx, _rule = _read(node.metadata_props)
        with_meta += has - had
        without_fx += (has and fx is None) - (had and fx_before is None)
        if fx_before is not None:
            touched.add(fx_before)
        if fx is not None:
            touched.add(fx)
            paths = own.get(fx)
            if paths is None:
                own[fx] = [(i,)]
            else:
                paths.append((i,))
    r = ScanResult(scopes_read=modules)
    r.histograms[MAIN] = histogram
    r.first_seen = dict.fromkeys(histogram, MAIN)
    r.node_counts[MAIN] = len(nodes)
    r.nodes_with_metadata, r.nodes_without_fx = with_meta, without_fx
    groups, first_node, rules, scopes, same = r.groups, r.first_node, r.rules, r.name_scopes, r.same_calls
    removed = set(differ)
    damaged = earlier.damaged_texts
    moved = False  # whether a call's first node moved, or a call came or went: then the order is made again
    # recognised calls are taken over only if none reads a node that differs; else none is, and the template matcher
    # looks at every node without metadata again (a call's name and place among the recognised ones are the matcher's)
    recognised = not any(call.recognised and not removed.isdisjoint(p[0] for p in call.node_paths)
                         for call in earlier.calls)
    for call in earlier.calls:
        if call.recognised and not recognised:
            moved = True
            continue
        fx = call.fx_text
        key = (MAIN, fx)
        if fx in touched:  # made again from its nodes in this model: those equal in both, and its own that differ
            paths = [p for p in call.node_paths if p[0] not in removed]
            paths += own.get(fx, ())
            paths.sort()
            moved = moved or not paths or paths[0] != call.node_paths[0]
            if paths:
                _remake(r, key, paths, nodes, modules)
            touched.discard(fx)
            continue
        paths = groups[key] = call.node_paths  # (shared: a call's paths are never changed once scanned)
        first_node[key] = nodes[paths[0][0]]
        if call.rule_names:
            rules[key] = list(call.rule_names)
        if modules and call.scopes_text is not None:
            scopes[key] = call.scopes_text
        if fx not in damaged:
            same[key] = call
    new_calls = touched.intersection(own)  # fx texts no call of the earlier model had
    for fx in new_calls:
        _remake(r, (MAIN, fx), own[fx], nodes, modules)  # (differing nodes are listed in order)
    if moved or new_calls:  # in order of first node, as a scan finds them
        r.groups = dict(sorted(groups.items(), key=lambda kv: kv[1][0][0]))
    return r, differ


def _read(props: Sequence[onnx.StringStringEntryProto]) -> tuple[bool, str | None, str | None]:
    """(has metadata, fx_node text, rewriter rule name), as a scan reads a node whose metadata it reads in full."""
    fx = rule = None
    for p in props:
        k = p.key
        if k == FX_NODE:
            fx = as_text(p.value)
        elif k == RULE_NAME:
            rule = as_text(p.value)
    return bool(props), fx, rule


def _remake(r: ScanResult, key: GroupKey, paths: list[NodePath], nodes: Sequence[onnx.NodeProto],
            modules: bool) -> None:
    """A call some differing node was or is part of, from its nodes in this model."""
    r.groups[key] = paths
    first = nodes[paths[0][0]]  # type: ignore[index]
    r.first_node[key] = first
    seen: list[str] = []
    for node in _at(nodes, paths):
        _has, _fx, rule = _read(node.metadata_props)
        if rule is not None:
            add_rules(seen, rule)
    if seen:
        r.rules[key] = seen
    if modules:
        value = next((p.value for p in first.metadata_props if p.key == NAME_SCOPES), None)
        if value is not None:
            r.name_scopes[key] = value


def _at(nodes: Sequence[onnx.NodeProto], paths: Iterable[NodePath]) -> Iterable[onnx.NodeProto]:
    return (nodes[p[0]] for p in paths)  # type: ignore[index]
