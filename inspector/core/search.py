"""Search over a model index: node names and op types (at any depth), aten targets, function keys, modules.

Matching is a case-insensitive substring test (``str.casefold``) after stripping the query's surrounding
whitespace; an empty query finds nothing. Hits are ordered by

1. exact matches (the whole text equals the query) before partial ones,
2. kind: ``function``, ``aten_target``, ``module``, ``op_type``, ``node``,
3. document order: the main graph, then function bodies in model order, each walked parent-before-children
   (a node, then the nodes of its subgraphs, then its next sibling); aten calls in index order; modules in
   tree order, parents first.

A node is reported once, for its best reason: a node whose op type and name both match is an ``op_type`` hit
unless only its name matches exactly. ``Hit.text`` is the raw model string: escaping it for display is the
caller's job.

``search(index, query)`` builds a lookup table on each call; a caller that searches repeatedly (the GUI's
search box) keeps one ``SearchIndex(index)``, which builds its table once, on first use. The index itself
precomputes nothing for search. On a 100k-node export the table takes ~0.15 s to build (plus ~0.8 s for the module tree
if nobody has asked for it yet) and a query takes 15-35 ms.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import onnx

from inspector.core.index import ModelIndex
from inspector.core.keys import MAIN, FunctionKey, GraphScope
from inspector.core.provenance import AtenCall, ModuleNode
from inspector.core.walk import (
    STANDARD_DOMAINS,
    SUBGRAPH_OPS,
    NodePath,
    may_have_subgraphs,
    path_text,
    resolve_path,
    subgraphs,
)

HitKind = Literal["function", "aten_target", "module", "op_type", "node"]
KINDS: tuple[HitKind, ...] = get_args(HitKind)  # in rank order
DEFAULT_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result."""

    kind: HitKind
    text: str  # the matched text, as stored in the model (not escaped)
    scope: GraphScope | None  # MAIN or the FunctionKey whose body holds the node / aten call; None for function/module
    path: NodePath  # node path in ``scope`` for node and op_type hits, () otherwise
    where: str  # readable location, e.g. "main/If_0.then_branch/Add_3" or "local.f:ovl/Mul_1"
    ref: NodePath | AtenCall | FunctionKey | str  # node path (node, op_type), the call, the function, module path
    exact: bool = False  # the whole text equals the query (case-insensitively)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The first ``limit`` hits in order; ``truncated`` when more matched, ``total`` how many matched in all."""

    hits: list[Hit]
    truncated: bool
    total: int = 0

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)


def search(index: ModelIndex, query: str, limit: int = DEFAULT_LIMIT) -> SearchResult:
    """Search ``index`` once; keep a ``SearchIndex`` to search the same model repeatedly."""
    return SearchIndex(index).search(query, limit)


def normalise(query: str) -> str:
    return query.strip().casefold()


class SearchIndex:
    """Case-folded name tables of one model index, built once on first use (thread-safe).

    Nodes are numbered in document order. Each scope owns a contiguous range of numbers starting at
    ``_scope_start[s]``. ``_path[i]`` is the node path, or None in a main graph that has no subgraphs (the
    node's path is then ``(i - start,)``), so a flat 100k-node graph costs two reads per node.
    """

    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._built = False
        self._scopes: list[GraphScope] = []
        self._scope_nodes: list[Sequence[onnx.NodeProto]] = []
        self._scope_start: list[int] = []
        self._path: list[NodePath | None] = []
        self._name_cf: list[str] = []
        self._op: list[str] = []  # raw op types
        self._ops: dict[str, str] = {}  # distinct raw op type -> casefolded
        # distinct aten targets: (target, casefolded, raw FX target, casefolded, indices of their calls)
        self._targets: list[tuple[str, str, str, str, list[int]]] = []
        self._functions: list[tuple[FunctionKey, str, str]] = []
        self._modules: list[tuple[ModuleNode, str, str]] = []

    # --- building -----------------------------------------------------------------------------------------------

    def build(self) -> None:
        """Build the tables now (otherwise the first ``search`` does)."""
        with self._lock:
            if not self._built:
                self._build()
                self._built = True

    def _build(self) -> None:
        index = self.index
        main = index.proto.graph.node
        # The index's op histogram of the main graph says whether its top level can hold subgraphs at all.
        flat_main = not any(domain not in STANDARD_DOMAINS or op in SUBGRAPH_OPS for domain, op in index.op_histogram)
        scopes: list[tuple[GraphScope, Sequence[onnx.NodeProto]]] = [(MAIN, main)]
        scopes.extend((k, f.node) for k, f in index.functions.functions.items())
        for scope, nodes in scopes:
            self._scopes.append(scope)
            self._scope_nodes.append(nodes)
            self._scope_start.append(len(self._op))
            if scope is MAIN and flat_main:
                self._name_cf.extend([n.name.casefold() for n in nodes])
                self._op.extend([n.op_type for n in nodes])
                self._path.extend([None] * len(nodes))
            else:
                self._add_nodes(nodes)
        self._ops = {op: op.casefold() for op in set(self._op)}
        by_target: dict[str, list[int]] = {}
        raw_of: dict[str, str] = {}
        for i, call in enumerate(index.provenance.calls):
            calls = by_target.get(call.target)
            if calls is None:
                by_target[call.target] = [i]
                raw_of[call.target] = call.raw_target
            else:
                calls.append(i)
        self._targets = [(t, t.casefold(), raw_of[t], raw_of[t].casefold(), calls) for t, calls in by_target.items()]
        self._functions = [(k, str(k), str(k).casefold()) for k in index.functions.functions]
        if index.provenance.has_provenance:
            stack = [index.provenance.module_root]
            while stack:
                m = stack.pop()
                self._modules.append((m, m.path.casefold(), m.class_name.casefold()))
                stack.extend(reversed(list(m.children.values())))

    def _add_nodes(self, nodes: Sequence[onnx.NodeProto]) -> None:
        """Parent-before-children walk with an explicit stack (subgraphs may nest hundreds deep)."""
        paths, name_cf, ops = self._path, self._name_cf, self._op
        stack: list[tuple[Sequence[onnx.NodeProto], NodePath, int]] = [(nodes, (), 0)]
        while stack:
            seq, prefix, start = stack.pop()
            for i in range(start, len(seq)):
                node = seq[i]
                path = (*prefix, i)
                paths.append(path)
                name_cf.append(node.name.casefold())
                ops.append(node.op_type)
                if may_have_subgraphs(node):
                    subs = list(subgraphs(node))
                    if subs:
                        stack.append((seq, prefix, i + 1))  # resume after this node's subgraphs
                        stack.extend((g.node, (*path, step), 0) for step, g in reversed(subs))
                        break

    # --- searching ----------------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> SearchResult:
        q = normalise(query)
        if not q:
            return SearchResult([], False, 0)
        if not self._built:
            self.build()
        # buckets[exact (0) / partial (1)][kind rank]: lazily materialised candidates, each in document order
        buckets: list[list[list[tuple[HitKind, int, int]]]] = [[[] for _ in KINDS] for _ in range(2)]
        for k, (_key, _text, text_cf) in enumerate(self._functions):
            if q in text_cf:
                buckets[text_cf != q][0].append(("function", k, 0))
        for k, (_t, t_cf, _raw, raw_cf, calls) in enumerate(self._targets):
            if q in t_cf or q in raw_cf:
                b = buckets[not (t_cf == q or raw_cf == q)][1]
                b.extend(("aten_target", k, c) for c in calls)
        for k, (_m, path_cf, cls_cf) in enumerate(self._modules):
            if q in path_cf or q in cls_cf:
                buckets[not (path_cf == q or cls_cf == q)][2].append(("module", k, 0))
        ops = {op for op, op_cf in self._ops.items() if q in op_cf}
        exact_ops = {op for op in ops if self._ops[op] == q}
        name_cf, op_of = self._name_cf, self._op
        if ops:
            matched = [i for i, (n, o) in enumerate(zip(name_cf, op_of)) if o in ops or q in n]
        else:
            matched = [i for i, n in enumerate(name_cf) if q in n]
        for i in matched:
            op = op_of[i]
            if op in exact_ops:
                buckets[0][3].append(("op_type", i, 0))
            elif name_cf[i] == q:
                buckets[0][4].append(("node", i, 0))
            elif op in ops:
                buckets[1][3].append(("op_type", i, 0))
            else:
                buckets[1][4].append(("node", i, 0))
        total = sum(len(b) for row in buckets for b in row)
        hits: list[Hit] = []
        if limit > 0:
            for row in buckets:
                for bucket in row:
                    for cand in bucket:
                        if len(hits) >= limit:
                            break
                        hits.append(self._hit(cand, q, row is buckets[0]))
        return SearchResult(hits, total > len(hits), total)

    def _hit(self, cand: tuple[HitKind, int, int], q: str, exact: bool) -> Hit:
        kind, k, extra = cand
        if kind == "function":
            key, text, _cf = self._functions[k]
            return Hit(kind, text, None, (), text, key, exact)
        if kind == "aten_target":
            target, t_cf, raw, _raw_cf, _calls = self._targets[k]
            call: AtenCall = self.index.provenance.calls[extra]
            # the target when it matched, else the raw FX target ("torch.ops.aten.transpose.int")
            text = target if (t_cf == q if exact else q in t_cf) else raw
            module = call.module_path
            where = f"{call.scope}/{call.name}" + (f" in {module}" if module else "")
            return Hit(kind, text, call.scope, (), where, call, exact)
        if kind == "module":
            m, path_cf, _cls_cf = self._modules[k]
            text = m.path if (path_cf == q if exact else q in path_cf) else m.class_name
            return Hit(kind, text, None, (), m.path or "(root module)", m.path, exact)
        s = bisect.bisect_right(self._scope_start, k) - 1
        scope, nodes = self._scopes[s], self._scope_nodes[s]
        path = self._path[k] or (k - self._scope_start[s],)
        node = resolve_path(nodes, path)
        where = path_text(nodes, path, str(scope))
        text = node.op_type if kind == "op_type" else node.name
        return Hit(kind, text, scope, path, where, path, exact)
