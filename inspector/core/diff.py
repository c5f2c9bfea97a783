"""Structural diff of two models: what changed between two exports, with renaming alone changing nothing.

Matching, in this order (names are only ever one of several keys, so a consistently renamed copy matches):

- local functions by key ``(domain, name, overload)``; left-overs within one family by template fingerprint;
- aten calls of flat exports by (target, FX node name, module path), then per target by position in module
  order (aligned on module path and body template, so an inserted call does not shift the others);
- calls of local functions in the main graph by callee and position among that callee's calls;
- the other main-graph nodes by neighbourhood hashes (op, domain, attribute names, the same of producers and
  consumers; two rounds, no recursion), unique hashes first, then by node name, then by op and position;
- initializers by name, then by the role they play (same input of matched, same-template calls), then by
  dtype + shape + content digest. External data is never read: location/offset/length stand for the content;
- graph inputs and outputs by name, then by position.

Matched bodies (function overloads, aten call groups) are compared by fingerprint. Equal templates report the
*specialised values* that changed, slot by slot; different templates report node-level edits. Small initializers
baked into aten call bodies (the SDPA scale, Reshape shapes) are reported with their call, not as initializers.
A flat export and its fold (``inspector.core.fold``) are recognised: each aten call is compared with the body of
the function its folded call node calls, and the whole difference is one ``folded`` change (``equivalent``).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

from inspector.core.aten_schema import BoundArgument, SchemaCatalogue
from inspector.core.body import (
    INPUT_KIND,
    SMALL_CONSTANT_ELEMENTS,
    Body,
    GraphMaps,
    captured_names,
    function_body,
    group_body,
    node_reads,
    walk_body,
)
from inspector.core.fingerprint import Fingerprints, fingerprint
from inspector.core.index import Family, ModelIndex, open_index, paused_gc
from inspector.core.keys import MAIN, FunctionKey
from inspector.core.literals import Literal, attribute_value, body_literals, tensor_value
from inspector.core.provenance import NAME_SCOPES, NAMESPACE, AtenCall, split_target
from inspector.core.signature import call_signature
from inspector.core.specialise import link_literal
from inspector.core.tensors import dtype_name
from inspector.core.values import type_text
from inspector.core.walk import STANDARD_DOMAINS, SUBGRAPH_OPS, may_have_subgraphs, subgraphs

DIFF_FORMAT = "onnx-inspector/diff"
DIFF_VERSION = 1

# Sections, in the order reports show them.
SECTIONS = ("model", "function", "aten_call", "initializer", "input", "output", "node")
SECTION_TITLES = {
    "model": "model", "function": "local functions", "aten_call": "aten calls", "initializer": "initializers",
    "input": "graph inputs", "output": "graph outputs", "node": "other main-graph nodes",
}
# Change kinds and how a report names them.
KIND_TITLES = {
    "folded": "folded",
    "ir_version": "ir_version", "opset_added": "opset added", "opset_removed": "opset removed",
    "opset_changed": "opset changed", "producer": "producer", "model_field": "model field",
    "metadata_added": "metadata added", "metadata_removed": "metadata removed", "metadata_changed": "metadata changed",
    "family_added": "family added", "family_removed": "family removed",
    "overload_added": "overload added", "overload_removed": "overload removed", "overload_renamed": "overload renamed",
    "signature_changed": "signature changed",
    "call_added": "call added", "call_removed": "call removed", "call_changed": "call changed",
    "value_changed": "value changed", "body_changed": "body changed", "rewired": "rewired",
    "initializer_added": "added", "initializer_removed": "removed", "initializer_reshaped": "reshaped",
    "initializer_revalued": "re-valued",
    "input_added": "added", "input_removed": "removed", "input_retyped": "retyped",
    "output_added": "added", "output_removed": "removed", "output_retyped": "retyped",
    "node_added": "node added", "node_removed": "node removed", "node_changed": "node changed",
}
EQUIVALENT_KINDS = frozenset({"folded"})  # differences that leave the computation the same
MAX_EDITS = 200  # node edits kept per body change


# --- results --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeEdit:
    """One step of the node-level alignment of two bodies whose templates differ."""

    op: str  # "added", "removed", "changed"
    node: str  # op label, e.g. "Reshape", "com.microsoft::Gelu", or "constant FLOAT[3]"
    index_a: int | None  # position in A's body (walk order); None when added
    index_b: int | None
    detail: str = ""  # for "changed": the attributes that differ

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "node": self.node, "index_a": self.index_a, "index_b": self.index_b,
                "detail": self.detail}


@dataclass(slots=True)
class Change:
    """One difference. ``sites`` lists every call site / function / value it applies to (identical changes at
    several call sites of one family are one change); ``where`` is the first of them."""

    kind: str  # see KIND_TITLES
    section: str  # see SECTIONS
    family: str  # family label ("aten::view", "local.tr"), op label for nodes, "" elsewhere
    where: str
    old: Any = None  # JSON-friendly
    new: Any = None
    detail: str = ""  # one readable line
    sites: list[str] = field(default_factory=list)
    edits: list[NodeEdit] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind, "section": self.section, "family": self.family, "where": self.where,
            "old": json_safe(self.old), "new": json_safe(self.new), "detail": self.detail, "sites": list(self.sites),
        }
        if self.edits:
            out["edits"] = [e.to_json() for e in self.edits]
        return out


@dataclass(slots=True)
class FoldRelation:
    """One side is the other folded: its aten calls are calls of local functions with the same bodies."""

    folded: str  # "a" or "b": the side whose calls are function calls
    calls: int  # aten calls that are flat on one side and a function call on the other
    functions: int  # distinct functions those calls call
    domains: list[str]
    identical: int  # calls whose flat body equals the called function's body

    @property
    def explanation(self) -> str:
        flat, folded = ("A", "B") if self.folded == "b" else ("B", "A")
        domains = ", ".join(self.domains)
        same = "bodies identical" if self.identical == self.calls else \
            f"{self.calls - self.identical} of {self.calls} bodies differ (listed below)"
        return (f"{folded} is {flat} folded: {self.calls} aten calls became calls of {self.functions} local "
                f"functions in {domains}; {same}")


@dataclass(slots=True)
class MatchCount:
    matched: int = 0
    only_a: int = 0
    only_b: int = 0
    renamed: int = 0  # matched pairs whose names differ

    def to_json(self) -> dict[str, int]:
        return {"matched": self.matched, "only_a": self.only_a, "only_b": self.only_b, "renamed": self.renamed}


@dataclass(slots=True)
class ModelDiff:
    a: str
    b: str
    changes: list[Change]
    fold: FoldRelation | None = None
    matched: dict[str, MatchCount] = field(default_factory=dict)  # functions, aten_calls, ... -> counts

    @property
    def equal(self) -> bool:
        """Nothing changed (names aside)."""
        return not self.changes

    @property
    def equivalent(self) -> bool:
        """Same computation: equal, or different only in ways that keep it (a fold)."""
        return all(c.kind in EQUIVALENT_KINDS for c in self.changes)

    @property
    def renamed(self) -> int:
        """Matched items whose names differ (information, never a change)."""
        return sum(m.renamed for m in self.matched.values())

    def grouped(self) -> list[tuple[str, str, list[Change]]]:
        """``(section, family, changes)`` in report order: model, families by label, then the rest."""
        groups: dict[tuple[str, str], list[Change]] = {}
        for c in self.changes:
            groups.setdefault((c.section, c.family), []).append(c)
        order = {s: k for k, s in enumerate(SECTIONS)}
        keys = sorted(groups, key=lambda k: (order.get(k[0], len(order)), k[1]))
        return [(s, f, groups[(s, f)]) for s, f in keys]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out


def diff_files(path_a: str | os.PathLike[str], path_b: str | os.PathLike[str]) -> ModelDiff:
    """Open, index and diff two model files."""
    return diff_models(open_index(path_a), open_index(path_b))


def diff_models(a: ModelIndex, b: ModelIndex, catalogue: SchemaCatalogue | None = None) -> ModelDiff:
    """The structural diff of two indexed models."""
    with paused_gc():
        return _Differ(a, b, catalogue).run()


# --- the two sides ---------------------------------------------------------------------------------------------------


class _Unit:
    """What main-graph matching works on: an aten call group, a function call node, or another node.
    (A plain class: a 100k-node export has tens of thousands of these, and a dataclass with factories is slower.)"""

    __slots__ = ("body", "call", "callee", "constants", "fp", "kind", "label", "module", "nodes",
                 "outputs", "reads")

    def __init__(self, kind: str, nodes: list[int], label: str, reads: list[str] | None = None,
                 outputs: list[str] | None = None, call: AtenCall | None = None, callee: FunctionKey | None = None,
                 module: str = "") -> None:
        self.kind = kind  # "aten", "call", "node"
        self.nodes = nodes
        self.label = label  # FX node name for aten calls, node name (or op#index) otherwise
        self.reads: list[str] = reads if reads is not None else []  # values read from outside, first use first
        self.outputs: list[str] = outputs if outputs is not None else []
        self.call = call
        self.callee = callee  # the local function a single call node calls
        self.constants: dict[str, TensorProto] = {}  # small initializers baked into an aten call
        self.module = module  # the module chain of an aten call (its name scopes without the FX name)
        self.body: Body | None = None
        self.fp: Fingerprints | None = None


class _Side:
    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self.graph = index.proto.graph
        self._maps: GraphMaps | None = None
        self.producer: dict[str, int] = {}
        self.out_pos: dict[str, int] = {}  # value -> its position among its unit's outputs
        self._scopes_pos = -1
        self.functions = index.functions.functions
        initializers = {t.name for t in self.graph.initializer}
        self.inputs = [v for v in self.graph.input if v.name not in initializers]
        self.input_pos = {v.name: k for k, v in enumerate(self.inputs)}
        self.init_pos = {t.name: k for k, t in enumerate(self.graph.initializer)}
        self.units: list[_Unit] = []
        self.unit_of_node = [-1] * len(self.graph.node)
        self.family_of_key: dict[FunctionKey, str] = {}
        for fam in index.families:
            if fam.kind == "function":
                for ov in fam.overloads:
                    if ov.function is not None:
                        self.family_of_key[ov.function] = fam.label
        self._function_fp: dict[FunctionKey, Fingerprints] = {}
        self._bound: dict[int, list[BoundArgument]] = {}
        self._build_units()

    @property
    def maps(self) -> GraphMaps:
        """Producers, consumers and parameters as ``inspector.core.body`` builds them; only fold comparisons and
        node matching need them."""
        if self._maps is None:
            self._maps = GraphMaps(self.graph)
        return self._maps

    def _build_units(self) -> None:
        """Units of the main graph; what each aten call group reads, produces and bakes in, in one pass over the
        graph (no FX text is parsed and no Body is built: those are made only for pairs that differ)."""
        nodes = self.graph.node
        unit_of_node = self.unit_of_node
        producer = self.producer
        for i, node in enumerate(nodes):
            for name in node.output:
                if name:
                    producer[name] = i
        for call in self.index.provenance.calls:
            if call.scope != MAIN:
                continue
            top: list[int] = [p[0] for p in call.node_paths if len(p) == 1]  # type: ignore[misc]
            if not top:
                continue
            if len(top) > 1:
                top.sort()  # scan lists the top-level nodes of a group in order; keep it certain
            callee = None
            if len(top) == 1:
                key = _key_of(nodes[top[0]])
                if key in self.functions:
                    callee = key
            uid = len(self.units)
            self.units.append(_Unit("aten", top, call.name, call=call, callee=callee, module=self._module_key(call)))
            for i in top:
                unit_of_node[i] = uid
        for i, node in enumerate(nodes):
            if unit_of_node[i] != -1:
                continue
            reads = list(node.input)
            if may_have_subgraphs(node):
                reads.extend(captured_names(node))
            label = node.name or f"{node.op_type}#{i}"
            key = _key_of(node)
            kind = "call" if key in self.functions else "node"
            unit_of_node[i] = len(self.units)
            self.units.append(_Unit(kind, [i], label, reads, list(node.output), callee=key if kind == "call" else None))
        small = self._small_constants()
        read_outside: set[str] = set()  # values some unit other than their producer's reads
        plain, subgraph_ops = STANDARD_DOMAINS, SUBGRAPH_OPS
        for uid, unit in enumerate(self.units):
            if unit.kind != "aten" or unit.callee is not None:
                if unit.callee is not None and unit.kind == "aten":
                    node = nodes[unit.nodes[0]]
                    unit.reads = self._callee_reads(node, unit.callee)
                    unit.outputs = list(node.output)
                read_outside.update(name for name in unit.reads if name in producer)
                continue
            group_reads: list[str] = []
            constants: dict[str, TensorProto] = {}
            for i in unit.nodes:
                node = nodes[i]
                names = node.input if node.domain in plain and node.op_type not in subgraph_ops else node_reads(node)
                for name in names:
                    if not name or name in group_reads or name in constants:
                        continue
                    p = producer.get(name)
                    if p is not None:
                        if unit_of_node[p] != uid:
                            read_outside.add(name)
                            group_reads.append(name)
                        continue
                    t = small.get(name)
                    if t is not None:
                        constants[name] = t
                    else:
                        group_reads.append(name)
            unit.reads, unit.constants = group_reads, constants
        graph_outputs = {v.name for v in self.graph.output}
        out_pos = self.out_pos
        for unit in self.units:
            if unit.kind == "aten" and unit.callee is None:
                unit.outputs = [o for i in unit.nodes for o in nodes[i].output
                                if o and (o in read_outside or o in graph_outputs)]
            for k, o in enumerate(unit.outputs):
                if o:
                    out_pos[o] = k

    def _small_constants(self) -> dict[str, TensorProto]:
        """Small initializers that are neither parameters/buffers nor graph inputs: baked-in constants."""
        small = {t.name: t for t in self.graph.initializer if t.name not in self.input_pos and _is_small(t)}
        if small:
            for v in (*self.graph.input, *self.graph.value_info):
                if v.name in small:
                    for p in v.metadata_props:
                        if p.key == INPUT_KIND and p.value in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                            del small[v.name]
                            break
        return small

    def _module_key(self, call: AtenCall) -> str:
        """The module chain of a call as its metadata spells it, without the call's own (FX) name. Exporters
        write metadata keys in one order, so the position of the name scopes is looked up once."""
        node = call.first_node
        if node is None:
            return ""
        props = node.metadata_props
        pos = self._scopes_pos
        if 0 <= pos < len(props):
            p = props[pos]
            if p.key == NAME_SCOPES:
                return _cut_last(p.value, ",")
        namespace = ""
        for j, p in enumerate(props):
            if p.key == NAME_SCOPES:
                self._scopes_pos = j
                return _cut_last(p.value, ",")
            if p.key == NAMESPACE:
                namespace = p.value
        return _cut_last(namespace, "/") if "/" in namespace else ""

    def body(self, unit: _Unit) -> Body:
        """The body of a flat aten call unit, as the diff compares it (constants: small non-parameter initializers;
        inputs in first-use order). Built on first use."""
        if unit.body is None:
            nodes = self.graph.node
            unit.body = Body(unit.label, [nodes[i] for i in unit.nodes], list(unit.reads), list(unit.outputs),
                             dict(unit.constants), [(i,) for i in unit.nodes], list(unit.reads))
        return unit.body

    def fold_form(self, unit: _Unit) -> Body:
        """A flat aten call as ``fold`` turns it into a function body (its group body, inputs in aten order)."""
        assert unit.call is not None
        return _function_form(group_body(unit.call, self.maps))

    def _callee_reads(self, node: onnx.NodeProto, key: FunctionKey) -> list[str]:
        """The call's actual inputs in the order the function body first reads the formal ones (as a group body
        orders what it reads), so a folded call lines up with the flat group it came from."""
        f = self.functions[key]
        actual = {formal: (node.input[k] if k < len(node.input) else "") for k, formal in enumerate(f.input)}
        produced = {o for n in f.node for o in n.output if o}
        out: list[str] = []
        seen: set[str] = set()
        for n in f.node:
            for name in node_reads(n):
                if name in produced or name in seen or name not in actual:
                    continue
                seen.add(name)
                out.append(actual[name])
        out.extend(actual[formal] for formal in f.input if formal not in seen)
        return out

    def function_fp(self, key: FunctionKey) -> Fingerprints:
        fp = self._function_fp.get(key)
        if fp is None:
            fp = self._function_fp[key] = fingerprint(function_body(key, self.functions[key]))
        return fp

    def unit_fp(self, unit: _Unit) -> Fingerprints:
        if unit.fp is None:
            if unit.callee is not None:
                unit.fp = self.function_fp(unit.callee)
            elif unit.kind == "aten":
                unit.fp = fingerprint(self.body(unit))
            else:
                unit.fp = Fingerprints("", "")  # single nodes are compared attribute by attribute
        return unit.fp

    def bound(self, call: AtenCall, catalogue: SchemaCatalogue) -> list[BoundArgument]:
        """Non-tensor aten arguments (and numbers passed to Tensor parameters), as the specialiser uses them."""
        got = self._bound.get(id(call))
        if got is None:
            sig = call_signature(call, catalogue)
            got = [x for x in sig.bound if not x.parameter.is_tensor or _is_number(x.value)]
            self._bound[id(call)] = got
        return got

    def source(self, name: str) -> tuple[Any, ...]:
        """Where a value read by a unit comes from: a unit's output, a graph input, an initializer."""
        if not name:
            return ("none",)
        p = self.producer.get(name)
        if p is not None:
            return ("unit", self.unit_of_node[p], self.out_pos.get(name, -1))
        k = self.input_pos.get(name)
        if k is not None:
            return ("input", k)
        k = self.init_pos.get(name)
        if k is not None:
            return ("init", k)
        return ("outer", name)

    def describe(self, src: tuple[Any, ...]) -> str:
        kind = src[0]
        if kind == "unit":
            unit = self.units[src[1]]
            what = "aten call" if unit.kind == "aten" else "node"
            return f"{what} {unit.label}" + (f" output {src[2]}" if len(unit.outputs) > 1 else "")
        if kind == "input":
            return f"input {self.inputs[src[1]].name}"
        if kind == "init":
            return f"initializer {self.graph.initializer[src[1]].name}"
        if kind == "none":
            return "nothing"
        return f"value {src[1]}"


def _key_of(node: onnx.NodeProto) -> FunctionKey:
    return FunctionKey(node.domain, node.op_type, node.overload)


def _is_small(t: TensorProto) -> bool:
    return t.data_location != TensorProto.EXTERNAL and math.prod(t.dims) <= SMALL_CONSTANT_ELEMENTS


def _cut_last(text: str, sep: str) -> str:
    cut = text.rfind(sep)
    return text[:cut] if cut > 0 else text


def _node_match(A: _Side, ua: _Unit, B: _Side, ub: _Unit) -> list[str] | None:
    """For two flat groups that are node for node the same, names included (so the same template): the baked
    constants whose content differs (empty: identical bodies). None when the nodes differ in any way."""
    if len(ua.nodes) != len(ub.nodes) or ua.reads != ub.reads or ua.outputs != ub.outputs \
            or list(ua.constants) != list(ub.constants):
        return None
    na_all, nb_all = A.graph.node, B.graph.node
    for i, j in zip(ua.nodes, ub.nodes):
        na, nb = na_all[i], nb_all[j]
        if na.op_type != nb.op_type or na.domain != nb.domain or na.overload != nb.overload \
                or na.input != nb.input or na.output != nb.output or na.attribute != nb.attribute:
            return None
    return [name for name, t in ua.constants.items() if not _same_content(t, ub.constants[name])]


# --- the differ ------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Delta:
    """A value change inside a body pair: slot label, values, keys."""

    label: str
    old: Any
    new: Any
    old_key: str
    new_key: str


class _Differ:
    def __init__(self, a: ModelIndex, b: ModelIndex, catalogue: SchemaCatalogue | None) -> None:
        self.ia, self.ib = a, b
        self.A, self.B = _Side(a), _Side(b)
        self.catalogue = catalogue
        self.changes: list[Change] = []
        self._merged: dict[tuple[Any, ...], Change] = {}
        self.matched: dict[str, MatchCount] = {}
        self._body_cache: dict[tuple[str, str, str], tuple[list[_Delta], list[NodeEdit]]] = {}
        self._node_match: dict[int, list[str] | None] = {}
        self._constant_cache: dict[tuple[Any, ...], _Delta] = {}

    @property
    def cat(self) -> SchemaCatalogue:
        if self.catalogue is None:
            self.catalogue = SchemaCatalogue.default()
        return self.catalogue

    def add(self, change: Change, merge: tuple[Any, ...] | None = None, site: str | None = None) -> None:
        """Record a change; changes with the same ``merge`` key become one change with several sites."""
        if merge is not None:
            existing = self._merged.get(merge)
            if existing is not None:
                if site is not None and site not in existing.sites:
                    existing.sites.append(site)
                return
            self._merged[merge] = change
        if site is not None and site not in change.sites:
            change.sites.append(site)
        self.changes.append(change)

    def run(self) -> ModelDiff:
        A, B = self.A, self.B
        fmap = self.match_functions()
        umap: dict[int, int] = {}  # unit of A -> unit of B
        self.match_aten(umap)
        self.match_calls(fmap, umap)
        self.match_nodes(umap)
        fold = self.detect_fold(umap)
        explained = self.explained_functions(fold, umap)
        if fold is not None:
            flat = "a" if fold.folded == "b" else "b"
            self.add(Change("folded", "model", "", "model", {"flat": flat},
                            {"folded": fold.folded, "calls": fold.calls, "functions": fold.functions,
                             "domains": fold.domains, "identical": fold.identical}, fold.explanation))
        self.compare_model_facts(fold, explained)
        self.compare_families(fmap, explained)
        self.compare_functions(fmap)
        self.compare_aten(umap, fmap)
        self.compare_calls(umap, fmap)
        self.compare_nodes(umap)
        tmap = self.match_initializers(umap)
        self.compare_initializers(tmap)
        imap = self.compare_values("input", A.inputs, B.inputs)
        omap = self.compare_values("output", list(A.graph.output), list(B.graph.output))
        self.check_wiring(umap, tmap, imap, omap)
        return ModelDiff(str(self.ia.path), str(self.ib.path), self.changes, fold, self.matched)

    # -- functions ----------------------------------------------------------------------------------------------------

    def match_functions(self) -> dict[FunctionKey, FunctionKey]:
        A, B = self.A, self.B
        fmap = {k: k for k in A.functions if k in B.functions}
        fam_a: dict[tuple[str, str], list[FunctionKey]] = defaultdict(list)
        fam_b: dict[tuple[str, str], list[FunctionKey]] = defaultdict(list)
        for side, fams in ((A, fam_a), (B, fam_b)):
            for fam in side.index.families:
                if fam.kind != "function":
                    continue
                for ov in fam.overloads:
                    if ov.function is not None and ov.function in side.functions:
                        fams[(fam.domain, fam.name)].append(ov.function)
        taken_b = set(fmap.values())
        for fam_key, keys_a in fam_a.items():
            left_a = [k for k in keys_a if k not in fmap]
            left_b = [k for k in fam_b.get(fam_key, ()) if k not in taken_b]
            if not left_a or not left_b:
                continue
            by_template: dict[str, list[FunctionKey]] = defaultdict(list)
            for k in left_b:
                by_template[B.function_fp(k).template].append(k)
            for k in left_a:
                cands = by_template.get(A.function_fp(k).template)
                if cands:
                    kb = cands.pop(0)
                    fmap[k] = kb
                    taken_b.add(kb)
        self.matched["functions"] = MatchCount(len(fmap), len(A.functions) - len(fmap), len(B.functions) - len(fmap),
                                               sum(1 for k, v in fmap.items() if k != v))
        return fmap

    def explained_functions(self, fold: FoldRelation | None, umap: dict[int, int]) -> set[FunctionKey]:
        """Functions of the folded side that exist only because of the fold (called only by folded aten calls)."""
        if fold is None:
            return set()
        side = self.B if fold.folded == "b" else self.A
        other = self.A if fold.folded == "b" else self.B
        fold_calls: dict[FunctionKey, int] = defaultdict(int)
        pairs = umap.items() if fold.folded == "b" else ((ub, ua) for ua, ub in umap.items())
        for u_flat, u_call in pairs:
            flat = other.units[u_flat]
            unit = side.units[u_call]
            if unit.kind == "aten" and unit.callee is not None and flat.kind == "aten" and flat.callee is None:
                fold_calls[unit.callee] += 1
        return {k for k, n in fold_calls.items()
                if n == side.index.functions.call_count(k) and k not in other.functions}

    def compare_functions(self, fmap: dict[FunctionKey, FunctionKey]) -> None:
        A, B = self.A, self.B
        for ka, kb in fmap.items():
            family = A.family_of_key.get(ka, str(FunctionKey(ka.domain, ka.name)))
            fa_proto, fb_proto = A.functions[ka], B.functions[kb]
            if ka != kb:
                self.add(Change("overload_renamed", "function", family, str(ka), str(ka), str(kb),
                                f"{ka} is now {kb} (same template)", [str(ka)]))
            sig_a, sig_b = _function_signature(fa_proto), _function_signature(fb_proto)
            if sig_a != sig_b:
                self.add(Change("signature_changed", "function", family, str(ka), sig_a, sig_b,
                                _signature_detail(sig_a, sig_b), [str(ka)]))
            fpa, fpb = A.function_fp(ka), B.function_fp(kb)
            if fpa.full == fpb.full:
                continue
            ba, bb = function_body(ka, fa_proto), function_body(kb, fb_proto)
            self.report_bodies("function", family, str(ka), ba, fpa, bb, fpb, None, None)

    def compare_families(self, fmap: dict[FunctionKey, FunctionKey], explained: set[FunctionKey]) -> None:
        A, B = self.A, self.B
        fams_a = {(f.kind, f.domain, f.name): f for f in A.index.families}
        fams_b = {(f.kind, f.domain, f.name): f for f in B.index.families}
        mapped_b = set(fmap.values())
        for key, fam in fams_a.items():
            if key not in fams_b:
                if fam.kind == "function" and all(o.function in explained for o in fam.overloads):
                    continue
                self.add(Change("family_removed", fam.kind, fam.label, fam.label, _family_json(fam), None,
                                _family_detail(fam), [fam.label]))
        for key, fam in fams_b.items():
            if key not in fams_a:
                if fam.kind == "function" and all(o.function in explained for o in fam.overloads):
                    continue
                self.add(Change("family_added", fam.kind, fam.label, fam.label, None, _family_json(fam),
                                _family_detail(fam), [fam.label]))
        for key, fam_a in fams_a.items():
            fam_b = fams_b.get(key)
            if fam_b is None:
                continue
            if fam_a.kind == "function":
                for ov in fam_a.overloads:
                    if ov.function is not None and ov.function not in fmap and ov.function not in explained:
                        self.add(Change("overload_removed", "function", fam_a.label, str(ov.function),
                                        str(ov.function), None, f"{ov.function} ({ov.call_count} calls)",
                                        [str(ov.function)]))
                for ov in fam_b.overloads:
                    if ov.function is not None and ov.function not in mapped_b and ov.function not in explained:
                        self.add(Change("overload_added", "function", fam_b.label, str(ov.function), None,
                                        str(ov.function), f"{ov.function} ({ov.call_count} calls)",
                                        [str(ov.function)]))
            else:
                ovs_a = {o.overload: o for o in fam_a.overloads}
                ovs_b = {o.overload: o for o in fam_b.overloads}
                for name, ov in ovs_a.items():
                    if name not in ovs_b:
                        self.add(Change("overload_removed", "aten_call", fam_a.label, ov.label, ov.label, None,
                                        f"{ov.label} ({ov.call_count} calls)", [ov.label]))
                for name, ov in ovs_b.items():
                    if name not in ovs_a:
                        self.add(Change("overload_added", "aten_call", fam_b.label, ov.label, None, ov.label,
                                        f"{ov.label} ({ov.call_count} calls)", [ov.label]))

    # -- aten calls ---------------------------------------------------------------------------------------------------

    def match_aten(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        ua = [k for k, u in enumerate(A.units) if u.kind == "aten"]
        ub = [k for k, u in enumerate(B.units) if u.kind == "aten"]
        index_b: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for k in ub:
            call = B.units[k].call
            assert call is not None
            index_b[(call.target, call.name, B.units[k].module)].append(k)
        taken: set[int] = set()
        rest_a: dict[str, list[int]] = defaultdict(list)
        for k in ua:
            call = A.units[k].call
            assert call is not None
            cands = index_b.get((call.target, call.name, A.units[k].module))
            if cands:
                kb = cands.pop(0)
                umap[k] = kb
                taken.add(kb)
            else:
                rest_a[call.target].append(k)
        rest_b: dict[str, list[int]] = defaultdict(list)
        for k in ub:
            if k not in taken:
                call = B.units[k].call
                assert call is not None
                rest_b[call.target].append(k)
        for target, left_a in rest_a.items():
            left_b = rest_b.get(target, [])
            if left_b:
                umap.update(self._align(left_a, left_b))
        n_a, n_b = len(ua), len(ub)
        matched = sum(1 for k in ua if k in umap)
        renamed = sum(1 for k in ua if k in umap and A.units[k].label != B.units[umap[k]].label)
        self.matched["aten_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def _align(self, left_a: list[int], left_b: list[int]) -> list[tuple[int, int]]:
        """Pair left-over calls of one target by position, aligning on (module path, template) when counts differ."""
        A, B = self.A, self.B
        if len(left_a) == len(left_b):
            return list(zip(left_a, left_b))

        def key(side: _Side, k: int) -> tuple[str, str]:
            unit = side.units[k]
            assert unit.call is not None
            return (unit.module, side.unit_fp(unit).template)

        ka, kb = [key(A, k) for k in left_a], [key(B, k) for k in left_b]
        pairs: list[tuple[int, int]] = []
        sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag in ("equal", "replace"):
                pairs.extend(zip(left_a[i1:i2], left_b[j1:j2]))
        return pairs

    def detect_fold(self, umap: dict[int, int]) -> FoldRelation | None:
        A, B = self.A, self.B
        directions: dict[str, list[tuple[_Unit, _Unit]]] = {"a": [], "b": []}
        for ka, kb in umap.items():
            ua, ub = A.units[ka], B.units[kb]
            if ua.callee is None and ub.callee is not None:
                directions["b"].append((ua, ub))
            elif ua.callee is not None and ub.callee is None:
                directions["a"].append((ua, ub))
        if bool(directions["a"]) == bool(directions["b"]):
            return None  # none, or both ways: compare call by call without a fold summary
        folded = "b" if directions["b"] else "a"
        pairs = directions[folded]
        side = B if folded == "b" else A
        callees = {(ub if folded == "b" else ua).callee for ua, ub in pairs}
        identical = 0
        for ua, ub in pairs:
            flat, call = (ua, ub) if folded == "b" else (ub, ua)
            assert call.callee is not None
            other = A if folded == "b" else B
            if fingerprint(other.fold_form(flat)).full == side.function_fp(call.callee).full:
                identical += 1
        domains = sorted({k.domain for k in callees if k is not None})
        return FoldRelation(folded, len(pairs), len(callees), domains, identical)

    def compare_aten(self, umap: dict[int, int], fmap: dict[FunctionKey, FunctionKey]) -> None:
        A, B = self.A, self.B
        targets_a = {u.call.target for u in A.units if u.call is not None}
        targets_b = {u.call.target for u in B.units if u.call is not None}
        matched_b = set(umap.values())
        for k, unit in enumerate(A.units):
            if unit.kind != "aten":
                continue
            call = unit.call
            assert call is not None
            family = _aten_family(call.target)
            kb = umap.get(k)
            if kb is None:
                if call.target in targets_b:
                    self.add(Change("call_removed", "aten_call", family, call.name, call.target, None,
                                    f"{call.target} calls removed"), ("call_removed", call.target), call.name)
                continue
            ub = B.units[kb]
            site = call.name
            if unit.callee is not None and ub.callee is not None:
                if fmap.get(unit.callee) != ub.callee:
                    self.add(Change("call_changed", "aten_call", family, site, str(unit.callee), str(ub.callee),
                                    f"calls {ub.callee} instead of {unit.callee}"),
                             ("retarget", family, unit.callee, ub.callee), site)
                self.compare_call_attributes(family, "aten_call", site, A.graph.node[unit.nodes[0]],
                                             B.graph.node[ub.nodes[0]])
                continue
            if unit.callee is None and ub.callee is None:
                changed = self.node_match(k, kb)
                if changed is not None:  # same nodes: only baked constants can differ
                    for name in changed:
                        self.report_constant(family, site, unit, ub, name)
                    continue
                fpa, fpb = A.unit_fp(unit), B.unit_fp(ub)
                if fpa.full == fpb.full:
                    continue
                self.report_bodies("aten_call", family, site, A.body(unit), fpa, B.body(ub), fpb, (A, call),
                                   (B, ub.call))
                continue
            # one side folded: the flat group against the called function's body
            if unit.callee is None:
                assert ub.callee is not None
                ba = A.fold_form(unit)
                fpa = fingerprint(ba)
                bb = function_body(ub.callee, B.functions[ub.callee])
                fpb = B.function_fp(ub.callee)
            else:
                ba = function_body(unit.callee, A.functions[unit.callee])
                fpa = A.function_fp(unit.callee)
                bb = B.fold_form(ub)
                fpb = fingerprint(bb)
            if fpa.full != fpb.full:
                self.report_bodies("aten_call", family, site, ba, fpa, bb, fpb, (A, call), (B, ub.call))
        for kb, unit in enumerate(B.units):
            if unit.kind == "aten" and kb not in matched_b:
                call = unit.call
                assert call is not None
                if call.target in targets_a:
                    self.add(Change("call_added", "aten_call", _aten_family(call.target), call.name, None,
                                    call.target, f"{call.target} calls added"), ("call_added", call.target), call.name)

    def compare_call_attributes(self, family: str, section: str, site: str, na: onnx.NodeProto,
                                nb: onnx.NodeProto) -> None:
        attrs_a, attrs_b = _attribute_keys(na), _attribute_keys(nb)
        if attrs_a == attrs_b:
            return
        detail = _attribute_detail(attrs_a, attrs_b)
        self.add(Change("call_changed", section, family, site, {k: v[0] for k, v in attrs_a.items()},
                        {k: v[0] for k, v in attrs_b.items()}, detail), ("call_attrs", family, detail), site)

    # -- function calls and other nodes -------------------------------------------------------------------------------

    def match_calls(self, fmap: dict[FunctionKey, FunctionKey], umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        by_callee_b: dict[FunctionKey, list[int]] = defaultdict(list)
        for k, u in enumerate(B.units):
            if u.kind == "call" and u.callee is not None:
                by_callee_b[u.callee].append(k)
        calls_a = [k for k, u in enumerate(A.units) if u.kind == "call" and u.callee is not None]
        by_name_b = {(u.callee, u.label): k for k, u in enumerate(B.units) if u.kind == "call"}
        taken: set[int] = set()
        for k in calls_a:  # the same callee and node name
            u = A.units[k]
            assert u.callee is not None
            target = fmap.get(u.callee)
            kb = by_name_b.get((target, u.label)) if target is not None else None
            if kb is not None and kb not in taken:
                umap[k] = kb
                taken.add(kb)
        n_a, matched, renamed = len(calls_a), 0, 0
        cursor: dict[FunctionKey, int] = defaultdict(int)
        for k in calls_a:  # then by position among the calls of that callee
            u = A.units[k]
            assert u.callee is not None
            target = fmap.get(u.callee)
            if k not in umap and target is not None:
                cands = by_callee_b.get(target, [])
                pos = cursor[target]
                while pos < len(cands) and cands[pos] in taken:
                    pos += 1
                cursor[target] = pos
                if pos < len(cands):
                    umap[k] = cands[pos]
                    taken.add(cands[pos])
            if k in umap:
                matched += 1
                renamed += B.units[umap[k]].label != u.label
        n_b = sum(1 for u in B.units if u.kind == "call")
        self.matched["function_calls"] = MatchCount(matched, n_a - matched, n_b - matched, renamed)

    def compare_calls(self, umap: dict[int, int], fmap: dict[FunctionKey, FunctionKey]) -> None:
        A, B = self.A, self.B
        matched_b = set(umap.values())
        for k, u in enumerate(A.units):
            if u.kind != "call" or u.callee is None:
                continue
            family = A.family_of_key.get(u.callee, str(u.callee))
            kb = umap.get(k)
            if kb is None:
                if u.callee in fmap:
                    self.add(Change("call_removed", "function", family, u.label, str(u.callee), None,
                                    f"calls of {u.callee} removed"), ("fcall_removed", u.callee), u.label)
                continue
            self.compare_call_attributes(family, "function", u.label, A.graph.node[u.nodes[0]],
                                         B.graph.node[B.units[kb].nodes[0]])
        mapped = set(fmap.values())
        for kb, u in enumerate(B.units):
            if u.kind == "call" and u.callee is not None and kb not in matched_b and u.callee in mapped:
                family = B.family_of_key.get(u.callee, str(u.callee))
                self.add(Change("call_added", "function", family, u.label, None, str(u.callee),
                                f"calls of {u.callee} added"), ("fcall_added", u.callee), u.label)

    def match_nodes(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        na = [k for k, u in enumerate(A.units) if u.kind == "node"]
        nb = [k for k, u in enumerate(B.units) if u.kind == "node"]
        if not na or not nb:
            self.matched["nodes"] = MatchCount(0, len(na), len(nb), 0)
            return
        hashes_a, hashes_b = _neighbourhood_hashes(A), _neighbourhood_hashes(B)
        left_a, left_b = list(na), list(nb)
        for rnd in (2, 1):  # most specific first
            ca = _counts(hashes_a[rnd][A.units[k].nodes[0]] for k in left_a)
            cb = _counts(hashes_b[rnd][B.units[k].nodes[0]] for k in left_b)
            unique_b = {hashes_b[rnd][B.units[k].nodes[0]]: k for k in left_b
                        if cb[hashes_b[rnd][B.units[k].nodes[0]]] == 1}
            for k in left_a:
                h = hashes_a[rnd][A.units[k].nodes[0]]
                if ca[h] == 1 and h in unique_b:
                    umap[k] = unique_b[h]
            taken = set(umap.values())
            left_a = [k for k in left_a if k not in umap]
            left_b = [k for k in left_b if k not in taken]

        def op(side: _Side, k: int) -> tuple[str, str, str]:
            node = side.graph.node[side.units[k].nodes[0]]
            return (node.domain, node.op_type, node.overload)

        by_name_b = {(B.graph.node[B.units[k].nodes[0]].name, op(B, k)): k for k in left_b
                     if B.graph.node[B.units[k].nodes[0]].name}
        for k in left_a:
            name = A.graph.node[A.units[k].nodes[0]].name
            kb = by_name_b.pop((name, op(A, k)), None) if name else None
            if kb is not None:
                umap[k] = kb
        taken = set(umap.values())
        left_a = [k for k in left_a if k not in umap]
        left_b = [k for k in left_b if k not in taken]
        sm = difflib.SequenceMatcher(None, [op(A, k) for k in left_a], [op(B, k) for k in left_b], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                umap.update(zip(left_a[i1:i2], left_b[j1:j2]))
        taken = set(umap.values())
        left_a = [k for k in left_a if k not in umap]
        pool: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for k in left_b:
            if k not in taken:
                pool[op(B, k)].append(k)
        for k in left_a:
            cands = pool.get(op(A, k))
            if cands:
                umap[k] = cands.pop(0)
        matched = sum(1 for k in na if k in umap)
        renamed = sum(1 for k in na if k in umap and A.units[k].label != B.units[umap[k]].label)
        self.matched["nodes"] = MatchCount(matched, len(na) - matched, len(nb) - matched, renamed)

    def compare_nodes(self, umap: dict[int, int]) -> None:
        A, B = self.A, self.B
        matched_b = set(umap.values())
        for k, u in enumerate(A.units):
            if u.kind != "node":
                continue
            node = A.graph.node[u.nodes[0]]
            label = _op_label(node)
            kb = umap.get(k)
            if kb is None:
                self.add(Change("node_removed", "node", label, u.label, label, None, f"{label} node {u.label}",
                                [u.label]))
                continue
            other = B.graph.node[B.units[kb].nodes[0]]
            attrs_a, attrs_b = _attribute_keys(node), _attribute_keys(other)
            parts = []
            if attrs_a != attrs_b:
                parts.append(_attribute_detail(attrs_a, attrs_b))
            if len(node.input) != len(other.input) or len(node.output) != len(other.output):
                parts.append(f"{len(node.input)}->{len(other.input)} inputs, "
                             f"{len(node.output)}->{len(other.output)} outputs")
            if parts:
                edits = _subgraph_edits(node, other, attrs_a, attrs_b)
                self.add(Change("node_changed", "node", label, u.label, {k: v[0] for k, v in attrs_a.items()},
                                {k: v[0] for k, v in attrs_b.items()}, "; ".join(parts), [u.label],
                                edits[:MAX_EDITS]))
        for kb, u in enumerate(B.units):
            if u.kind == "node" and kb not in matched_b:
                label = _op_label(B.graph.node[u.nodes[0]])
                self.add(Change("node_added", "node", label, u.label, None, label, f"{label} node {u.label}",
                                [u.label]))

    # -- bodies -------------------------------------------------------------------------------------------------------

    def report_bodies(self, section: str, family: str, site: str, ba: Body, fpa: Fingerprints, bb: Body,
                      fpb: Fingerprints, call_a: tuple[_Side, AtenCall] | None,
                      call_b: tuple[_Side, AtenCall | None] | None) -> None:
        """Value changes (same template) or node edits (different templates) of one body pair, merged across the
        family's call sites."""
        cache_key = (section, fpa.full, fpb.full)
        hit = self._body_cache.get(cache_key)
        if hit is None:
            if fpa.template == fpb.template:
                bound_a = call_a[0].bound(call_a[1], self.cat) if call_a is not None else []
                bound_b = call_b[0].bound(call_b[1], self.cat) if call_b is not None and call_b[1] is not None \
                    else []
                hit = (_value_deltas(ba, bb, bound_a, bound_b), [])
            else:
                hit = ([], _node_edits(ba, bb))
            self._body_cache[cache_key] = hit
        deltas, edits = hit
        if fpa.template == fpb.template:
            for d in deltas:
                self.add(Change("value_changed", section, family, site, d.old, d.new,
                                f"{d.label}: {show_value(d.old)} -> {show_value(d.new)}"),
                         ("value", section, family, d.label, d.old_key, d.new_key), site)
            if not deltas:  # same template, different fingerprint, no literal differs: wiring inside the body
                self.add(Change("body_changed", section, family, site, {"fingerprint": fpa.full},
                                {"fingerprint": fpb.full}, "same operators and values, wired differently"),
                         ("body", section, family, fpa.full, fpb.full), site)
            return
        n_a, n_b = _count_nodes(ba), _count_nodes(bb)
        self.add(Change("body_changed", section, family, site, {"nodes": n_a, "fingerprint": fpa.full},
                        {"nodes": n_b, "fingerprint": fpb.full}, f"{n_a} -> {n_b} nodes: {_edits_summary(edits)}",
                        edits=edits[:MAX_EDITS]),
                 ("body", section, family, fpa.full, fpb.full), site)

    # -- model facts ---------------------------------------------------------------------------------------------------

    def compare_model_facts(self, fold: FoldRelation | None, explained: set[FunctionKey]) -> None:
        fa, fb = self.ia.facts, self.ib.facts
        fold_domains = {k.domain for k in explained}
        if fa.ir_version != fb.ir_version:
            flat_ir, folded_ir = (fa.ir_version, fb.ir_version) if fold is None or fold.folded == "b" else \
                (fb.ir_version, fa.ir_version)
            if fold is None or folded_ir != max(flat_ir, 10):  # fold raises the IR version to 10 (overloads)
                self.add(Change("ir_version", "model", "", "ir_version", fa.ir_version, fb.ir_version,
                                f"ir_version {fa.ir_version} -> {fb.ir_version}", ["ir_version"]))
        for domain in sorted(set(fa.opsets) | set(fb.opsets)):
            shown = domain or "ai.onnx"
            va, vb = fa.opsets.get(domain), fb.opsets.get(domain)
            if va == vb or domain in fold_domains:
                continue
            kind = "opset_added" if va is None else "opset_removed" if vb is None else "opset_changed"
            self.add(Change(kind, "model", "", f"opset {shown}", va, vb, f"opset {shown}: {va} -> {vb}",
                            [f"opset {shown}"]))
        for name in ("producer_name", "producer_version"):
            va, vb = getattr(fa, name), getattr(fb, name)
            if va != vb:
                self.add(Change("producer", "model", "", name, va, vb, f"{name}: {va!r} -> {vb!r}", [name]))
        for name in ("domain", "model_version"):
            va, vb = getattr(fa, name), getattr(fb, name)
            if va != vb:
                self.add(Change("model_field", "model", "", name, va, vb, f"{name}: {va!r} -> {vb!r}", [name]))
        for key in sorted(set(fa.metadata) | set(fb.metadata)):
            ma, mb = fa.metadata.get(key), fb.metadata.get(key)
            if ma == mb:
                continue
            kind = "metadata_added" if ma is None else "metadata_removed" if mb is None else "metadata_changed"
            self.add(Change(kind, "model", "", f"metadata {key}", ma, mb,
                            f"metadata {key!r}: {_short(ma)} -> {_short(mb)}", [f"metadata {key}"]))

    # -- initializers, inputs, outputs --------------------------------------------------------------------------------

    def match_initializers(self, umap: dict[int, int]) -> dict[int, int]:
        A, B = self.A, self.B
        inits_a, inits_b = list(A.graph.initializer), list(B.graph.initializer)
        tmap = {k: B.init_pos[t.name] for k, t in enumerate(inits_a) if t.name in B.init_pos}
        taken = set(tmap.values())
        if len(tmap) < min(len(inits_a), len(inits_b)):
            # by role: the same input of matched calls whose bodies share a template
            for ka, kb in umap.items():
                ua, ub = A.units[ka], B.units[kb]
                if len(ua.reads) != len(ub.reads):
                    continue
                if ua.kind == "aten" and not self.same_template(ka, kb):
                    continue
                pairs = list(zip(ua.reads, ub.reads))
                if ua.kind == "aten" and ua.callee is None and ub.callee is None:
                    pairs.extend(zip(ua.constants, ub.constants))  # same template: same constant slots
                for ra, rb in pairs:
                    ta, tb = A.init_pos.get(ra), B.init_pos.get(rb)
                    if ta is not None and tb is not None and ta not in tmap and tb not in taken \
                            and ra not in A.input_pos and rb not in B.input_pos:
                        tmap[ta] = tb
                        taken.add(tb)
            # by content
            pool: dict[tuple[int, tuple[int, ...], str], list[int]] = defaultdict(list)
            for k, t in enumerate(inits_b):
                if k not in taken:
                    pool[(t.data_type, tuple(t.dims), content_digest(t))].append(k)
            for k, t in enumerate(inits_a):
                if k in tmap:
                    continue
                cands = pool.get((t.data_type, tuple(t.dims), content_digest(t)))
                if cands:
                    tmap[k] = cands.pop(0)
        renamed = sum(1 for ka, kb in tmap.items() if inits_a[ka].name != inits_b[kb].name)
        self.matched["initializers"] = MatchCount(len(tmap), len(inits_a) - len(tmap), len(inits_b) - len(tmap),
                                                  renamed)
        return tmap

    def compare_initializers(self, tmap: dict[int, int]) -> None:
        A, B = self.A, self.B
        inits_a, inits_b = A.graph.initializer, B.graph.initializer
        baked_a, baked_b = _baked_constants(A), _baked_constants(B)
        for ka, t in enumerate(inits_a):
            kb = tmap.get(ka)
            if t.name in baked_a:
                continue
            if kb is None:
                self.add(Change("initializer_removed", "initializer", "", t.name, _tensor_summary(t), None,
                                f"{t.name} {_tensor_type(t)}", [t.name]))
                continue
            u = inits_b[kb]
            if u.name in baked_b:
                continue
            if t.data_type != u.data_type or list(t.dims) != list(u.dims):
                self.add(Change("initializer_reshaped", "initializer", "", t.name, _tensor_type(t), _tensor_type(u),
                                f"{_renamed(t.name, u.name)} {_tensor_type(t)} -> {_tensor_type(u)}", [t.name]))
            elif not _same_content(t, u):
                old, new = _tensor_summary(t), _tensor_summary(u)
                self.add(Change("initializer_revalued", "initializer", "", t.name, old, new,
                                f"{_renamed(t.name, u.name)} {_tensor_type(t)}: {show_value(old)} -> "
                                f"{show_value(new)}", [t.name]))
        matched_b = set(tmap.values())
        for kb, u in enumerate(inits_b):
            if kb not in matched_b and u.name not in baked_b:
                self.add(Change("initializer_added", "initializer", "", u.name, None, _tensor_summary(u),
                                f"{u.name} {_tensor_type(u)}", [u.name]))

    def compare_values(self, section: str, va: Sequence[onnx.ValueInfoProto],
                       vb: Sequence[onnx.ValueInfoProto]) -> dict[int, int]:
        """Graph inputs or outputs: matched by name, then position; types compared."""
        pos_b = {v.name: k for k, v in enumerate(vb)}
        vmap = {k: pos_b[v.name] for k, v in enumerate(va) if v.name in pos_b}
        left_b = [k for k in range(len(vb)) if k not in set(vmap.values())]
        for k, kb in zip([k for k in range(len(va)) if k not in vmap], left_b):
            vmap[k] = kb
        for k, v in enumerate(va):
            found = vmap.get(k)
            if found is None:
                self.add(Change(f"{section}_removed", section, "", v.name, type_text(v.type), None,
                                f"{v.name}: {type_text(v.type)}", [v.name]))
                continue
            ta, tb = type_text(v.type), type_text(vb[found].type)
            if ta != tb:
                self.add(Change(f"{section}_retyped", section, "", v.name, ta, tb,
                                f"{_renamed(v.name, vb[found].name)}: {ta} -> {tb}", [v.name]))
        mapped = set(vmap.values())
        for kb, v in enumerate(vb):
            if kb not in mapped:
                self.add(Change(f"{section}_added", section, "", v.name, None, type_text(v.type),
                                f"{v.name}: {type_text(v.type)}", [v.name]))
        renamed = sum(1 for k, kb in vmap.items() if va[k].name != vb[kb].name)
        self.matched[f"{section}s"] = MatchCount(len(vmap), len(va) - len(vmap), len(vb) - len(vmap), renamed)
        return vmap

    # -- wiring -------------------------------------------------------------------------------------------------------

    def check_wiring(self, umap: dict[int, int], tmap: dict[int, int], imap: dict[int, int],
                     omap: dict[int, int]) -> None:
        """Matched units must read from matched producers, at the same positions; graph outputs likewise."""
        A, B = self.A, self.B

        def mapped(src: tuple[Any, ...]) -> tuple[Any, ...] | None:
            kind = src[0]
            if kind == "unit":
                kb = umap.get(src[1])
                return None if kb is None else ("unit", kb, src[2])
            if kind == "input":
                k = imap.get(src[1])
                return None if k is None else ("input", k)
            if kind == "init":
                k = tmap.get(src[1])
                return None if k is None else ("init", k)
            return src if kind == "none" else None

        for ka, kb in umap.items():
            ua, ub = A.units[ka], B.units[kb]
            if len(ua.reads) != len(ub.reads):
                continue
            if ua.kind == "aten" and not self.same_template(ka, kb):
                continue  # body changes already explain different inputs
            for pos, (ra, rb) in enumerate(zip(ua.reads, ub.reads)):
                sa = A.source(ra)
                want = mapped(sa)
                if want is None:
                    continue
                sb = B.source(rb)
                if want != sb and not self._same_source(sa, want, sb):
                    section, family = self._unit_place(A, ua)
                    self.add(Change("rewired", section, family, ua.label, A.describe(sa), B.describe(sb),
                                    f"input {pos}: was {A.describe(sa)}, now {B.describe(sb)}", [ua.label]))
        outs_a, outs_b = A.graph.output, B.graph.output
        for k, kb in omap.items():
            sa = A.source(outs_a[k].name)
            want = mapped(sa)
            if want is None:
                continue
            sb = B.source(outs_b[kb].name)
            if want != sb and not self._same_source(sa, want, sb):
                self.add(Change("rewired", "output", "", outs_a[k].name, A.describe(sa), B.describe(sb),
                                f"{outs_a[k].name}: was {A.describe(sa)}, now {B.describe(sb)}", [outs_a[k].name]))

    def _same_source(self, sa: tuple[Any, ...], want: tuple[Any, ...], sb: tuple[Any, ...]) -> bool:
        """Differences that are not rewiring: two initializers with the same content (an optimizer shares one
        where the other export keeps copies), or another output of a producer whose body changed anyway."""
        if want[0] == "init" and sb[0] == "init":
            return _same_content(self.A.graph.initializer[sa[1]], self.B.graph.initializer[sb[1]])
        if want[0] == "unit" and sb[0] == "unit" and want[1] == sb[1]:
            ua, ub = self.A.units[sa[1]], self.B.units[sb[1]]
            if len(ua.outputs) != len(ub.outputs):
                return True
            return ua.kind == "aten" and not self.same_template(sa[1], sb[1])
        return False

    def node_match(self, ka: int, kb: int) -> list[str] | None:
        """``_node_match`` of two matched flat aten calls (cached)."""
        if ka in self._node_match:
            return self._node_match[ka]
        ua, ub = self.A.units[ka], self.B.units[kb]
        hit = _node_match(self.A, ua, self.B, ub) if ua.callee is None and ub.callee is None else None
        self._node_match[ka] = hit
        return hit

    def same_template(self, ka: int, kb: int) -> bool:
        return self.node_match(ka, kb) is not None or self.A.unit_fp(self.A.units[ka]).template == \
            self.B.unit_fp(self.B.units[kb]).template

    def report_constant(self, family: str, site: str, ua: _Unit, ub: _Unit, name: str) -> None:
        """A baked constant of two otherwise identical calls changed: report it without building bodies. The label
        (reader slot, aten parameter) is worked out once per family, slot and value pair."""
        ta, tb = ua.constants[name], ub.constants[name]
        nodes_a = [self.A.graph.node[i] for i in ua.nodes]
        slot, uses = _reader(nodes_a, name)
        key = (family, slot, uses, content_digest(ta), content_digest(tb))
        hit = self._constant_cache.get(key)
        if hit is None:
            va, ka = tensor_value(ta)
            vb, kb = tensor_value(tb)
            lit = Literal((), slot.partition(".")[0], name, "initializer", va, ka, uses=uses)
            other = Literal((), slot.partition(".")[0], name, "initializer", vb, kb, uses=uses)
            assert ua.call is not None and ub.call is not None
            label = _literal_label(slot, lit, self.A.bound(ua.call, self.cat)) or \
                _literal_label(slot, other, self.B.bound(ub.call, self.cat))
            hit = self._constant_cache[key] = _Delta(label, _unwrap(va), _unwrap(vb), ka, kb)
        self.add(Change("value_changed", "aten_call", family, site, hit.old, hit.new,
                        f"{hit.label}: {show_value(hit.old)} -> {show_value(hit.new)}"),
                 ("value", "aten_call", family, hit.label, hit.old_key, hit.new_key), site)

    def _unit_place(self, side: _Side, unit: _Unit) -> tuple[str, str]:
        if unit.kind == "aten" and unit.call is not None:
            return "aten_call", _aten_family(unit.call.target)
        if unit.kind == "call" and unit.callee is not None:
            return "function", side.family_of_key.get(unit.callee, str(unit.callee))
        return "node", _op_label(side.graph.node[unit.nodes[0]])


# --- helpers: bodies -------------------------------------------------------------------------------------------------


def _function_form(body: Body) -> Body:
    """A group body as ``fold`` turns it into a function: constants become leading Constant nodes, inputs keep
    the aten argument order."""
    consts = [helper.make_node("Constant", [], [name], value=t) for name, t in body.constants.items()]
    return Body(body.label, consts + list(body.nodes), list(body.inputs), list(body.outputs), {})


def _value_deltas(ba: Body, bb: Body, bound_a: list[BoundArgument], bound_b: list[BoundArgument]) -> list[_Delta]:
    """Literals of two same-template bodies aligned slot by slot; the ones whose values differ."""
    la, lb = body_literals(ba), body_literals(bb)
    slots_b: dict[tuple[Any, int], Literal] = {}
    seen: dict[Any, int] = defaultdict(int)
    for lit in lb:
        slots_b[(lit.slot, seen[lit.slot])] = lit
        seen[lit.slot] += 1
    seen.clear()
    out: list[_Delta] = []
    for lit in la:
        other = slots_b.get((lit.slot, seen[lit.slot]))
        seen[lit.slot] += 1
        if other is None or other.key == lit.key:
            continue
        label = _literal_label(_literal_where(ba, lit), lit, bound_a) or \
            _literal_label(_literal_where(bb, other), other, bound_b)
        out.append(_Delta(label, _unwrap(lit.value), _unwrap(other.value), lit.key, other.key))
    return out


def _literal_where(body: Body, lit: Literal) -> str:
    """Where a literal sits: ``Transpose.perm``, or for constants the input they feed, ``Reshape.shape``."""
    if lit.kind == "attribute":
        return f"{lit.op_type}.{lit.name}"
    if lit.kind == "parametric":
        return f"{lit.op_type}.{lit.name}=@{lit.ref}"
    reads = lit.name if lit.kind == "initializer" else _constant_output(body, lit)
    where = _reader_slot(body, reads) if reads else ""
    return where or (f"{lit.op_type}.{lit.name}" if lit.kind == "constant" else "constant")


def _literal_label(where: str, lit: Literal, bound: list[BoundArgument]) -> str:
    """``scale (Mul.B)``: where a literal sits, and the aten parameter it came from when a rule ties it to one."""
    params: list[str] = []
    if bound and lit.kind != "parametric":
        for link in link_literal(lit, bound):
            if link.parameter not in params:
                params.append(link.parameter)
    return f"{', '.join(params)} ({where})" if params else where


def _reader(nodes: Sequence[onnx.NodeProto], name: str) -> tuple[str, int]:
    """The first input slot reading ``name`` (``Mul.B``) and how many inputs read it."""
    slot, uses = "", 0
    for node in nodes:
        for k, inp in enumerate(node.input):
            if inp == name:
                uses += 1
                if not slot:
                    slot = f"{node.op_type}.{_input_name(node.domain, node.op_type, k)}"
    return slot or "constant", uses


def _constant_output(body: Body, lit: Literal) -> str:
    node: onnx.NodeProto | None = None
    for path, n in walk_body(body.nodes):
        if path == lit.path:
            node = n
            break
    return node.output[0] if node is not None and node.output else ""


def _reader_slot(body: Body, name: str) -> str:
    for _path, node in walk_body(body.nodes):
        for k, inp in enumerate(node.input):
            if inp == name:
                return f"{node.op_type}.{_input_name(node.domain, node.op_type, k)}"
    return ""


@lru_cache(maxsize=1024)
def _input_name(domain: str, op_type: str, k: int) -> str:
    try:
        schema = onnx.defs.get_schema(op_type, domain)
        inputs = schema.inputs
        if k < len(inputs):
            return str(inputs[k].name)
        if inputs and inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            return f"{inputs[-1].name}[{k - len(inputs) + 1}]"
    except Exception:
        pass
    return f"input{k}"


def _node_edits(ba: Body, bb: Body) -> list[NodeEdit]:
    """Node-level alignment of two bodies by (domain, op_type) sequence; attribute changes of aligned nodes."""
    na = [n for _p, n in walk_body(ba.nodes)]
    nb = [n for _p, n in walk_body(bb.nodes)]
    edits: list[NodeEdit] = []
    sm = difflib.SequenceMatcher(None, [_key_of(n) for n in na], [_key_of(n) for n in nb], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                # graph attributes are not compared here: the walk lists the nodes inside them
                ka, kb = _attribute_keys(na[i], graphs=False), _attribute_keys(nb[j], graphs=False)
                if ka != kb:
                    edits.append(NodeEdit("changed", _op_label(na[i]), i, j, _attribute_detail(ka, kb)))
            continue
        edits.extend(NodeEdit("removed", _op_label(na[i]), i, None) for i in range(i1, i2))
        edits.extend(NodeEdit("added", _op_label(nb[j]), None, j) for j in range(j1, j2))
    ca = [(_tensor_type(t), tensor_value(t)[1]) for t in ba.constants.values()]
    cb = [(_tensor_type(t), tensor_value(t)[1]) for t in bb.constants.values()]
    if ca != cb:
        cm = difflib.SequenceMatcher(None, [k for _t, k in ca], [k for _t, k in cb], autojunk=False)
        for tag, i1, i2, j1, j2 in cm.get_opcodes():
            if tag != "equal":
                edits.extend(NodeEdit("removed", f"constant {ca[i][0]}", None, None) for i in range(i1, i2))
                edits.extend(NodeEdit("added", f"constant {cb[j][0]}", None, None) for j in range(j1, j2))
    if not edits:
        edits.append(NodeEdit("changed", "wiring", None, None, "same operators, wired differently"))
    return edits


def _subgraph_edits(na: onnx.NodeProto, nb: onnx.NodeProto, attrs_a: dict[str, tuple[Any, str]],
                    attrs_b: dict[str, tuple[Any, str]]) -> list[NodeEdit]:
    """Node edits inside the graph attributes (If/Loop/Scan bodies, any depth) that differ."""
    graphs_b = {step: g for step, g in subgraphs(nb)}
    edits: list[NodeEdit] = []
    for step, ga in subgraphs(na):
        gb = graphs_b.get(step)
        name = step.split("[", 1)[0]
        if gb is None or (name in attrs_a and name in attrs_b and attrs_a[name][1] == attrs_b[name][1]):
            continue
        body_a = Body(step, list(ga.node), [v.name for v in ga.input], [v.name for v in ga.output])
        body_b = Body(step, list(gb.node), [v.name for v in gb.input], [v.name for v in gb.output])
        for e in _node_edits(body_a, body_b):
            edits.append(NodeEdit(e.op, f"{step}: {e.node}", e.index_a, e.index_b, e.detail))
    return edits


def _edits_summary(edits: Sequence[NodeEdit], limit: int = 8) -> str:
    parts = []
    for op, sign in (("added", "+"), ("removed", "-"), ("changed", "~")):
        names = [e.node for e in edits if e.op == op]
        if not names:
            continue
        counted: dict[str, int] = {}
        for n in names:
            counted[n] = counted.get(n, 0) + 1
        shown = [f"{n}" + (f" x{c}" if c > 1 else "") for n, c in list(counted.items())[:limit]]
        more = f", … {len(counted) - limit} more" if len(counted) > limit else ""
        parts.append(f"{sign}{len(names)} ({', '.join(shown)}{more})")
    return " ".join(parts)


def _count_nodes(body: Body) -> int:
    return sum(1 for _ in walk_body(body.nodes)) + len(body.constants)


def _attribute_keys(node: onnx.NodeProto, graphs: bool = True) -> dict[str, tuple[Any, str]]:
    """Attribute name -> (JSON value, comparable key); graph attributes by fingerprint of the subgraph (or left out
    when ``graphs`` is false)."""
    out: dict[str, tuple[Any, str]] = {}
    for attr in node.attribute:
        if not graphs and attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
            continue
        if attr.ref_attr_name:
            out[attr.name] = (f"@{attr.ref_attr_name}", f"@{attr.ref_attr_name}")
        elif attr.type == AttributeProto.GRAPH:
            fp = _graph_fp(attr.g)
            out[attr.name] = (f"graph {fp[:8]}", f"g:{fp}")
        elif attr.type == AttributeProto.GRAPHS:
            fps = [_graph_fp(g) for g in attr.graphs]
            out[attr.name] = ([f"graph {x[:8]}" for x in fps], "gs:" + ",".join(fps))
        else:
            value, key = attribute_value(attr)
            out[attr.name] = (_unwrap(value) if attr.type == AttributeProto.TENSOR else value, key)
    return out


def _graph_fp(g: onnx.GraphProto) -> str:
    inputs = [v.name for v in g.input]
    return fingerprint(Body(g.name, list(g.node), inputs, [v.name for v in g.output], {}, [], inputs)).full


def _attribute_detail(a: dict[str, tuple[Any, str]], b: dict[str, tuple[Any, str]]) -> str:
    parts = []
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name), b.get(name)
        if va is not None and vb is not None and va[1] == vb[1]:
            continue
        if va is None:
            assert vb is not None
            parts.append(f"+{name}={show_value(vb[0])}")
        elif vb is None:
            parts.append(f"-{name}={show_value(va[0])}")
        else:
            parts.append(f"{name} {show_value(va[0])} -> {show_value(vb[0])}")
    return "; ".join(parts)


def _neighbourhood_hashes(side: _Side, rounds: int = 2) -> list[list[int]]:
    """Per main-graph node: hashes of its op, domain and attribute names, refined ``rounds`` times with the
    hashes of its producers (by input position) and consumers (as a multiset). ``[h0, h1, h2]``."""
    nodes = side.graph.node
    maps = side.maps
    h = [hash((n.domain, n.op_type, n.overload, tuple(sorted(a.name for a in n.attribute)), len(n.input),
               len(n.output))) for n in nodes]
    producers: list[list[int | str]] = []
    consumers: list[list[int]] = []
    for n in nodes:
        ps: list[int | str] = []
        for name in n.input:
            p = maps.producer.get(name)
            if p is not None:
                ps.append(p)
            else:
                ps.append("" if not name else "in" if name in side.input_pos else "init" if name in side.init_pos
                          else "outer")
        producers.append(ps)
        cs: list[int] = []
        for o in n.output:
            cs.extend(maps.consumers.get(o, ()))
        consumers.append(cs)
    out = [h]
    for _ in range(rounds):
        prev = out[-1]
        out.append([hash((prev[i], tuple(prev[p] if isinstance(p, int) else p for p in producers[i]),
                          tuple(sorted(prev[c] for c in consumers[i])))) for i in range(len(nodes))])
    return out


def _counts(items: Iterable[int]) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for x in items:
        out[x] += 1
    return out


def _baked_constants(side: _Side) -> set[str]:
    """Initializers compared as part of aten call bodies (small constants baked in at export time)."""
    out: set[str] = set()
    for u in side.units:
        if u.kind == "aten" and u.callee is None:
            out.update(u.constants)
    return out


def _function_signature(f: onnx.FunctionProto) -> dict[str, Any]:
    defaults = {}
    for a in f.attribute_proto:
        value, _key = attribute_value(a)
        defaults[a.name] = value
    return {"inputs": len(f.input), "outputs": len(f.output), "attributes": sorted(f.attribute),
            "attribute_defaults": defaults}


def _signature_detail(a: dict[str, Any], b: dict[str, Any]) -> str:
    parts = []
    for k in ("inputs", "outputs"):
        if a[k] != b[k]:
            parts.append(f"{k} {a[k]} -> {b[k]}")
    if a["attributes"] != b["attributes"]:
        parts.append(f"attributes {a['attributes']} -> {b['attributes']}")
    if a["attribute_defaults"] != b["attribute_defaults"]:
        parts.append(f"attribute defaults {show_value(a['attribute_defaults'])} -> "
                     f"{show_value(b['attribute_defaults'])}")
    return "; ".join(parts)


# --- helpers: families, tensors, types -------------------------------------------------------------------------------


def _aten_family(target: str) -> str:
    ns, name, _overload = split_target(target)
    return name if ns == "python" else f"{ns}::{name}"


def _family_json(fam: Family) -> dict[str, Any]:
    return {"kind": fam.kind, "domain": fam.domain, "name": fam.name,
            "overloads": [o.overload for o in fam.overloads], "calls": fam.call_count}


def _family_detail(fam: Family) -> str:
    n = len(fam.overloads)
    shown = ", ".join(o.overload or "(default)" for o in fam.overloads[:6]) + (", …" if n > 6 else "")
    return f"{fam.label}: {n} overload{'s' if n != 1 else ''} ({shown}), {fam.call_count} calls"


def _op_label(node: onnx.NodeProto) -> str:
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
    return f"{op}:{node.overload}" if node.overload else op


def _same_content(t: TensorProto, u: TensorProto) -> bool:
    """Same dtype, shape and content (external data compared by location/offset/length; never read)."""
    if t.data_type != u.data_type or t.dims != u.dims:
        return False
    if t.raw_data and u.raw_data:
        return bool(t.raw_data == u.raw_data)
    if t.data_location == TensorProto.EXTERNAL and u.data_location == TensorProto.EXTERNAL \
            and t.external_data == u.external_data:
        return True
    return content_digest(t) == content_digest(u)


def content_digest(t: TensorProto) -> str:
    """Digest of a tensor's content: its raw bytes, or the decoded values; for external data the location,
    offset and length (the file is never read)."""
    if t.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in t.external_data}
        return "ext:" + "|".join(f"{k}={info.get(k, '')}" for k in ("location", "offset", "length"))
    if t.raw_data:
        return hashlib.blake2b(t.raw_data, digest_size=12).hexdigest()
    try:
        data = np.ascontiguousarray(onnx.numpy_helper.to_array(t)).tobytes()
    except Exception:
        copy = TensorProto()
        copy.CopyFrom(t)
        copy.name = ""
        copy.doc_string = ""
        data = copy.SerializeToString(deterministic=True)
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _tensor_type(t: TensorProto) -> str:
    return f"{dtype_name(t.data_type)}[{', '.join(str(d) for d in t.dims)}]"


def _tensor_summary(t: TensorProto) -> Any:
    """Small tensors as values; larger ones as dtype, shape and digest (external ones: where the data is)."""
    if t.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in t.external_data}
        return {"dtype": dtype_name(t.data_type), "shape": [int(d) for d in t.dims], "external": info}
    numel = math.prod(t.dims)
    if numel <= 16:
        value, _key = tensor_value(t)
        return _unwrap(value)
    return {"dtype": dtype_name(t.data_type), "shape": [int(d) for d in t.dims], "digest": content_digest(t)[:16]}


def _renamed(a: str, b: str) -> str:
    return a if a == b else f"{a} (now {b})"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _unwrap(v: Any) -> Any:
    """One-element tensors read as scalars: ``[0.59460354]`` -> ``0.59460354``."""
    while isinstance(v, list) and len(v) == 1 and not isinstance(v[0], dict):
        v = v[0]
    return v


def _short(v: Any, width: int = 60) -> str:
    text = "(none)" if v is None else repr(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def show_value(v: Any, width: int = 80) -> str:
    """A value as one short line: floats with 8 significant digits, lists in brackets, summaries compact."""
    text = _show(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.8g}"
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, dict):
        if "dtype" in v and "shape" in v:
            extra = ""
            if "digest" in v:
                extra = f" #{str(v['digest'])[:8]}"
            elif "external" in v and isinstance(v["external"], dict):
                ext = v["external"]
                extra = f" @{ext.get('location', '?')}+{ext.get('offset', '0')}"
            return f"{v['dtype']}[{', '.join(str(d) for d in v['shape'])}]{extra}"
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    return str(v)


def json_safe(v: Any) -> Any:
    """A value JSON can hold exactly: no NaN/inf, no tuples or numpy scalars."""
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return json_safe(v.item())
    return str(v)


# --- the report object and plain text ---------------------------------------------------------------------------------


def diff_dict(d: ModelDiff) -> dict[str, Any]:
    """The versioned JSON object (``onnx-inspector/diff`` version 1)."""
    return {
        "format": DIFF_FORMAT,
        "version": DIFF_VERSION,
        "a": d.a,
        "b": d.b,
        "equal": d.equal,
        "equivalent": d.equivalent,
        "explanation": d.fold.explanation if d.fold else None,
        "counts": d.counts(),
        "matched": {k: m.to_json() for k, m in d.matched.items()},
        "renamed": d.renamed,
        "changes": [c.to_json() for c in d.changes],
    }


def verdict(d: ModelDiff) -> str:
    if d.equal:
        return "equal"
    if d.equivalent:
        return "equivalent (structure differs, computation identical)"
    n = len(d.changes)
    return f"different: {n} change{'s' if n != 1 else ''}"


def matched_line(d: ModelDiff) -> str:
    parts = []
    for key, title in (("aten_calls", "aten calls"), ("functions", "functions"), ("function_calls", "function calls"),
                       ("nodes", "other nodes"), ("initializers", "initializers"), ("inputs", "inputs"),
                       ("outputs", "outputs")):
        m = d.matched.get(key)
        if m is None or (m.matched == 0 and m.only_a == 0 and m.only_b == 0):
            continue
        extra = f" (+{m.only_b} -{m.only_a})" if m.only_a or m.only_b else ""
        parts.append(f"{m.matched} {title}{extra}")
    return ", ".join(parts) or "nothing to match"


def group_title(section: str, family: str) -> str:
    if section in ("function", "aten_call", "node") and family:
        kind = {"function": "function", "aten_call": "aten", "node": "node"}[section]
        return f"{family}  [{kind}]"
    return SECTION_TITLES.get(section, section)


def sites_text(c: Change, limit: int = 8) -> str:
    if len(c.sites) <= 1:
        return ""
    shown = ", ".join(c.sites[:limit])
    more = f", … {len(c.sites) - limit} more" if len(c.sites) > limit else ""
    return f"at {len(c.sites)} sites: {shown}{more}"


def diff_text(d: ModelDiff) -> str:
    """Plain text for a terminal, grouped by section and family; model strings made printable."""
    lines = [f"A  {d.a}", f"B  {d.b}", f"result   {verdict(d)}", f"matched  {matched_line(d)}"]
    if d.renamed:
        lines.append(f"renamed  {d.renamed} matched items have different names (not a change)")
    for section, family, changes in d.grouped():
        lines.append("")
        lines.append(group_title(section, family))
        for c in changes:
            where = "" if len(c.sites) > 1 or c.where in c.detail or c.section == "model" else f"  ({c.where})"
            lines.append(f"  {KIND_TITLES.get(c.kind, c.kind):<18} {c.detail}{where}")
            sites = sites_text(c)
            if sites:
                lines.append(f"  {'':<18} {sites}")
            for e in c.edits[:12]:
                at = f"#{e.index_a}" if e.index_a is not None else ""
                at += ("->" if e.index_a is not None and e.index_b is not None else "") + \
                    (f"#{e.index_b}" if e.index_b is not None else "")
                lines.append(f"  {'':<18}   {e.op:<8} {e.node} {at}{(': ' + e.detail) if e.detail else ''}")
            if len(c.edits) > 12:
                lines.append(f"  {'':<18}   … {len(c.edits) - 12} more edits")
    return "\n".join(printable(line) for line in lines) + "\n"


def printable(text: str) -> str:
    """Model strings may hold control characters (and bidi overrides); keep a terminal safe."""
    return "".join(c if (c.isprintable() and not _is_bidi(c)) or c == "\t" else f"\\x{ord(c):02x}"
                   if ord(c) < 256 else f"\\u{ord(c):04x}" for c in text)


def _is_bidi(c: str) -> bool:
    return "\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069" or c in "\u200e\u200f"


__all__ = [
    "DIFF_FORMAT", "DIFF_VERSION", "EQUIVALENT_KINDS", "KIND_TITLES", "SECTIONS", "SECTION_TITLES", "Change",
    "FoldRelation", "MatchCount", "ModelDiff", "NodeEdit", "content_digest", "diff_dict", "diff_files",
    "diff_models", "diff_text", "group_title", "json_safe", "matched_line", "printable", "show_value", "sites_text",
    "verdict",
]
