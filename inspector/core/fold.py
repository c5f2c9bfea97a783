"""Fold a flat dynamo export into aten-level local functions with overloads.

Each aten call group becomes a call of a local function named after the aten op (domain ``pkg.torch.aten`` by
default). The function's inputs are bound by their *role* in the aten call: a value the group reads is the aten
call's tensor argument k when the metadata says so (the value is the output of the group of the FX node that
argument names, or a graph input / parameter whose ``original_node_name`` is that FX name); those come first, in
argument order, named after the schema's parameters; whatever else the group reads follows in body order. Calls
with one target and one body share a function only when their bindings agree, so every call passes its inputs in
the order the function declares them. The function's attributes are the aten non-tensor parameters, declared
with their schema defaults, and the call node passes this call's values, so the aten signature survives. Bodies
that differ (specialised values) become separate overloads named by what differs. Groups that cannot be folded
safely stay flat and are reported.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import AttributeProto, helper

from inspector.core.aten_schema import BoundArgument, Parameter
from inspector.core.body import ORIGINAL_NODE_NAME, Body, GraphMaps, group_body, node_reads
from inspector.core.fingerprint import fingerprint
from inspector.core.fx import Symbol, TensorRef
from inspector.core.index import ModelIndex
from inspector.core.keys import MAIN, FunctionKey
from inspector.core.literals import Literal, body_literals
from inspector.core.provenance import AtenCall
from inspector.core.signature import call_signature
from inspector.core.walk import subgraphs

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
    body: Body
    fingerprint: str
    indices: list[int]
    reads: list[str]  # what the group reads, in body (first-use) order
    roles: list[int | None]  # per read: the tensor argument it is, by position in ``arg_names``
    arg_names: list[str]  # the call's tensor arguments named by schema parameter (``tensors_1`` for lists)
    bound: list[BoundArgument]  # non-tensor arguments


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


def fold_model(index: ModelIndex, domain: str = DEFAULT_DOMAIN) -> tuple[onnx.ModelProto, FoldReport]:
    """A new model in which every foldable aten call is a call of a local function."""
    proto = index.proto
    graph = proto.graph
    if any(k.domain == domain for k in index.functions.functions):
        raise ValueError(f"the model already defines functions in domain {domain!r}; choose another --domain")
    maps = GraphMaps(graph)
    evidence = _Evidence(index, maps)
    report = FoldReport(nodes_before=len(graph.node))
    planned: list[_Planned] = []
    claimed: set[int] = set()
    for call in index.provenance.calls:
        reason = _why_not(call, claimed)
        if reason is None:
            body = group_body(call, maps)
            indices = [int(p[0]) for p in body.node_paths]
            reason = _cycle_reason(indices, maps) or (None if body.outputs else "no output is used")
            if reason is None:
                planned.append(_plan(call, body, indices, evidence))
                claimed.update(indices)
                continue
        report.left_flat.append((call.name, call.target, reason))

    classes = _classes(planned)
    _name_overloads(classes, domain)
    functions: list[onnx.FunctionProto] = []
    call_nodes: dict[int, onnx.NodeProto] = {}  # keyed by the group's last node index
    opsets = list(proto.opset_import)
    for cls in classes:
        assert cls.key is not None
        order = cls.order()
        functions.append(_make_function(cls.key, cls, order, opsets))
        for plan in cls.plans:
            call_nodes[max(plan.indices)] = _make_call(cls.key, plan, order)
            report.calls_folded += 1

    folded = onnx.ModelProto()
    folded.CopyFrom(proto)
    new_nodes: list[onnx.NodeProto] = []
    for i, node in enumerate(graph.node):
        if i in call_nodes:
            new_nodes.append(call_nodes[i])
        elif i not in claimed:
            new_nodes.append(node)
    del folded.graph.node[:]
    folded.graph.node.extend(_topological(new_nodes, {v.name for v in graph.input} | set(maps.initializers)))
    # Everything still read anywhere (subgraphs included) keeps its initializer and its value info (the value
    # info carries the parameter's metadata, e.g. original_node_name).
    still_read = {r for node in folded.graph.node for r in node_reads(node)} | {v.name for v in graph.output}
    used = still_read | {o for node in folded.graph.node for o in node.output}
    keep_vi = [v for v in folded.graph.value_info if v.name in used]
    del folded.graph.value_info[:]
    folded.graph.value_info.extend(keep_vi)
    moved = {name for plan in planned for name in plan.body.constants}
    keep_init = [t for t in folded.graph.initializer if t.name not in moved or t.name in still_read]
    del folded.graph.initializer[:]
    folded.graph.initializer.extend(keep_init)
    folded.functions.extend(functions)
    if not any(o.domain == domain for o in folded.opset_import):
        folded.opset_import.append(helper.make_opsetid(domain, 1))
    folded.ir_version = max(folded.ir_version, 10)
    report.functions = [FunctionKey(f.domain, f.name, f.overload) for f in functions]
    report.nodes_after = len(folded.graph.node)
    return folded, report


class _Evidence:
    """Which FX node an ONNX value of the main graph is, from metadata only: the output of the group of that
    FX node, or a graph input / parameter whose ``original_node_name`` (or, for user inputs, name) is it."""

    def __init__(self, index: ModelIndex, maps: GraphMaps) -> None:
        self.maps = maps
        self.fx_of: dict[str, set[str]] = {}
        for call in index.provenance.calls:
            if call.scope != MAIN:
                continue
            for p in call.node_paths:
                if len(p) == 1 and isinstance(p[0], int):
                    for out in maps.graph.node[p[0]].output:
                        if out:
                            self.fx_of.setdefault(out, set()).add(call.name)
        graph = maps.graph
        for v in (*graph.input, *graph.value_info):
            for prop in v.metadata_props:
                if prop.key == ORIGINAL_NODE_NAME:
                    self.fx_of.setdefault(v.name, set()).add(prop.value)
        for v in graph.input:
            kinds = {p.value for p in v.metadata_props if p.key == "pkg.torch.export.graph_signature.InputSpec.kind"}
            if kinds <= {USER_INPUT} and v.name not in maps.initializers:
                self.fx_of.setdefault(v.name, set()).add(v.name)  # user inputs are the FX placeholders

    def roles(self, reads: list[str], args: list[str]) -> list[int | None]:
        """Per read, the position of the tensor argument it is; None without evidence or when ambiguous."""
        roles: list[int | None] = []
        used: dict[int, int] = {}
        for p, name in enumerate(reads):
            names = self.fx_of.get(name, set())
            role = next((k for k, a in enumerate(args) if a in names and k not in used), None)
            if role is not None:
                used[role] = p
            roles.append(role)
        return roles


def _plan(call: AtenCall, body: Body, indices: list[int], evidence: _Evidence) -> _Planned:
    sig = call_signature(call)
    args: list[str] = []
    arg_names: list[str] = []
    if sig.bound:
        for b in sig.bound:
            items = b.value if isinstance(b.value, (list, tuple)) else [b.value]
            refs = [x for x in items if isinstance(x, TensorRef)]
            for j, ref in enumerate(refs):
                args.append(ref.name)
                arg_names.append(b.parameter.name if len(items) == 1 else f"{b.parameter.name}_{j}")
    else:
        args = call.tensor_args()
        arg_names = [f"arg{k}" for k in range(len(args))]
    reads = list(body.canonical_inputs if body.canonical_inputs is not None else body.inputs)
    # non-tensor arguments, and numbers passed to Tensor parameters (``mul(x, 0.5)``): attributes of the call
    bound = [b for b in sig.bound if not b.parameter.is_tensor or _is_number(b.value)]
    return _Planned(call, body, fingerprint(body).full, indices, reads, evidence.roles(reads, args), arg_names,
                    bound)


def _classes(planned: list[_Planned]) -> list[_Class]:
    """Calls grouped by target, body and tensor parameters, split further where their input bindings disagree."""
    by_key: dict[tuple[str, str, tuple[str, ...]], list[_Class]] = {}
    out: list[_Class] = []
    for plan in planned:
        options = by_key.setdefault((plan.call.target, plan.fingerprint, tuple(plan.arg_names)), [])
        cls = next((c for c in options if c.accepts(plan.roles)), None)
        if cls is None:
            cls = _Class(plan.call.target, plan.fingerprint, {}, [])
            options.append(cls)
            out.append(cls)
        cls.add(plan)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _why_not(call: AtenCall, claimed: set[int]) -> str | None:
    if call.scope != MAIN:
        return "inside a function body"
    if not call.target.startswith("aten::"):
        return "not an aten op"
    if any(len(p) != 1 for p in call.node_paths):
        return "nodes inside a subgraph"
    if any(p[0] in claimed for p in call.node_paths):
        return "nodes shared with another call"
    fx = call.fx
    if fx is None or not fx.complete:
        return "fx_node metadata unreadable"
    return None


def _cycle_reason(indices: list[int], maps: GraphMaps) -> str | None:
    """Folding is safe when no path leaves the group and comes back into it (the group is convex)."""
    group = set(indices)
    lo, hi = min(indices), max(indices)
    if hi - lo + 1 == len(group):
        return None
    reach: set[str] = set()
    for j in range(lo, hi + 1):
        node = maps.graph.node[j]
        reads = node_reads(node)
        if j in group:
            if any(r in reach for r in reads if maps.producer.get(r, -1) not in group):
                return "folding would form a cycle"
            reach.update(o for o in node.output if o)
        elif any(r in reach for r in reads):
            reach.update(o for o in node.output if o)
    return None


def _topological(nodes: list[onnx.NodeProto], available: set[str]) -> list[onnx.NodeProto]:
    """Keep the given order where it is valid; otherwise a stable topological order (Kahn, by position)."""
    have = set(available)
    ok = True
    for n in nodes:
        if any(r not in have for r in node_reads(n)):
            ok = False
            break
        have.update(n.output)
    if ok:
        return nodes
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [{producer[r] for r in node_reads(n) if r in producer and producer[r] != i} for i, n in enumerate(nodes)]
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
        out.append(nodes[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    return out if len(out) == len(nodes) else nodes


def _formal_names(cls: _Class, order: list[int], internal: set[str]) -> list[str]:
    """Formal input names: the aten parameter a read is bound to (``self``, ``weight``), else ``in<k>``."""
    plan = cls.plans[0]
    names: list[str] = []
    taken = set(internal)
    for p in order:
        role = cls.roles.get(p)
        base = _identifier(plan.arg_names[role]) if role is not None else f"in{p}"
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    return names


def _make_function(key: FunctionKey, cls: _Class, order: list[int],
                   opsets: list[onnx.OperatorSetIdProto]) -> onnx.FunctionProto:
    plan = cls.plans[0]
    body = plan.body
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
    for b in plan.bound:
        default = _attribute(b.parameter.name, b.parameter.default_value, b.parameter) \
            if b.parameter.default and not b.parameter.is_tensor else None
        if default is not None:
            f.attribute_proto.append(default)
        else:
            f.attribute.append(b.parameter.name)
    f.opset_import.extend(o for o in opsets if o.domain != key.domain)
    sig = call_signature(plan.call)
    f.doc_string = sig.schema.text if sig.schema else ""
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


def _make_call(key: FunctionKey, plan: _Planned, order: list[int]) -> onnx.NodeProto:
    inputs = [plan.reads[p] for p in order]
    node = helper.make_node(key.name, inputs, plan.body.outputs, name=plan.call.name, domain=key.domain)
    node.overload = key.overload
    for b in plan.bound:
        attr = _attribute(b.parameter.name, b.value, b.parameter) if b.provided else None
        if attr is not None:
            node.attribute.append(attr)
    first = plan.call.first_node
    if first is not None:
        node.metadata_props.extend(first.metadata_props)
    return node


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


def _name_overloads(classes: list[_Class], domain: str) -> None:
    """Identifier-safe overload names in a reviewer's words: the aten overload alone when the target has one body;
    else what sets this body apart from the target's other bodies (``view:reshape_1x8xm1x16``,
    ``_to_copy:to_float``, ``transpose:int_perm_0x2x1x3``; ``m`` is a minus sign, ``p`` a decimal point, since the
    ONNX text parser takes only identifiers as overloads); a short hash of the body only to break ties."""
    by_target: dict[str, list[_Class]] = {}
    for cls in classes:
        by_target.setdefault(cls.target, []).append(cls)
    taken: set[tuple[str, str]] = set()
    for target, group in by_target.items():
        _ns, op, aten_overload = group[0].plans[0].call.family
        op_name, base = _identifier(op), _identifier(aten_overload)
        literals = [body_literals(c.plans[0].body) for c in group]
        wanted: list[str] = []
        for k in range(len(group)):
            words = _describe(k, literals) if len(group) > 1 else ""
            if not words:
                wanted.append(base)
            elif base == "default" and not words[0].isdigit():
                wanted.append(_identifier(words))
            else:
                wanted.append(_identifier(f"{base}_{words}"))
        for k, cls in enumerate(group):
            name = wanted[k] if len(wanted[k]) <= 48 else base
            if len(group) > 1 and (wanted.count(wanted[k]) > 1 or name != wanted[k] or name == base):
                digest = hashlib.blake2b(f"{target}|{cls.fingerprint}|{cls.binding()}".encode(), digest_size=3)
                name = f"{name}_{digest.hexdigest()}"
            while (op_name, name) in taken:
                name += "_"
            taken.add((op_name, name))
            cls.key = FunctionKey(domain, op_name, name)


def _describe(k: int, all_literals: list[list[Literal]]) -> str:
    """Words for the literal values that set body ``k`` apart from the other bodies of its target: values in the
    same slot that differ when the bodies share a shape, else values no other body has."""
    mine = all_literals[k]
    others = [o for j, o in enumerate(all_literals) if j != k]
    aligned = [o for o in others if [x.slot for x in o] == [x.slot for x in mine]]
    if aligned:
        picked = [lit for pos, lit in enumerate(mine) if any(o[pos].key != lit.key for o in aligned)]
    else:
        elsewhere = {x.key for o in others for x in o}
        picked = [lit for lit in mine if lit.key not in elsewhere]
    return "_".join(_words(lit) for lit in picked[:2])


def _words(lit: Literal) -> str:
    """``reshape_1x8x2x8``, ``perm_0x2x1x3``, ``to_float``, ``eps_1em05``; a Constant's value needs no label."""
    if lit.op_type == "Cast" and lit.name == "to" and isinstance(lit.value, int):
        try:
            return "to_" + onnx.TensorProto.DataType.Name(lit.value).lower()
        except ValueError:
            pass
    if lit.kind == "initializer":
        label = lit.op_type.lower() or "const"
    elif lit.op_type == "Constant":
        label = ""
    else:
        label = lit.name
    return f"{label}_{_token(lit.value)}" if label else _token(lit.value)


def _token(value: Any) -> str:
    if isinstance(value, list):
        flat = [v for v in value if not isinstance(v, list)]
        return "x".join(_token(v) for v in flat[:8])
    if isinstance(value, float):
        return f"{value:.4g}".replace("-", "m").replace(".", "p").replace("+", "")
    if isinstance(value, int):
        return str(value).replace("-", "m")
    return re.sub(r"\W", "", str(value))[:12]


def _identifier(text: str) -> str:
    s = re.sub(r"\W", "_", text)
    return s if s and not s[0].isdigit() else f"_{s}"
