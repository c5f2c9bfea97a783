"""The abstract graph of one scope of an indexed model, before layout.

A *scope* is ``MAIN`` (the main graph), a ``FunctionKey`` (that function's body) or an ``AtenCall`` (just that
call's nodes, with its inputs and outputs as boundary nodes). Scene node ids are stable and unique:

- ``n:<i>``: node ``i`` of the scope's top graph (an ``op`` or ``function_call`` box); in an aten-call scene
  nodes may sit inside subgraphs, and the id joins the node path with ``/`` (``n:3/then_branch/0``);
- ``call:<fx name>``: one aten call of a flat dynamo export, collapsed to one box;
- ``mod:<module path>``: one ``nn.Module`` namespace, collapsed to one box;
- ``in:<value>``, ``out:<value>``, ``const:<value>``: graph (or boundary) inputs, outputs, small initializers.

(When a model repeats a name, later ids get a ``#2``, ``#3`` … suffix.) Passing a ``call:`` or ``mod:`` id in
``expanded`` shows what is inside that box instead of the box, as a *group* (``Scene.groups``, id the box's)
that the layout outlines around exactly its boxes and the view names. Labels are raw model text: whoever draws
them escapes them.

Built for 100k-node graphs: one pass over the nodes assigns each to a box (plain lists of ints and strings);
values and edges are read only for nodes whose box is kept in the scene; no Python object is made per node.
What does need the whole graph (how often each value is read, value types by name, small initializers) is read
once per graph by ``Scenes(index)`` and shared by all the scenes it builds (the report draws 20 aten calls of a
100k-node export with one pass); ``build_scene`` is a ``Scenes`` used once. Those tables are ``graph_facts.py``'s,
the boxes of a flat export ``grouping.py``'s, box text ``labels.py``'s.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import onnx

from inspector.core.model.calls import AtenCall, Scope
from inspector.core.model.graph import node_reads
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope, MainGraph
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.walk import NodePath, as_text, may_have_subgraphs, resolve_path, subgraphs
from inspector.core.util.units import plural
from inspector.render.graph_facts import GraphFacts
from inspector.render.grouping import Grouping, main_grouping, unique_id
from inspector.render.labels import STANDARD_DOMAINS, attrs_text, constant_text, op_label

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


@dataclass(frozen=True, slots=True)
class SceneGroup:
    """An expanded module or aten call of the main graph: drawn as an outline, named, around its boxes."""

    id: str  # the id of the box it replaces (``call:…``, ``mod:…``)
    label: str  # aten target and FX name, or module path and class; raw model text, not escaped
    parent: str | None  # the group it is drawn in (None: the graph)


@dataclass(slots=True)
class Scene:
    title: str
    nodes: list[SceneNode]
    edges: list[SceneEdge]
    truncated: bool = False
    hidden_nodes: int = 0
    groups: list[SceneGroup] = field(default_factory=list)  # parents before their children
    group_of: dict[str, str] = field(default_factory=dict)  # box id -> the innermost group drawn around it
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
        self._graphs: dict[GraphScope, GraphFacts] = {}
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
            grouping = main_grouping(index, expanded) if index.provenance.calls else None
            title = f"{scope} ({g.name})" if g.name else str(scope)
            if self._user_inputs is None:
                self._user_inputs = index.user_inputs()
            return _graph_scene(title, self.facts(MAIN), self._user_inputs, grouping, max_nodes)
        raise TypeError(f"not a scope: {scope!r}")

    def facts(self, scope: GraphScope) -> GraphFacts:
        """The shared facts of the main graph or a function body (``KeyError`` for an unknown function)."""
        facts = self._graphs.get(scope)
        if facts is None:
            index = self.index
            if isinstance(scope, FunctionKey):
                f = index.functions.functions[scope]
                infos: Sequence[onnx.ValueInfoProto] = getattr(f, "value_info", ())
                facts = GraphFacts(f.node, list(f.output), lambda: (infos,), None, _function_calls(index, scope))
            else:
                g = index.proto.graph
                facts = GraphFacts(g.node, [v.name for v in g.output],
                                    lambda: (g.input, g.output, g.value_info), g.initializer,
                                    _function_calls(index, MAIN), lambda: index.graph_maps().read_count,
                                    lambda: _inputs_outputs_value_infos(index))
            self._graphs[scope] = facts
        return facts


# --------------------------------------------------------------------------------------------
# graph scenes (main graph, function bodies)
# --------------------------------------------------------------------------------------------


def _inputs_outputs_value_infos(index: ModelIndex) -> list[str]:
    """The main graph's declared names (``ModelIndex.declared_names``: inputs, value infos, outputs) in the order
    its scenes look types up in: inputs, outputs, value infos."""
    names, g = index.declared_names(), index.proto.graph
    a, v = len(g.input), len(g.value_info)
    return names[:a] + names[a + v:] + names[a:a + v]


def _function_calls(index: ModelIndex, scope: GraphScope) -> dict[int, FunctionKey]:
    """Top-level nodes of ``scope`` that call a local function, by node index."""
    out: dict[int, FunctionKey] = {}
    for key, sites in index.functions.calls.items():
        for site in sites:
            if site.caller == scope and len(site.path) == 1 and isinstance(site.path[0], int):
                out[site.path[0]] = key
    return out


def _graph_scene(title: str, facts: GraphFacts, inputs: list[str], grouping: Grouping | None,
                 max_nodes: int) -> Scene:
    nodes, outputs = facts.nodes, facts.outputs
    node_box, order, expanded_nodes = _boxes(len(nodes), grouping)
    used: set[str] = set()
    input_keys = {name: unique_id(f"in:{name}", used) for name in dict.fromkeys(inputs)}
    output_keys = {name: unique_id(f"out:{name}", used) for name in dict.fromkeys(outputs) if name}
    constants, const_keys, const_before = _constants(facts, expanded_nodes, input_keys, used)

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
    pairs = _graph_edges(nodes, node_box, kept, truncated, input_keys, output_keys, const_keys)

    # scene objects for what is kept
    needed = {name for name, key in (*input_keys.items(), *output_keys.items()) if key in kept}
    needed.update(next(iter(vs)) for vs in pairs.values() if len(vs) == 1)
    types = facts.types(needed)
    scene_nodes: list[SceneNode] = []
    names = {key: name for name, key in itertools.chain(input_keys.items(), output_keys.items(), const_keys.items())}
    for entry in entries:
        if isinstance(entry, int):
            scene_nodes.append(_node_box(nodes[entry], entry, facts.fcalls.get(entry)))
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
            above = grouping.open_modules.get(grouping.parent.get(entry) or "")
            scene_nodes.append(_module_box(entry, grouping.modules[entry], above))
    edges = [_edge(src, dst, values, types) for (src, dst), values in pairs.items()]
    scene = Scene(title, scene_nodes, edges, truncated, hidden)
    if grouping is not None and (grouping.open_calls or grouping.open_modules):
        _groups(scene, grouping, const_before, const_keys)
    return scene


def _groups(scene: Scene, grouping: Grouping, const_before: dict[int, list[str]], const_keys: dict[str, str]) -> None:
    """The outlined groups of ``scene`` (expanded modules and aten calls holding a box), and each box's group."""
    node_call, call_group, parent = grouping.node_call, grouping.call_group, grouping.parent
    for node in scene.nodes:
        if node.id.startswith("n:"):
            i = int(node.id[2:])
            group = call_group[node_call[i]]
            if group is not None:
                scene.group_of[node.id] = group
                for name in const_before.get(i, ()):  # a constant is drawn with the node it was placed for
                    scene.group_of[const_keys[name]] = group
        elif (group := parent.get(node.id)) is not None:
            scene.group_of[node.id] = group
    held = set(scene.group_of.values())
    for group in list(held):  # the groups holding a group that holds boxes
        while (group := parent.get(group)) is not None:
            held.add(group)
    order = [*grouping.open_modules, *grouping.open_calls]  # modules top down, then calls
    for gid in order:
        if gid in held:
            if gid in grouping.open_calls:
                call = grouping.open_calls[gid]
                label = f"{call.target}  {call.name}"
            else:
                module = grouping.open_modules[gid]
                cls = module.class_name.rsplit(".", 1)[-1]
                name = module.name_under(grouping.open_modules.get(parent.get(gid) or ""))
                label = f"{name}  {cls}" if cls else name
            scene.groups.append(SceneGroup(gid, label, parent.get(gid)))


def _boxes(n: int, grouping: Grouping | None) -> tuple[list[_Key], list[_Key], list[int]]:
    """Every node to its box, the boxes in order of their first node, and the nodes of expanded aten calls."""
    expanded_nodes: list[int] = []
    node_box: list[_Key]
    order: list[_Key]
    if grouping is None:
        node_box = list(range(n))
        return node_box, list(node_box), expanded_nodes
    node_box = [0] * n
    order = []
    seen: set[str] = set()
    node_call, call_box, end = grouping.node_call, grouping.call_box, grouping.calls_end
    for i in range(n):
        c = node_call[i]
        box = call_box[c]
        if box is None:
            node_box[i] = i
            order.append(i)
            if 0 <= c < end:  # (a node of an expanded aten call, not a module's bare node)
                expanded_nodes.append(i)
        else:
            node_box[i] = box
            if box not in seen:
                seen.add(box)
                order.append(box)
    return node_box, order, expanded_nodes


def _constants(facts: GraphFacts, expanded_nodes: list[int], input_keys: dict[str, str], used: set[str],
               ) -> tuple[dict[str, onnx.TensorProto], dict[str, str], dict[int, list[str]]]:
    """Small initializers read by nodes of expanded aten calls become constant nodes, placed before their reader:
    the tensors, their scene ids, and which go before which node."""
    constants: dict[str, onnx.TensorProto] = {}
    const_keys: dict[str, str] = {}
    const_before: dict[int, list[str]] = {}
    if expanded_nodes and facts.initializers is not None:
        nodes = facts.nodes
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
                const_keys[name] = unique_id(f"const:{name}", used)
                const_before.setdefault(first_reader[name], []).append(name)
    return constants, const_keys, const_before


def _graph_edges(nodes: Sequence[onnx.NodeProto], node_box: list[_Key], kept: set[_Key], truncated: bool,
                 input_keys: dict[str, str], output_keys: dict[str, str], const_keys: dict[str, str],
                 ) -> dict[tuple[_Key, _Key], dict[str, None]]:
    """Edges between kept boxes, with the values each carries, from the nodes whose box is kept only."""
    producer: dict[str, _Key] = {}
    for name, key in input_keys.items():
        if key in kept:
            producer[name] = key
    from_constant: set[_Key] = set()
    for name, key in const_keys.items():
        if key in kept:
            producer[name] = key
            from_constant.add(key)
    n = len(nodes)
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
    return pairs


def _scene_id(key: _Key) -> str:
    return f"n:{key}" if isinstance(key, int) else key


def _edge(src: _Key, dst: _Key, values: dict[str, None], types: dict[str, str]) -> SceneEdge:
    first = next(iter(values))
    label = types.get(first, "") if len(values) == 1 else f"{first} (+{len(values) - 1})"
    return SceneEdge(_scene_id(src), _scene_id(dst), first, label)


def _node_box(node: onnx.NodeProto, i: int, callee: FunctionKey | None) -> SceneNode:
    if callee is not None:
        return SceneNode(f"n:{i}", str(callee), FUNCTION_CALL, (callee, (i,)), node.name, True)
    return SceneNode(f"n:{i}", op_label(node), OP, (i,), node.name, attrs=attrs_text(node))


def _call_box(key: str, call: AtenCall) -> SceneNode:
    count = len(call.node_paths)
    detail = f"{call.name} ({plural(count, 'node')})"
    return SceneNode(key, call.target, ATEN_CALL, call, detail, True)


def _module_box(key: str, module: ModuleNode, above: ModuleNode | None = None) -> SceneNode:
    """A module's box, named past the open module it is drawn in (``gate_proj`` inside ``model.layers.100.mlp``, as
    the Modules tree and the overview name it: the full path made each box as wide as the deepest one); its ref keeps
    the whole path (its tooltip's)."""
    count = module.total_nodes()
    cls = module.class_name.rsplit(".", 1)[-1]
    detail = f"{cls}, {plural(count, 'node')}" if cls else plural(count, 'node')
    return SceneNode(key, module.name_under(above), MODULE, module.path, detail, True)


# --------------------------------------------------------------------------------------------
# aten-call scenes
# --------------------------------------------------------------------------------------------


def _call_scene(facts: GraphFacts, call: AtenCall, max_nodes: int, functions: Container[FunctionKey]) -> Scene:
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
        boundary[v] = unique_id(f"const:{v}" if v in small else f"in:{v}", used)
    output_keys = {v: unique_id(f"out:{v}", used) for v in produced if v in outside}
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
        if node.domain not in STANDARD_DOMAINS and callee in functions:
            scene_nodes.append(SceneNode(key, str(callee), FUNCTION_CALL, (callee, p), node.name, True))
        else:
            scene_nodes.append(SceneNode(key, op_label(node), OP, p, node.name, attrs=attrs_text(node)))
    for v, key in output_keys.items():
        if key in kept:
            scene_nodes.append(SceneNode(key, v, OUTPUT, v, types.get(v, "")))
    edges = [_edge(src, dst, values, types) for (src, dst), values in pairs.items()]
    return Scene(f"{call.target} ({call.name})", scene_nodes, edges, truncated, hidden)


def _read_outside(facts: GraphFacts, paths: list[NodePath], produced: set[str]) -> set[str]:
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
