"""The abstract graph of one scope of an indexed model, before layout.

A *scope* is ``MAIN`` (the main graph), a ``FunctionKey`` (that function's body) or an ``AtenCall`` (just that
call's nodes, with its inputs and outputs as boundary nodes). Scene node ids are stable and unique:

- ``n:<i>``: node ``i`` of the scope's top graph (an ``op`` or ``function_call`` box); in an aten-call scene
  nodes may sit inside subgraphs, and the id joins the node path with ``/`` (``n:3/then_branch/0``);
- ``call:<fx name>``: one aten call of a flat dynamo export, collapsed to one box;
- ``mod:<module path>``: one ``nn.Module`` namespace, collapsed to one box;
- ``in:<value>``, ``out:<value>``, ``const:<value>``: graph (or boundary) inputs, outputs, small initializers.

(When a model repeats a name, later ids get a ``#2``, ``#3`` … suffix.) Passing a ``call:`` or ``mod:`` id in
``expanded`` shows what is inside that box instead of the box. Labels are raw model text: whoever draws them
escapes them.

Built for 100k-node graphs: one pass over the nodes assigns each to a box (plain lists of ints and strings);
values and edges are read only for nodes whose box is kept in the scene; no Python object is made per node.
What does need the whole graph (how often each value is read, value types by name, small initializers) is read
once per graph by ``Scenes(index)`` and shared by all the scenes it builds (the report draws 20 aten calls of a
100k-node export with one pass); ``build_scene`` is a ``Scenes`` used once.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

import onnx
from onnx import numpy_helper

from inspector.core.bodies.literals import attribute_value
from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.graph import is_small_constant as _is_small
from inspector.core.model.graph import node_reads
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope, MainGraph
from inspector.core.model.provenance import ModuleNode
from inspector.core.model.tensors import dtype_name
from inspector.core.model.values import type_text
from inspector.core.model.walk import NodePath, as_text, iter_nodes, may_have_subgraphs, resolve_path, subgraphs
from inspector.core.util.slices import SLICE, in_slices, listed

if TYPE_CHECKING:
    from inspector.core.model.index import ModelIndex

OP = "op"
FUNCTION_CALL = "function_call"
ATEN_CALL = "aten_call"
MODULE = "module"
INPUT = "input"
OUTPUT = "output"
CONSTANT = "constant"
KINDS = (OP, FUNCTION_CALL, ATEN_CALL, MODULE, INPUT, OUTPUT, CONSTANT)
DEFAULT_MAX_NODES = 400

_STANDARD_DOMAINS = ("", "ai.onnx")

# A box while the scene is built: an int is node i of the scope's top graph, a str is a scene id.
_Key = int | str


@dataclass(frozen=True, slots=True)
class SceneNode:
    id: str  # unique within the scene, stable (see the module docstring)
    label: str  # op type, aten target, function key or module path; raw model text, not escaped
    kind: str  # one of KINDS
    # What the GUI acts on: the NodePath for "op"; the AtenCall for "aten_call"; (callee FunctionKey, NodePath)
    # for "function_call"; the module path for "module"; the value name for input/output/constant.
    ref: object
    detail: str = ""  # second line: node name, "transpose_2 (3 nodes)", class name, tensor type
    expandable: bool = False  # modules and aten calls open in place; function calls can be entered
    attrs: str = ""  # third line of an op box: its literal attributes, e.g. "perm=[0,2,1,3]"; raw model text

    def __post_init__(self) -> None:
        # a model above EAGER_TEXT_CHECK_NODES is not checked for strings that are not valid UTF-8 up front: such a
        # name arrives as bytes, which no text widget or writer takes
        for name in ("label", "detail", "attrs"):
            value = getattr(self, name)
            if value.__class__ is not str:
                object.__setattr__(self, name, as_text(value))


@dataclass(frozen=True, slots=True)
class SceneEdge:
    source: str
    target: str
    value: str  # the (first) ONNX value carried
    label: str = ""  # tensor type when one value is carried and its type is known; "x (+2)" for several values

    def __post_init__(self) -> None:  # (as for SceneNode)
        for name in ("value", "label"):
            value = getattr(self, name)
            if value.__class__ is not str:
                object.__setattr__(self, name, as_text(value))


@dataclass(slots=True)
class Scene:
    title: str
    nodes: list[SceneNode]
    edges: list[SceneEdge]
    truncated: bool = False
    hidden_nodes: int = 0
    _by_id: dict[str, SceneNode] | None = field(default=None, repr=False, compare=False)

    def node(self, node_id: str) -> SceneNode:
        """The scene node with ``node_id`` (``KeyError`` when absent)."""
        if self._by_id is None:
            self._by_id = {n.id: n for n in self.nodes}
        return self._by_id[node_id]


def build_scene(index: ModelIndex, scope: Scope, expanded: frozenset[str] = frozenset(),
                max_nodes: int = DEFAULT_MAX_NODES) -> Scene:
    """The scene of ``scope`` (``MAIN``, a ``FunctionKey`` or an ``AtenCall``) with ``expanded`` boxes opened.

    Never more than ``max_nodes`` scene nodes: the first ones in graph order are kept, and ``truncated`` and
    ``hidden_nodes`` say what was left out. ``KeyError`` for a function the model does not define. A caller that
    draws several scopes of one model keeps a ``Scenes(index)`` instead, which reads each graph once.
    """
    return Scenes(index).scene(scope, expanded, max_nodes)


class Scenes:
    """The scenes of one model index. What every scene of a graph needs (who reads each value, value types by
    name, small initializers by name, which nodes call local functions) is read once per graph, on first use,
    so drawing 20 aten calls of a 100k-node graph costs one pass over it plus the calls' own nodes."""

    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self._graphs: dict[GraphScope, _GraphFacts] = {}
        self._user_inputs: list[str] | None = None

    def scene(self, scope: Scope, expanded: frozenset[str] = frozenset(),
              max_nodes: int = DEFAULT_MAX_NODES) -> Scene:
        """As ``build_scene``."""
        index = self.index
        if isinstance(scope, AtenCall):
            return _call_scene(self.facts(scope.scope), scope, max_nodes, index.functions.functions)
        if isinstance(scope, FunctionKey):
            facts = self.facts(scope)
            return _graph_scene(str(scope), facts, list(index.functions.functions[scope].input), None, max_nodes)
        if isinstance(scope, MainGraph):
            g = index.proto.graph
            grouping = _main_grouping(index, expanded) if index.provenance.calls else None
            title = f"{scope} ({g.name})" if g.name else str(scope)
            if self._user_inputs is None:
                self._user_inputs = index.user_inputs()
            return _graph_scene(title, self.facts(MAIN), self._user_inputs, grouping, max_nodes)
        raise TypeError(f"not a scope: {scope!r}")

    def facts(self, scope: GraphScope) -> _GraphFacts:
        """The shared facts of the main graph or a function body (``KeyError`` for an unknown function)."""
        facts = self._graphs.get(scope)
        if facts is None:
            index = self.index
            if isinstance(scope, FunctionKey):
                f = index.functions.functions[scope]
                infos: Sequence[onnx.ValueInfoProto] = getattr(f, "value_info", ())
                facts = _GraphFacts(f.node, list(f.output), lambda: (infos,), None, _function_calls(index, scope))
            else:
                g = index.proto.graph
                facts = _GraphFacts(g.node, [v.name for v in g.output],
                                    lambda: (g.input, g.output, g.value_info), g.initializer,
                                    _function_calls(index, MAIN), lambda: index.graph_maps().read_count)
            self._graphs[scope] = facts
        return facts


class _GraphFacts:
    """One graph's lookup tables, each built on first use by one pass over the graph."""

    def __init__(self, nodes: Sequence[onnx.NodeProto], outputs: list[str],
                 value_infos: Callable[[], Sequence[Sequence[onnx.ValueInfoProto]]],
                 initializers: Sequence[onnx.TensorProto] | None, fcalls: dict[int, FunctionKey],
                 read_count: Callable[[], Counter[str]] | None = None) -> None:
        """``read_count``: the graph's read counts when they are shared (the main graph's ``GraphMaps``)."""
        self.nodes = nodes
        self._read_count = read_count
        self.outputs = outputs
        self.initializers = initializers
        self.fcalls = fcalls  # top-level node index -> the local function it calls
        self._value_infos = value_infos
        self._infos: dict[str, onnx.ValueInfoProto] | None = None  # the first value info of each name
        self._more_infos: dict[str, list[onnx.ValueInfoProto]] = {}  # the later ones of a repeated name
        self._scanned = False  # the first scene's types were read by a pass over the value infos
        self._small: dict[str, tuple[int, onnx.TensorProto]] | None = None
        self._reads: Counter[str] | None = None
        self._deep_readers: dict[str, list[NodePath]] | None = None

    def types(self, needed: Iterable[str]) -> dict[str, str]:
        """Tensor types of ``needed`` values: the first value info of that name that has a type."""
        infos = self._infos
        if infos is None and not self._scanned:  # one scene: a pass reading names is cheaper than a map of all
            self._scanned = True
            return _types(itertools.chain.from_iterable(self._value_infos()), set(needed))
        if infos is None:
            # read in C a slice at a time: a 100k-node export has 100k value infos (in one go, one C call held the
            # GIL for 50-100 ms while the app's GUI thread waited)
            seq = listed(self._value_infos())
            names: list[str] = []
            infos = self._infos = {}
            for start, piece in zip(itertools.count(0, SLICE), in_slices(seq)):
                names += map(attrgetter("name"), piece)
                infos.update(zip(names[start:], piece))
            if len(infos) < len(seq):  # a repeated name: keep the first, and the later ones for when it has no type
                infos = self._infos = {}
                for name, v in zip(names, seq):
                    if name in infos:
                        self._more_infos.setdefault(name, []).append(v)
                    else:
                        infos[name] = v
        out: dict[str, str] = {}
        for name in needed:
            first = infos.get(name)
            if first is None:
                continue
            for v in (first, *self._more_infos.get(name, ())):
                text = type_text(v.type)
                if text:
                    out[name] = text
                    break
        return out

    def small_initializers(self) -> dict[str, tuple[int, onnx.TensorProto]]:
        """Small initializers by name (the first small one of a repeated name), with their position."""
        if self._small is None:
            self._small = {}
            for k, t in enumerate(self.initializers or ()):
                if t.name not in self._small and _is_small(t):
                    self._small[t.name] = (k, t)
        return self._small

    def reads(self) -> Counter[str]:
        """Value -> how many times top-level nodes read it (captured names of subgraphs included), counted in C."""
        if self._reads is None and self._read_count is not None:
            self._reads = self._read_count()
        if self._reads is None:
            nodes = self.nodes
            reads = Counter(itertools.chain.from_iterable(
                node_reads(node) if may_have_subgraphs(node) else node.input for node in nodes))
            self._reads = reads
        return self._reads

    def deep_readers(self) -> dict[str, list[NodePath]]:
        """Value -> the nodes at any depth whose inputs name it."""
        if self._deep_readers is None:
            readers: dict[str, list[NodePath]] = {}
            for p, node, _depth in iter_nodes(self.nodes):
                for v in node.input:
                    readers.setdefault(v, []).append(p)
            self._deep_readers = readers
        return self._deep_readers


# --------------------------------------------------------------------------------------------
# grouping of flat dynamo exports: modules, then aten calls
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Grouping:
    node_call: list[int]  # per top-level node: index into provenance.calls, or -1
    call_box: list[str | None]  # per call (plus a trailing None for -1): its box id, None when shown node by node
    calls: dict[str, AtenCall] = field(default_factory=dict)  # aten-call box id -> call
    modules: dict[str, ModuleNode] = field(default_factory=dict)  # module box id -> module


def _unique(base: str, used: set[str]) -> str:
    key = base
    k = 1
    while key in used:
        k += 1
        key = f"{base}#{k}"
    used.add(key)
    return key


def _main_grouping(index: ModelIndex, expanded: frozenset[str]) -> _Grouping:
    prov = index.provenance
    calls = prov.calls
    n = len(index.proto.graph.node)
    node_call = [-1] * n
    main: Scope = MAIN
    mine: list[int] = []  # calls with nodes in the main graph's top level
    for k, call in enumerate(calls):
        scope = call.scope
        if scope is not main and scope != main:
            continue
        top = False
        for p in call.node_paths:
            if len(p) == 1:
                i = p[0]
                if i.__class__ is int and 0 <= i < n:
                    node_call[i] = k
                    top = True
        if top:
            mine.append(k)
    call_ids = [""] * len(calls)
    names = [calls[k].name for k in mine]
    if len(set(names)) == len(names):
        for k, name in zip(mine, names):
            call_ids[k] = "call:" + name
    else:  # a repeated FX name (damaged metadata): later calls get "#2", "#3", ...
        used: set[str] = set()
        for k, name in zip(mine, names):
            call_ids[k] = _unique("call:" + name, used)
    call_box: list[str | None] = [None] * (len(calls) + 1)
    grouping = _Grouping(node_call, call_box)
    # Top down through the module tree: a module is open (root, or expanded with all its ancestors open),
    # a box (its parent is open and it is not expanded), or inside the box of a collapsed ancestor.
    used_modules: set[str] = set()
    open_modules: list[ModuleNode] = [prov.module_root]
    collapsed: list[tuple[ModuleNode, str]] = []
    while open_modules:
        module = open_modules.pop()
        for k in module.calls:
            cid = call_ids[k]
            if cid and cid not in expanded:
                call_box[k] = cid
                grouping.calls[cid] = calls[k]
        for child in reversed(list(module.children.values())):  # popped in declaration order
            mid = _unique("mod:" + child.path, used_modules)
            if mid in expanded:
                open_modules.append(child)
            else:
                grouping.modules[mid] = child
                collapsed.append((child, mid))
    for top_module, box in collapsed:
        stack = [top_module]
        while stack:
            module = stack.pop()
            for k in module.calls:
                call_box[k] = box
            stack.extend(module.children.values())
    for k, cid in enumerate(call_ids):  # calls outside the main graph's top level have no box
        if not cid:
            call_box[k] = None
    return grouping


# --------------------------------------------------------------------------------------------
# graph scenes (main graph, function bodies)
# --------------------------------------------------------------------------------------------


def _function_calls(index: ModelIndex, scope: GraphScope) -> dict[int, FunctionKey]:
    """Top-level nodes of ``scope`` that call a local function, by node index."""
    out: dict[int, FunctionKey] = {}
    for key, sites in index.functions.calls.items():
        for site in sites:
            if site.caller == scope and len(site.path) == 1 and isinstance(site.path[0], int):
                out[site.path[0]] = key
    return out


def _graph_scene(title: str, facts: _GraphFacts, inputs: list[str], grouping: _Grouping | None,
                 max_nodes: int) -> Scene:
    nodes, outputs, fcalls = facts.nodes, facts.outputs, facts.fcalls
    n = len(nodes)
    # 1. every node to its box, boxes in order of their first node
    expanded_nodes: list[int] = []
    node_box: list[_Key]
    order: list[_Key]
    if grouping is None:
        node_box = list(range(n))
        order = list(node_box)
    else:
        node_box = [0] * n
        order = []
        seen: set[str] = set()
        node_call, call_box = grouping.node_call, grouping.call_box
        for i in range(n):
            c = node_call[i]
            box = call_box[c]
            if box is None:
                node_box[i] = i
                order.append(i)
                if c >= 0:
                    expanded_nodes.append(i)
            else:
                node_box[i] = box
                if box not in seen:
                    seen.add(box)
                    order.append(box)

    used: set[str] = set()
    input_keys = {name: _unique(f"in:{name}", used) for name in dict.fromkeys(inputs)}
    output_keys = {name: _unique(f"out:{name}", used) for name in dict.fromkeys(outputs) if name}

    # 2. small initializers read by nodes of expanded aten calls become constant nodes, placed before their reader
    constants: dict[str, onnx.TensorProto] = {}
    const_keys: dict[str, str] = {}
    const_before: dict[int, list[str]] = {}
    if expanded_nodes and facts.initializers is not None:
        first_reader: dict[str, int] = {}
        for i in expanded_nodes:
            for v in nodes[i].input:
                if v and v not in input_keys and v not in first_reader:
                    first_reader[v] = i
        if first_reader:
            small = facts.small_initializers()
            found = sorted((small[v][0], v) for v in first_reader if v in small)  # in initializer order
            for _k, name in found:
                constants[name] = small[name][1]
            for name in sorted(constants, key=lambda v: first_reader[v]):
                const_keys[name] = _unique(f"const:{name}", used)
                const_before.setdefault(first_reader[name], []).append(name)

    entries: list[_Key] = list(input_keys.values())
    for box_key in order:
        if isinstance(box_key, int) and box_key in const_before:
            entries.extend(const_keys[name] for name in const_before[box_key])
        entries.append(box_key)
    entries.extend(output_keys.values())
    truncated = len(entries) > max_nodes
    hidden = len(entries) - max_nodes if truncated else 0
    if truncated:
        entries = entries[: max(max_nodes, 0)]
    kept = set(entries)

    # 3. edges, from the nodes whose box is kept only
    producer: dict[str, _Key] = {}
    for name, key in input_keys.items():
        if key in kept:
            producer[name] = key
    from_constant: set[_Key] = set()
    for name, key in const_keys.items():
        if key in kept:
            producer[name] = key
            from_constant.add(key)
    kept_nodes: Sequence[int] = [i for i in range(n) if node_box[i] in kept] if truncated else range(n)
    for i in kept_nodes:
        dst = node_box[i]
        for o in nodes[i].output:
            if o:
                producer[o] = dst
    pairs: dict[tuple[_Key, _Key], dict[str, None]] = {}
    for i in kept_nodes:
        dst = node_box[i]
        node = nodes[i]
        for v in (node_reads(node) if may_have_subgraphs(node) else node.input):
            src = producer.get(v)
            if src is None or src == dst or (src in from_constant and not isinstance(dst, int)):
                continue
            values = pairs.get((src, dst))
            if values is None:
                pairs[(src, dst)] = {v: None}
            else:
                values[v] = None
    for name, key in output_keys.items():
        src = producer.get(name)
        if key in kept and src is not None:
            pairs.setdefault((src, key), {})[name] = None

    # 4. scene objects for what is kept
    needed = {name for name, key in (*input_keys.items(), *output_keys.items()) if key in kept}
    needed.update(next(iter(vs)) for vs in pairs.values() if len(vs) == 1)
    types = facts.types(needed)
    scene_nodes: list[SceneNode] = []
    names = {key: name for name, key in itertools.chain(input_keys.items(), output_keys.items(), const_keys.items())}
    for entry in entries:
        if isinstance(entry, int):
            scene_nodes.append(_node_box(nodes[entry], entry, fcalls.get(entry)))
        elif entry.startswith("in:") or entry.startswith("out:"):
            name = names[entry]
            scene_nodes.append(SceneNode(entry, name, INPUT if entry.startswith("in:") else OUTPUT, name,
                                         types.get(name, "")))
        elif entry.startswith("const:"):
            name = names[entry]
            scene_nodes.append(SceneNode(entry, name, CONSTANT, name, constant_text(constants[name])))
        elif grouping is not None and entry in grouping.calls:
            scene_nodes.append(_call_box(entry, grouping.calls[entry]))
        elif grouping is not None and entry in grouping.modules:
            scene_nodes.append(_module_box(entry, grouping.modules[entry]))
    edges = [_edge(src, dst, values, types) for (src, dst), values in pairs.items()]
    return Scene(title, scene_nodes, edges, truncated, hidden)


def _scene_id(key: _Key) -> str:
    return f"n:{key}" if isinstance(key, int) else key


def _edge(src: _Key, dst: _Key, values: dict[str, None], types: dict[str, str]) -> SceneEdge:
    first = next(iter(values))
    label = types.get(first, "") if len(values) == 1 else f"{first} (+{len(values) - 1})"
    return SceneEdge(_scene_id(src), _scene_id(dst), first, label)


def op_label(node: onnx.NodeProto) -> str:
    """``Transpose``, or ``domain.Op`` outside the standard domain."""
    return node.op_type if node.domain in _STANDARD_DOMAINS else f"{node.domain}.{node.op_type}"


def attrs_text(node: onnx.NodeProto, limit: int = 80) -> str:
    """A node's literal attributes in one short line (``perm=[0,2,1,3], axis=-1``); subgraphs are left out and
    attributes bound to a function attribute show ``@name``."""
    parts = []
    for a in node.attribute:
        if a.ref_attr_name:
            parts.append(f"{a.name}=@{a.ref_attr_name}")
        elif a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            value, _key = attribute_value(a)
            parts.append(f"{a.name}={value!r}".replace(", ", ",") if isinstance(value, list)
                         else f"{a.name}={value}")
        if sum(len(p) + 2 for p in parts) > limit:
            break
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node_box(node: onnx.NodeProto, i: int, callee: FunctionKey | None) -> SceneNode:
    if callee is not None:
        return SceneNode(f"n:{i}", str(callee), FUNCTION_CALL, (callee, (i,)), node.name, True)
    return SceneNode(f"n:{i}", op_label(node), OP, (i,), node.name, attrs=attrs_text(node))


def _call_box(key: str, call: AtenCall) -> SceneNode:
    count = len(call.node_paths)
    detail = f"{call.name} ({count} node{'s' if count != 1 else ''})"
    return SceneNode(key, call.target, ATEN_CALL, call, detail, True)


def _module_box(key: str, module: ModuleNode) -> SceneNode:
    count = module.total_nodes()
    cls = module.class_name.rsplit(".", 1)[-1]
    detail = f"{cls}, {count} node{'s' if count != 1 else ''}" if cls else f"{count} node{'s' if count != 1 else ''}"
    return SceneNode(key, module.path, MODULE, module.path, detail, True)


# --------------------------------------------------------------------------------------------
# aten-call scenes
# --------------------------------------------------------------------------------------------


def _call_scene(facts: _GraphFacts, call: AtenCall, max_nodes: int, functions: Container[FunctionKey]) -> Scene:
    nodes = facts.nodes
    members: list[tuple[NodePath, onnx.NodeProto]] = []
    for p in sorted(set(call.node_paths)):
        try:
            members.append((p, resolve_path(nodes, p)))
        except KeyError:
            continue
    produced: dict[str, str] = {}
    node_ids = {p: "n:" + "/".join(str(x) for x in p) for p, _n in members}
    for p, node in members:
        for o in node.output:
            if o:
                produced[o] = node_ids[p]
    reads: dict[str, None] = {}
    for _p, node in members:
        for v in node_reads(node):
            if v not in produced:
                reads[v] = None
    outside = _read_outside(facts, [p for p, _n in members], set(produced))

    small: dict[str, onnx.TensorProto] = {}
    if facts.initializers is not None and reads:
        all_small = facts.small_initializers()
        small = {v: all_small[v][1] for v in reads if v in all_small}
    used: set[str] = set(node_ids.values())
    boundary: dict[str, str] = {}  # value -> input/constant id
    for v in reads:
        boundary[v] = _unique(f"const:{v}" if v in small else f"in:{v}", used)
    output_keys = {v: _unique(f"out:{v}", used) for v in produced if v in outside}
    entries = [*boundary.values(), *node_ids.values(), *output_keys.values()]
    truncated = len(entries) > max_nodes
    hidden = len(entries) - max_nodes if truncated else 0
    kept = set(entries[: max(max_nodes, 0)])

    producer = {v: key for v, key in boundary.items() if key in kept}
    producer.update((v, key) for v, key in produced.items() if key in kept)
    pairs: dict[tuple[_Key, _Key], dict[str, None]] = {}
    for p, node in members:
        dst = node_ids[p]
        if dst not in kept:
            continue
        for v in node_reads(node):
            src = producer.get(v)
            if src is not None and src != dst:
                pairs.setdefault((src, dst), {})[v] = None
    for v, key in output_keys.items():
        src = producer.get(v)
        if key in kept and src is not None:
            pairs.setdefault((src, key), {})[v] = None

    types = facts.types({*boundary, *output_keys, *(next(iter(vs)) for vs in pairs.values() if len(vs) == 1)})
    scene_nodes: list[SceneNode] = []
    for v, key in boundary.items():
        if key in kept:
            if v in small:
                scene_nodes.append(SceneNode(key, v, CONSTANT, v, constant_text(small[v])))
            else:
                scene_nodes.append(SceneNode(key, v, INPUT, v, types.get(v, "")))
    for p, node in members:
        key = node_ids[p]
        if key not in kept:
            continue
        callee = FunctionKey(node.domain, node.op_type, node.overload)
        if node.domain not in _STANDARD_DOMAINS and callee in functions:
            scene_nodes.append(SceneNode(key, str(callee), FUNCTION_CALL, (callee, p), node.name, True))
        else:
            scene_nodes.append(SceneNode(key, op_label(node), OP, p, node.name, attrs=attrs_text(node)))
    for v, key in output_keys.items():
        if key in kept:
            scene_nodes.append(SceneNode(key, v, OUTPUT, v, types.get(v, "")))
    edges = [_edge(src, dst, values, types) for (src, dst), values in pairs.items()]
    return Scene(f"{call.target} ({call.name})", scene_nodes, edges, truncated, hidden)


def _read_outside(facts: _GraphFacts, paths: list[NodePath], produced: set[str]) -> set[str]:
    """Which of ``produced`` are read by nodes that are not at ``paths``, or are outputs of their graphs."""
    out = {v for v in facts.outputs if v in produced}
    if all(len(p) == 1 for p in paths):
        # read outside when read more often than by the call's own nodes
        inside: Counter[str] = Counter()
        for i in {p[0] for p in paths}:
            if isinstance(i, int) and 0 <= i < len(facts.nodes):
                node = facts.nodes[i]
                inside.update(v for v in (node_reads(node) if may_have_subgraphs(node) else node.input)
                              if v in produced)
        reads = facts.reads()
        out.update(v for v in produced if reads[v] > inside[v])
        return out
    pathset = set(paths)
    deep = facts.deep_readers()
    out.update(v for v in produced if any(p not in pathset for p in deep.get(v, ())))
    nodes = facts.nodes
    for p in paths:  # values a subgraph returns are read by the node that owns the subgraph
        if len(p) > 1:
            graph = _container(nodes, p)
            if graph is not None:
                out.update(v.name for v in graph.output if v.name in produced)
    return out


def _container(nodes: Sequence[onnx.NodeProto], path: NodePath) -> onnx.GraphProto | None:
    """The subgraph that holds the node at ``path`` (``None`` for the top graph or a broken path)."""
    if len(path) < 3:
        return None
    try:
        owner = resolve_path(nodes, path[:-2])
    except KeyError:
        return None
    step = path[-2]
    return next((g for s, g in subgraphs(owner) if s == step), None)


# --------------------------------------------------------------------------------------------
# value types and constants as text
# --------------------------------------------------------------------------------------------


def _types(infos: Iterable[onnx.ValueInfoProto], needed: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    if not needed:
        return out
    for v in infos:
        name = v.name
        if name in needed and name not in out:
            text = type_text(v.type)
            if text:
                out[name] = text
    return out


def constant_text(t: onnx.TensorProto, width: int = 48) -> str:
    """``FLOAT[] = 0.353553``, ``INT64[3] = 1, 8, 16``: the type and (for small inline tensors) the values."""
    head = f"{dtype_name(t.data_type)}[{','.join(str(d) for d in t.dims)}]"
    if not _is_small(t):
        return head
    try:
        values = numpy_helper.to_array(t).reshape(-1).tolist()
    except Exception:
        return head
    parts = [f"{x:.6g}" if isinstance(x, float) else str(x) for x in values[:8]]
    text = f"{head} = {', '.join(parts)}" + (", …" if len(values) > 8 else "")
    return text if len(text) <= width else text[: width - 1] + "…"
