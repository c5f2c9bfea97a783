"""Fold a flat dynamo export into aten-level local functions with overloads.

Each aten call group becomes a call of a local function named after the aten op (domain ``pkg.torch.aten`` by
default). The function's inputs are the call's tensor arguments (and whatever else the group reads); its
attributes are the aten non-tensor parameters, declared with their schema defaults, and the call node passes
this call's values, so the aten signature survives. Bodies that differ (specialised values) become separate
overloads. Groups that cannot be folded safely stay flat and are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import AttributeProto, helper

from inspector.core.aten_schema import BoundArgument, Parameter
from inspector.core.body import Body, GraphMaps, group_body, node_reads
from inspector.core.fingerprint import fingerprint
from inspector.core.fx import Symbol
from inspector.core.index import ModelIndex
from inspector.core.keys import MAIN, FunctionKey
from inspector.core.provenance import AtenCall
from inspector.core.signature import call_signature
from inspector.core.specialise import Specialiser

DEFAULT_DOMAIN = "pkg.torch.aten"


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


def fold_model(index: ModelIndex, domain: str = DEFAULT_DOMAIN) -> tuple[onnx.ModelProto, FoldReport]:
    """A new model in which every foldable aten call is a call of a local function."""
    proto = index.proto
    graph = proto.graph
    if any(k.domain == domain for k in index.functions.functions):
        raise ValueError(f"the model already defines functions in domain {domain!r}; choose another --domain")
    specialiser = Specialiser(index)
    maps = specialiser.maps
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
                planned.append(_Planned(call, body, fingerprint(body).full, indices))
                claimed.update(indices)
                continue
        report.left_flat.append((call.name, call.target, reason))

    overload_names = _overload_names(specialiser, planned)
    functions: dict[str, onnx.FunctionProto] = {}
    call_nodes: dict[int, onnx.NodeProto] = {}  # keyed by the group's last node index
    opsets = list(proto.opset_import)
    for plan in planned:
        sig = call_signature(plan.call)
        bound = [b for b in sig.bound if not b.parameter.is_tensor]
        op_name = _identifier(plan.call.family[1])
        key = FunctionKey(domain, op_name, overload_names[plan.fingerprint])
        if plan.fingerprint not in functions:
            schema_text = sig.schema.text if sig.schema else ""
            functions[plan.fingerprint] = _make_function(key, plan, bound, schema_text, opsets)
        call_nodes[max(plan.indices)] = _make_call(key, plan, bound)
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
    used = {n for node in folded.graph.node for n in (*node.input, *node.output)} | {v.name for v in graph.output}
    keep_vi = [v for v in folded.graph.value_info if v.name in used]
    del folded.graph.value_info[:]
    folded.graph.value_info.extend(keep_vi)
    moved = {name for plan in planned for name in plan.body.constants}
    still_read = {r for node in folded.graph.node for r in node_reads(node)} | {v.name for v in graph.output}
    keep_init = [t for t in folded.graph.initializer if t.name not in moved or t.name in still_read]
    del folded.graph.initializer[:]
    folded.graph.initializer.extend(keep_init)
    folded.functions.extend(functions.values())
    if not any(o.domain == domain for o in folded.opset_import):
        folded.opset_import.append(helper.make_opsetid(domain, 1))
    folded.ir_version = max(folded.ir_version, 10)
    report.functions = [FunctionKey(f.domain, f.name, f.overload) for f in functions.values()]
    report.nodes_after = len(folded.graph.node)
    return folded, report


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
    import heapq

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


def _make_function(key: FunctionKey, plan: _Planned, bound: list[BoundArgument], schema_text: str,
                   opsets: list[onnx.OperatorSetIdProto]) -> onnx.FunctionProto:
    f = onnx.FunctionProto()
    f.domain, f.name, f.overload = key.domain, key.name, key.overload
    f.input.extend(plan.body.inputs)
    f.output.extend(plan.body.outputs)
    for name, tensor in plan.body.constants.items():
        const = helper.make_node("Constant", [], [name], value=tensor)
        f.node.append(const)
    for node in plan.body.nodes:
        copy = f.node.add()
        copy.CopyFrom(node)
        del copy.metadata_props[:]  # the call node keeps the metadata
    for b in bound:
        default = _attribute(b.parameter.name, b.parameter.default_value, b.parameter) if b.parameter.default else None
        if default is not None:
            f.attribute_proto.append(default)
        else:
            f.attribute.append(b.parameter.name)
    f.opset_import.extend(o for o in opsets if o.domain != key.domain)
    f.doc_string = schema_text
    return f


def _make_call(key: FunctionKey, plan: _Planned, bound: list[BoundArgument]) -> onnx.NodeProto:
    node = helper.make_node(key.name, plan.body.inputs, plan.body.outputs, name=plan.call.name, domain=key.domain)
    node.overload = key.overload
    for b in bound:
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
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, bool) for v in value):
            return helper.make_attribute(name, [int(v) for v in value])
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return helper.make_attribute(name, list(value))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return helper.make_attribute(name, [float(v) for v in value], attr_type=AttributeProto.FLOATS)
    return None


def _overload_names(specialiser: Specialiser, planned: list[_Planned]) -> dict[str, str]:
    """Readable, identifier-safe overload names: the aten overload, plus what varies when bodies differ."""
    by_target: dict[str, list[str]] = {}
    for p in planned:
        fps = by_target.setdefault(p.call.target, [])
        if p.fingerprint not in fps:
            fps.append(p.fingerprint)
    names: dict[str, str] = {}
    taken: set[tuple[str, str]] = set()
    calls_by_fp = {p.fingerprint: p.call for p in planned}
    for fps in by_target.values():
        _ns, op, aten_overload = calls_by_fp[fps[0]].family
        base = _identifier(aten_overload)
        descriptions: dict[str, str] = {}
        if len(fps) > 1:
            for fp in fps:
                body = specialiser.body_of_call(calls_by_fp[fp])
                descriptions[fp] = _describe(body, fps, calls_by_fp, specialiser)
        for k, fp in enumerate(fps):
            if len(fps) == 1:
                name = base
            elif descriptions[fp]:
                name = _identifier(f"{base}_{descriptions[fp]}")
            else:
                name = f"{base}_v{k + 1}"
            if len(name) > 48 or (op, name) in taken:
                name = f"{base}_v{k + 1}"
            while (op, name) in taken:
                name += "_"
            taken.add((op, name))
            names[fp] = name
    return names


def _describe(body: Body, fps: list[str], calls_by_fp: dict[str, AtenCall], specialiser: Specialiser) -> str:
    """Text of the literal values that set this body apart from the other bodies of its target."""
    from inspector.core.literals import body_literals

    mine = body_literals(body)
    others = [body_literals(specialiser.body_of_call(calls_by_fp[fp])) for fp in fps]
    parts = []
    for pos, lit in enumerate(mine):
        differs = any(len(o) == len(mine) and o[pos].key != lit.key for o in others)
        if differs:
            label = lit.name if lit.kind != "initializer" else (lit.op_type.lower() or "const")
            parts.append(f"{label}_{_token(lit.value)}")
    return "_".join(parts[:2])


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
