"""Index of local functions: keys, families, call sites and the call graph, with findings.

Calls are found in the main graph, in function bodies, and in subgraphs at any depth. TorchScript's
``export_modules_as_functions`` names variants ``Blk``, ``Blk.1``, ``Blk.2`` instead of using ``overload``;
those are shown as one family.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

import onnx

from inspector.core.model.calls import AtenCall
from inspector.core.model.keys import MAIN, FunctionKey, GraphScope
from inspector.core.model.onnx_operators import ONNX_OPERATORS
from inspector.core.model.scan import ScanResult, scan
from inspector.core.model.signature import function_call_signature, plain
from inspector.core.model.walk import iter_nodes, path_text, resolve_path

if TYPE_CHECKING:
    from inspector.core.model.aten_functions import Recognised
    from inspector.core.model.findings import Finding, FindingKind, Severity
    from inspector.core.model.function_sites import CallSite, FunctionFamily

# Domains whose operators a runtime provides (not local functions).
OPERATOR_DOMAINS = frozenset({
    "", "ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training",
    "com.microsoft", "com.microsoft.nchwc", "com.microsoft.experimental", "com.ms.internal.nhwc",
    "org.pytorch.aten", "com.microsoft.extensions", "ai.onnx.contrib",
})
_SITES_READ = 8  # call nodes read for their attributes when recognising a function (a name alone names an op)


@dataclass(slots=True)
class FunctionIndex:
    """A model's local functions: by key and family, their call sites and callees, and what was found."""

    functions: dict[FunctionKey, onnx.FunctionProto]
    families: dict[tuple[str, str], FunctionFamily]
    calls: dict[FunctionKey, list[CallSite]]
    callees: dict[GraphScope, set[FunctionKey]]
    findings: list[Finding]
    duplicate_keys: list[FunctionKey]
    main: Sequence[onnx.NodeProto] = ()  # the main graph's nodes (where most call sites sit)
    _aten: dict[FunctionKey, Recognised] | None = field(default=None, repr=False)
    # the aten targets the FX metadata of each function's call nodes names (``note_call_targets``)
    _call_targets: dict[FunctionKey, set[str]] | None = field(default=None, repr=False)
    _described: dict[FunctionKey, str] | None = field(default=None, repr=False)

    def family_of(self, key: FunctionKey) -> FunctionFamily:
        for fam in self.families.values():
            if key in fam.members:
                return fam
        raise KeyError(key)

    def call_count(self, key: FunctionKey) -> int:
        return len(self.calls.get(key, ()))

    def site_node(self, site: CallSite, main: Sequence[onnx.NodeProto]) -> onnx.NodeProto | None:
        """The node of a call site, in the calling function's body or in ``main`` (the main graph's nodes); None
        when its path does not resolve."""
        caller = self.functions.get(site.caller) if isinstance(site.caller, FunctionKey) else None
        try:
            return resolve_path(caller.node if caller is not None else main, site.path)
        except KeyError:
            return None

    def note_call_targets(self, targets: dict[FunctionKey, set[str]]) -> None:
        """The aten targets the FX metadata of each function's call nodes names, as the index's scan read them
        (so that recognition reads no call node's metadata again); before the first ``aten_target``."""
        self._call_targets = targets

    def aten_target(self, key: FunctionKey) -> str | None:
        """The aten target a local function implements (``aten::view``), by evidence (``aten_functions``): its
        doc string, name and domain, and its call nodes; None for any other function, and where the evidence
        disagrees (a finding)."""
        return self.recognised(key).target

    def recognised(self, key: FunctionKey) -> Recognised:
        if self._aten is None:
            self._aten = self._recognise_all()
        found = self._aten.get(key)
        if found is None:
            # (aten_functions, with its class, is imported where a model's local functions are read: start-up)
            from inspector.core.model.aten_functions import NOT_RECOGNISED

            return NOT_RECOGNISED
        return found

    def _recognise_all(self) -> dict[FunctionKey, Recognised]:
        from inspector.core.model.aten_functions import recognise  # (local functions only: start-up)

        out: dict[FunctionKey, Recognised] = {}
        for k, f in self.functions.items():
            sites = self.calls.get(k, ())
            nodes = [n for n in (self.site_node(s, self.main) for s in sites[:_SITES_READ]) if n is not None]
            fx = self._call_targets.get(k, set()) if self._call_targets is not None else None
            found = recognise(f, nodes, fx)
            if found.target is not None or found.conflict is not None:
                out[k] = found
            if found.conflict is not None:
                from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

                self.findings.append(Finding("aten_evidence", "warning",
                                             f"function {k} is not read as an aten overload: {found.conflict}",
                                             (str(k),)))
            elif found.candidates:
                from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

                self.findings.append(Finding(
                    "aten_evidence", "info", f"function {k} is not read as an aten overload: it is named after "
                    f"{found.candidates[0].partition('.')[0]}, whose overloads {', '.join(found.candidates)} all fit "
                    "what its calls pass, and no doc string or FX metadata says which", (str(k),)))
        return out

    def describe(self, key: FunctionKey) -> str:
        """What sets overload ``key`` apart, for a reader, when its name is a hash (``default_1b05ea4a``): the
        aten arguments its first call passes that some sibling overload passes otherwise (``size=[1, 8, 32]``);
        "" for readable names and for functions that are not aten functions."""
        from inspector.core.model.aten_functions import hash_overload  # (local functions only: start-up)

        if not hash_overload(key.overload) or self.aten_target(key) is None:
            return ""
        if self._described is None:
            self._described = {}
        if key not in self._described:
            family = self.family_of(key)
            values = {k: self._arguments(k) for k in family.members}
            self._described.update(differing_arguments(values))
        return self._described.get(key, "")

    def _arguments(self, key: FunctionKey) -> dict[str, object]:
        """The non-tensor aten arguments of the first call of ``key``, as plain data."""
        sites = self.calls.get(key, ())
        node = self.site_node(sites[0], self.main) if sites else None
        sig = function_call_signature(self.functions[key], node, target=self.aten_target(key))
        if sig is None:
            return {}
        return {b.parameter.name: plain(b.value) for b in sig.bound if b.provided and not b.parameter.is_tensor}


def call_targets(fidx: FunctionIndex, calls: Sequence[AtenCall]) -> dict[FunctionKey, set[str]]:
    """The aten targets the FX metadata of each function's call nodes names, from the aten calls a scan made: a call
    node with metadata is the first node of an aten call. The distinct (callee, target) pairs are collected in C
    (``set(zip(map(...)))``): 0.06-0.1 s on the 80k calls of a folded 100k-node export (indexed in 2.7-4.4 s), where
    a Python loop over the calls took 0.14-0.2 s and one looking up each call site's path 0.2-1.2 s (3 runs each,
    on a shared 2-core machine)."""
    functions = fidx.functions
    nodes = list(map(_FIRST_NODE, calls))
    if None in nodes:
        nodes = [n if n is not None else _NO_NODE for n in nodes]
    keys = zip(map(_DOMAIN, nodes), map(_OP_TYPE, nodes), map(_OVERLOAD, nodes))
    out: dict[FunctionKey, set[str]] = {}
    for key, target in set(zip(keys, map(_TARGET, calls))):
        if key in functions:
            out.setdefault(FunctionKey(*key), set()).add(target)
    return out


_FIRST_NODE, _TARGET = attrgetter("first_node"), attrgetter("target")
_DOMAIN, _OP_TYPE, _OVERLOAD = attrgetter("domain"), attrgetter("op_type"), attrgetter("overload")
_NO_NODE = onnx.NodeProto()


def overload_label(fidx: FunctionIndex, family: FunctionFamily, key: FunctionKey) -> str:
    """An overload as a user reads it: its name, and beside a hash name what sets it apart
    (``default_1b05ea4a  size=[1, 8, 32]``)."""
    label = family.label(key)
    described = fidx.describe(key)
    return f"{label} ({described})" if described else label


def local_functions(model: onnx.ModelProto) -> tuple[dict[FunctionKey, onnx.FunctionProto], list[FunctionKey]]:
    """Functions by key, and keys defined more than once (the first definition wins)."""
    functions: dict[FunctionKey, onnx.FunctionProto] = {}
    duplicates: list[FunctionKey] = []
    for f in model.functions:
        key = FunctionKey(f.domain, f.name, f.overload)
        if key in functions:
            duplicates.append(key)
        else:
            functions[key] = f
    return functions, duplicates


def model_scopes(model: onnx.ModelProto) -> list[tuple[GraphScope, Sequence[onnx.NodeProto]]]:
    """The main graph and every function body, each a scope whose nodes a scan walks."""
    functions, _ = local_functions(model)
    return [(MAIN, model.graph.node), *((k, f.node) for k, f in functions.items())]


def plain_domains(model: onnx.ModelProto) -> frozenset[str]:
    """Operator domains in which no local function is defined: their nodes cannot be calls."""
    return OPERATOR_DOMAINS - {f.domain for f in model.functions}


def scan_model(model: onnx.ModelProto, modules: bool = True, bare: bool = False, reads: bool = False,
               fields: bool = True) -> ScanResult:
    """One scan of every node; ``modules``: also each call's name_scopes, for the module tree; ``bare``: also each
    main-graph node without fx metadata as the template matcher keys it; ``reads``: also the main graph's nodes as
    the graph maps and group keys read them (without ``fields``: their inputs and outputs alone; ``scan``)."""
    return scan(model_scopes(model), plain_domains(model), modules, bare, reads, fields)


def build_function_index(model: onnx.ModelProto, scanned: ScanResult | None = None,
                         operator_known: OperatorLookup | None = None) -> FunctionIndex:
    lookup = operator_known or OperatorLookup()
    functions, duplicates = local_functions(model)
    sr = scanned if scanned is not None else scan_model(model)
    families: dict[tuple[str, str], FunctionFamily] = {}
    if functions:  # (their sites' and families' classes are made for a model that has local functions: start-up)
        from inspector.core.model.function_sites import CallSite, function_families

        families = function_families(functions)
    by_family: set[tuple[str, str]] = {k.family for k in functions}
    function_domains = {k.domain for k in functions}
    scope_nodes: dict[GraphScope, Sequence[onnx.NodeProto]] = {MAIN: model.graph.node}
    scope_nodes.update((k, f.node) for k, f in functions.items())

    calls: dict[FunctionKey, list[CallSite]] = {k: [] for k in functions}
    callees: dict[GraphScope, set[FunctionKey]] = {scope: set() for scope in scope_nodes}
    findings: list[Finding] = []
    seen_unresolved: set[tuple[str, str, str]] = set()
    for scope, path, node in sr.candidates:
        root = str(scope)
        domain = node.domain
        key = FunctionKey(domain, node.op_type, node.overload)
        if key in functions:
            calls[key].append(CallSite(key, scope, path, node.name, path_text(scope_nodes[scope], path, root)))
            callees[scope].add(key)
        elif (domain, node.op_type) in by_family:
            _note_unresolved(findings, seen_unresolved, "missing_overload", node, root)
        elif domain in function_domains:
            _note_unresolved(findings, seen_unresolved, "missing_function", node, root)
        elif domain not in OPERATOR_DOMAINS:
            _note_unresolved(findings, seen_unresolved, "custom_operator", node, root)
        elif not lookup.known(domain, node.op_type):
            _note_unresolved(findings, seen_unresolved, "unknown_operator", node, root)
    for (domain, op), scope in sr.first_seen.items():
        if domain in OPERATOR_DOMAINS and domain not in function_domains and not lookup.known(domain, op):
            shown = str(FunctionKey(domain, op))
            name = next((n.name for _p, n, _d in iter_nodes(scope_nodes[scope])
                         if n.op_type == op and n.domain == domain), "") or op
            from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

            findings.append(Finding("unknown_operator", "warning", f"operator {shown} is not in the ONNX operator set",
                                    (str(scope), name)))
    for key in duplicates:
        message = f"function {key} is defined more than once"
        from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

        findings.append(Finding("duplicate_function", "error", message, (str(key),)))
    findings.extend(_recursion_findings(callees))
    return FunctionIndex(functions, families, calls, callees, findings, duplicates, model.graph.node)


class OperatorLookup:
    """Memoised ``onnx.defs.has``: one schema look-up per distinct (domain, op_type), not per node."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], bool] = {}

    def known(self, domain: str, op_type: str) -> bool:
        k = (domain, op_type)
        hit = self._cache.get(k)
        if hit is None:
            if op_type in ONNX_OPERATORS.get(domain, ()):
                hit = True  # without building onnx's schema registry (18-30 ms of start-up; onnx_operators.py)
            elif domain in ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.training", "ai.onnx.preview.training"):
                import onnx.defs  # (an explicit import: see util/onnxpkg.py)

                try:
                    hit = bool(onnx.defs.has(op_type, domain))
                except Exception:
                    hit = False
            else:
                hit = True  # contrib domains: trust the runtime
            self._cache[k] = hit
        return hit


def _note_unresolved(findings: list[Finding], seen: set[tuple[str, str, str]], kind: FindingKind,
                     node: onnx.NodeProto, root: str) -> None:
    key = (node.domain, node.op_type, node.overload)
    shown = str(FunctionKey(*key))
    if key in seen:
        return
    seen.add(key)
    messages: dict[FindingKind, tuple[Severity, str]] = {
        "missing_function": ("error", f"call to {shown}, but the model defines no such function"),
        "missing_overload": ("error", f"call to overload {shown}, but the model defines only other overloads"),
        "custom_operator": ("info", f"operator {shown} is neither a standard op nor a local function (custom op?)"),
        "unknown_operator": ("warning", f"operator {shown} is not in the ONNX operator set"),
    }
    severity, message = messages[kind]
    from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

    findings.append(Finding(kind, severity, message, (root, node.name or node.op_type)))


def differing_arguments(values: dict[FunctionKey, dict[str, object]]) -> dict[FunctionKey, str]:
    """Per overload, the arguments whose values differ between the overloads of one family, as text
    (``size=[1, 8, 32]``), in schema order; "" for an overload whose arguments all agree with its siblings'."""
    names = list(dict.fromkeys(n for args in values.values() for n in args))
    differ = [n for n in names if len({_shown(args.get(n)) for args in values.values()}) > 1]
    return {k: ", ".join(f"{n}={_shown(args.get(n))}" for n in differ if n in args) for k, args in values.items()}


def _shown(v: object) -> str:
    import json  # (here: start-up)

    text = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:59] + "…"


def _recursion_findings(callees: dict[GraphScope, set[FunctionKey]]) -> list[Finding]:
    """Cycles in the call graph (Tarjan's strongly connected components, iteratively)."""
    index: dict[GraphScope, int] = {}
    low: dict[GraphScope, int] = {}
    on_stack: set[GraphScope] = set()
    stack: list[GraphScope] = []
    cycles: list[list[GraphScope]] = []
    counter = 0
    for root in list(callees):
        if root in index:
            continue
        work: list[tuple[GraphScope, list[FunctionKey]]] = [(root, sorted(callees.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w: GraphScope = todo.pop()
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(callees.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp: list[GraphScope] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in callees.get(v, ()):
                    cycles.append(comp)
    out = []
    for comp in cycles:
        names = sorted(str(k) for k in comp)
        chain = " -> ".join([*names, names[0]])
        from inspector.core.model.findings import Finding  # (a finding's class where one is made: start-up)

        out.append(Finding("recursion", "error", f"recursive functions: {chain}", tuple(names)))
    return out
