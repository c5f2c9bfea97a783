"""Building the folded model from the plans: the functions, their call nodes, the new node order, the copies.

Call nodes are made in place from the group's first node (which carries the metadata the call keeps), kept nodes
stay as they are, and one stable topological order (the original order wherever it is valid) puts them in place;
nothing of the model is copied that the fold does not change (a 100k-node export's nodes and metadata are large).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import attrgetter, is_, not_
from typing import Any

import onnx
from google.protobuf.unknown_fields import UnknownFieldSet

from inspector.core.bodies.body import group_body
from inspector.core.fold.messages import constant_node
from inspector.core.fold.names import identifier
from inspector.core.fold.plan import Form, FunctionClass, Planned, Planner, aten_attribute
from inspector.core.model.keys import FunctionKey
from inspector.core.model.walk import NodePath, subgraphs
from inspector.core.util.order import dependencies, kahn

_NAME = attrgetter("name")
Made = None | onnx.NodeProto | Planned  # what replaces a node of the graph: nothing, a node, or a call


def unknown_fields(proto: onnx.ModelProto) -> bool:
    """Whether the model or its main graph carries fields this onnx does not know (a copy drops those)."""
    return bool(len(UnknownFieldSet(proto)) or len(UnknownFieldSet(proto.graph)))


def copy_known(proto: onnx.ModelProto) -> onnx.ModelProto:
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


def keep_only(items: Any, keep: Callable[[str], bool]) -> None:
    """Drop the entries of a repeated message field whose name ``keep`` refuses, in place (a stable sort moves the
    kept ones to the front; nothing is copied). Names are read, tested and ranked in C (``keep`` a set's
    ``__contains__``, the sort's key the next of the ranks): a Python function per entry, for the 100k value infos of a
    fold, cost 0.08-0.1 s."""
    held = items[:]  # (a slice is made in C; iterating the field ends in a formatted IndexError: diff.follow)
    kept = list(map(keep, map(_NAME, held)))
    dropped = len(kept) - sum(kept)
    if dropped:
        items.sort(key=partial(next, map(not_, kept)))
        del items[len(held) - dropped:]


def sort_entries(items: Any, held: list[Any], keys: Sequence[Any], first: list[Any]) -> None:
    """Sort the repeated message field ``items`` (whose entries are ``held``, in order) stably by ``keys`` (one per
    entry, in that order), then keep its first ``len(first)`` entries, which must be ``first``, in order.

    Each entry's key is the next of ``keys`` (``partial(next, ...)``, in C): CPython's ``list.sort``, which the field's
    sort uses, computes the keys in list order, and a Python function per entry (``lambda n: rank[id(n)]``) cost 0.04 s
    of the 100k nodes of a fold. That the sort put ``first`` first is checked (in C) before anything is dropped;
    otherwise the entries are sorted again by their identity, which holds whatever the order the keys were taken in."""
    items.sort(key=partial(next, iter(keys)))
    if len(items) < len(first) or not all(map(is_, items, first)):
        position = {id(x): k for k, x in enumerate(held)}
        items.sort(key=lambda x: (keys[position[id(x)]], position[id(x)]))
    del items[len(first):]


def _copy_field(target: Any, desc: Any, value: Any) -> None:
    repeated = desc.is_repeated if hasattr(desc, "is_repeated") else desc.label == desc.LABEL_REPEATED
    if repeated:
        getattr(target, desc.name).extend(value)
    elif desc.type == desc.TYPE_MESSAGE:
        getattr(target, desc.name).CopyFrom(value)
    else:
        setattr(target, desc.name, value)


def fold_subgraphs(node: onnx.NodeProto, prefixes: list[NodePath],
                    inner: dict[NodePath, dict[int, Planned]],
                    claimed: dict[NodePath, set[int]], planner: Planner) -> onnx.NodeProto:
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
        entries: list[tuple[Sequence[str], Sequence[str], onnx.NodeProto]] = []
        for j in range(len(sub.inputs)):
            plan = calls.get(j)
            if plan is not None:
                call = onnx.NodeProto()
                reads = call_inputs(plan)
                make_call(call, plan, reads, fresh=True)
                entries.append((reads, plan.outputs, call))
            elif j not in taken:
                entries.append((sub.reads(j), sub.outputs[j], sub.graph.node[j]))
        made_here = {o for _r, outs, _n in entries for o in outs}
        outer = {r for reads, _o, _n in entries for r in reads} - made_here
        ordered = topological([r for r, _o, _n in entries], [o for _r, o, _n in entries], outer)
        used = made_here | outer | {v.name for v in graph.output}
        keep_vi = [v for v in graph.value_info if v.name in used]
        new_nodes = [entries[k][2] for k in ordered]
        del graph.node[:]
        graph.node.extend(new_nodes)
        del graph.value_info[:]
        graph.value_info.extend(keep_vi)
    return copy


def topological(reads_of: Sequence[Sequence[str]], makes_of: Sequence[Sequence[str]],
                available: set[str]) -> list[int]:
    """Positions of nodes (what each reads, what each makes, by position) in the given order where it is valid;
    otherwise in a stable topological order (Kahn, by position)."""
    have = set(available)
    ok = True
    for reads, outs in zip(reads_of, makes_of, strict=True):
        if not have.issuperset(reads):
            ok = False
            break
        have.update(outs)
    if ok:
        return list(range(len(reads_of)))
    order = kahn(dependencies(reads_of, makes_of)).order
    return order if len(order) == len(reads_of) else list(range(len(reads_of)))


def _formal_names(cls: FunctionClass, order: list[int], internal: set[str]) -> list[str]:
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


def make_function(key: FunctionKey, cls: FunctionClass, order: list[int],
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
        f.node.append(constant_node(name, tensor))
    for node in body.nodes:
        copy = f.node.add()
        copy.CopyFrom(node)
        del copy.metadata_props[:]  # the call node keeps the metadata
        rename_reads(copy, rename)
    for b in plan.form.bound:
        default = aten_attribute(b.parameter.name, b.parameter.default_value, b.parameter) \
            if b.parameter.default and not b.parameter.is_tensor else None
        if default is not None:
            f.attribute_proto.append(default)
        else:
            f.attribute.append(b.parameter.name)
    f.opset_import.extend(o for o in opsets if o.domain != key.domain)
    f.doc_string = plan.form.doc
    return f


def rename_reads(node: onnx.NodeProto, rename: dict[str, str]) -> None:
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


def call_inputs(plan: Planned) -> tuple[str, ...]:
    """What the call passes, in the order of its function's inputs (``plan.order``, by read position; empty when it
    is the order of the reads, as for most functions)."""
    return tuple([plan.reads[p] for p in plan.order]) if plan.order else plan.reads


def call_node(held: list[onnx.NodeProto], plan: Planned) -> onnx.NodeProto:
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


def call_head(key: FunctionKey, form: Form) -> bytes:
    """What every call of ``key`` whose FX arguments have ``form`` sets alike: the function's key as op type,
    domain and overload, and the attributes made from the aten arguments; serialized once, parsed into each call
    (one protobuf call instead of four field writes and a copy of each attribute)."""
    node = onnx.NodeProto()
    node.op_type, node.domain, node.overload = key.name, key.domain, key.overload
    node.attribute.extend(form.attributes)
    return node.SerializeToString()


def make_call(node: onnx.NodeProto, plan: Planned, inputs: Sequence[str], fresh: bool = False,
              had: tuple[list[str], list[str]] | None = None) -> None:
    """Make ``node`` the call ``plan.head`` (``call_head``) begins. It keeps the metadata of the group's first node:
    ``node`` is that node (``call_node``), or, when ``fresh``, the first node is copied into it whole (one protobuf
    call; copying the metadata entry by entry costs twice as much); its other fields are replaced. ``had``: the
    inputs and outputs ``node`` has now, when the caller knows them; equal ones are not written again (writing a
    repeated field costs ~2 us, comparing two lists 0.1 us: most one-node calls keep both)."""
    first = plan.call.first_node
    if first is not None:
        if fresh:
            node.CopyFrom(first)
        clear = node.ClearField  # the fields of the first node a call must not keep, but its inputs and outputs
        clear("attribute"), clear("doc_string"), clear("device_configurations")
    node.name = plan.call.name
    if had is None or tuple(had[0]) != inputs:
        node.input[:] = inputs  # replaced whole (cheaper than clearing and extending)
    if had is None or tuple(had[1]) != plan.outputs:
        node.output[:] = plan.outputs
    node.MergeFromString(plan.head)  # sets op type, domain and overload, appends the attributes
