"""The ``nn.Module`` tree of a flat dynamo export, from its aten calls' metadata, built on first use.

Apart from ``provenance`` for start-up: the commands that read aten calls without their modules (summary, check,
diff) do not make its class (about 4 million instructions a dataclass, callgrind, ``benchmarks/bench_startup.py
--instructions``). Module paths and class names come from the model (untrusted): they are kept as text, escaped
wherever they are shown, and the tree is built without recursion however deep the paths go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import onnx

from inspector.core.model.calls import CLASS_HIERARCHY, NAME_SCOPES, NAMESPACE, AtenCall, module_chain
from inspector.core.model.keys import MAIN
from inspector.core.model.walk import as_text


@dataclass(slots=True)
class ModuleNode:
    """One ``nn.Module`` instance in the exported model's hierarchy."""

    path: str  # "layers.0.attn"; "" for the root module
    class_name: str
    children: dict[str, ModuleNode] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)  # indices into ProvenanceIndex.calls
    node_count: int = 0  # its calls' nodes and its bare ones
    bare: list[int] = field(default_factory=list)  # main-graph nodes of no call, placed here by their own metadata

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1] if self.path else ""

    def name_under(self, parent: ModuleNode | None) -> str:
        """What this module is called under ``parent`` (the module above it in the tree): its path past the parent's,
        ``layers.0`` under ``model`` (torch records no module for a ModuleList, so ``model.layers`` is no row of its
        own and ``0`` alone would not say which list), its whole path under the root or where a hostile file's path
        does not continue the parent's."""
        above = parent.path if parent is not None else ""
        if above and self.path.startswith(above) and self.path[len(above):len(above) + 1] == ".":
            return self.path[len(above) + 1:]
        return self.path

    def subtree(self) -> list[ModuleNode]:
        """This module and every module under it (without recursion: a hostile model's paths may nest deeply)."""
        out, stack = [], [self]
        while stack:
            m = stack.pop()
            out.append(m)
            stack.extend(m.children.values())
        return out

    def total_calls(self) -> int:
        """Aten calls of this module and of every module under it."""
        return sum(len(m.calls) for m in self.subtree())

    def total_nodes(self) -> int:
        total = 0
        stack: list[ModuleNode] = [self]
        while stack:
            m = stack.pop()
            total += m.node_count
            stack.extend(m.children.values())
        return total


_MODULE_KEYS = frozenset({NAMESPACE, NAME_SCOPES, CLASS_HIERARCHY})
_PATHS = attrgetter("node_paths")


def build_module_tree(calls: Sequence[AtenCall], graph: onnx.GraphProto | None = None) -> ModuleNode:
    """The ``nn.Module`` tree of ``calls``; each call's module path is recorded on it; with ``graph`` (the main graph
    the calls are of), its nodes of no call are placed too, by their own metadata (``_place_bare``).

    One pass, linear in the calls: a call whose ``name_scopes`` is the plain repr of a list of names
    (``['', 'model', 'model.layers.0', 'mul_5']``, what exporters write) reads only that one entry when another
    call with the same names before its last has already found its module (the module is the path of names),
    and that entry and ``class_hierarchy`` when it is the first call of its module; other calls read the three
    module entries and go through ``_module_for``. The long stack trace is never read.
    """
    root = ModuleNode("", "")
    cache: dict[tuple[str, str, str], ModuleNode] = {}
    by_scopes: dict[str, ModuleNode] = {}  # plain name_scopes text up to its last entry -> module
    spos = cpos = -1  # where name_scopes and class_hierarchy sit in a node's metadata (exporters keep one order)
    for i, call in enumerate(calls):
        node = call.first_node
        module = None
        if node is not None and call._meta is None and root.class_name:
            scopes = call.scopes_text  # read by the scan, while the node was at hand
            if scopes is None:
                scopes, spos = _entry(node.metadata_props, NAME_SCOPES, spos)
            if isinstance(scopes, str) and _is_plain_list(scopes):
                prefix = scopes[: scopes.rfind("', '")]
                module = by_scopes.get(prefix)
                if module is None:  # the first call of its module: the path of names, with their classes
                    classes, cpos = _entry(node.metadata_props, CLASS_HIERARCHY, cpos)
                    chain = module_chain({NAME_SCOPES: scopes, CLASS_HIERARCHY: as_text(classes or "")})
                    module = by_scopes[prefix] = _walk_chain(root, chain)
        if module is None:
            if call._meta is not None or node is None:
                meta = call.metadata
            else:  # read only the three entries a module needs, not the long stack trace
                meta = {p.key: as_text(p.value) for p in node.metadata_props if p.key in _MODULE_KEYS}
            module = _module_for(root, cache, meta)
            scopes_text = meta.get(NAME_SCOPES, "")
            if root.class_name and _is_plain_list(scopes_text):
                by_scopes.setdefault(scopes_text[: scopes_text.rfind("', '")], module)
        call._module_path = module.path
        module.calls.append(i)
        module.node_count += len(call.node_paths)
    if graph is not None and root.children:
        _place_bare(root, graph, calls)
    return root


def bare_modules(root: ModuleNode) -> dict[int, ModuleNode]:
    """Each main-graph node of no call that the tree places in a module (``ModuleNode.bare``): that module."""
    return {i: m for m in root.subtree() for i in m.bare}


def _place_bare(root: ModuleNode, graph: onnx.GraphProto, calls: Sequence[AtenCall]) -> None:
    """Each main-graph node of no call in a module's ``bare`` nodes, so that it is drawn and counted where it belongs,
    not at the graph's top: by its own metadata where it names its module (``namespace``, ``name_scopes``: a node the
    template matcher did not recognise in a stripped export, one the exporter left without its fx_node), else by its
    neighbours (``_by_neighbours``: a node the optimizer made, with no metadata at all). A node of no module stays at
    the top; nodes in a call are not read again. Where the calls hold as many nodes as the graph has (an export with
    its metadata: every node is a call's), nothing is looked for (the 100k Llama replica's tree: 0.011-0.024 s more,
    best of 3, before this check; a call's nodes in an If's branches count too, so such a graph with bare nodes may
    keep them at the top)."""
    nodes = graph.node
    n = len(nodes)
    if sum(map(len, map(_PATHS, calls))) >= n:
        return
    where: list[ModuleNode | None] = [None] * n  # each main-graph node's module, once known
    held = bytearray(n)
    for module in root.subtree():
        for k in module.calls:
            call = calls[k]
            if call.scope is MAIN or call.scope == MAIN:
                for p in call.node_paths:
                    if len(p) == 1 and type(p[0]) is int and 0 <= p[0] < n:
                        held[p[0]] = 1
                        where[p[0]] = module
    cache: dict[tuple[str, str, str], ModuleNode] = {}
    unnamed: list[int] = []
    i = held.find(0)
    while i >= 0:
        props = nodes[i].metadata_props
        meta = {p.key: as_text(p.value) for p in props if p.key in _MODULE_KEYS} if props else None
        if meta:
            module = _module_for(root, cache, meta)
            where[i] = module
            if module is not root:
                module.bare.append(i)
                module.node_count += 1
        else:
            unnamed.append(i)
        i = held.find(0, i + 1)
    if unnamed:
        _by_neighbours(root, nodes, unnamed, where)


def _by_neighbours(root: ModuleNode, nodes: Sequence[onnx.NodeProto], unnamed: list[int],
                   where: list[ModuleNode | None]) -> None:
    """Nodes that name no module (``unnamed``, in graph order) placed in the deepest module that holds every node
    they read from and every node that reads them, where those are placed: a node the optimizer made in place of a
    call's (GPT-NeoX's Split of its fused query, key and value, made of three Slices, the only nodes drawn outside
    ``gpt_neox`` in its overview) sits in its attention, where its reads and readers are. A node placed so counts for
    the ones after it; one with no placed neighbour, or whose neighbours' deepest common module is the root, stays at
    the top. One pass over every node's values, made only when some node names no module. (``fold --modules`` makes
    the same choice among the instances it folds, ``fold.module_select.owners``, and keeps a node that makes a graph
    output, or one it would share between instances, outside.)"""
    wanted_in = {v for i in unnamed for v in nodes[i].input if v}  # values read: who makes them
    wanted_out = {v for i in unnamed for v in nodes[i].output if v}  # values made: who reads them
    maker: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    for j, node in enumerate(nodes):
        for v in node.output:
            if v in wanted_in:
                maker[v] = j
        for v in node.input:
            if v in wanted_out:
                readers.setdefault(v, []).append(j)
    parent: dict[int, ModuleNode] = {}
    for m in root.subtree():
        for c in m.children.values():
            parent[id(c)] = m
    for i in unnamed:
        node = nodes[i]
        near = [maker[v] for v in node.input if v in maker]
        near += [j for v in node.output for j in readers.get(v, ())]
        placed = [at for j in near if j != i and (at := where[j]) is not None]
        if not placed:
            continue
        module = _deepest_common(placed, parent)
        where[i] = module
        if module is not root:
            module.bare.append(i)
            module.node_count += 1


def _deepest_common(modules: list[ModuleNode], parent: dict[int, ModuleNode]) -> ModuleNode:
    """The deepest module that is ``modules``' own or above each of them."""
    chain = _above(modules[0], parent)
    for m in modules[1:]:
        if m is chain[-1]:
            continue
        other = {id(x) for x in _above(m, parent)}
        while id(chain[-1]) not in other:
            chain.pop()
    return chain[-1]


def _above(module: ModuleNode, parent: dict[int, ModuleNode]) -> list[ModuleNode]:
    """The modules from the root down to ``module``."""
    chain = [module]
    up = parent.get(id(module))
    while up is not None:
        chain.append(up)
        up = parent.get(id(up))
    chain.reverse()
    return chain


def _entry(props: Sequence[onnx.StringStringEntryProto], key: str, pos: int) -> tuple[str | bytes | None, int]:
    """The value of ``key`` in ``props`` and where it is; ``pos`` (where it was on the last node) is tried first."""
    if 0 <= pos < len(props):
        p = props[pos]
        if p.key == key:
            return p.value, pos
    for j, p in enumerate(props):
        if p.key == key:
            return p.value, j
    return None, pos


def _is_plain_list(text: str) -> bool:
    """``['a', 'b', ...]`` with at least two plain entries (no quotes or backslashes inside): split at ``', '``."""
    return (text.startswith("['") and text.endswith("']") and "', '" in text and "\\" not in text
            and '"' not in text and "'" not in text[2:-2].replace("', '", ""))


def _without_last(text: str, sep: str) -> str:
    """Cache key for a module: the metadata text with its last (per-call) entry cut off."""
    cut = text.rfind(sep)
    return text[:cut] if cut > 0 else text


def _module_for(root: ModuleNode, cache: dict[tuple[str, str, str], ModuleNode],
                meta: dict[str, str]) -> ModuleNode:
    """The module a call belongs to; calls of one module share a cache entry."""
    cache_key = (_without_last(meta.get(NAME_SCOPES, ""), ","), _without_last(meta.get(CLASS_HIERARCHY, ""), ","),
                 _without_last(meta.get(NAMESPACE, ""), "/"))
    hit = cache.get(cache_key)
    if hit is not None:
        return hit
    node = cache[cache_key] = _walk_chain(root, module_chain(meta))
    return node


def _walk_chain(root: ModuleNode, chain: list[tuple[str, str]]) -> ModuleNode:
    """The module at the end of ``chain`` (``[(path, class)]`` from the root), made where missing."""
    node = root
    for path, cls_name in chain:
        if path == "" and node is root:
            if cls_name and not root.class_name:
                root.class_name = cls_name
            continue
        child = node.children.get(path)
        if child is None:
            child = ModuleNode(path, cls_name)
            node.children[path] = child
        node = child
    return node
