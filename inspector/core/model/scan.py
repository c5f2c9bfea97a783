"""One pass over every node of a model, collecting what the function index and provenance need, and, in a model
the body template matcher will look at (``applies``), each node without fx metadata as the matcher keys it.

This is the hot path of opening a model: a 100k-node export must index in a few times the time protobuf
takes to parse it. So the pass reads each node's fields once, creates no object per node, and leaves all
per-call work (parsing FX text, module trees) to the indexes, which do it lazily.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import onnx

from inspector.core.model.calls import FX_NODE, NAME_SCOPES, RULE_NAME, AtenCall, add_rules
from inspector.core.model.keys import GraphScope, MainGraph
from inspector.core.model.walk import SUBGRAPH_OPS, NodePath, as_text, subgraphs

GroupKey = tuple[GraphScope, str]  # (scope, fx_node text)
_SERIALISE = onnx.AttributeProto.SerializeToString
_CONSTANT = "Constant"
_FIELDS = attrgetter("domain", "op_type", "overload", "attribute")  # what a group key reads of a node, in one C call
NodeFields = tuple[str, str, str, tuple[bytes, ...] | None]
TORCH_PRODUCER = "pytorch"
DYNAMO_IR = 10  # torch's dynamo exporter writes IR 10 (torch >= 2.5, tests/zoo); the TorchScript exporter IR <= 9


@dataclass(slots=True)
class ScanResult:
    """One pass over a model's nodes: op histograms, call candidates and aten call groups per scope."""

    # (domain, op_type) -> count, per scope
    histograms: dict[GraphScope, dict[tuple[str, str], int]] = field(default_factory=dict)
    # the first scope in which each (domain, op_type) occurs
    first_seen: dict[tuple[str, str], GraphScope] = field(default_factory=dict)
    # nodes that may call a local function (domain not a plain operator domain)
    candidates: list[tuple[GraphScope, NodePath, onnx.NodeProto]] = field(default_factory=list)
    node_counts: dict[GraphScope, int] = field(default_factory=dict)
    # aten calls: fx_node text -> node paths, first node, rewriter rule names
    groups: dict[GroupKey, list[NodePath]] = field(default_factory=dict)
    first_node: dict[GroupKey, onnx.NodeProto] = field(default_factory=dict)
    rules: dict[GroupKey, list[str]] = field(default_factory=dict)
    # each call's name_scopes text (the module tree's input), read while its first node is at hand: read later,
    # from a model larger than the CPU's cache, it cost 5-9 us per call instead of ~1; scopes_read: it was read
    name_scopes: dict[GroupKey, str | bytes] = field(default_factory=dict)
    scopes_read: bool = False
    # calls whose nodes all equal those of a call of another model's scan (``scan_like``): that call, whose FX head
    # need not be read again
    same_calls: dict[GroupKey, AtenCall] = field(default_factory=dict)
    nodes_with_metadata: int = 0
    nodes_without_fx: int = 0
    # the main graph's own nodes that carry no fx metadata, in order, as the template matcher keys them
    # (``recognise_nodes.node_keys``): the node's op type (a domain's: (domain, op type)), with the bytes of its
    # attributes where it has some (a Constant's: their names). Read here, where the scan reaches the node anyway: the
    # stripped 100k Llama replica's scan 0.158 -> 0.216 s, the matcher's keys 0.122 -> 0.022 s (CPU, best of 9 and 5:
    # reaching each node again cost more than reading its fields). Complete (one per main-graph node) only when no
    # main-graph node has fx metadata; a scan that meets such a node keeps no more.
    bare: list[object] = field(default_factory=list)
    # the main graph's nodes as read here, each once (``MainReads``): None for a scan that did not read them
    main: MainReads | None = None


@dataclass(frozen=True, slots=True)
class MainReads:
    """What the graph maps and group keys read of each main-graph node, in graph order, read by the scan while it is
    at the node: its inputs and outputs (``GraphMaps.inputs``, ``outputs``) and its fields as a group key holds them
    (``NodeFields``: domain, op type, overload and each attribute's bytes; None for a Constant, whose tensor, maybe
    large, is not copied: a key reads it from the node). Three passes over the 100k nodes of the Llama replica (the
    scan's, the maps', the keys' in call order) cost 0.30-0.31 s, one 0.22 (CPU, in-process, best of 3): reaching a
    node again, in a model larger than the CPU's caches, cost more than reading its fields. ``fields`` is None where
    the inputs and outputs alone were asked for (the diff's pair: ``ModelIndex.node_io``)."""

    inputs: list[list[str]]
    outputs: list[list[str]]
    fields: list[NodeFields] | None


def scan(scopes: Sequence[tuple[GraphScope, Sequence[onnx.NodeProto]]], plain_domains: Collection[str],
         modules: bool = True, keys: bool = False, reads: bool = False, fields: bool = True) -> ScanResult:
    """Walk ``scopes`` (and their subgraphs, iteratively); ``plain_domains`` hold only operators. ``modules``: also
    record each call's name_scopes text (``ScanResult.name_scopes``); ``keys``: each main-graph node without fx
    metadata as the template matcher keys it (``ScanResult.bare``); ``reads``: the main graph's nodes as the graph
    maps and group keys read them (``ScanResult.main``), for a caller that will make those; without ``fields``, their
    inputs and outputs alone (for a caller that reads those again, not the keys)."""
    r = ScanResult(scopes_read=modules)
    walk = _Walk(r, plain_domains, modules)
    for scope, nodes in scopes:
        hist: dict[str | tuple[str, str], int] = {}
        walk.last_value, walk.last_paths = None, []  # (each scope's calls are its own)
        count = 0
        stack: list[tuple[Sequence[onnx.NodeProto], NodePath]] = [(nodes, ())]
        while stack:
            seq, prefix = stack.pop()
            count += len(seq)
            main = not prefix and isinstance(scope, MainGraph)
            if main and reads:
                r.main = MainReads([], [], [] if fields else None)
            walk.nodes(scope, seq, prefix, hist, stack, r.main if main else None, keys and main)
        r.node_counts[scope] = count
        r.histograms[scope] = {(k if isinstance(k, tuple) else ("", k)): v for k, v in hist.items()}
        for op_key in r.histograms[scope]:
            r.first_seen.setdefault(op_key, scope)
    r.nodes_with_metadata, r.nodes_without_fx = walk.with_meta, walk.without_fx
    return r


class _Walk:
    """``scan``'s pass over one sequence of nodes at a time, and what carries over between them: where the metadata
    entries sit, the previous node's call, the counts."""

    __slots__ = ("fast_len", "fast_pos", "last_paths", "last_value", "modules", "plain", "r", "scopes_pos",
                 "with_meta", "without_fx")

    def __init__(self, r: ScanResult, plain_domains: Collection[str], modules: bool) -> None:
        self.r, self.plain, self.modules = r, plain_domains, modules
        # Exporters write the same metadata keys in the same order on every node; once the position of fx_node is
        # known, one look-up per node suffices. A node laid out differently (e.g. with a rewriter rule_name, which
        # shifts or adds entries) takes the full loop.
        self.fast_len = self.fast_pos = self.scopes_pos = -1
        self.last_value: object = None  # fx text of the previous node in this scope, and its group's paths
        self.last_paths: list[NodePath] = []
        self.with_meta = self.without_fx = 0

    def nodes(self, scope: GraphScope, seq: Sequence[onnx.NodeProto], prefix: NodePath,
              hist: dict[str | tuple[str, str], int], stack: list[tuple[Sequence[onnx.NodeProto], NodePath]],
              reads: MainReads | None, keys: bool) -> None:
        """Scan ``seq`` (at node path ``prefix``), pushing its subgraphs on ``stack``; ``reads``: the main graph's,
        filled here; ``keys``: also its bare nodes (``ScanResult.bare``)."""
        r, plain_domains, modules, name_scopes = self.r, self.plain, self.modules, self.r.name_scopes
        groups, first_node, groups_get, hist_get = r.groups, r.first_node, r.groups.get, hist.get
        fast_len, fast_pos, scopes_pos = self.fast_len, self.fast_pos, self.scopes_pos
        last_value, last_paths, with_meta, without_fx = self.last_value, self.last_paths, 0, 0
        fields_of, serialise, top = _FIELDS, _SERIALISE, not prefix
        bare = r.bare if keys else None
        keyed = reads is not None and reads.fields is not None  # (the fields a key reads too, or the values alone)
        if reads is not None:
            kept = reads.fields if reads.fields is not None else []  # (an empty list is kept: not ``or []``)
            add_in, add_out, add_fields = reads.inputs.append, reads.outputs.append, kept.append
        for i, node in enumerate(seq):
            if reads is not None:  # (read while the node is at hand: ``MainReads``)
                add_in(node.input[:])  # (a slice of a repeated field is made in C; list() iterates it in Python)
                add_out(node.output[:])
            if keyed:
                domain, op, overload, attrs = fields_of(node)
                blob = (None if op == _CONSTANT else () if not attrs else (serialise(attrs[0]),)
                        if len(attrs) == 1 else tuple(map(serialise, attrs[:])))
                add_fields((domain, op, overload, blob))
            else:
                domain, op = node.domain, node.op_type
            # (strings that are not valid UTF-8 arrive as bytes; build_index repairs them and retries)
            hk = (domain, op) if domain else op  # most nodes: domain "" keyed by op alone
            hist[hk] = hist_get(hk, 0) + 1
            path: NodePath = (i,) if top else (*prefix, i)
            if domain not in plain_domains:
                r.candidates.append((scope, path, node))
                stack.extend((g.node, (*path, step)) for step, g in subgraphs(node))
            elif op in SUBGRAPH_OPS:
                stack.extend((g.node, (*path, step)) for step, g in subgraphs(node))
            props = node.metadata_props
            n = len(props)
            if n:
                with_meta += 1
                if n == fast_len:
                    p = props[fast_pos]
                    if p.key == FX_NODE:
                        value = p.value
                        if value == last_value:  # the nodes of one aten call are usually adjacent
                            last_paths.append(path)
                            continue
                        key = (scope, value)
                        paths = groups_get(key)
                        if paths is None:
                            paths = groups[key] = [path]
                            first_node[key] = node
                            if modules:
                                if 0 <= scopes_pos < n and (p := props[scopes_pos]).key == NAME_SCOPES:
                                    name_scopes[key] = p.value
                                else:
                                    scopes_pos = _read_scopes(props, key, name_scopes)
                        else:
                            paths.append(path)
                        last_value, last_paths = value, paths
                        continue
                full = _read_all(r, scope, path, node, props, modules, scopes_pos)
                if full is not None:
                    bare = None  # (a node of an aten call: the list cannot be complete; not kept up)
                    if full[0] >= 0:
                        fast_len, (fast_pos, scopes_pos) = n, full
                    else:
                        scopes_pos = full[1]
                    continue
                without_fx += 1
            if bare is not None:  # (a main-graph node of no aten call: as the template matcher keys it)
                if not keyed:
                    bare.append((hk, attribute_bytes(op, attrs)) if (attrs := node.attribute) else hk)
                else:  # (``attribute_bytes`` from what was read above)
                    bare.append((hk, blob if blob is not None else tuple([a.name for a in attrs])) if attrs else hk)
        self.fast_len, self.fast_pos, self.scopes_pos = fast_len, fast_pos, scopes_pos
        self.last_value, self.last_paths = last_value, last_paths
        self.with_meta += with_meta
        self.without_fx += without_fx


def attribute_bytes(op: str, attrs: Sequence[onnx.AttributeProto]) -> tuple[bytes | str, ...]:
    """A node's attributes as the template matcher keys them (``ScanResult.bare``): each one's bytes, a Constant's
    names alone (its tensor, maybe large, is not copied)."""
    return tuple(map(_SERIALISE, attrs)) if op != _CONSTANT else tuple([a.name for a in attrs])


def _read_all(r: ScanResult, scope: GraphScope, path: NodePath, node: onnx.NodeProto,
              props: Sequence[onnx.StringStringEntryProto], modules: bool, scopes_pos: int) -> tuple[int, int] | None:
    """Record a node whose metadata is not laid out as expected, reading all of it. None when it has no fx_node;
    else where its fx_node is (-1 when a rewriter rule_name shifts the layout, so it is not the one to expect) and
    where the name_scopes entry is now expected."""
    fx_text = rule = None
    pos = -1
    for j, p in enumerate(props):
        k = p.key
        if k == FX_NODE:
            fx_text, pos = as_text(p.value), j
        elif k == RULE_NAME:
            rule = as_text(p.value)
    if fx_text is None:
        return None
    key = (scope, fx_text)
    paths = r.groups.get(key)
    if paths is None:
        r.groups[key] = [path]
        r.first_node[key] = node
        if modules:
            scopes_pos = _read_scopes(props, key, r.name_scopes)
    else:
        paths.append(path)
    if rule is None:
        return pos, scopes_pos
    add_rules(r.rules.setdefault(key, []), rule)
    return -1, scopes_pos


def _read_scopes(props: Sequence[onnx.StringStringEntryProto], key: GroupKey,
                 name_scopes: dict[GroupKey, str | bytes]) -> int:
    """Record the name_scopes entry of ``props`` under ``key``; where it is, or -1."""
    for j, p in enumerate(props):
        if p.key == NAME_SCOPES:
            name_scopes[key] = p.value
            return j
    return -1


def applies(proto: onnx.ModelProto) -> bool:
    """Whether the index looks for templates in this model: one that torch's dynamo exporter wrote (producer
    ``pytorch``, IR >= 10), whose bodies are torchlib's. TorchScript's symbolic functions and other producers lower
    differently, so a match there would pass a guess off as an aten call; ``scripts/measure_recognition.py``
    measures what share of them the templates explain (``recognise`` works on any graph). Here, not with the matcher:
    the index asks it of every model before its scan, which then keys each node for the matcher (``ScanResult.bare``),
    and importing the matcher's code to ask cost a model with its metadata 0.17 ms of start-up."""
    return proto.producer_name == TORCH_PRODUCER and proto.ir_version >= DYNAMO_IR
