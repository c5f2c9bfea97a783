"""Search over a model index: node names and op types (at any depth), aten targets, function keys, modules,
and what nodes carry in their ``metadata_props``: stack traces and other metadata.

Matching is a case-insensitive substring test (``str.casefold``) after stripping the query's surrounding
whitespace; an empty query finds nothing. Hits are ordered by

1. exact matches (the whole text equals the query) before partial ones,
2. kind: ``function``, ``aten_target``, ``module``, ``op_type``, ``node`` (name), ``stack_trace``, ``metadata``,
3. document order: the main graph, then function bodies in model order, each walked parent-before-children
   (a node, then the nodes of its subgraphs, then its next sibling); aten calls in index order; modules in
   tree order, parents first.

A node is reported once, for its best reason: a node whose op type and name both match is an ``op_type`` hit
unless only its name matches exactly; a node found by its name or op type is not reported again for its
metadata, and a stack-trace match beats any other metadata. ``metadata`` covers every node metadata entry except
the stack trace and the three entries the module tree is made of (``namespace``, ``name_scopes``,
``class_hierarchy``: module paths and classes are searched as ``module`` hits); ``pkg.torch.onnx.fx_node`` is read
from the aten calls (every node of a call carries the call's text, that is how calls are grouped). For these two
kinds ``Hit.key`` names the metadata entry and ``Hit.text`` is the line of it that matched. ``Hit.text`` is the raw
model string: escaping it for display is the caller's job.

``search(index, query)`` builds a lookup table on each call; a caller that searches repeatedly (the GUI's
search box) keeps one ``SearchIndex(index)``, which builds its table once, on first use. The index itself
precomputes nothing for search. Node metadata is read on the first query, not when the table is built: one pass
that keeps each distinct text once (a 100k-node Llama export has 27 distinct stack traces and rule names), so a
query tests each distinct text once and then the nodes by a small integer each. Both passes keep no object per node
but strings and small integers, and make no cycles.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import onnx

from inspector.core.bodies.body import walk_body
from inspector.core.model.calls import CLASS_HIERARCHY, FX_NODE, NAME_SCOPES, NAMESPACE, STACK_TRACE, AtenCall
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope
from inspector.core.model.module_tree import ModuleNode
from inspector.core.model.walk import NodePath, as_text, path_text, resolve_path
from inspector.core.util.progress import Progress

HitKind = Literal["function", "aten_target", "module", "op_type", "node", "stack_trace", "metadata"]
KINDS: tuple[HitKind, ...] = get_args(HitKind)  # in rank order
NODE_KINDS: frozenset[HitKind] = frozenset({"op_type", "node", "stack_trace", "metadata"})  # hits that are a node
MATCHED_IN: dict[HitKind, str] = {"function": "function", "aten_target": "target", "module": "module",
                                  "op_type": "op", "node": "name", "stack_trace": "stack trace",
                                  "metadata": "metadata"}  # where a hit matched, in words
DEFAULT_LIMIT = 500
_STEP = 4096  # main-graph nodes read per step (see SearchIndex._read_flat)
# metadata entries searched as something else: fx_node through the aten calls, the module entries as modules
_NOT_METADATA = frozenset({FX_NODE, NAMESPACE, NAME_SCOPES, CLASS_HIERARCHY})
_LINE_LIMIT = 300
_NAME, _OP = operator.attrgetter("name"), operator.attrgetter("op_type")


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result."""

    kind: HitKind
    text: str  # the matched text, as stored in the model (not escaped)
    scope: GraphScope | None  # MAIN or the FunctionKey whose body holds the node / aten call; None for function/module
    path: NodePath  # node path in ``scope`` for node and op_type hits, () otherwise
    where: str  # readable location, e.g. "main/If_0.then_branch/Add_3" or "local.f:ovl/Mul_1"
    ref: NodePath | AtenCall | FunctionKey | str  # node path (node kinds), the call, the function, module path
    exact: bool = False  # the whole text equals the query (case-insensitively)
    key: str = ""  # the metadata entry that matched, for stack_trace and metadata hits

    @property
    def matched_in(self) -> str:
        """Where the query matched, in words: name, op, target, module, function, stack trace, metadata."""
        return MATCHED_IN[self.kind]


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
        self._names = _Joined([])  # the casefolded names, searched at once
        self._meta: _Metadata | None = None  # read on the first query

    # --- building -----------------------------------------------------------------------------------------------

    def build(self, progress: Progress | None = None) -> None:
        """Build the tables now (otherwise the first ``search`` does). ``progress``: a checkpoint
        (``core.util.progress``), in main-graph nodes, called after each step of ``_STEP`` nodes."""
        with self._lock:
            if not self._built:
                self._build(progress)
                self._built = True

    def _build(self, progress: Progress | None = None) -> None:
        index = self.index
        main = index.proto.graph.node
        flat_main = index.flat_main  # (no node of the main graph can hold a subgraph: no paths kept)
        scopes: list[tuple[GraphScope, Sequence[onnx.NodeProto]]] = [(MAIN, main)]
        scopes.extend((k, f.node) for k, f in index.functions.functions.items())
        for scope, nodes in scopes:
            self._scopes.append(scope)
            self._scope_nodes.append(nodes)
            self._scope_start.append(len(self._op))
            if scope is MAIN and flat_main:
                self._read_flat(nodes, progress)
                self._path.extend([None] * len(nodes))
            else:
                self._add_nodes(nodes)
        self._ops = {op: op.casefold() for op in set(self._op)}
        self._names = _Joined(self._name_cf)
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

    def _read_flat(self, nodes: Sequence[onnx.NodeProto], progress: Progress | None) -> None:
        """Names, then op types, of a graph whose nodes hold no subgraph, read in C a step of ``_STEP`` nodes at a
        time: a step's nodes are still in the CPU's cache for the second read (building at 100k took 131 ms of CPU
        in steps, 163 ms in one go, medians of 6). No object per node but the strings (a (name, op) tuple each was
        100k objects for the collector to walk at 100k)."""
        name_cf, ops = self._name_cf, self._op
        total = len(nodes)
        for start in range(0, total, _STEP):
            piece = nodes[start:start + _STEP]
            names = list(map(_NAME, piece))
            try:
                name_cf += map(str.casefold, names)
            except TypeError:  # a name that is not valid UTF-8 (bytes): a model too large to check up front
                del name_cf[len(ops):]
                name_cf += [as_text(n).casefold() for n in names]
            ops += map(_OP, piece)
            if progress is not None:
                progress(start + len(piece), total)

    def _add_nodes(self, nodes: Sequence[onnx.NodeProto]) -> None:
        paths, name_cf, ops = self._path, self._name_cf, self._op
        for path, node in walk_body(nodes):
            paths.append(path)
            name_cf.append(as_text(node.name).casefold())
            ops.append(node.op_type)

    def _metadata(self) -> _Metadata:
        """The nodes' metadata, read once (on the first query)."""
        with self._lock:
            if self._meta is None:
                self._meta = self._read_metadata()
            return self._meta

    def _read_metadata(self) -> _Metadata:
        meta = _Metadata()
        text_ids: dict[tuple[str | bytes, str | bytes], int] = {}
        sig_ids: dict[tuple[int, ...], int] = {}
        texts, node_sig = meta.texts, meta.node_sig
        for s, nodes in enumerate(self._scope_nodes):
            start = self._scope_start[s]
            end = self._scope_start[s + 1] if s + 1 < len(self._scopes) else len(self._op)
            flat = end - start == len(nodes) and (start == end or self._path[start] is None)
            for node in (nodes if flat else (n for _p, n in walk_body(nodes))):
                ids: tuple[int, ...] = ()
                for p in node.metadata_props:
                    k = p.key
                    if k in _NOT_METADATA:
                        continue
                    raw = (k, p.value)
                    t = text_ids.get(raw)
                    if t is None:
                        t = text_ids[raw] = len(texts)
                        value = as_text(raw[1])
                        texts.append((as_text(k), value, value.casefold()))
                    ids = (*ids, t)
                if not ids:
                    node_sig.append(-1)
                    continue
                sig = sig_ids.get(ids)
                if sig is None:
                    sig = sig_ids[ids] = len(meta.sigs)
                    meta.sigs.append(ids)
                node_sig.append(sig)
        meta.fx = _Joined([call.fx_text.casefold() for call in self.index.provenance.calls])
        return meta

    def _call_nodes(self, call: AtenCall) -> list[int]:
        """The node numbers of an aten call's nodes."""
        meta = self._meta
        assert meta is not None
        if not meta.scope_of:
            meta.scope_of = {scope: s for s, scope in enumerate(self._scopes)}
        s = meta.scope_of.get(call.scope, -1)
        if s < 0:
            return []
        start = self._scope_start[s]
        end = self._scope_start[s + 1] if s + 1 < len(self._scopes) else len(self._op)
        out: list[int] = []
        if start < end and self._path[start] is None:  # a flat main graph: node i is number start + i
            for p in call.node_paths:
                if len(p) == 1 and isinstance(p[0], int) and 0 <= p[0] < end - start:
                    out.append(start + p[0])
            return out
        numbers = meta.numbers.get(s)
        if numbers is None:
            numbers = meta.numbers[s] = {self._path[i] or (i - start,): i for i in range(start, end)}
        for p in call.node_paths:
            i = numbers.get(p)
            if i is not None:
                out.append(i)
        return out

    def _metadata_candidates(self, q: str, taken: set[int]) -> list[tuple[HitKind, int, int, bool]]:
        """(kind, node number, text id or -1 - call index, exact) for nodes whose metadata holds ``q``."""
        meta = self._metadata()
        texts = meta.texts
        best_of_sig: dict[int, int] = {}
        matched = {j for j, (_k, _v, cf) in enumerate(texts) if q in cf}
        if matched:
            for sig, ids in enumerate(meta.sigs):
                best = -1
                for j in ids:
                    if j in matched:
                        if texts[j][0] == STACK_TRACE:
                            best = j
                            break
                        if best < 0:
                            best = j
                if best >= 0:
                    best_of_sig[sig] = best
        found: dict[int, int] = {}  # node number -> text id (>= 0) or -1 - call index
        if best_of_sig:
            for i, sig in enumerate(meta.node_sig):
                if sig in best_of_sig and i not in taken:
                    found[i] = best_of_sig[sig]
        calls = self.index.provenance.calls
        for c in meta.fx.matching(q):
            for i in self._call_nodes(calls[c]):
                if i not in taken and (i not in found or texts[found[i]][0] != STACK_TRACE):
                    found[i] = -1 - c
        out: list[tuple[HitKind, int, int, bool]] = []
        for i in sorted(found):
            j = found[i]
            if j >= 0:
                kind: HitKind = "stack_trace" if texts[j][0] == STACK_TRACE else "metadata"
                out.append((kind, i, j, texts[j][2] == q))
            else:
                out.append(("metadata", i, j, meta.fx.item(-1 - j) == q))
        return out

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
        matched = self._names.matching(q)
        if ops:
            matched = sorted({*matched, *(i for i, o in enumerate(op_of) if o in ops)})
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
        for kind, i, j, exact in self._metadata_candidates(q, set(matched)):
            buckets[not exact][KINDS.index(kind)].append((kind, i, j))
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

    def graph_of(self, call: AtenCall) -> str:
        """The graph that holds ``call``, readable: its scope (``main``, a function), or the branch of an If or the
        body of a Loop inside it (``main/node_cond__0.then_branch``), where FX names repeat across branches."""
        first, scope = call.node_paths[0] if call.node_paths else (), call.scope
        if len(first) < 2:
            return str(scope)
        function = self.index.functions.functions.get(scope) if isinstance(scope, FunctionKey) else None
        nodes = function.node if function is not None else self.index.proto.graph.node if scope == MAIN else []
        return path_text(nodes, first[:-1], str(scope))

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
            module, place = call.module_path, self.graph_of(call)
            where = f"{place}/{call.name}" + (f" in {module}" if module else "")
            return Hit(kind, text, call.scope, (), where, call, exact)
        if kind == "module":
            m, path_cf, _cls_cf = self._modules[k]
            by_path = path_cf == q if exact else q in path_cf
            text = m.path if by_path else m.class_name
            # where: what the text is not (a module found by its path, its class; by its class, its path): the path
            # twice read "model.layers.100.mlp.down_proj · model.layers.100.mlp.down_proj"
            where = (m.class_name.rsplit(".", 1)[-1] or "(no class)") if by_path else (m.path or "(root module)")
            return Hit(kind, text, None, (), where, m.path, exact)
        s = bisect.bisect_right(self._scope_start, k) - 1
        scope, nodes = self._scopes[s], self._scope_nodes[s]
        path = self._path[k] or (k - self._scope_start[s],)
        where = path_text(nodes, path, str(scope))
        if kind in ("stack_trace", "metadata"):
            meta = self._meta
            assert meta is not None
            if extra >= 0:
                entry, value, _cf = meta.texts[extra]
            else:
                entry, value = FX_NODE, self.index.provenance.calls[-1 - extra].fx_text
            return Hit(kind, matched_line(value, q), scope, path, where, path, exact, entry)
        node = resolve_path(nodes, path)
        text = as_text(node.op_type if kind == "op_type" else node.name)
        return Hit(kind, text, scope, path, where, path, exact)


@dataclass(slots=True)
class _Metadata:
    """Node metadata of one model as search reads it: each distinct (key, value) once."""

    texts: list[tuple[str, str, str]] = field(default_factory=list)  # (key, value, value casefolded)
    sigs: list[tuple[int, ...]] = field(default_factory=list)  # distinct sets of text ids that nodes carry
    node_sig: list[int] = field(default_factory=list)  # per node number: its sig, or -1
    fx: _Joined = field(default_factory=lambda: _Joined([]))  # per aten call: its fx_node text, casefolded
    numbers: dict[int, dict[NodePath, int]] = field(default_factory=dict)  # per nested scope: path -> number
    scope_of: dict[GraphScope, int] = field(default_factory=dict)  # scope -> its index in SearchIndex._scopes


class _Joined:
    """Many strings searched for one substring at once: joined by NUL into one text that ``str.find`` scans in C,
    with where each string starts. A match that runs over a boundary (a query holding NUL) is not a match."""

    __slots__ = ("starts", "text")

    def __init__(self, items: Sequence[str]) -> None:
        self.text = "\0".join(items)
        # starts[k]: where item k begins; starts[len(items)] is one past the end (len(text) + 1)
        self.starts = list(map(operator.add, itertools.accumulate(map(len, items), initial=0), range(len(items) + 1)))

    def item(self, k: int) -> str:
        return self.text[self.starts[k]: self.starts[k + 1] - 1]

    def matching(self, q: str) -> list[int]:
        """The indices of the items that contain ``q``, ascending, each once."""
        out: list[int] = []
        text, starts, n = self.text, self.starts, len(q)
        pos = text.find(q) if q else -1
        while pos >= 0:
            k = bisect.bisect_right(starts, pos) - 1
            end = starts[k + 1] - 1  # where item k ends
            if pos + n <= end:
                out.append(k)
                pos = text.find(q, end + 1)
            else:
                pos = text.find(q, pos + 1)
        return out


def matched_line(text: str, q: str) -> str:
    """The first line of ``text`` that holds ``q`` (casefolded), stripped and at most ``_LINE_LIMIT`` long."""
    lines = text.splitlines() or [text]
    line = next((x for x in lines if q in x.casefold()), lines[0]).strip()
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 1] + "…"


def around(text: str, query: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters around where ``query`` first matches it (casefolded), an
    ellipsis where cut: a result list's row of a long stack-trace line showed its start (``query_states, key_states
    = apply_ro…``) and lost the match."""
    if len(text) <= width:
        return text
    q = normalise(query)
    at = text.casefold().find(q) if q else -1
    if at < 0:
        return text[: width - 1] + "…"
    end = at + len(q)
    start = max(0, min(at - (width - (end - at)) // 3, len(text) - width))
    cut = text[start:start + width]
    if start > 0:
        cut = "…" + cut[1:]
    if start + width < len(text):
        cut = cut[:-1] + "…"
    return cut
