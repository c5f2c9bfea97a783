"""The two sides of a diff: each model's main graph cut into *units* (what matching works on), with what each
unit reads and produces, its body and fingerprints built on first use."""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterator
from typing import Any, Literal

import onnx
from onnx import TensorProto

from inspector.core.body import (
    INPUT_KIND,
    SMALL_CONSTANT_ELEMENTS,
    Body,
    GraphMaps,
    captured_names,
    function_body,
    function_body_by_use,
    group_body,
    node_reads,
)
from inspector.core.diff.bodies import function_form, key_of
from inspector.core.diff.linking import SideLinks
from inspector.core.diff.values import same_content
from inspector.core.fingerprint import Fingerprints, fingerprint
from inspector.core.index import ModelIndex
from inspector.core.keys import MAIN, FunctionKey
from inspector.core.provenance import NAME_SCOPES, NAMESPACE, AtenCall, split_target
from inspector.core.walk import STANDARD_DOMAINS, SUBGRAPH_OPS, may_have_subgraphs

# What a unit is: an aten call group of a flat export ("aten_call", as the family kind), a node calling a local
# function ("function_call"), or any other node.
UnitKind = Literal["aten_call", "function_call", "node"]


NO_CONSTANTS: dict[str, TensorProto] = {}  # shared by the units that bake in nothing (most); never mutated


class Unit:
    """What main-graph matching works on: an aten call group, a function call node, or another node.
    (A plain class: a 100k-node export has tens of thousands of these, and a dataclass with factories is slower.)"""

    __slots__ = ("body", "call", "callee", "constants", "fp", "kind", "label", "module", "nodes",
                 "outputs", "reads")

    def __init__(self, kind: UnitKind, nodes: list[int], label: str, reads: list[str] | None = None,
                 outputs: list[str] | None = None, call: AtenCall | None = None,
                 callee: FunctionKey | None = None) -> None:
        self.kind = kind
        self.nodes = nodes
        self.label = label  # FX node name for aten calls, node name (or op#index) otherwise
        self.reads: list[str] = reads if reads is not None else []  # values read from outside, first use first
        self.outputs: list[str] = outputs if outputs is not None else []
        self.call = call
        self.callee = callee  # the local function a single call node calls
        self.constants: dict[str, TensorProto] = NO_CONSTANTS  # small initializers baked into an aten call
        self.module: str | None = None  # an aten call's module chain (name scopes without the FX name), on demand
        self.body: Body | None = None
        self.fp: Fingerprints | None = None


class Side:
    def __init__(self, index: ModelIndex) -> None:
        self.index = index
        self.graph = index.proto.graph
        self._maps: GraphMaps | None = None
        self._producer: dict[str, int] | None = None
        self._some_producers: dict[str, int] = {}  # producers of the names given to prepare_sources
        self._asked: set[str] = set()
        self.functions = index.functions.functions
        initializers = {t.name for t in self.graph.initializer}
        self.inputs = [v for v in self.graph.input if v.name not in initializers]
        self.input_pos = {v.name: k for k, v in enumerate(self.inputs)}
        self.init_pos = {t.name: k for k, t in enumerate(self.graph.initializer)}
        # Units: aten calls first (ids 0 .. n_calls-1), then one per other node in graph order. A plain node's unit
        # is None here and made on access (``unit``): a million-node graph keeps no object per node.
        self.units: list[Unit | None] = []
        self.n_calls = 0
        self.unit_of_node = array("q", [-1]) * len(self.graph.node)
        self._node_of_unit = array("q")  # the node of each unit from n_calls on
        self.function_call_ids: list[int] = []
        self.family_of_key: dict[FunctionKey, str] = {}
        for fam in index.families:
            if fam.kind == "function":
                for ov in fam.overloads:
                    if ov.function is not None:
                        self.family_of_key[ov.function] = fam.label
        self._function_fp: dict[FunctionKey, Fingerprints] = {}
        self._function_fp_by_use: dict[FunctionKey, Fingerprints] = {}
        self._module_keys = ModuleKeys()
        self._build_units()
        self.links = SideLinks(self.graph, self.units[:self.n_calls])  # what the link rules read (value labels)

    @property
    def maps(self) -> GraphMaps:
        """Producers, consumers and parameters as ``inspector.core.body`` builds them; only fold comparisons and
        node matching need them."""
        if self._maps is None:
            self._maps = GraphMaps(self.graph)
        return self._maps

    @property
    def producer(self) -> dict[str, int]:
        """Value name -> the node producing it (built with the units when there are aten calls, else on first use
        and kept)."""
        if self._producer is None:
            self._producer = self.producers()
        return self._producer

    def producers(self, names: set[str] | None = None) -> dict[str, int]:
        """Value name -> producing node, for ``names`` only when given (one pass over the graph, not kept): a graph
        of plain nodes never needs the whole map held beside the changes."""
        if self._producer is not None:
            return self._producer
        intern = sys.intern
        producer: dict[str, int] = {}
        for i, node in enumerate(self.graph.node):
            for name in node.output:
                if name and (names is None or name in names):
                    producer[intern(name)] = i
        return producer

    @property
    def keeps_producers(self) -> bool:
        return self._producer is not None

    def prepare_sources(self, names: set[str]) -> None:
        """``source`` will be asked about these names: find their producers only, unless the whole map is built."""
        if self._producer is None:
            self._some_producers = self.producers(names)
            self._asked = names

    def unit(self, k: int) -> Unit:
        """Unit ``k`` (a plain node's unit is made on each access; it holds nothing a caller could change)."""
        u = self.units[k]
        if u is not None:
            return u
        i = self._node_of_unit[k - self.n_calls]
        node = self.graph.node[i]
        reads = list(node.input)
        if may_have_subgraphs(node):
            reads.extend(captured_names(node))
        return Unit("node", [i], node.name or f"{node.op_type}#{i}", reads, list(node.output))

    def module(self, k: int) -> str:
        """The module chain of aten call ``k`` (read from its first node's metadata on first use: matching compares
        whole first nodes first, and equal nodes have equal chains)."""
        u = self.units[k]
        assert u is not None and u.call is not None
        if u.module is None:
            u.module = self._module_keys(u.call)
        return u.module

    def node_of(self, k: int) -> int:
        """The (first) node of unit ``k``."""
        u = self.units[k]
        return u.nodes[0] if u is not None else self._node_of_unit[k - self.n_calls]

    def node_ids(self) -> Iterator[int]:
        """The units of plain nodes (neither aten calls nor function calls), in graph order."""
        units = self.units
        return (k for k in range(self.n_calls, len(units)) if units[k] is None)

    @property
    def node_count(self) -> int:
        return len(self.units) - self.n_calls - len(self.function_call_ids)

    def _build_units(self) -> None:
        """Units of the main graph; what each aten call group reads, produces and bakes in. Each node is read from
        the protobuf once, in graph order (no FX text is parsed and no Body is built: those are made only for pairs
        that differ); the rest is work on interned names."""
        nodes = self.graph.node
        unit_of_node = self.unit_of_node
        units = self.units
        functions = self.functions
        for call in self.index.provenance.calls:
            if call.scope != MAIN:
                continue
            paths = call.node_paths
            if len(paths) == 1:  # most calls: one node
                if len(paths[0]) != 1:
                    continue
                top: list[int] = [paths[0][0]]  # type: ignore[list-item]
            else:
                top = [p[0] for p in paths if len(p) == 1]  # type: ignore[misc]
                if not top:
                    continue
                if len(top) > 1:
                    top.sort()  # scan lists the top-level nodes of a group in order; keep it certain
            callee = None
            if len(top) == 1 and functions:
                key = key_of(nodes[top[0]])
                if key in functions:
                    callee = key
            uid = len(units)
            units.append(Unit("aten_call", top, call.name, call=call, callee=callee))
            for i in top:
                unit_of_node[i] = uid
        n_calls = self.n_calls = len(units)
        node_of_unit = self._node_of_unit
        if not n_calls:  # no aten calls: only function calls need reading now
            for i in range(len(nodes)):
                uid = len(units)
                unit_of_node[i] = uid
                node_of_unit.append(i)
                if functions:
                    node = nodes[i]
                    key = key_of(node)
                    if key in functions:
                        self._add_call_node(i, node, key)
                        continue
                units.append(None)
            return
        # One pass in graph order: producers, what each group reads (in node order, resolved below) and produces,
        # and a unit for every other node. Value names are interned: the producer map, the reads and the outputs
        # of units share one string per name. A group's inputs are kept as the node's own repeated field (no
        # strings made) until they are resolved.
        producer: dict[str, int] = {}
        self._producer = producer
        intern = sys.intern
        plain, subgraph_ops = STANDARD_DOMAINS, SUBGRAPH_OPS
        raw_reads: list[Any] = [None] * n_calls
        other_reads: list[str] = []  # what the other nodes read
        for i, node in enumerate(nodes):
            outputs = [intern(name) for name in node.output]
            for name in outputs:
                producer[name] = i
            uid = unit_of_node[i]
            if uid != -1:
                unit = units[uid]
                assert unit is not None
                if unit.callee is None:
                    reads = node.input if node.domain in plain and node.op_type not in subgraph_ops \
                        else node_reads(node)
                    got = raw_reads[uid]
                    if got is None:
                        raw_reads[uid] = reads
                        unit.outputs = outputs  # every output for now; filtered once all reads are known
                    else:
                        if type(got) is not list:
                            got = raw_reads[uid] = list(got)
                        got.extend(reads)
                        unit.outputs.extend(outputs)
                continue
            unit_of_node[i] = len(units)
            node_of_unit.append(i)
            if functions:
                key = key_of(node)
                if key in functions:
                    other_reads.extend(self._add_call_node(i, node, key).reads)
                    continue
            units.append(None)
            other_reads.extend(node.input)
            if may_have_subgraphs(node):
                other_reads.extend(captured_names(node))
        producer.pop("", None)  # an unused optional output produces nothing
        small = small_constants(self.graph, self.input_pos)
        # values some unit other than their producer's reads
        read_outside: set[str] = {name for name in other_reads if name in producer}
        del other_reads
        for uid in range(n_calls):
            unit = units[uid]
            assert unit is not None
            if unit.callee is not None:
                node = nodes[unit.nodes[0]]
                unit.reads = callee_reads(node, self.functions[unit.callee])
                unit.outputs = list(node.output)
                read_outside.update(name for name in unit.reads if name in producer)
                continue
            group_reads: list[str] = []
            constants: dict[str, TensorProto] = NO_CONSTANTS
            for name in raw_reads[uid]:
                if not name or name in group_reads or name in constants:
                    continue
                p = producer.get(name)
                if p is not None:
                    if unit_of_node[p] != uid:
                        name = intern(name)
                        read_outside.add(name)
                        group_reads.append(name)
                    continue
                t = small.get(name)
                if t is not None:
                    if constants is NO_CONSTANTS:
                        constants = {}
                    constants[name] = t
                else:
                    group_reads.append(intern(name))
            unit.reads, unit.constants = group_reads, constants
        del raw_reads
        graph_outputs = {v.name for v in self.graph.output}
        for uid in range(n_calls):
            unit = units[uid]
            assert unit is not None
            if unit.callee is None:
                unit.outputs = [o for o in unit.outputs if o and (o in read_outside or o in graph_outputs)]

    def _add_call_node(self, i: int, node: onnx.NodeProto, key: FunctionKey) -> Unit:
        """The unit of a node calling a local function (not part of an aten call)."""
        reads = list(node.input)
        if may_have_subgraphs(node):
            reads.extend(captured_names(node))
        unit = Unit("function_call", [i], node.name or f"{node.op_type}#{i}", reads, list(node.output), callee=key)
        self.function_call_ids.append(len(self.units))
        self.units.append(unit)
        return unit

    def body(self, unit: Unit) -> Body:
        """The body of a flat aten call unit, as the diff compares it (constants: small non-parameter initializers;
        inputs in first-use order). Built on first use."""
        if unit.body is None:
            nodes = self.graph.node
            unit.body = Body(unit.label, [nodes[i] for i in unit.nodes], list(unit.reads), list(unit.outputs),
                             dict(unit.constants), [(i,) for i in unit.nodes], list(unit.reads))
        return unit.body

    def fold_form(self, unit: Unit) -> Body:
        """A flat aten call as ``fold`` turns it into a function body (its group body, inputs in aten order)."""
        assert unit.call is not None
        body = group_body(unit.call, self.maps)
        form = function_form(body)
        form.canonical_inputs = body.canonical_inputs  # numbered by first use, as function_fp_by_use numbers
        return form

    def function_fp(self, key: FunctionKey) -> Fingerprints:
        fp = self._function_fp.get(key)
        if fp is None:
            fp = self._function_fp[key] = fingerprint(function_body(key, self.functions[key]))
        return fp

    def function_fp_by_use(self, key: FunctionKey) -> Fingerprints:
        """The function's fingerprint with inputs numbered by first use, to compare it with a flat group."""
        fp = self._function_fp_by_use.get(key)
        if fp is None:
            fp = self._function_fp_by_use[key] = fingerprint(function_body_by_use(key, self.functions[key]))
        return fp

    def unit_fp(self, unit: Unit) -> Fingerprints:
        if unit.fp is None:
            if unit.callee is not None:
                unit.fp = self.function_fp(unit.callee)
            elif unit.kind == "aten_call":
                unit.fp = fingerprint(self.body(unit))
            else:
                unit.fp = Fingerprints("", "")  # single nodes are compared attribute by attribute
        return unit.fp

    def source(self, name: str) -> tuple[Any, ...]:
        """Where a value read by a unit comes from: a unit's output, a graph input, an initializer."""
        if not name:
            return ("none",)
        if self._producer is None and name in self._asked:
            p = self._some_producers.get(name)
        else:
            p = self.producer.get(name)
        if p is not None:
            uid = self.unit_of_node[p]
            u = self.units[uid]
            outputs = u.outputs if u is not None else self.graph.node[p].output
            return ("unit", uid, list(outputs).index(name) if name in outputs else -1)
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
            unit = self.unit(src[1])
            what = "aten call" if unit.kind == "aten_call" else "node"
            return f"{what} {unit.label}" + (f" output {src[2]}" if len(unit.outputs) > 1 else "")
        if kind == "input":
            return f"input {self.inputs[src[1]].name}"
        if kind == "init":
            return f"initializer {self.graph.initializer[src[1]].name}"
        if kind == "none":
            return "nothing"
        return f"value {src[1]}"


def small_constants(graph: onnx.GraphProto, input_pos: dict[str, int]) -> dict[str, TensorProto]:
    """Small initializers that are neither parameters/buffers nor graph inputs: baked-in constants."""
    small = {t.name: t for t in graph.initializer if t.name not in input_pos and is_small(t)}
    if small:
        for v in (*graph.input, *graph.value_info):
            if v.name in small:
                for p in v.metadata_props:
                    if p.key == INPUT_KIND and p.value in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                        del small[v.name]
                        break
    return small


def callee_reads(node: onnx.NodeProto, f: onnx.FunctionProto) -> list[str]:
    """A call's actual inputs in the order the function body first reads the formal ones (as a group body orders
    what it reads), so a folded call lines up with the flat group it came from."""
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


class ModuleKeys:
    """The module chain of a call as its metadata spells it, without the call's own (FX) name; one string per
    chain (the calls of a module share it). Exporters write metadata keys in one order, so the position of the
    name scopes is looked up once."""

    def __init__(self) -> None:
        self._scopes_pos = -1
        self._modules: dict[str, str] = {}

    def __call__(self, call: AtenCall) -> str:
        node = call.first_node
        if node is None:
            return ""
        props = node.metadata_props
        pos = self._scopes_pos
        if 0 <= pos < len(props):
            p = props[pos]
            if p.key == NAME_SCOPES:
                return self._one(cut_last(p.value, ","))
        namespace = ""
        for j, p in enumerate(props):
            if p.key == NAME_SCOPES:
                self._scopes_pos = j
                return self._one(cut_last(p.value, ","))
            if p.key == NAMESPACE:
                namespace = p.value
        return self._one(cut_last(namespace, "/")) if "/" in namespace else ""

    def _one(self, module: str) -> str:
        return self._modules.setdefault(module, module)


def is_small(t: TensorProto) -> bool:
    return t.data_location != TensorProto.EXTERNAL and math.prod(t.dims) <= SMALL_CONSTANT_ELEMENTS


def cut_last(text: str, sep: str) -> str:
    cut = text.rfind(sep)
    return text[:cut] if cut > 0 else text


def aten_family(target: str) -> str:
    ns, name, _overload = split_target(target)
    return name if ns == "python" else f"{ns}::{name}"



def baked_constants(side: Side) -> set[str]:
    """Initializers compared as part of aten call bodies (small constants baked in at export time)."""
    out: set[str] = set()
    for u in side.units[:side.n_calls]:
        if u is not None and u.callee is None:
            out.update(u.constants)
    return out

class UnitPairs:
    """Questions about matched unit pairs that several steps ask, answered once."""

    def __init__(self, A: Side, B: Side) -> None:
        self.A, self.B = A, B
        self._node_match: dict[int, list[str] | None] = {}
        self._first_equal: dict[int, int] = {}  # aten call of A -> the call of B whose first node equals its own
        self._same_constant: dict[str, bool] = {}  # a baked constant's name -> same content on both sides

    def same_module(self, ka: int, kb: int) -> bool:
        """Whether aten calls ``ka`` and ``kb`` have the same module chain. Equal first nodes (one comparison in C,
        metadata included) have; the outcome is kept for ``node_match``."""
        ca, cb = self.A.units[ka], self.B.units[kb]
        assert ca is not None and ca.call is not None and cb is not None and cb.call is not None
        na, nb = ca.call.first_node, cb.call.first_node
        if na is not None and nb is not None and na == nb:
            self._first_equal[ka] = kb
            return True
        return self.A.module(ka) == self.B.module(kb)

    def node_match(self, ka: int, kb: int) -> list[str] | None:
        """For two matched flat aten calls that are node for node the same, names included (so the same
        template): the baked constants whose content differs (empty: identical bodies). None when the nodes differ
        in any way, or either is a function call. Cached."""
        if ka in self._node_match:
            return self._node_match[ka]
        ua, ub = self.A.unit(ka), self.B.unit(kb)
        hit = self._node_match[ka] = self._compare(ka, ua, kb, ub) \
            if ua.callee is None and ub.callee is None else None
        return hit

    def _compare(self, ka: int, ua: Unit, kb: int, ub: Unit) -> list[str] | None:
        if len(ua.nodes) != len(ub.nodes) or ua.reads != ub.reads or ua.outputs != ub.outputs:
            return None
        baked = ua.constants is not NO_CONSTANTS or ub.constants is not NO_CONSTANTS
        if baked and list(ua.constants) != list(ub.constants):
            return None
        na_all, nb_all = self.A.graph.node, self.B.graph.node
        # the first nodes (a call's first node) may have been compared already, while matching
        first = 1 if self._first_equal.get(ka) == kb else 0
        for i, j in zip(ua.nodes[first:], ub.nodes[first:]) if first else zip(ua.nodes, ub.nodes):
            na, nb = na_all[i], nb_all[j]
            if na == nb:  # one comparison in C (metadata included): the common case of two exports of one model
                continue
            if na.op_type != nb.op_type or na.domain != nb.domain or na.overload != nb.overload \
                    or na.input != nb.input or na.output != nb.output or na.attribute != nb.attribute:
                return None
        if not baked:
            return []
        same = self._same_constant
        changed = []
        for name, t in ua.constants.items():  # each side's constant of one name is one tensor: compared once
            hit = same.get(name)
            if hit is None:
                hit = same[name] = same_content(t, ub.constants[name])
            if not hit:
                changed.append(name)
        return changed

    def same_template(self, ka: int, kb: int) -> bool:
        return self.node_match(ka, kb) is not None or self.A.unit_fp(self.A.unit(ka)).template == \
            self.B.unit_fp(self.B.unit(kb)).template
