"""A model's main graph cut into *units* (what diff matching works on): aten call groups first, then function call
nodes and other nodes, with what each group reads, produces and bakes in. Each node is read from the protobuf
once, in graph order (no FX text is parsed and no Body is built: those are made only for pairs that differ).

The second model of a diff is cut with the first one's cut at hand (``like``): two exports of one model have
mostly equal nodes at equal places, and where a node equals the first model's node at its place (one comparison
in C, names and metadata included), what was read from it is taken over instead of being read again, and so is a
group's resolved inputs when nothing it touches is produced or baked differently. The result is the same as a cut
of its own (the diff snapshot checks this on every pair of fixture models).
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Mapping
from itertools import chain
from typing import Any, Literal

import onnx
from onnx import TensorProto

from inspector.core.bodies.body import Body
from inspector.core.bodies.fingerprint import Fingerprints
from inspector.core.diff.bodies import key_of
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import INPUT_KIND, SMALL_CONSTANT_ELEMENTS, captured_names, node_reads
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.scan_like import unequal_nodes
from inspector.core.model.walk import STANDARD_DOMAINS, SUBGRAPH_OPS, may_have_subgraphs

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
        # values read from outside, first use first (never changed once cut: a second cut may share the list)
        self.reads: list[str] = reads if reads is not None else []
        self.outputs: list[str] = outputs if outputs is not None else []
        self.call = call
        self.callee = callee  # the local function a single call node calls
        self.constants: dict[str, TensorProto] = NO_CONSTANTS  # small initializers baked into an aten call
        self.module: str | None = None  # an aten call's module chain (name scopes without the FX name), on demand
        self.body: Body | None = None
        self.fp: Fingerprints | None = None


class GraphCut:
    """The units of ``index``'s main graph. Units: aten calls first (ids 0 .. n_calls-1), then one per other node
    in graph order. A plain node's unit is None here (the Side makes it on access): a million-node graph keeps no
    object per node."""

    def __init__(self, index: ModelIndex, input_pos: dict[str, int], like: GraphCut | None = None) -> None:
        self.index = index
        self.graph = index.proto.graph
        self.functions = index.functions.functions
        self.input_pos = input_pos
        # whether any node of the main graph can hold a subgraph: else each node reads just its inputs, and its
        # domain and op need not be read
        self.nested = not index.flat_main
        n = len(self.graph.node)
        self.units: list[Unit | None] = []
        self.n_calls = 0
        self.unit_of_node = array("q", [-1]) * n
        self.node_of_unit = array("q")  # the node of each unit from n_calls on
        self.function_call_ids: list[int] = []
        self.producer: dict[str, int] | None = None  # value name -> producing node (kept when there are calls)
        # what a second cut may take over: each node's outputs, the units of aten calls before the
        # other nodes got theirs, and whether every value has one producer
        self.node_outputs: list[list[str]] | None = None
        self.call_of_node: array[int] | None = None
        self.unique_producers = False
        self.small: dict[str, TensorProto] = {}  # small_constants of the graph (when there are aten calls)
        # in a cut made like another: the units with a node that differs from the other cut's (the rest have the
        # same unit ids and equal nodes)
        self.unequal: set[int] | None = None
        self.followed: GraphCut | None = None  # the cut this one was made like
        self._described: list[onnx.ValueInfoProto] | None = None
        self._cut_calls(index)
        if not self.n_calls:
            self._cut_plain()
        elif like is not None and self._can_follow(like):
            self._cut_like(like)
        else:
            self._cut()

    @property
    def described_values(self) -> list[onnx.ValueInfoProto]:
        """The graph inputs and value infos that carry metadata (parameter kinds, FX names), in graph order; few
        do, and looking once at each of a large graph's value infos costs more than all the rest of what is read
        about them."""
        if self._described is None:
            self._described = [v for v in chain(self.graph.input, self.graph.value_info) if v.metadata_props]
        return self._described

    def _cut_calls(self, index: ModelIndex) -> None:
        nodes = self.graph.node
        unit_of_node = self.unit_of_node
        units = self.units
        functions = self.functions
        for call in index.provenance.calls:
            scope = call.scope
            if scope is not MAIN and scope != MAIN:
                continue
            paths = call.node_paths
            if len(paths) == 1:  # most calls: one node of the graph itself
                path = paths[0]
                if len(path) != 1:
                    continue
                first: int = path[0]  # type: ignore[assignment]
                unit_of_node[first] = len(units)
                units.append(Unit("aten_call", [first], call.name, None, None, call,
                                  _callee(nodes[first], functions) if functions else None))
                continue
            top: list[int] = [p[0] for p in paths if len(p) == 1]  # type: ignore[misc]
            if not top:
                continue
            if len(top) > 1:
                top.sort()  # scan lists the top-level nodes of a group in order; keep it certain
            callee = _callee(nodes[top[0]], functions) if functions and len(top) == 1 else None
            uid = len(units)
            units.append(Unit("aten_call", top, call.name, None, None, call, callee))
            for i in top:
                unit_of_node[i] = uid
        self.n_calls = len(units)

    def _cut_plain(self) -> None:
        """No aten calls: only function calls need reading now."""
        nodes, functions, units = self.graph.node, self.functions, self.units
        for i in range(len(nodes)):
            self.unit_of_node[i] = len(units)
            self.node_of_unit.append(i)
            if functions:
                node = nodes[i]
                key = key_of(node)
                if key in functions:
                    self.add_call_node(i, node, key)
                    continue
            units.append(None)

    def add_call_node(self, i: int, node: onnx.NodeProto, key: FunctionKey) -> Unit:
        """The unit of a node calling a local function (not part of an aten call)."""
        reads = list(node.input)
        if may_have_subgraphs(node):
            reads.extend(captured_names(node))
        unit = Unit("function_call", [i], node.name or f"{node.op_type}#{i}", reads, list(node.output), callee=key)
        self.function_call_ids.append(len(self.units))
        self.units.append(unit)
        return unit

    def _cut(self) -> None:
        """One pass in graph order: producers, what each group reads (in node order, resolved below) and produces,
        and a unit for every other node. The outputs of units share their strings with the producer map, and reads
        are interned (one string per name however many read it). A group's inputs are kept as its node's own
        repeated field (no strings made) until they are resolved."""
        nodes = self.graph.node
        unit_of_node, units, functions = self.unit_of_node, self.units, self.functions
        n_calls = self.n_calls
        self.call_of_node = array("q", unit_of_node)
        if not self.nested and not functions:
            producer, n_outputs, raw_reads, other_reads = _read_flat(self)
        else:
            producer, n_outputs, raw_reads, other_reads = _read_nodes(self)
        node_outputs = self.node_outputs
        assert node_outputs is not None
        if "" in producer:  # an unused optional output produces nothing
            del producer[""]
            n_outputs -= sum(outputs.count("") for outputs in node_outputs)
        self.unique_producers = len(producer) == n_outputs
        small = self.small = small_constants(self.graph, self.input_pos, self.described_values)
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
            self._resolve(uid, unit, raw_reads[uid], small, read_outside)
        del raw_reads
        self._keep_outputs(read_outside)

    def _resolve(self, uid: int, unit: Unit, raw: Any, small: dict[str, TensorProto], read_outside: set[str]) -> None:
        """A group's reads (first use first, without what it produces itself or bakes in) and baked constants."""
        producer, unit_of_node, intern = self.producer, self.unit_of_node, sys.intern
        assert producer is not None
        group_reads: list[str] = []
        constants: dict[str, TensorProto] = NO_CONSTANTS
        for name in raw:
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

    def _keep_outputs(self, read_outside: set[str]) -> None:
        """A group's outputs: those read outside it, and graph outputs."""
        graph_outputs = {v.name for v in self.graph.output}
        units = self.units
        for uid in range(self.n_calls):
            unit = units[uid]
            assert unit is not None
            if unit.callee is None:
                outputs = unit.outputs
                if len(outputs) == 1:  # most calls: the list is kept (it may be the node's own, never changed)
                    o = outputs[0]
                    if not (o and (o in read_outside or o in graph_outputs)):
                        unit.outputs = []
                    continue
                unit.outputs = [o for o in outputs if o and (o in read_outside or o in graph_outputs)]

    # -- a second cut, made like a first one ---------------------------------------------------------------------------

    def _can_follow(self, like: GraphCut) -> bool:
        """Whether this cut can take over from ``like``: flat exports of one layout (the same number of nodes, cut
        into the same aten call groups), with no local functions, and a first cut that kept what it read."""
        return (not self.functions and not like.functions and like.node_outputs is not None
                and like.call_of_node is not None and like.unique_producers and like.producer is not None
                and self.n_calls == like.n_calls and self.unit_of_node == like.call_of_node)

    def same_nodes(self, like: GraphCut, uid: int) -> bool:
        """Whether unit ``uid`` of ``like`` and this cut's unit ``uid`` are the same nodes, node for node equal
        (known without comparing them again when this cut was made like ``like``)."""
        return self.followed is like and self.unequal is not None and uid < self.n_calls and uid not in self.unequal

    def release(self) -> None:
        """Drop what only a second cut takes over (once it is made)."""
        self.node_outputs = self.call_of_node = None

    def _cut_like(self, like: GraphCut) -> None:
        nodes, like_nodes = self.graph.node, like.graph.node
        like_outputs, like_producer, like_units = like.node_outputs, like.producer, like.units
        assert like_outputs is not None and like_producer is not None
        # (known already when this model was indexed like the other: inspector.core.model.scan_like)
        differ = self.index.unequal if self.index.followed is like.index else unequal_nodes(nodes, like_nodes)
        if differ is None:  # little to take over: a cut of its own
            self._cut()
            return
        unit_of_node, units, n_calls = self.unit_of_node, self.units, self.n_calls
        # producers: the first cut's, with the outputs of the nodes that differ in them replaced (each value had
        # one producer there, so removing a node's outputs removes only its own; the last producer wins, as in
        # _cut); when none does, the same map (never changed once cut)
        own_outputs = {i: list(nodes[i].output) for i in differ}
        moved = [i for i in differ if own_outputs[i] != like_outputs[i]]
        touched: set[str] = set()  # values whose producer may differ from the first cut's
        producer = dict(like_producer) if moved else like_producer
        for i in moved:
            for name in like_outputs[i]:
                if name:
                    del producer[name]
                    touched.add(name)
        for i in moved:
            for name in own_outputs[i]:
                if name:
                    p = producer.get(name)
                    producer[name] = i if p is None or p < i else p
                    touched.add(name)
        self.producer = producer
        small = self.small = small_constants(self.graph, self.input_pos, self.described_values)
        touched.update(small.keys() ^ like.small.keys())
        # the other nodes, read as in _cut
        other_reads: list[str] = []
        for i in range(len(nodes)):
            if unit_of_node[i] == -1:
                node = nodes[i]
                unit_of_node[i] = len(units)
                self.node_of_unit.append(i)
                units.append(None)
                other_reads.extend(node.input)
                if self.nested and may_have_subgraphs(node):
                    other_reads.extend(captured_names(node))
        read_outside: set[str] = {name for name in other_reads if name in producer}
        del other_reads
        unequal = self.unequal = {unit_of_node[i] for i in differ}
        self.followed = like
        plain, subgraph_ops = STANDARD_DOMAINS, SUBGRAPH_OPS
        for uid in range(n_calls):
            unit, lu = units[uid], like_units[uid]
            assert unit is not None and lu is not None
            if uid not in unequal and (not touched or (
                    touched.isdisjoint(lu.reads) and (lu.constants is NO_CONSTANTS or touched.isdisjoint(lu.constants))
                    and (touched.isdisjoint(like_outputs[lu.nodes[0]]) if len(lu.nodes) == 1 else
                         all(touched.isdisjoint(like_outputs[i]) for i in lu.nodes)))):
                # (reading, baking in or producing a value whose producer or bakedness differs needs resolving)
                # the same nodes reading and producing the same values: the same reads and baked constants
                unit.reads = lu.reads
                unit.constants = lu.constants if lu.constants is NO_CONSTANTS else \
                    {name: small[name] for name in lu.constants}
                read_outside.update(unit.reads)  # (values nothing produces never match an output below)
            else:
                raw: list[str] = []
                for i in unit.nodes:
                    node = nodes[i]
                    raw.extend(node.input if not self.nested or (node.domain in plain and node.op_type not in
                               subgraph_ops) else node_reads(node))
                self._resolve(uid, unit, raw, small, read_outside)
            top = unit.nodes
            if len(top) == 1:
                i = top[0]
                unit.outputs = own_outputs[i] if i in own_outputs else like_outputs[i]
            else:
                unit.outputs = [name for i in top for name in (own_outputs[i] if i in own_outputs else like_outputs[i])]
        self._keep_outputs(read_outside)


def _read_flat(cut: GraphCut) -> tuple[dict[str, int], int, list[Any], list[str]]:
    """``_read_nodes`` for a graph where no node holds a subgraph or calls a function: each field of every node
    in one comprehension (what a node reads is its inputs)."""
    nodes = cut.graph.node
    unit_of_node, units = cut.unit_of_node, cut.units
    # outputs and inputs in one pass over the nodes (reaching a node of a large graph costs more than its fields)
    node_outputs: list[list[str]] = []
    node_inputs: list[Any] = []
    add_outputs, add_inputs = node_outputs.append, node_inputs.append
    for node in nodes:
        add_outputs(list(node.output))
        add_inputs(node.input)
    cut.node_outputs = node_outputs
    producer = cut.producer = {name: i for i, outputs in enumerate(node_outputs) for name in outputs}
    raw_reads: list[Any] = []
    for uid in range(cut.n_calls):
        unit = units[uid]
        assert unit is not None
        top = unit.nodes
        if len(top) == 1:
            raw_reads.append(node_inputs[top[0]])
            unit.outputs = node_outputs[top[0]]  # every output for now; filtered once all reads are known
        else:
            raw_reads.append([name for i in top for name in node_inputs[i]])
            unit.outputs = [name for i in top for name in node_outputs[i]]
    other_reads: list[str] = []  # what the other nodes read
    for i in range(len(nodes)):
        if unit_of_node[i] == -1:
            unit_of_node[i] = len(units)
            cut.node_of_unit.append(i)
            units.append(None)
            other_reads.extend(node_inputs[i])
    return producer, sum(map(len, node_outputs)), raw_reads, other_reads


def _read_nodes(cut: GraphCut) -> tuple[dict[str, int], int, list[Any], list[str]]:
    """Each node's outputs (into the producer map), what each group reads (its nodes' inputs, in node order)
    and every other node's unit and reads, in one pass in graph order."""
    nodes = cut.graph.node
    unit_of_node, units, functions = cut.unit_of_node, cut.units, cut.functions
    producer: dict[str, int] = {}
    cut.producer = producer
    node_outputs: list[list[str]] = []
    cut.node_outputs = node_outputs
    n_outputs = 0
    nested, plain, subgraph_ops = cut.nested, STANDARD_DOMAINS, SUBGRAPH_OPS
    raw_reads: list[Any] = [None] * cut.n_calls
    other_reads: list[str] = []  # what the other nodes read
    for i, node in enumerate(nodes):
        outputs = list(node.output)
        node_outputs.append(outputs)
        n_outputs += len(outputs)
        for name in outputs:
            producer[name] = i
        uid = unit_of_node[i]
        if uid != -1:
            unit = units[uid]
            assert unit is not None
            if unit.callee is None:
                reads = node.input if not nested or (node.domain in plain and node.op_type not in subgraph_ops) \
                    else node_reads(node)
                got = raw_reads[uid]
                if got is None:
                    raw_reads[uid] = reads
                    unit.outputs = outputs  # every output for now; filtered once all reads are known
                else:
                    if type(got) is not list:
                        got = raw_reads[uid] = list(got)
                    got.extend(reads)
                    unit.outputs = unit.outputs + outputs  # (a node's own list is kept as it is)
            continue
        unit_of_node[i] = len(units)
        cut.node_of_unit.append(i)
        if functions:
            key = key_of(node)
            if key in functions:
                other_reads.extend(cut.add_call_node(i, node, key).reads)
                continue
        units.append(None)
        other_reads.extend(node.input)
        if nested and may_have_subgraphs(node):
            other_reads.extend(captured_names(node))
    return producer, n_outputs, raw_reads, other_reads


def _callee(node: onnx.NodeProto, functions: Mapping[FunctionKey, onnx.FunctionProto]) -> FunctionKey | None:
    """The local function ``node`` calls, if any."""
    key = key_of(node)
    return key if key in functions else None


def small_constants(graph: onnx.GraphProto, input_pos: dict[str, int],
                    described: list[onnx.ValueInfoProto]) -> dict[str, TensorProto]:
    """Small initializers that are neither parameters/buffers nor graph inputs: baked-in constants. ``described``:
    the graph inputs and value infos with metadata (``GraphCut.described_values``)."""
    small = {t.name: t for t in graph.initializer if t.name not in input_pos and is_small(t)}
    if small:
        for v in described:
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


def is_small(t: TensorProto) -> bool:
    return t.data_location != TensorProto.EXTERNAL and math.prod(t.dims) <= SMALL_CONSTANT_ELEMENTS
