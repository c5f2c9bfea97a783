"""``fold --modules``: nn.Module instances of a flat dynamo export as calls of local functions, one per class.

TorchScript's ``export_modules_as_functions`` has no dynamo counterpart, and users ask for it back: a backend
compiles a function once for all identical decoder blocks instead of once per block. The flat export keeps each
node's module path and class (fx metadata), so the instances a pattern selects (``module_select``) are cut out of
the main graph: each becomes one call of a function in domain ``pkg.torch.module`` named after its class.
Instances whose bodies are equal (``core/bodies/fingerprint.py``: names ignored, wiring and literals seen) share
one function; bodies that differ become overloads of one family named by what differs (``fold/names.py``, a short
hash only to break ties). Weights and other large initializers stay in the main graph and are passed as inputs;
small non-parameter initializers (shapes, scales baked in by trace_only code) move into the body as Constant nodes.
Nested selections fold inside out, so a layer's function calls its attention's function; a class called inside
another function's body whose instances have several bodies is named with TorchScript's variant names instead of
overloads (``_as_variants``: onnxruntime resolves calls inside function bodies without their overload).

The aten fold is not run inside (the body keeps the flat nodes with their fx metadata, cut from the first instance
of each function): the two answer different questions, and a module function's body stays readable as a flat
export. An instance that folding would put on a cycle (a path leaves it and comes back), or whose nodes sit partly
inside an If/Loop body (a value would cross a subgraph boundary, which a function call cannot express), stays flat
and is listed. Each pass is linear in the nodes times the nesting depth of the selection.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import onnx

from inspector.core.bodies.body import Body
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.fold.build import rename_reads
from inspector.core.fold.messages import constant_node, opset_id
from inspector.core.fold.module_hoist import Hoisted, parametrise
from inspector.core.fold.module_hoist import hoist as hoist_literals
from inspector.core.fold.module_select import OUTSIDE, Instance, module_tree, owners, parse_patterns, select
from inspector.core.fold.names import Unnamed, identifier, overload_keys
from inspector.core.model.function_sites import variant_note
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import FunctionKey
from inspector.core.util.order import dependencies, kahn
from inspector.core.util.textsafe import one_line
from inspector.core.util.units import plural

MODULE_DOMAIN = "pkg.torch.module"  # beside pkg.torch.aten (the aten fold) and pkg.torch.onnx (the metadata keys)


@dataclass(slots=True)
class ModuleFoldReport:
    instances_folded: int = 0
    functions: list[FunctionKey] = field(default_factory=list)
    left_flat: list[tuple[str, str, str]] = field(default_factory=list)  # (module path, class, reason)
    nodes_before: int = 0
    nodes_after: int = 0

    @property
    def families(self) -> int:
        return len({k.family for k in self.functions})

    def lines(self, verbose: bool = False) -> list[str]:
        """What the command prints: counts, then the instances left flat (ten unless ``verbose``), model strings
        escaped (module paths and classes come from the model)."""
        out = [f"folded {plural(self.instances_folded, 'module instance')} into "
               f"{plural(len(self.functions), 'function')} ({plural(self.families, 'family', 'families')}): "
               + ", ".join(one_line(k.name + (f":{k.overload}" if k.overload else ""), 80) for k in self.functions),
               f"main graph: {self.nodes_before} -> {self.nodes_after} nodes"]
        if self.left_flat:
            out.append(f"left flat: {plural(len(self.left_flat), 'instance')}")
            shown = self.left_flat if verbose else self.left_flat[:10]
            out.extend(f"  {one_line(path, 120)} ({one_line(cls, 120)}): {reason}" for path, cls, reason in shown)
            if len(shown) < len(self.left_flat):
                out.append(f"  … {len(self.left_flat) - len(shown)} more (-v lists all)")
        return out


@dataclass(slots=True)
class _Unit:
    """A node of the graph being folded: an original node or the call of a folded instance."""

    node: onnx.NodeProto
    reads: list[str]
    outputs: list[str]
    position: int  # the original index it sits at (a call: its instance's last node)
    instance: int = -1  # the instance a call stands for


@dataclass(slots=True)
class _Folded:
    """A folded instance: its body and the call that replaces it, whose overload is ``identity`` (the body's
    fingerprint, or its template's when hoisted) until the function is named."""

    inst: Instance
    body: Body
    identity: str
    call: _Unit
    hoisted: Hoisted | None = None

    @property
    def class_name(self) -> str:
        return self.inst.class_name

    @property
    def call_node(self) -> onnx.NodeProto:
        return self.call.node


_CYCLE = "folding would form a cycle (a path leaves the instance and comes back into it)"
_CYCLE_BETWEEN = "its call and another instance's would form a cycle (each reads what the other makes)"
_SUBGRAPH = "some of its nodes sit inside an If/Loop body (a value would cross a subgraph boundary)"


def fold_modules(index: ModelIndex, patterns: str | Sequence[str], domain: str = MODULE_DOMAIN,
                 hoist: bool = False) -> tuple[onnx.ModelProto, ModuleFoldReport]:
    """A new model in which each instance of a module some pattern matches is a call of a local function; with
    ``hoist``, literals that differ between instances of a class are function attributes (``module_hoist``)."""
    return _fold(index, parse_patterns(patterns), domain, hoist)


def _fold(index: ModelIndex, patterns: list[str], domain: str,
          hoist: bool) -> tuple[onnx.ModelProto, ModuleFoldReport]:
    proto = index.proto
    if any(k.domain == domain for k in index.functions.functions):
        raise ValueError(f"the model already defines functions in domain {domain!r}; choose another --domain")
    instances = select(module_tree(index), patterns)
    maps = index.graph_maps()
    owners(index, instances, maps)
    skip: dict[int, str] = {}
    while True:  # again without the instances whose calls formed a cycle together (rare: each pass drops one)
        made = _attempt(proto, instances, maps, domain, hoist, skip)
        if isinstance(made, tuple):
            return made
        skip.update(dict.fromkeys(made, _CYCLE_BETWEEN))


def _attempt(proto: onnx.ModelProto, instances: list[Instance], maps: GraphMaps, domain: str, hoist: bool,
             skip: dict[int, str]) -> tuple[onnx.ModelProto, ModuleFoldReport] | set[int]:
    """The fold, leaving the instances in ``skip`` flat; or the instances whose calls form a cycle together."""
    report = ModuleFoldReport(nodes_before=len(proto.graph.node))
    units: list[_Unit | None] = [_Unit(n, maps.reads(i), maps.outputs[i], i) for i, n in enumerate(proto.graph.node)]
    unit_at = list(range(len(units)))  # original index -> the unit now standing for it
    constants = maps.small_constants - maps.parameters
    folded: list[_Folded] = []
    for inst in sorted(instances, key=lambda x: -x.depth):  # inside out
        if not inst.members:
            continue
        reason = skip.get(inst.number) or (_SUBGRAPH if inst.in_subgraph else _cycle(inst.members, maps))
        if reason:
            report.left_flat.append((inst.path, inst.module.class_name, reason))
            continue
        done = _fold_instance(inst, units, unit_at, maps, constants, domain)
        if isinstance(done, set):
            return done
        folded.append(done)
    if hoist:
        levels: dict[int, list[_Folded]] = {}
        for f in folded:
            levels.setdefault(f.inst.depth, []).append(f)
        hoist_literals([levels[d] for d in sorted(levels, reverse=True)])
    keys, variants = _name(folded, domain)
    functions = _functions(folded, keys, variants, maps, proto, domain)
    provisional = {f.identity: keys[f.identity] for f in folded}
    for f in functions:
        _rename_calls(f.node, domain, provisional)
    main = [u for u in units if u is not None]
    for u in main:
        if u.instance >= 0:
            _rename_calls([u.node], domain, provisional)
    order = _sorted(main)
    if isinstance(order, set):
        return order
    out = _rebuilt(proto, order, maps, functions, domain)
    report.instances_folded = len(folded)
    report.functions = [FunctionKey(f.domain, f.name, f.overload) for f in functions]
    report.nodes_after = len(out.graph.node)
    return out, report


def _fold_instance(inst: Instance, units: list[_Unit | None], unit_at: list[int], maps: GraphMaps,
                   constants: frozenset[str], domain: str) -> _Folded | set[int]:
    """Replace the instance's units by one call; its body (nodes in order, inputs by first use) is kept. When the
    calls of instances inside it form a cycle together, those instances instead."""
    members = inst.members
    mine: list[_Unit] = []
    seen: set[int] = set()
    for i in members:
        k = unit_at[i]
        if k not in seen:
            seen.add(k)
            unit = units[k]
            assert unit is not None
            mine.append(unit)
            units[k] = None
    ordered = _sorted(mine)
    if isinstance(ordered, set):
        return ordered
    mine = ordered
    made = {o for u in mine for o in u.outputs if o}
    reads_inside: Counter[str] = Counter()
    for i in members:
        reads_inside.update(maps.reads(i))
    inputs: list[str] = []
    consts: dict[str, onnx.TensorProto] = {}
    taken: set[str] = set()
    for u in mine:
        for name in u.reads:
            if name in made or name in taken:
                continue
            taken.add(name)
            if name in constants:
                consts[name] = maps.initializers[name]
            else:
                inputs.append(name)
    outputs = [o for u in mine for o in u.outputs
               if o and (o in maps.graph_outputs or maps.read_count.get(o, 0) > reads_inside.get(o, 0))]
    body = Body(inst.path, [u.node for u in mine], inputs, outputs, consts, canonical_inputs=inputs)
    fp = fingerprint(body).full
    node = onnx.NodeProto()
    node.op_type, node.domain, node.overload = identifier(inst.class_name), domain, fp
    node.name = inst.path
    node.input.extend(inputs)
    node.output.extend(outputs)
    last = members[-1]
    call = _Unit(node, list(inputs), list(outputs), last, inst.number)
    units[last] = call
    for i in members:
        unit_at[i] = last
    return _Folded(inst, body, fp, call)


def _name(folded: list[_Folded], domain: str) -> tuple[dict[str, FunctionKey], dict[str, str]]:
    """Function key per distinct (class, body): the overload is empty when a class has one body, else what sets
    the body apart (``names.overload_keys``); and the overloads that became variant names (``_as_variants``)."""
    firsts: dict[str, _Folded] = {}
    for f in folded:
        firsts.setdefault(f.identity, f)
    per_class: dict[str, list[_Folded]] = {}
    for f in firsts.values():  # inside out: a class's inner classes are named before it
        per_class.setdefault(f.inst.class_name, []).append(f)
    nested = {n.overload for f in folded for n in f.body.nodes if n.domain == domain}
    keys: dict[str, FunctionKey] = {}
    variants: dict[str, str] = {}
    for cls, group in per_class.items():
        if len(group) == 1:
            keys[group[0].identity] = FunctionKey(domain, identifier(cls), "")
            continue
        named = overload_keys([Unnamed(cls, f.body, f.identity) for f in group], domain)
        inner = _inner_calls(group, keys, domain)
        taken = {k.overload for k in named}
        for f, key, calls in zip(group, named, inner, strict=True):
            better = _call_words(calls, inner)
            if _HASH_ONLY.match(key.overload) and better and better not in taken and len(better) <= 48:
                taken.add(better)
                key = FunctionKey(domain, key.name, better)
            keys[f.identity] = key
        if any(f.identity in nested for f in group):
            _as_variants([f.identity for f in group], keys, variants)
    return keys, variants


def _as_variants(identities: list[str], keys: dict[str, FunctionKey], variants: dict[str, str]) -> None:
    """A family called from inside another function's body with more than one overload gets TorchScript's variant
    names instead (``T5Attention``, ``T5Attention.1``; the overload kept for the doc string): onnxruntime 1.32
    resolves a call in the main graph by (domain, name, overload) but a call inside a function body by (domain,
    name) alone, so an overloaded inner call fails to load ("is not a registered function/op") or, when the family
    has an overload "", silently runs that one. The index reads variant names as one family, as for TorchScript."""
    for k, identity in enumerate(identities):
        key = keys[identity]
        variants[identity] = key.overload
        keys[identity] = FunctionKey(key.domain, key.name if k == 0 else f"{key.name}.{k}", "")


_HASH_ONLY = re.compile(r"^default_[0-9a-f]{6}_*$")  # overload_keys found no literal that sets the body apart


def _call_words(calls: list[tuple[str, str]], inner: list[list[tuple[str, str]]]) -> str:
    """``with_T5LayerCrossAttention`` (a function only this body calls), ``without_…`` (one it alone does not
    call), else the overloads it calls that another body does not; "" when the calls are alike."""
    ops = {op for op, _label in calls}
    others = [{op for op, _label in other} for other in inner if other is not calls]
    only = sorted(ops - set().union(*others)) if others else []
    if only:
        return identifier("with_" + "_".join(only[:2]))
    missing = sorted(set().union(*others) - ops) if others else []
    if missing:
        return identifier("without_" + "_".join(missing[:2]))
    labels = [label for _op, label in calls if any(label not in {x for _o, x in other} for other in inner)]
    return identifier("with_" + "_".join(labels[:2])) if labels else ""


def _inner_calls(group: list[_Folded], keys: dict[str, FunctionKey], domain: str) -> list[list[tuple[str, str]]]:
    """Per body, the module functions it calls (``T5LayerCrossAttention``, ``T5Attention_add``), named so far:
    what sets apart bodies that differ only in the calls they make (an encoder block and a decoder block)."""
    out = []
    for f in group:
        names: list[tuple[str, str]] = []
        for n in f.body.nodes:
            if n.domain == domain:
                key = keys.get(n.overload)
                label = (key.name if key is not None else n.op_type) if key is None or not key.overload \
                    else f"{key.name}_{key.overload}"
                if (n.op_type, label) not in names:
                    names.append((n.op_type, label))
        out.append(names)
    return out


def _functions(folded: list[_Folded], keys: dict[str, FunctionKey], variants: dict[str, str], maps: GraphMaps,
               proto: onnx.ModelProto, domain: str) -> list[onnx.FunctionProto]:
    """One FunctionProto per key, cut from the first instance with that body, inner functions first."""
    out: list[onnx.FunctionProto] = []
    made: set[str] = set()
    opsets = [o for o in proto.opset_import if o.domain != domain]
    for f in folded:
        if f.identity in made:
            continue
        made.add(f.identity)
        out.append(_function(f, keys[f.identity], maps, opsets, domain, variants.get(f.identity, "")))
    return out


def _function(f: _Folded, key: FunctionKey, maps: GraphMaps, opsets: list[onnx.OperatorSetIdProto],
              domain: str, overload: str) -> onnx.FunctionProto:
    body = f.body
    internal = {o for n in body.nodes for o in n.output if o} | set(body.constants)
    rename: dict[str, str] = {}
    taken = set(internal)
    prefix = f.inst.path + "."
    for k, name in enumerate(body.inputs):
        fx = maps.fx_names(name)
        base = name[len(prefix):] if name.startswith(prefix) else (fx[0] if fx else f"in{k}")
        formal = identifier(base)
        while formal in taken:
            formal += "_"
        taken.add(formal)
        rename[name] = formal
    fn = onnx.FunctionProto()
    fn.domain, fn.name, fn.overload = key.domain, key.name, key.overload
    fn.input.extend(rename[x] for x in body.inputs)
    fn.output.extend(body.outputs)
    for name, tensor in body.constants.items():
        fn.node.append(constant_node(name, tensor))
    nested = False
    for node in body.nodes:
        copy = fn.node.add()
        copy.CopyFrom(node)
        nested = nested or node.domain == domain
        rename_reads(copy, rename)
    if f.hoisted is not None:
        parametrise(fn, f.hoisted, len(body.constants))
    fn.opset_import.extend(opsets)
    if nested:
        fn.opset_import.append(opset_id(domain, 1))
    variant = variant_note(overload) if overload else ""
    fn.doc_string = f"nn.Module {f.inst.module.class_name}{variant}, cut from instance {f.inst.path}"
    return fn


def _rename_calls(nodes: Sequence[onnx.NodeProto], domain: str, keys: dict[str, FunctionKey]) -> None:
    """Give calls their final key (they carried the body's fingerprint as a provisional overload)."""
    for node in nodes:
        if node.domain == domain and node.overload in keys:
            key = keys[node.overload]
            node.op_type, node.overload = key.name, key.overload


def _rebuilt(proto: onnx.ModelProto, main: list[_Unit], maps: GraphMaps, functions: list[onnx.FunctionProto],
             domain: str) -> onnx.ModelProto:
    """The model with ``main`` as its graph's nodes; initializers and value infos no longer read are dropped. Made
    by copying the whole model (fields this onnx does not know are kept, as the aten fold keeps them)."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    graph = out.graph
    del graph.node[:]
    graph.node.extend(u.node for u in main)
    used = {name for u in main for name in (*u.reads, *u.outputs)} | maps.graph_outputs  # reads: captured too
    kept = [t for t in graph.initializer if t.name in used]
    if len(kept) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)
    infos = [v for v in graph.value_info if v.name in used]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    out.functions.extend(functions)
    if not any(o.domain == domain for o in out.opset_import):
        out.opset_import.append(opset_id(domain, 1))
    out.ir_version = max(out.ir_version, 10)
    return out


def _cycle(members: list[int], maps: GraphMaps) -> str | None:
    """A reason when folding ``members`` (ascending node indices) would form a cycle: some path leaves the set and
    comes back into it. One pass over the span between its first and last node."""
    if not members or members[-1] - members[0] + 1 == len(members):
        return None
    group = set(members)
    reach: set[str] = set()  # values made outside the group that depend on the group
    for j in range(members[0], members[-1] + 1):
        reads = maps.reads(j)
        if j in group:
            if any(r in reach for r in reads):
                return _CYCLE
            continue
        if any(r in reach or maps.producer.get(r, -1) in group for r in reads):
            reach.update(o for o in maps.outputs[j] if o)
    return None


def _sorted(units: list[_Unit]) -> list[_Unit] | set[int]:
    """``units`` in a stable topological order (Kahn, by position), unchanged when they are in one already; when
    there is none, one instance whose call is on a cycle (the original graph has none, so only calls can be).
    Nothing rescans the graph per instance: a cycle costs one more pass of the whole fold."""
    producer = {o: i for i, u in enumerate(units) for o in u.outputs if o}
    if all(producer.get(r, -1) < i for i, u in enumerate(units) for r in u.reads):
        return units
    out, waiting, users, deps = kahn(dependencies([u.reads for u in units], [u.outputs for u in units]))
    if len(out) == len(units):
        return [units[i] for i in out]
    # what is stuck is on a cycle or downstream of one: peel off the stuck units nothing stuck reads
    stuck = {i for i, w in enumerate(waiting) if w}
    readers = {i: sum(1 for u in users[i] if u in stuck) for i in stuck}
    sinks = [i for i, n in readers.items() if n == 0]
    while sinks:
        i = sinks.pop()
        stuck.discard(i)
        for j in deps[i]:
            if j in stuck:
                readers[j] -= 1
                if readers[j] == 0:
                    sinks.append(j)
    on_cycle = sorted(units[i].instance for i in stuck if units[i].instance >= 0)
    if not on_cycle:
        raise ValueError("the folded graph has a cycle that no module call explains")
    return {on_cycle[0]}  # one at a time: leaving one call flat may break the cycle for the others


__all__ = ["MODULE_DOMAIN", "OUTSIDE", "ModuleFoldReport", "fold_modules"]
