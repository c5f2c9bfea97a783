"""A flat export and its module fold (``fold --modules``), read as what it is: the module functions inlined again
for the comparison, so that the fold alone is one ``folded`` change (``equivalent``) and a real change inside one
layer is reported at that layer's nodes, under its own module path.

A module function is a local function that is not an aten function and whose body holds nodes cut from a flat
export (``pkg.torch.onnx`` metadata), or calls of such functions; a TorchScript module function carries no such
metadata and is compared as a function, as before. The fold keeps one body per distinct layer, cut from its first
instance: its nodes' module paths name that instance, so each inlined copy has its paths moved to the module path
of its call (the call node's name) and its values and node names prefixed with it, so no two copies share a name.
Attributes a hoisted body references (``ref_attr_name``) take the call's value, else the function's default.

The threat is the usual one for model text: module paths and names are only compared and carried into changes,
whose writers escape them; and size: functions that call themselves, or whose calls would inline to more than
``MAX_INLINED`` nodes (a few nested functions each calling the next twice grow exponentially), are not inlined, and
the two models are compared function by function, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import onnx

from inspector.core.diff.model import Change, FoldRelation
from inspector.core.model.calls import FX_NODE, NAME_SCOPES, NAMESPACE, parse_str_list
from inspector.core.model.graph import captured_names
from inspector.core.model.index import ModelIndex, build_index
from inspector.core.model.keys import FunctionKey
from inspector.core.model.loader import LoadedModel
from inspector.core.model.walk import may_have_subgraphs

_FX_HEAD = re.compile(r"^%([^\s:]+)")  # the FX node's own name, which groups an aten call's nodes
_SPACE = re.compile(r"[\s:]")
MAX_INLINED = 2_000_000  # nodes; 20x the largest replica the benchmarks diff (100k nodes, 1.3 GB resident)


@dataclass(slots=True)
class ModuleCall:
    """One inlined call: the module path it stands for and the function it called."""

    path: str
    callee: FunctionKey
    nodes: set[str] = field(default_factory=set)  # the names its inlined nodes were given


@dataclass(slots=True)
class Inlined:
    """A side whose module calls were inlined: the index the diff compares, and what was inlined."""

    index: ModelIndex
    calls: list[ModuleCall]
    functions: list[FunctionKey]


def module_functions(index: ModelIndex) -> set[FunctionKey]:
    """The local functions of ``index`` a module fold made (see the module docstring)."""
    functions = index.functions.functions
    direct = {k for k, f in functions.items() if index.functions.aten_target(k) is None
              and any(any(p.key == NAME_SCOPES for p in n.metadata_props) for n in f.node)}
    found = set(direct)
    changed = True
    while changed:  # a layer whose body is only calls of module functions is one too
        changed = False
        for k, f in functions.items():
            if k in found or index.functions.aten_target(k) is not None:
                continue
            calls = [FunctionKey(n.domain, n.op_type, n.overload) for n in f.node if n.domain]
            if calls and all(c in found for c in calls):
                found.add(k)
                changed = True
    return found


def inline_module_folds(a: ModelIndex,
                        b: ModelIndex) -> tuple[ModelIndex, ModelIndex, Inlined | None, Literal["a", "b"]]:
    """When exactly one side has module functions, that side with them inlined (and which side it was: "a"/"b")."""
    fa, fb = module_functions(a), module_functions(b)
    fa = fa if fa and _inlined_size(a, fa) is not None else set()
    fb = fb if fb and _inlined_size(b, fb) is not None else set()
    if bool(fa) == bool(fb):
        return a, b, None, "a"
    if fa:
        done = inline(a, fa, b)
        return done.index, b, done, "a"
    done = inline(b, fb, a)
    return a, done.index, done, "b"


def _inlined_size(index: ModelIndex, keys: set[FunctionKey]) -> int | None:
    """The main graph's node count with every call of ``keys`` inlined; None when some of them call themselves
    (directly or not) or the count passes ``MAX_INLINED``."""
    functions = index.functions.functions
    size: dict[FunctionKey, int] = {}
    for root in keys:
        stack: list[tuple[FunctionKey, bool]] = [(root, False)]
        open_: set[FunctionKey] = set()
        while stack:
            key, done = stack.pop()
            if done:
                open_.discard(key)
                size[key] = sum(size.get(FunctionKey(n.domain, n.op_type, n.overload), 1) for n in functions[key].node)
                if size[key] > MAX_INLINED:
                    return None
                continue
            if key in size:
                continue
            if key in open_:
                return None  # recursion
            open_.add(key)
            stack.append((key, True))
            stack.extend((c, False) for c in {FunctionKey(n.domain, n.op_type, n.overload)
                                              for n in functions[key].node} if c in keys)
    total = sum(size.get(FunctionKey(n.domain, n.op_type, n.overload), 1) for n in index.proto.graph.node)
    return total if total <= MAX_INLINED else None


def inline(index: ModelIndex, keys: set[FunctionKey], flat: ModelIndex | None = None) -> Inlined:
    """``index``'s model with every call of ``keys`` in its main graph inlined, recursively, re-indexed; its nodes
    in ``flat``'s order where their names say which of its nodes they are (``_in_order``)."""
    proto = index.proto
    functions = index.functions.functions
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    del out.graph.node[:]
    del out.functions[:]
    out.functions.extend(f for k, f in functions.items() if k not in keys)
    calls: list[ModuleCall] = []
    inliner = _Inliner(functions, keys, calls, {t.name: t for t in out.graph.initializer})
    nodes: list[onnx.NodeProto] = []
    for node in proto.graph.node:
        key = FunctionKey(node.domain, node.op_type, node.overload)
        if key in keys:
            inliner.expand(node, key, node.name, nodes)
        else:
            nodes.append(node)
    out.graph.node.extend(_in_order(nodes, inliner.original, flat) if flat is not None else nodes)
    out.graph.initializer.extend(inliner.added)
    domains = {k.domain for k in keys} - {f.domain for f in out.functions} - {n.domain for n in nodes}
    kept = [o for o in out.opset_import if o.domain not in domains]
    del out.opset_import[:]
    out.opset_import.extend(kept)
    loaded = LoadedModel(index.path, out, "binary", index.model.file_size)
    return Inlined(build_index(loaded, modules=False), calls, sorted(keys, key=str))


class _Inliner:
    def __init__(self, functions: dict[FunctionKey, onnx.FunctionProto], keys: set[FunctionKey],
                 calls: list[ModuleCall], initializers: dict[str, onnx.TensorProto]) -> None:
        self.functions = functions
        self.keys = keys
        self.calls = calls
        self._source: dict[FunctionKey, str] = {}
        self.initializers = initializers  # the main graph's, and the bodies' constants made initializers again
        self.added: list[onnx.TensorProto] = []
        self.original: dict[int, str] = {}  # id of an inlined node of a body's own instance -> its name there

    def expand(self, call: onnx.NodeProto, key: FunctionKey, path: str, into: list[onnx.NodeProto]) -> None:
        """Append the body of ``call`` to ``into``, its names bound to the call's (``_inlined_size`` has checked
        that the calls end, and how many nodes they make)."""
        fn = self.functions[key]
        record = ModuleCall(path, key)
        self.calls.append(record)
        prefix = f"{path}/"
        names = dict(zip(fn.input, call.input))
        names.update(zip(fn.output, call.output))
        for n in fn.node:
            for o in n.output:
                if o and o not in names:
                    names[o] = prefix + o
        attrs = {a.name: a for a in fn.attribute_proto}
        attrs.update((a.name, a) for a in call.attribute)
        source = self._source_path(key)
        for n in fn.node:
            if _is_moved_constant(n):
                names[n.output[0]] = self._initializer(n, names[n.output[0]])
                continue
        for n in fn.node:
            if _is_moved_constant(n):
                continue
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            _bind(copy, names, attrs)
            _move_scopes(copy, source, path)
            inner = FunctionKey(n.domain, n.op_type, n.overload)
            if inner in self.keys:
                self.expand(copy, inner, _moved(n.name, source, path), into)
                continue
            copy.name = prefix + n.name if n.name else ""
            if n.name and source == path:
                self.original[id(copy)] = n.name
            record.nodes.add(copy.name)
            into.append(copy)

    def _initializer(self, node: onnx.NodeProto, prefixed: str) -> str:
        """The name an inlined body constant reads as an initializer: its own name (the flat export's initializer
        the fold moved in), or, when another body holds a different value under that name, the prefixed one."""
        tensor = onnx.TensorProto()
        tensor.CopyFrom(node.attribute[0].t)
        name = node.output[0]
        held = self.initializers.get(name)
        if held is not None and held.SerializeToString() != _named(tensor, name).SerializeToString():
            name = prefixed
        if name not in self.initializers:
            tensor.name = name
            self.initializers[name] = tensor
            self.added.append(tensor)
        return name

    def _source_path(self, key: FunctionKey) -> str:
        """The module path of the instance the body was cut from: the deepest module all its nodes sit in."""
        known = self._source.get(key)
        if known is not None:
            return known
        common: list[str] | None = None
        for n in self.functions[key].node:
            scopes = next((parse_str_list(p.value) for p in n.metadata_props if p.key == NAME_SCOPES), None)
            if not scopes or len(scopes) < 2:
                continue
            mods = scopes[:-1]
            common = mods if common is None else _common(common, mods)
        found = common[-1] if common else ""
        self._source[key] = found
        return found


def _in_order(nodes: list[onnx.NodeProto], original: dict[int, str], flat: ModelIndex) -> list[onnx.NodeProto]:
    """``nodes`` in a topological order that follows ``flat``'s graph order where a node's name (its own, or for a
    node of the instance a body was cut from, its name there) is one of ``flat``'s; a node without one follows
    the node before it. The diff reads an aten call's nodes in graph order, and a fold moves nodes that several
    instances read (a shared attention mask) out of the first instance's body: inlined at its call, that body no
    longer has them where the flat export had them, and its aten call would differ in order alone."""
    position = {n.name: i for i, n in enumerate(flat.proto.graph.node) if n.name}
    keys: list[float] = []
    last = -1.0
    for n in nodes:
        k = position.get(original.get(id(n), n.name))
        last = float(k) if k is not None else last + 1e-6
        keys.append(last)
    from inspector.core.util.order import dependencies, kahn  # (here: a module fold's calls inlined; start-up)

    order = kahn(dependencies([_reads(n) for n in nodes], [n.output for n in nodes]), keys).order
    out = [nodes[i] for i in order]
    return out if len(out) == len(nodes) else nodes  # (a cycle: keep the order as it was)


def _reads(node: onnx.NodeProto) -> list[str]:
    reads = list(node.input)
    if may_have_subgraphs(node):
        reads.extend(captured_names(node))
    return reads


def _is_moved_constant(node: onnx.NodeProto) -> bool:
    """A Constant node the fold made from a small initializer (no fx metadata, one tensor value)."""
    return (node.op_type == "Constant" and not node.domain and not node.metadata_props and len(node.output) == 1
            and len(node.attribute) == 1 and node.attribute[0].name == "value" and not node.attribute[0].ref_attr_name)


def _named(tensor: onnx.TensorProto, name: str) -> onnx.TensorProto:
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    copy.name = name
    return copy


def _common(a: list[str], b: list[str]) -> list[str]:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return a[:k]


def _moved(name: str, source: str, path: str) -> str:
    """A module path under the body's source instance, moved under the call's."""
    if source and (name == source or name.startswith(source + ".")):
        return path + name[len(source):]
    return name


def _move_scopes(node: onnx.NodeProto, source: str, path: str) -> None:
    """Module paths under ``source`` moved under ``path``, and the FX node's name tagged with ``path`` (its aten
    call then groups only this copy's nodes). Plain text replaces, delimited on both sides (``'layers.1'`` and
    ``'layers.1.`` never touch ``'layers.10'``): parsing and printing each node's lists cost 50 us a node, 5 s of a
    100k-node diff; a list with escapes or double quotes is parsed."""
    if not source or source == path:
        return
    for p in node.metadata_props:
        key, value = p.key, p.value
        if key == NAME_SCOPES:
            if "\\" in value or '"' in value:
                scopes = parse_str_list(value)
                if scopes:
                    p.value = repr([_moved(s, source, path) for s in scopes[:-1]] + scopes[-1:])
            else:
                p.value = value.replace(f"'{source}'", f"'{path}'").replace(f"'{source}.", f"'{path}.")
        elif key == FX_NODE:
            m = _FX_HEAD.match(value)
            if m is not None:
                p.value = f"{value[:m.end()]}@{_SPACE.sub('_', path)}{value[m.end():]}"
        elif key == NAMESPACE:
            p.value = value.replace(f"/{source}: ", f"/{path}: ").replace(f"/{source}.", f"/{path}.")


def _bind(node: onnx.NodeProto, names: dict[str, str], attrs: dict[str, onnx.AttributeProto]) -> None:
    """Rename what ``node`` reads and makes (also what its subgraphs read from the body) and resolve the
    attributes it references."""
    for i, x in enumerate(node.input):
        if x in names:
            node.input[i] = names[x]
    for i, y in enumerate(node.output):
        if y in names:
            node.output[i] = names[y]
    kept = []
    for a in node.attribute:
        if a.ref_attr_name:
            given = attrs.get(a.ref_attr_name)
            if given is None or given.ref_attr_name:
                continue  # no value at the call and no default: the attribute is absent, as ONNX says
            resolved = onnx.AttributeProto()
            resolved.CopyFrom(given)
            resolved.name = a.name
            kept.append(resolved)
            continue
        for g in _graphs(a):
            for sub in g.node:
                _bind(sub, names, attrs)
        kept.append(a)
    if len(kept) != len(node.attribute) or any(a.ref_attr_name for a in node.attribute):
        del node.attribute[:]
        node.attribute.extend(kept)


def _graphs(a: onnx.AttributeProto) -> Iterable[onnx.GraphProto]:
    if a.HasField("g"):
        yield a.g
    yield from a.graphs


def module_relation(inlined: Inlined, folded: Literal["a", "b"], flat: ModelIndex,
                    changes: list[Change]) -> FoldRelation:
    """The fold as one relation, the module calls some change sits in named (each such change says which, in its
    detail): a change's labels (FX names, node names) are placed by the module paths of their nodes."""
    if not any(c.kind != "folded" for c in changes):  # nothing to place: every call is identical
        return FoldRelation(folded, len(inlined.calls), len(inlined.functions),
                            sorted({k.domain for k in inlined.functions}), len(inlined.calls), unit="module")
    where = _paths_by_label(flat)
    where.update(_paths_by_label(inlined.index))
    paths = sorted({c.path for c in inlined.calls}, key=lambda p: (-p.count("."), p))  # innermost first
    callee = {c.path: c.callee for c in inlined.calls}
    differ: set[str] = set()
    for change in changes:
        if change.kind == "folded":
            continue
        found: list[str] = []
        for label in dict.fromkeys((change.where, *change.sites)):
            q = where.get(label)
            inside = next((p for p in paths if q is not None and (q == p or q.startswith(p + "."))), None)
            if inside is not None and inside not in found:
                found.append(inside)
        for p in found:  # a change in an attention call is one in the layer that calls it too
            differ.update(o for o in paths if p == o or p.startswith(o + "."))
        if found:
            named = ", ".join(f"{p} ({callee[p]})" for p in found[:3]) + (" …" if len(found) > 3 else "")
            change.detail = f"{change.detail} [module call {named}]" if change.detail else f"[module call {named}]"
    ordered = [p for p in sorted(callee) if p in differ]
    return FoldRelation(folded, len(inlined.calls), len(inlined.functions),
                        sorted({k.domain for k in inlined.functions}), len(inlined.calls) - len(ordered),
                        unit="module", differ=ordered)


def _paths_by_label(index: ModelIndex) -> dict[str, str]:
    """FX node name and node name -> the module path the node sits in (its name_scopes without the FX name)."""
    out: dict[str, str] = {}
    for node in index.proto.graph.node:
        scopes: list[str] | None = None
        fx = None
        for p in node.metadata_props:
            if p.key == NAME_SCOPES:
                scopes = parse_str_list(p.value)
            elif p.key == FX_NODE:
                fx = _FX_HEAD.match(p.value)
        if not scopes or len(scopes) < 2:
            continue
        path = scopes[-2]
        if fx is not None:
            out.setdefault(fx.group(1), path)
        if node.name:
            out.setdefault(node.name, path)
    return out
