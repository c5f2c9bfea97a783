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
that cannot be folded safely stay flat and are reported.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import onnx
from google.protobuf.unknown_fields import UnknownFieldSet
from onnx import AttributeProto, helper

from inspector.core.aten.schemas import BoundArgument, Parameter
from inspector.core.bodies.body import Body, group_body
from inspector.core.bodies.bodykey import group_shape
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.fold.names import Unnamed, identifier, overload_keys
from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import FxNode, Symbol, TensorRef
from inspector.core.model.graph import ORIGINAL_NODE_NAME, GraphMaps, node_reads
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.signature import CallSignature, SignatureForm, SignatureForms, call_signature
from inspector.core.model.walk import NodePath, resolve_path, subgraphs
from inspector.core.util.gc_pause import paused_gc

DEFAULT_DOMAIN = "pkg.torch.aten"
USER_INPUT = "USER_INPUT"


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


@dataclass(slots=True)
class _Planned:
    call: AtenCall
    body: Body  # shared by the calls of one group key: names are those of the call that built it
    fingerprint: str
    indices: list[int]
    reads: list[str]  # what this call's group reads, in body (first-use) order
    outputs: list[str]  # what this call's group makes that is read outside it
    roles: list[int | None]  # per read: the tensor argument it is, by position in ``arg_names``
    form: _Form
    maps: GraphMaps  # of the graph holding the group: the main graph, or a branch or loop body of one of its nodes


@dataclass(slots=True)
class _Form:
    """What the calls of one FX argument form share: tensor arguments named by schema parameter (``tensors_1`` for
    lists), the non-tensor arguments, and the call node's attributes made from them."""

    arg_names: list[str]
    bound: list[BoundArgument]  # non-tensor arguments, and numbers passed to Tensor parameters
    attributes: list[AttributeProto]
    doc: str  # the schema text
    arg_refs: list[int] = field(default_factory=list)  # per tensor argument, which %reference of the text it is
    args: list[str] = field(default_factory=list)  # per tensor argument, its FX name (forms of one call only)


@dataclass(slots=True)
class _Class:
    """Calls of one target and one body whose input bindings agree: one function."""

    target: str
    fingerprint: str
    roles: dict[int, int]  # read position -> tensor argument position
    plans: list[_Planned]
    key: FunctionKey | None = None

    def accepts(self, roles: list[int | None]) -> bool:
        taken = {r: p for p, r in self.roles.items()}
        for p, r in enumerate(roles):
            if r is None:
                continue
            if self.roles.get(p, r) != r or taken.get(r, p) != p:
                return False
        return True

    def add(self, plan: _Planned) -> None:
        self.plans.append(plan)
        for p, r in enumerate(plan.roles):
            if r is not None:
                self.roles[p] = r

    def order(self) -> list[int]:
        """Formal input order as read positions: bound roles by argument position, then the rest in body order."""
        n = len(self.plans[0].reads)
        bound = sorted(self.roles, key=lambda p: self.roles[p])
        return bound + [p for p in range(n) if p not in self.roles]

    def binding(self) -> str:
        return ",".join(f"{p}:{r}" for p, r in sorted(self.roles.items()))


_Call = tuple[bytes, _Planned, list[int]]  # a call to make: its head (``_call_head``), plan and input order
_Made = None | onnx.NodeProto | _Call  # what replaces a node of the graph


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
    with paused_gc():  # many small objects and no cycles: the cyclic GC would rescan them again and again
        return _fold(index, domain, inside_subgraphs, consume)


def _fold(index: ModelIndex, domain: str, inside_subgraphs: bool,
          consume: bool) -> tuple[onnx.ModelProto, FoldReport]:
    proto = index.proto
    graph = proto.graph
    if any(k.domain == domain for k in index.functions.functions):
        raise ValueError(f"the model already defines functions in domain {domain!r}; choose another --domain")
    maps = index.graph_maps()
    planner = _Planner(index, maps, inside_subgraphs)
    report = FoldReport(nodes_before=len(graph.node))
    planned: list[_Planned] = []
    claimed: dict[NodePath, set[int]] = {(): set()}  # node indices taken by a group, per graph (by node path)
    for call in index.provenance.calls:
        plan = planner.plan(call, claimed)
        if isinstance(plan, str):
            report.left_flat.append((call.name, call.target, plan))
        else:
            planned.append(plan)
            claimed.setdefault(plan.maps.prefix, set()).update(plan.indices)

    classes = _classes(planned)
    keys = overload_keys([Unnamed(c.target, c.plans[0].body, f"{c.fingerprint}|{c.binding()}") for c in classes],
                         domain)
    for cls, key in zip(classes, keys, strict=True):
        cls.key = key
    functions: list[onnx.FunctionProto] = []
    # the call replaces its group at the group's last node; per entry of the new graph: reads, outputs, and the
    # original node index or the call to make
    call_at: dict[int, _Call] = {}
    inner: dict[NodePath, dict[int, _Call]] = {}  # calls in branch/loop bodies
    opsets = list(proto.opset_import)
    for cls in classes:
        assert cls.key is not None
        order = cls.order()
        functions.append(_make_function(cls.key, cls, order, opsets))
        as_read = [] if order == list(range(len(order))) else order  # see _call_inputs
        heads: dict[int, bytes] = {}  # by id of the form (kept alive by the plans)
        for plan in cls.plans:
            head = heads.get(id(plan.form))
            if head is None:
                head = heads[id(plan.form)] = _call_head(cls.key, plan.form)
            where = call_at if not plan.maps.prefix else inner.setdefault(plan.maps.prefix, {})
            where[plan.indices[-1]] = (head, plan, as_read)
    holders: dict[int, list[NodePath]] = {}  # main-graph node -> its subgraphs in which calls were folded
    for prefix in inner:
        holders.setdefault(int(prefix[0]), []).append(prefix)
    main_claimed = claimed[()]
    # per entry: what it reads and makes, the original node's index, and what replaces that node (None: nothing)
    entries: list[tuple[list[str], list[str], int, _Made]] = []
    for i in range(len(graph.node)):
        made = call_at.get(i)
        if made is not None:
            entries.append((_call_inputs(made[1], made[2]), made[1].outputs, i, made))
        elif i in holders:
            holder = _fold_subgraphs(graph.node[i], holders[i], inner, claimed, planner)
            entries.append((node_reads(holder), maps.outputs[i], i, holder))
        elif i not in main_claimed:
            entries.append((maps.reads(i), maps.outputs[i], i, None))
    ordered = _topological([(e[0], e[1]) for e in entries], {v.name for v in graph.input} | set(maps.initializers))
    # Everything still read anywhere (subgraphs included) keeps its initializer and its value info (the value
    # info carries the parameter's metadata, e.g. original_node_name).
    still_read = set(chain.from_iterable([e[0] for e in entries])) | maps.graph_outputs
    used = still_read.union(chain.from_iterable([e[1] for e in entries]))
    moved = {name for plan in planned for name in plan.body.constants}
    # The folded model: the index's protobuf itself (``consume``) or a copy; either way its main graph's nodes
    # are those of the index, by position. Each call is made from its group's first node (which carries the
    # metadata the call keeps), kept nodes stay as they are, and one sort puts them in their new order.
    folded = proto if consume and not _unknown_fields(proto) else _copy_known(proto)
    nodes = folded.graph.node
    held = list(nodes)  # held, so that each node's wrapper (and its id, which ``rank`` keys) stays the same
    original = graph.node
    rank: dict[int, int] = {}  # id of a node of the folded graph -> its place
    for k in ordered:
        reads, _outs, i, made = entries[k]
        if made is None:
            node = held[i]
        elif type(made) is tuple:
            plan = made[1]
            at = plan.indices[0]  # where the first node sits (the wrapper the call holds is the graph's own)
            node = held[at] if original[at] is plan.call.first_node else _call_node(held, plan)
            _make_call(node, made[0], plan, reads)
        else:  # a node whose subgraphs hold folded calls
            node = held[i]
            node.CopyFrom(made)
        rank[id(node)] = len(rank)
    last = len(rank)
    nodes.sort(key=lambda n: rank.get(id(n), last))
    del nodes[last:]
    report.calls_folded = len(planned)
    _keep_only(folded.graph.value_info, lambda v: v.name in used)
    _keep_only(folded.graph.initializer, lambda t: t.name not in moved or t.name in still_read)
    folded.functions.extend(functions)
    if not any(o.domain == domain for o in folded.opset_import):
        folded.opset_import.append(helper.make_opsetid(domain, 1))
    folded.ir_version = max(folded.ir_version, 10)
    report.functions = [FunctionKey(f.domain, f.name, f.overload) for f in functions]
    report.nodes_after = len(folded.graph.node)
    return folded, report


def _unknown_fields(proto: onnx.ModelProto) -> bool:
    """Whether the model or its main graph carries fields this onnx does not know (a copy drops those)."""
    return bool(len(UnknownFieldSet(proto)) or len(UnknownFieldSet(proto.graph)))


def _copy_known(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model with the fields onnx knows, at the model's and the main graph's level (nodes, tensors
    and the rest are copied whole)."""
    folded = onnx.ModelProto()
    for desc, value in proto.ListFields():
        if desc.name != "graph":
            _copy_field(folded, desc, value)
    for desc, value in proto.graph.ListFields():
        _copy_field(folded.graph, desc, value)
    folded.graph.SetInParent()
    return folded


def _keep_only(items: Any, keep: Callable[[Any], bool]) -> None:
    """Drop the entries of a repeated message field for which ``keep`` is false, in place (a stable sort moves
    the kept ones to the front; nothing is copied)."""
    held = list(items)
    dropped = {id(x) for x in held if not keep(x)}
    if dropped:
        items.sort(key=lambda x: id(x) in dropped)
        del items[len(held) - len(dropped):]


def _copy_field(target: Any, desc: Any, value: Any) -> None:
    repeated = desc.is_repeated if hasattr(desc, "is_repeated") else desc.label == desc.LABEL_REPEATED
    if repeated:
        getattr(target, desc.name).extend(value)
    elif desc.type == desc.TYPE_MESSAGE:
        getattr(target, desc.name).CopyFrom(value)
    else:
        setattr(target, desc.name, value)


def _fold_subgraphs(node: onnx.NodeProto, prefixes: list[NodePath],
                    inner: dict[NodePath, dict[int, _Call]],
                    claimed: dict[NodePath, set[int]], planner: _Planner) -> onnx.NodeProto:
    """A copy of ``node`` (an If, Loop or Scan) whose subgraphs at ``prefixes`` have their folded calls in place
    of their groups; what else the subgraph holds and declares is kept, value infos of values that are gone are
    dropped."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for prefix in prefixes:
        sub = planner.maps_at(prefix)
        graph = next((g for s, g in subgraphs(copy) if s == prefix[1]), None)
        if sub is None or graph is None:
            continue
        calls, taken = inner[prefix], claimed.get(prefix, set())
        entries: list[tuple[list[str], list[str], onnx.NodeProto]] = []
        for j in range(len(sub.inputs)):
            made = calls.get(j)
            if made is not None:
                head, plan, order = made
                call = onnx.NodeProto()
                reads = _call_inputs(plan, order)
                _make_call(call, head, plan, reads, fresh=True)
                entries.append((reads, plan.outputs, call))
            elif j not in taken:
                entries.append((sub.reads(j), sub.outputs[j], sub.graph.node[j]))
        made_here = {o for _r, outs, _n in entries for o in outs}
        outer = {r for reads, _o, _n in entries for r in reads} - made_here
        ordered = _topological([(r, o) for r, o, _n in entries], outer)
        used = made_here | outer | {v.name for v in graph.output}
        keep_vi = [v for v in graph.value_info if v.name in used]
        new_nodes = [entries[k][2] for k in ordered]
        del graph.node[:]
        graph.node.extend(new_nodes)
        del graph.value_info[:]
        graph.value_info.extend(keep_vi)
    return copy


class _Planner:
    """Plans the fold of each call. Work that depends only on the body (``group_body``, its fingerprint) is done
    once per distinct group key (``core/bodies/bodykey.py``), and work that depends only on the FX arguments' form (the
    schema binding, the call's attributes) once per form (``SignatureForms``); each call binds its own names."""

    def __init__(self, index: ModelIndex, maps: GraphMaps, inside_subgraphs: bool = False) -> None:
        self.maps = maps
        self.inside_subgraphs = inside_subgraphs
        self.evidence = _Evidence(index, maps)
        self.signatures = SignatureForms()
        self.bodies: dict[Hashable, tuple[Body, str]] = {}
        self.forms: dict[int, _Form] = {}  # by id of the SignatureForm (kept alive by ``signatures``)
        self.inner: dict[NodePath, GraphMaps | None] = {}

    def maps_at(self, prefix: NodePath) -> GraphMaps | None:
        """Maps of the branch or loop body ``prefix`` = (main-graph node, attribute); None if there is none."""
        if prefix not in self.inner:
            index, attr = prefix
            graph = None
            if isinstance(index, int) and index < len(self.maps.inputs):
                graph = next((g for s, g in subgraphs(self.maps.graph.node[index]) if s == attr), None)
            self.inner[prefix] = GraphMaps(graph, self.maps, prefix) if graph is not None else None
        return self.inner[prefix]

    def plan(self, call: AtenCall, claimed: dict[NodePath, set[int]]) -> _Planned | str:
        """The call's plan, or why it stays flat."""
        reason = _why_not(call, claimed[()])
        main = self.maps
        maps: GraphMaps | None = main
        if reason == _IN_SUBGRAPH and self.inside_subgraphs:
            prefixes = {p[:-1] for p in call.node_paths}
            prefix = prefixes.pop() if len(prefixes) == 1 else None
            maps = self.maps_at(prefix) if prefix is not None and len(prefix) == 2 else None
            if prefix is None or maps is None:
                return reason
            if any(p[-1] in claimed.get(prefix, ()) for p in call.node_paths):
                return "nodes shared with another call"
            reason = None
        if reason is not None or maps is None:
            return reason or _IN_SUBGRAPH
        shared = self.signatures.form(call)
        if shared is not None:
            sig_form, names = shared
            if not sig_form.fx.complete:
                return "fx_node metadata unreadable"
            form = self.forms.get(id(sig_form))
            if form is None:
                form = self.forms[id(sig_form)] = _form(sig_form.signature, sig_form.fx, shared=True)
            args = [names[k] for k in form.arg_refs] if form.arg_refs else form.args  # this call's tensor arguments
        else:
            fx = call.fx
            if fx is None or not fx.complete:
                return "fx_node metadata unreadable"
            form = _form(call_signature(call), fx, shared=False)
            args = form.args
        shape = group_shape(call, maps) if maps is main else None
        if shape is not None:
            known = self.bodies.get(shape.key)
            if known is None:
                body = group_body(call, maps)
                known = self.bodies[shape.key] = (body, fingerprint(body).full)
            body, fp = known
            indices, reads, outputs = shape.indices, shape.reads, shape.outputs
        else:
            body = group_body(call, maps)
            fp = fingerprint(body).full
            indices = [int(p[-1]) for p in body.node_paths]
            reads = list(body.canonical_inputs if body.canonical_inputs is not None else body.inputs)
            outputs = body.outputs
        reason = (_cycle_reason(indices, maps) if len(indices) > 1 else None) or \
            (None if outputs else "no output is used")
        if reason is not None:
            return reason
        return _Planned(call, body, fp, indices, reads, outputs, self.evidence.roles(reads, args), form, maps)


class _Evidence:
    """Which FX node an ONNX value of the main graph is, from metadata only: the output of the group of that
    FX node, or a graph input / parameter whose ``original_node_name`` (or, for user inputs, name) is it."""

    def __init__(self, index: ModelIndex, maps: GraphMaps) -> None:
        self.maps = maps
        # value -> the FX node it is; a set only for a value claimed by several (one set per value of a 100k-node
        # graph cost 0.1 s)
        self.fx_of: dict[str, str | set[str]] = {}
        fx_of, outputs = self.fx_of, maps.outputs
        for call in index.provenance.calls:
            if call.scope is not MAIN and call.scope != MAIN:
                continue
            for p in call.node_paths:
                if len(p) == 1 and type(p[0]) is int:
                    outs = outputs[p[0]]
                else:  # in a branch or loop body (value names are unique across the model's graphs)
                    try:
                        outs = list(resolve_path(maps.graph.node, p).output)
                    except KeyError:
                        continue
                name = call.name
                for out in outs:
                    if out:
                        known = fx_of.get(out)
                        if known is None:
                            fx_of[out] = name
                        elif known != name:
                            self._add(out, name)
        graph = maps.graph
        for v in (*graph.input, *graph.value_info):
            props = v.metadata_props  # few values carry any: testing is cheaper than iterating an empty one
            if not props:
                continue
            for prop in props:
                if prop.key == ORIGINAL_NODE_NAME:
                    self._add(v.name, prop.value)
        for v in graph.input:
            kinds = {p.value for p in v.metadata_props if p.key == "pkg.torch.export.graph_signature.InputSpec.kind"}
            if kinds <= {USER_INPUT} and v.name not in maps.initializers:
                self._add(v.name, v.name)  # user inputs are the FX placeholders

    def _add(self, value: str, fx_name: str) -> None:
        known = self.fx_of.get(value)
        if known is None:
            self.fx_of[value] = fx_name
        elif isinstance(known, str):
            if known != fx_name:
                self.fx_of[value] = {known, fx_name}
        else:
            known.add(fx_name)

    def roles(self, reads: list[str], args: list[str]) -> list[int | None]:
        """Per read, the position of the tensor argument it is; None without evidence or when ambiguous."""
        roles: list[int | None] = []
        used: set[int] = set()
        fx_of = self.fx_of
        for name in reads:
            names = fx_of.get(name)
            role = None
            if names:
                one = type(names) is str
                for k, a in enumerate(args):
                    if (a == names if one else a in names) and k not in used:
                        role = k
                        used.add(k)
                        break
            roles.append(role)
        return roles


def _form(sig: CallSignature, fx: FxNode, shared: bool) -> _Form:
    """The form's tensor arguments, non-tensor arguments and call attributes; with ``shared``, tensor arguments
    are the placeholders of a ``SignatureForm`` and are recorded by reference number."""
    args: list[str] = []
    arg_names: list[str] = []
    refs: list[TensorRef] = []
    if sig.bound:
        for b in sig.bound:
            items = b.value if isinstance(b.value, (list, tuple)) else [b.value]
            mine = [x for x in items if isinstance(x, TensorRef)]
            for j, ref in enumerate(mine):
                refs.append(ref)
                arg_names.append(b.parameter.name if len(items) == 1 else f"{b.parameter.name}_{j}")
    else:
        for v in (*fx.args, *fx.kwargs.values()):
            refs.extend(x for x in (v if isinstance(v, (list, tuple)) else (v,)) if isinstance(x, TensorRef))
        arg_names = [f"arg{k}" for k in range(len(refs))]
    # non-tensor arguments, and numbers passed to Tensor parameters (``mul(x, 0.5)``): attributes of the call
    bound = [b for b in sig.bound if not b.parameter.is_tensor or _is_number(b.value)]
    attributes = [a for a in (_attribute(b.parameter.name, b.value, b.parameter) if b.provided else None
                              for b in bound) if a is not None]
    doc = sig.schema.text if sig.schema else ""
    if shared:
        arg_refs = [SignatureForm.reference(r) for r in refs]
        return _Form(arg_names, bound, attributes, doc, arg_refs=[k for k in arg_refs if k is not None])
    args = [r.name for r in refs]
    return _Form(arg_names, bound, attributes, doc, args=args)


def _classes(planned: list[_Planned]) -> list[_Class]:
    """Calls grouped by target, body and tensor parameters, split further where their input bindings disagree."""
    by_key: dict[tuple[str, str, tuple[str, ...]], list[_Class]] = {}
    out: list[_Class] = []
    # A class that took a binding keeps taking it, and one that refused it keeps refusing it (a class's roles only
    # grow), so the class a (target, body, form, binding) went to is remembered: most calls repeat one.
    went: dict[tuple[str, str, int, tuple[int | None, ...]], _Class] = {}
    for plan in planned:
        target, form = plan.call.target, plan.form
        memo = (target, plan.fingerprint, id(form), tuple(plan.roles))
        cls = went.get(memo)
        if cls is None:
            options = by_key.setdefault((target, plan.fingerprint, tuple(form.arg_names)), [])
            cls = next((c for c in options if c.accepts(plan.roles)), None)
            if cls is None:
                cls = _Class(target, plan.fingerprint, {}, [])
                options.append(cls)
                out.append(cls)
            went[memo] = cls
            cls.add(plan)
        else:
            cls.plans.append(plan)  # its roles are in the class already
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_IN_SUBGRAPH = "nodes inside a subgraph"  # folded when they all sit in one branch or loop body of a main-graph node


def _why_not(call: AtenCall, claimed: set[int]) -> str | None:
    """Why the call cannot be folded, before its FX arguments are read."""
    if call.scope is not MAIN and call.scope != MAIN:
        return "inside a function body"
    if not call.target.startswith("aten::"):
        return "not an aten op"
    paths = call.node_paths
    for p in paths:
        if len(p) != 1:
            return _IN_SUBGRAPH
    for p in paths:
        if p[0] in claimed:
            return "nodes shared with another call"
    return None


def _cycle_reason(indices: list[int], maps: GraphMaps) -> str | None:
    """Folding is safe when no path leaves the group and comes back into it (the group is convex)."""
    group = set(indices)
    lo, hi = min(indices), max(indices)
    if hi - lo + 1 == len(group):
        return None
    reach: set[str] = set()
    for j in range(lo, hi + 1):
        reads = maps.reads(j)
        if j in group:
            if any(r in reach for r in reads if maps.producer.get(r, -1) not in group):
                return "folding would form a cycle"
            reach.update(o for o in maps.outputs[j] if o)
        elif any(r in reach for r in reads):
            reach.update(o for o in maps.outputs[j] if o)
    return None


def _topological(nodes: list[tuple[list[str], list[str]]], available: set[str]) -> list[int]:
    """Positions of ``nodes`` (what each reads, what it makes) in the given order where it is valid; otherwise in
    a stable topological order (Kahn, by position)."""
    have = set(available)
    ok = True
    for reads, outs in nodes:
        if not have.issuperset(reads):
            ok = False
            break
        have.update(outs)
    if ok:
        return list(range(len(nodes)))
    producer = {o: i for i, (_r, outs) in enumerate(nodes) for o in outs if o}
    deps = [{producer[r] for r in reads if r in producer and producer[r] != i} for i, (reads, _o) in enumerate(nodes)]
    users: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    waiting = [len(d) for d in deps]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    return out if len(out) == len(nodes) else list(range(len(nodes)))


def _formal_names(cls: _Class, order: list[int], internal: set[str]) -> list[str]:
    """Formal input names: the aten parameter a read is bound to (``self``, ``weight``), else ``in<k>``."""
    plan = cls.plans[0]
    names: list[str] = []
    taken = set(internal)
    for p in order:
        role = cls.roles.get(p)
        base = identifier(plan.form.arg_names[role]) if role is not None else f"in{p}"
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    return names


def _make_function(key: FunctionKey, cls: _Class, order: list[int],
                   opsets: list[onnx.OperatorSetIdProto]) -> onnx.FunctionProto:
    plan = cls.plans[0]
    # the first call's own body (the shared one may come from a call of another target with the same body)
    body = group_body(plan.call, plan.maps)
    internal = {o for n in body.nodes for o in n.output if o} | set(body.constants)
    formals = _formal_names(cls, order, internal)
    rename = {plan.reads[p]: formals[k] for k, p in enumerate(order)}
    f = onnx.FunctionProto()
    f.domain, f.name, f.overload = key.domain, key.name, key.overload
    f.input.extend(formals)
    f.output.extend(rename.get(o, o) for o in body.outputs)
    for name, tensor in body.constants.items():
        f.node.append(helper.make_node("Constant", [], [name], value=tensor))
    for node in body.nodes:
        copy = f.node.add()
        copy.CopyFrom(node)
        del copy.metadata_props[:]  # the call node keeps the metadata
        _rename_reads(copy, rename)
    for b in plan.form.bound:
        default = _attribute(b.parameter.name, b.parameter.default_value, b.parameter) \
            if b.parameter.default and not b.parameter.is_tensor else None
        if default is not None:
            f.attribute_proto.append(default)
        else:
            f.attribute.append(b.parameter.name)
    f.opset_import.extend(o for o in opsets if o.domain != key.domain)
    f.doc_string = plan.form.doc
    return f


def _rename_reads(node: onnx.NodeProto, rename: dict[str, str]) -> None:
    """Rename what ``node`` reads, inside its subgraphs too (values captured from the outer scope)."""
    for k, name in enumerate(node.input):
        if name in rename:
            node.input[k] = rename[name]
    stack = [g for _s, g in subgraphs(node)]
    while stack:
        g = stack.pop()
        for n in g.node:
            for k, name in enumerate(n.input):
                if name in rename:
                    n.input[k] = rename[name]
            stack.extend(sg for _s, sg in subgraphs(n))
        for v in g.output:
            if v.name in rename:
                v.name = rename[v.name]


def _call_inputs(plan: _Planned, order: list[int]) -> list[str]:
    """What the call passes, in the order of its function's inputs (``order``, by read position; empty when it is
    the order of the reads, as for most functions)."""
    return [plan.reads[p] for p in order] if order else plan.reads


def _call_node(held: list[onnx.NodeProto], plan: _Planned) -> onnx.NodeProto:
    """The node of the folded main graph (``held``, by the original positions) that becomes ``plan``'s call when
    its group's first node (which carries the metadata the call keeps, and is the call otherwise) does not sit at
    the group's first index: the group's last node, given the first node's fields, or emptied when there is none."""
    first = plan.call.first_node
    node = held[plan.indices[-1]]
    if first is None:
        node.Clear()
    elif node is not first:
        node.CopyFrom(first)
    return node


def _call_head(key: FunctionKey, form: _Form) -> bytes:
    """What every call of ``key`` whose FX arguments have ``form`` sets alike: the function's key as op type,
    domain and overload, and the attributes made from the aten arguments; serialized once, parsed into each call
    (one protobuf call instead of four field writes and a copy of each attribute)."""
    node = onnx.NodeProto()
    node.op_type, node.domain, node.overload = key.name, key.domain, key.overload
    node.attribute.extend(form.attributes)
    return node.SerializeToString()


def _make_call(node: onnx.NodeProto, head: bytes, plan: _Planned, inputs: list[str], fresh: bool = False) -> None:
    """Make ``node`` the call ``head`` (``_call_head``) begins. It keeps the metadata of the group's first node:
    ``node`` is that node (``_call_node``), or, when ``fresh``, the first node is copied into it whole (one protobuf
    call; copying the metadata entry by entry costs twice as much); its other fields are replaced."""
    first = plan.call.first_node
    if first is not None:
        if fresh:
            node.CopyFrom(first)
        clear = node.ClearField  # the fields of the first node a call must not keep, but its inputs and outputs
        clear("attribute"), clear("doc_string"), clear("device_configurations")
    node.name = plan.call.name
    node.input[:] = inputs  # replaced whole (cheaper than clearing and extending)
    node.output[:] = plan.outputs
    node.MergeFromString(head)  # sets op type, domain and overload, appends the attributes


def _attribute(name: str, value: Any, param: Parameter) -> AttributeProto | None:
    """An ONNX attribute for an aten argument value; None when it has no ONNX form (None, nested lists)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return helper.make_attribute(name, int(value))
    if isinstance(value, (int, float, str)):
        return helper.make_attribute(name, value)
    if isinstance(value, Symbol):
        return helper.make_attribute(name, value.text)
    if isinstance(value, (list, tuple)) and not value:  # ``size=[]``: an empty list of the parameter's type
        kind = AttributeProto.FLOATS if "float" in param.type.lower() else AttributeProto.INTS
        return helper.make_attribute(name, [], attr_type=kind)
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, bool) for v in value):
            return helper.make_attribute(name, [int(v) for v in value])
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return helper.make_attribute(name, list(value))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return helper.make_attribute(name, [float(v) for v in value], attr_type=AttributeProto.FLOATS)
    return None
