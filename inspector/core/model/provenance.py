"""Aten calls and the module tree of flat dynamo exports, from node ``metadata_props``.

All nodes sharing one ``pkg.torch.onnx.fx_node`` text form one *aten call*; calls with one target form a
family. Arguments are parsed only when asked for (``AtenCall.fx``), so indexing a 100k-node export costs
one pass over the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import onnx

from inspector.core.model.calls import (
    CLASS_HIERARCHY,
    NAME_SCOPES,
    NAMESPACE,
    AtenCall,
    module_chain,
)
from inspector.core.model.functions import scan_model
from inspector.core.model.fx import fx_head, fx_name_of, op_target, target_of
from inspector.core.model.scan import ScanResult
from inspector.core.model.walk import as_text


@dataclass(slots=True)
class ModuleNode:
    """One ``nn.Module`` instance in the exported model's hierarchy."""

    path: str  # "layers.0.attn"; "" for the root module
    class_name: str
    children: dict[str, ModuleNode] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)  # indices into ProvenanceIndex.calls
    node_count: int = 0

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1] if self.path else ""

    def total_nodes(self) -> int:
        total = 0
        stack: list[ModuleNode] = [self]
        while stack:
            m = stack.pop()
            total += m.node_count
            stack.extend(m.children.values())
        return total


@dataclass(slots=True)
class ProvenanceIndex:
    """The aten calls read from the nodes' FX metadata, and how many nodes had none or damaged."""

    calls: list[AtenCall]
    nodes_with_metadata: int
    nodes_without_fx: int
    damaged: int  # fx texts that could not be read as FX at all
    damaged_texts: frozenset[str] = frozenset()  # those texts (not read again by a scan made like this one's)
    recognised: int = 0  # calls recognised by body template (``core.model.recognise``), last in ``calls``
    _modules: ModuleNode | None = field(default=None, repr=False)

    @property
    def has_provenance(self) -> bool:
        return bool(self.calls)

    def by_target(self) -> dict[str, list[AtenCall]]:
        out: dict[str, list[AtenCall]] = {}
        for c in self.calls:
            out.setdefault(c.target, []).append(c)
        return out

    @property
    def module_root(self) -> ModuleNode:
        """The ``nn.Module`` tree, built on first use (it reads each call's metadata once)."""
        if self._modules is None:
            self._modules = build_module_tree(self.calls)
        return self._modules


def build_provenance(model: onnx.ModelProto, scanned: ScanResult | None = None) -> ProvenanceIndex:
    """Aten calls from a scan's fx_node groups; targets and names are read from the FX text's head only."""
    if scanned is None:
        scanned = scan_model(model)
    calls: list[AtenCall] = []
    damaged: list[str] = []
    first, rules, target, scopes = scanned.first_node, scanned.rules, _target, scanned.name_scopes
    same = scanned.same_calls
    for key, paths in scanned.groups.items():
        scope, fx_text = key
        before = same.get(key) if same else None
        if before is not None:  # the same nodes as a call of another model, whose head was read (scan_like)
            calls.append(AtenCall(fx_text, before.name, before.raw_target, before.target, scope, paths, first[key],
                                  tuple(rules[key]) if key in rules else (),
                                  scopes.get(key, "") if scanned.scopes_read else None))
            continue
        head = fx_head(fx_text)
        if head is None:
            damaged.append(fx_text)
            raw, name = target_of(fx_text) or "?", fx_name_of(fx_text) or f"call{len(calls)}"
        else:
            name, raw = head
        calls.append(AtenCall(fx_text, name, raw, target(raw), scope, paths, first[key],
                              tuple(rules[key]) if key in rules else (),
                              scopes.get(key, "") if scanned.scopes_read else None))
    return ProvenanceIndex(calls, scanned.nodes_with_metadata, scanned.nodes_without_fx, len(damaged),
                           frozenset(damaged))


@lru_cache(maxsize=4096)
def _target(raw: str) -> str:
    return op_target(raw) or raw


_MODULE_KEYS = frozenset({NAMESPACE, NAME_SCOPES, CLASS_HIERARCHY})


def build_module_tree(calls: Sequence[AtenCall]) -> ModuleNode:
    """The ``nn.Module`` tree of ``calls``; each call's module path is recorded on it.

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
    return root


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
