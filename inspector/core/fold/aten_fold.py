"""Fold a flat dynamo export into aten-level local functions with overloads.

Each aten call group becomes a call of a local function named after the aten op (domain ``pkg.torch.aten`` by
default). The function's inputs are bound by their *role* in the aten call: a value the group reads is the aten
call's tensor argument k when the metadata says so (the value is the output of the group of the FX node that
argument names, or a graph input / parameter whose ``original_node_name`` is that FX name); those come first, in
argument order, named after the schema's parameters; whatever else the group reads follows in body order. Calls
with one target and one body share a function only when their bindings agree, so every call passes its inputs in
the order the function declares them. The function's attributes are the aten non-tensor parameters, declared
with their schema defaults, and the call node passes this call's values, so the aten signature survives. Bodies
that differ (specialised values) become separate overloads named by what differs (``fold_names``). Groups
that cannot be folded safely stay flat and are reported. Which calls fold and how is planned in ``plan.py``; the
protobuf is made in ``build.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

import onnx

from inspector.core.bodies.bodykey import group_shapes
from inspector.core.fold.build import (
    Made,
    call_head,
    call_inputs,
    call_node,
    copy_known,
    fold_subgraphs,
    keep_only,
    make_call,
    make_function,
    sort_entries,
    topological,
    unknown_fields,
)
from inspector.core.fold.messages import opset_id
from inspector.core.fold.names import Unnamed, overload_keys
from inspector.core.fold.plan import FunctionClass, Planned, Planner, classes_of
from inspector.core.model.graph import GraphMaps, node_reads
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.model.walk import NodePath

DEFAULT_DOMAIN = "pkg.torch.aten"
# calls whose group shapes are made in one loop at a time: the shapes of all 80k calls of a 100k-node export, held at
# once, took 17 MB more peak memory. Few, so that a chunk's shapes are gone before CPython's cyclic collector moves
# them to its oldest generation, which counts them towards a full collection: at 100k nodes, in-process with the
# collector on, 1,024 at a time and lists in the plans made 12 full collections (2.4 s of a 5.9 s fold, CPU under a
# load of 1.4-2), 64 and tuples 9 (1.25 s of 4.6 s); no difference with the collector off
_SHAPED = 64


@dataclass(slots=True)
class FoldReport:
    calls_folded: int = 0
    functions: list[FunctionKey] = field(default_factory=list)
    left_flat: list[tuple[str, str, str]] = field(default_factory=list)  # (fx name, target, reason)
    nodes_before: int = 0
    nodes_after: int = 0

    @property
    def families(self) -> int:
        return len({k.family for k in self.functions})


@dataclass(frozen=True, slots=True)
class _Entries:
    """The new main graph's entries in the original order, by column: what each reads and makes, the original node's
    index, and what replaces that node (None: nothing). Columns, not a tuple per entry: a tuple holding lists stays
    with the garbage collector, and 100k of them, held through the rest of the fold, made it collect more often."""

    reads: list[Sequence[str]] = field(default_factory=list)
    makes: list[Sequence[str]] = field(default_factory=list)
    at: list[int] = field(default_factory=list)
    made: list[Made] = field(default_factory=list)


def fold_model(index: ModelIndex, domain: str = DEFAULT_DOMAIN, inside_subgraphs: bool = False, *,
               consume: bool = False) -> tuple[onnx.ModelProto, FoldReport]:
    """A new model in which every foldable aten call is a call of a local function.

    With ``inside_subgraphs``, calls whose nodes all sit in one branch or loop body of a main-graph node (the
    If branches of torch.cond) are folded there too. Off by default: ``diff`` and the index read function calls
    of the main graph only, so they would not recognise the fold of such a call.

    With ``consume``, the folded model is made from the index's own protobuf: nodes are changed and moved in place
    instead of copied (the command does this; a 100k-node export's nodes and metadata are not copied once more),
    and the index must not be used afterwards. Either way the folded model is the same.
    """
    return _fold(index, domain, inside_subgraphs, consume)


def _fold(index: ModelIndex, domain: str, inside_subgraphs: bool,
          consume: bool) -> tuple[onnx.ModelProto, FoldReport]:
    proto = index.proto
    graph = proto.graph
    if any(k.domain == domain for k in index.functions.functions):
        raise ValueError(f"the model already defines functions in domain {domain!r}; choose another --domain")
    maps = index.graph_maps()
    planner = Planner(index, maps, inside_subgraphs)
    report = FoldReport(nodes_before=len(graph.node))
    planned: list[Planned] = []
    main_claimed: set[int] = set()
    claimed: dict[NodePath, set[int]] = {(): main_claimed}  # node indices taken by a group, per graph (by node path)
    calls = index.provenance.calls
    for start in range(0, len(calls), _SHAPED):
        chunk = calls[start:start + _SHAPED]
        for call, shape in zip(chunk, group_shapes(chunk, maps), strict=True):  # shapes in one loop (bodykey)
            plan = planner.plan(call, claimed, shape)
            if isinstance(plan, str):
                report.left_flat.append((call.name, call.target, plan))
            else:
                planned.append(plan)
                prefix = plan.maps.prefix  # (no empty set made per call to find the main graph's: setdefault did)
                (main_claimed if not prefix else claimed.setdefault(prefix, set())).update(plan.indices)

    classes = classes_of(planned)
    keys = overload_keys([Unnamed(c.target, c.plans[0].body, f"{c.fingerprint}|{c.binding()}") for c in classes],
                         domain)
    for cls, key in zip(classes, keys, strict=True):
        cls.key = key
    functions, call_at, inner = _functions_and_calls(classes, list(proto.opset_import))
    entries = _entries(graph, maps, call_at, inner, claimed, planner)
    ordered = topological(entries.reads, entries.makes, {v.name for v in graph.input} | set(maps.initializers))
    # Everything still read anywhere (subgraphs included) keeps its initializer and its value info (the value
    # info carries the parameter's metadata, e.g. original_node_name).
    still_read = set(chain.from_iterable(entries.reads)) | maps.graph_outputs
    used = still_read.union(chain.from_iterable(entries.makes))
    moved = {name for body in {id(p.body): p.body for p in planned}.values() for name in body.constants}  # per body
    # The folded model: the index's protobuf itself (``consume``) or a copy; either way its main graph's nodes
    # are those of the index, by position.
    folded = proto if consume and not unknown_fields(proto) else copy_known(proto)
    _place(folded.graph, graph, entries, ordered)
    report.calls_folded = len(planned)
    keep_only(folded.graph.value_info, used.__contains__)
    keep_only(folded.graph.initializer, still_read.union(maps.initializers.keys() - moved).__contains__)
    folded.functions.extend(functions)
    if functions:  # nothing folded (every call unreadable or left flat): the model as it was, no unused opset
        if not any(o.domain == domain for o in folded.opset_import):
            folded.opset_import.append(opset_id(domain, 1))
        folded.ir_version = max(folded.ir_version, 10)
    report.functions = [FunctionKey(f.domain, f.name, f.overload) for f in functions]
    report.nodes_after = len(folded.graph.node)
    return folded, report


def _functions_and_calls(classes: list[FunctionClass], opsets: list[onnx.OperatorSetIdProto],
                         ) -> tuple[list[onnx.FunctionProto], dict[int, Planned], dict[NodePath, dict[int, Planned]]]:
    """One function per class, and the calls to make (each plan given its head and input order): the call replaces
    its group at the group's last node, in the main graph (by node index) or in a branch or loop body (by its node
    path, then node index)."""
    functions: list[onnx.FunctionProto] = []
    call_at: dict[int, Planned] = {}
    inner: dict[NodePath, dict[int, Planned]] = {}  # calls in branch/loop bodies
    for cls in classes:
        assert cls.key is not None
        order = cls.order()
        functions.append(make_function(cls.key, cls, order, opsets))
        as_read = () if order == list(range(len(order))) else tuple(order)  # see call_inputs
        heads: dict[int, bytes] = {}  # by id of the form (kept alive by the plans)
        for plan in cls.plans:
            head = heads.get(id(plan.form))
            if head is None:
                head = heads[id(plan.form)] = call_head(cls.key, plan.form)
            plan.head, plan.order = head, as_read
            where = call_at if not plan.maps.prefix else inner.setdefault(plan.maps.prefix, {})
            where[plan.indices[-1]] = plan
    return functions, call_at, inner


def _entries(graph: onnx.GraphProto, maps: GraphMaps, call_at: dict[int, Planned],
             inner: dict[NodePath, dict[int, Planned]], claimed: dict[NodePath, set[int]],
             planner: Planner) -> _Entries:
    """The new main graph's entries in the original order."""
    holders: dict[int, list[NodePath]] = {}  # main-graph node -> its subgraphs in which calls were folded
    for prefix in inner:
        holders.setdefault(int(prefix[0]), []).append(prefix)
    main_claimed = claimed[()]
    entries = _Entries()
    reads, makes, at, mades = entries.reads.append, entries.makes.append, entries.at.append, entries.made.append
    outputs = maps.outputs
    for i in range(len(graph.node)):
        made: Made = call_at.get(i)
        if made is not None:
            reads(call_inputs(made))
            makes(made.outputs)
        elif i in holders:
            made = fold_subgraphs(graph.node[i], holders[i], inner, claimed, planner)
            reads(tuple(node_reads(made)))
            makes(outputs[i])
        elif i not in main_claimed:
            reads(tuple(maps.reads(i)))
            makes(outputs[i])
        else:
            continue
        at(i)
        mades(made)
    return entries


def _place(folded: onnx.GraphProto, original: onnx.GraphProto, entries: _Entries, ordered: list[int]) -> None:
    """Put the folded graph's nodes in their new order: each call is made from its group's first node (which carries
    the metadata the call keeps), kept nodes stay as they are, and one sort puts them in place."""
    nodes = folded.node
    held = list(nodes)  # held, so that each node's wrapper (and its id) stays the same
    first_nodes = original.node
    placed: list[onnx.NodeProto] = []  # the nodes of the folded graph, in their order
    ranks = [len(held)] * len(held)  # per node of ``held``, its place (dropped: after every placed one)
    all_reads, all_at, all_made = entries.reads, entries.at, entries.made
    for k in ordered:
        made = all_made[k]
        if made is None:
            at = all_at[k]
        elif type(made) is Planned:
            at = made.indices[0]  # where the first node sits (the wrapper the call holds is the graph's own)
            if first_nodes[at] is made.call.first_node:  # the call is made of its first node, in place
                maps = made.maps
                make_call(held[at], made, all_reads[k], had=(maps.inputs[at], maps.outputs[at]))
            else:
                at = made.indices[-1]
                make_call(call_node(held, made), made, all_reads[k])
        else:  # a node whose subgraphs hold folded calls
            at = all_at[k]
            held[at].CopyFrom(made)
        ranks[at] = len(placed)
        placed.append(held[at])
    sort_entries(nodes, held, ranks, placed)
