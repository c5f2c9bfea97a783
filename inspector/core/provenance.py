"""Aten calls and the module tree of flat dynamo exports, from node ``metadata_props``.

All nodes sharing one ``pkg.torch.onnx.fx_node`` text form one *aten call*; calls with one target form a
family. Arguments are parsed only when asked for (``AtenCall.fx``), so indexing a 100k-node export costs
one pass over the nodes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import onnx

from inspector.core.fx import FxNode, TensorRef, fx_head, fx_name_of, op_target, parse_fx_node, target_of
from inspector.core.gc_pause import paused_gc
from inspector.core.keys import GraphScope
from inspector.core.scan import NAME_SCOPES, ScanResult
from inspector.core.walk import NodePath, as_text

NAMESPACE = "namespace"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
STACK_TRACE = "pkg.torch.onnx.stack_trace"


@dataclass(slots=True)
class AtenCall:
    """The ONNX nodes one FX node (one aten call) was translated into."""

    fx_text: str
    name: str  # FX node name, e.g. "transpose_2"
    raw_target: str  # "torch.ops.aten.transpose.int"
    target: str  # "aten::transpose.int", or the raw target when it is not a torch op
    scope: GraphScope
    node_paths: list[NodePath]
    first_node: onnx.NodeProto | None = field(default=None, repr=False)
    rule_names: tuple[str, ...] = ()
    # the first node's name_scopes text as the scan read it ("" when it has none); None: not read yet
    scopes_text: str | bytes | None = field(default=None, repr=False)
    _fx: FxNode | None = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)
    _meta: dict[str, str] | None = field(default=None, repr=False)
    _module_path: str | None = field(default=None, repr=False)

    @property
    def is_aten(self) -> bool:
        return self.target.startswith("aten::")

    @property
    def family(self) -> tuple[str, str, str]:
        """``(namespace, op, overload)`` of the target, e.g. ``("aten", "transpose", "int")``."""
        return split_target(self.target)

    @property
    def fx(self) -> FxNode | None:
        """Parsed FX text (target, args, kwargs); computed on first use."""
        if not self._parsed:
            self._fx = parse_fx_node(self.fx_text)
            self._parsed = True
        return self._fx

    @property
    def metadata(self) -> dict[str, str]:
        """The first node's ``metadata_props`` (the same for every node of the call), read on first use."""
        if self._meta is None:
            props = self.first_node.metadata_props if self.first_node else ()
            self._meta = {as_text(p.key): as_text(p.value) for p in props}
        return self._meta

    @property
    def stack_trace(self) -> str:
        return self.metadata.get(STACK_TRACE, "")

    @property
    def module_chain(self) -> list[tuple[str, str]]:
        """``[(module path, class)]`` from the root module down to the one that made this call."""
        return module_chain(self.metadata)

    @property
    def module_path(self) -> str:
        if self._module_path is None:
            chain = self.module_chain
            self._module_path = chain[-1][0] if chain else ""
        return self._module_path

    def tensor_args(self) -> list[str]:
        fx = self.fx
        if fx is None:
            return []
        out: list[str] = []
        for v in (*fx.args, *fx.kwargs.values()):
            for item in v if isinstance(v, (list, tuple)) else (v,):
                if isinstance(item, TensorRef):
                    out.append(item.name)
        return out


def split_target(target: str) -> tuple[str, str, str]:
    if "::" in target:
        ns, _, rest = target.partition("::")
        name, _, overload = rest.partition(".")
        return ns, name, overload or "default"
    return "python", target, "default"


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
    calls: list[AtenCall]
    nodes_with_metadata: int
    nodes_without_fx: int
    damaged: int  # fx texts that could not be read as FX at all
    damaged_texts: frozenset[str] = frozenset()  # those texts (not read again by a scan made like this one's)
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
            with paused_gc():
                self._modules = build_module_tree(self.calls)
        return self._modules


def build_provenance(model: onnx.ModelProto, scanned: ScanResult | None = None) -> ProvenanceIndex:
    """Aten calls from a scan's fx_node groups; targets and names are read from the FX text's head only."""
    if scanned is None:
        from inspector.core.functions import scan_model

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


_QUOTED = re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*(,|$)""")


def parse_str_list(text: str) -> list[str] | None:
    """Read ``"['', 'layers.0']"`` without eval; None when it is not such a list."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        return None
    plain = "\\" not in s and '"' not in s and "'" not in s[2:-2].replace("', '", "")
    if plain and s.startswith("['") and s.endswith("']"):
        return s[2:-2].split("', '")  # the common repr of a list of plain strings
    body = s[1:-1]
    out: list[str] = []
    pos = 0
    while pos < len(body):
        m = _QUOTED.match(body, pos)
        if not m or m.end() == pos:
            return None
        raw = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(raw.replace("\\'", "'").replace('\\"', '"') if "\\" in raw else raw)
        pos = m.end()
    return out


def _without_last(text: str, sep: str) -> str:
    """Cache key for a module: the metadata text with its last (per-call) entry cut off."""
    cut = text.rfind(sep)
    return text[:cut] if cut > 0 else text


def module_chain(meta: dict[str, str]) -> list[tuple[str, str]]:
    """``[(module path, class)]`` from name_scopes/class_hierarchy, else from ``namespace``."""
    scopes_text = meta.get(NAME_SCOPES, "")
    scopes = parse_str_list(scopes_text) if scopes_text else None
    if scopes and len(scopes) >= 2:
        mods = scopes[:-1]  # the last entry names the FX node itself
        classes_text = meta.get(CLASS_HIERARCHY, "")
        cls = (parse_str_list(classes_text) or [])[: len(mods)] if classes_text else []
        cls += [""] * (len(mods) - len(cls))
        return list(zip(mods, cls))
    pairs: list[tuple[str, str]] = []
    for part in meta.get(NAMESPACE, "").split("/")[:-1]:
        path, _, cls_name = part.partition(": ")
        pairs.append((path.strip(), cls_name.strip()))
    return pairs


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
