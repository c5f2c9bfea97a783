"""A model's main graph cut into *units* (what diff matching works on): aten call groups first, then function call
nodes and other nodes, with what each group reads, produces and bakes in. Each node is read from the protobuf
once, in graph order (no FX text is parsed and no Body is built: those are made only for pairs that differ).

Two exports of one model (the second indexed like the first: equal nodes at equal places) are cut as a pair
(``inspector.core.diff.follow``): neither cut reads what its units read up front, a unit is resolved on first use
(``Side.unit``) to what a cut of its own finds, and the pair tells the diff which units may differ at all. The diff
snapshot and tests/test_diff_cut.py check both.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping
from itertools import chain, compress, repeat
from operator import attrgetter, ne
from typing import Any, Literal

import onnx
from onnx import TensorProto

from inspector.core.bodies.body import Body
from inspector.core.bodies.fingerprint import Fingerprints
from inspector.core.diff.bodies import key_of
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import INPUT_KIND, captured_names, is_small_constant, node_reads
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN, FunctionKey
from inspector.core.model.walk import STANDARD_DOMAINS, SUBGRAPH_OPS, may_have_subgraphs

# What a unit is: an aten call group of a flat export ("aten_call", as the family kind), a node calling a local
# function ("function_call"), or any other node.
UnitKind = Literal["aten_call", "function_call", "node"]

_DATA_LOCATION = attrgetter("data_location")
NO_CONSTANTS: dict[str, TensorProto] = {}  # shared by the units that bake in nothing (most); never mutated


def _unresolved(*_args: object) -> Any:
    raise AssertionError("a unit of a cut made as a pair was read before it was resolved (GraphCut.resolve)")


class _Unread(list[str]):
    """What a unit of a pair's cut reads and keeps until it is resolved (``GraphCut.resolve``): any use is a bug, so
    it fails instead of reading as empty."""

    __iter__ = __len__ = __getitem__ = __contains__ = __eq__ = __ne__ = __bool__ = _unresolved
    __hash__ = None


class _UnreadConstants(dict[str, TensorProto]):
    __iter__ = __len__ = __getitem__ = __contains__ = __eq__ = __ne__ = __bool__ = _unresolved
    keys = values = items = get = _unresolved
    __hash__ = None


UNREAD: list[str] = _Unread()
UNREAD_CONSTANTS: dict[str, TensorProto] = _UnreadConstants()


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
        # values read from outside, first use first, and outputs kept (never changed once resolved); UNREAD until
        # the cut resolves them
        self.reads: list[str] = reads if reads is not None else UNREAD
        self.outputs: list[str] = outputs if outputs is not None else UNREAD
        self.call = call
        self.callee = callee  # the local function a single call node calls
        # small initializers baked into an aten call
        self.constants: dict[str, TensorProto] = NO_CONSTANTS if reads is not None else UNREAD_CONSTANTS
        self.module: str | None = None  # an aten call's module chain (name scopes without the FX name), on demand
        self.body: Body | None = None
        self.fp: Fingerprints | None = None


class GraphCut:
    """The units of ``index``'s main graph. Units: aten calls first (ids 0 .. n_calls-1), then one per other node
    in graph order. A plain node's unit is None here (the Side makes it on access): a million-node graph keeps no
    object per node.

    ``alone=False``: only the aten calls' units are made (none with ``calls=False``: ``cut_calls``);
    ``inspector.core.diff.follow`` finishes the cut as one of a pair, or ``finish`` as a cut of its own."""

    def __init__(self, index: ModelIndex, alone: bool = True, calls: bool = True) -> None:
        self.index = index
        self.graph = index.proto.graph
        self.functions = index.functions.functions
        self.init_pos = {t.name: k for k, t in enumerate(self.graph.initializer)}
        self.inputs = [v for v in self.graph.input if v.name not in self.init_pos]  # graph inputs, not initializers
        self.input_pos = {v.name: k for k, v in enumerate(self.inputs)}
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
        self._small: dict[str, TensorProto] | None = None
        # a cut made as the second of a pair (``inspector.core.diff.follow``): the cut it follows, and the units with
        # a node that differs from that cut's (the rest have the same unit ids and equal nodes)
        self.followed: GraphCut | None = None
        self.unequal: set[int] | None = None
        self._described: list[onnx.ValueInfoProto] | None = None
        if calls or alone:
            self._cut_calls(index)
        if alone:
            self.finish()

    def cut_calls(self) -> None:
        """The units of the aten calls, made again (those taken over from another cut are dropped)."""
        self.units = []
        self.unit_of_node = array("q", [-1]) * len(self.graph.node)
        self._cut_calls(self.index)

    def finish(self) -> None:
        """Cut on its own: every unit's reads, baked constants and outputs."""
        if not self.n_calls:
            self._cut_plain()
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

    @property
    def small(self) -> dict[str, TensorProto]:
        """``small_constants`` of the graph, on first use."""
        if self._small is None:
            self._small = small_constants(self.graph, self.input_pos, self.described_values)
        return self._small

    def call_readers(self, names: set[str]) -> dict[str, set[tuple[str, str, int]]]:
        """Where the aten calls read each of ``names``: (the call's FX name, the reading node's op type, the operand's
        place; -1 for a value a subgraph captures), in one pass over the main graph's nodes; what other nodes read is
        left out."""
        out: dict[str, set[tuple[str, str, int]]] = {}
        units, unit_of_node, n_calls = self.units, self.unit_of_node, self.n_calls
        for i, node in enumerate(self.graph.node):
            uid = unit_of_node[i]
            if 0 <= uid < n_calls and not names.isdisjoint(reads := self.reads_of(node)):
                label = units[uid].label  # type: ignore[union-attr]  # (every call's unit is made)
                places = {name: k for k, name in enumerate(node.input)}
                for name in names.intersection(reads):
                    out.setdefault(name, set()).add((label, node.op_type, places.get(name, -1)))
        return out

    def reads_of(self, node: onnx.NodeProto) -> Any:
        """What ``node`` reads: its inputs, and what its subgraphs capture (``node_reads``) where it may hold any."""
        return node_reads(node) if self.nested and may_have_subgraphs(node) else node.input

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
        units = self.units
        n_calls = self.n_calls
        if not self.nested and not self.functions:
            producer, raw_reads, other_reads = _read_flat(self)
        else:
            producer, raw_reads, other_reads = _read_nodes(self)
        if "" in producer:  # an unused optional output produces nothing
            del producer[""]
        small = self.small
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
                unit.constants = NO_CONSTANTS
                read_outside.update(name for name in unit.reads if name in producer)
                continue
            self.resolve_reads(uid, unit, raw_reads[uid], small, read_outside)
        del raw_reads
        self._keep_outputs(read_outside)

    def resolve_reads(self, uid: int, unit: Unit, raw: Any, small: dict[str, TensorProto],
                      read_outside: set[str]) -> None:
        """A group's reads (first use first, without what it produces itself or bakes in) and baked constants, from
        ``raw``, what its nodes read in node order; the values it reads from other units go to ``read_outside``."""
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

    def same_nodes(self, like: GraphCut, uid: int) -> bool:
        """Whether unit ``uid`` of ``like`` and this cut's unit ``uid`` are the same nodes, node for node equal
        (known without comparing them again when this cut was made as the second of a pair with ``like``)."""
        return self.followed is like and self.unequal is not None and uid < self.n_calls and uid not in self.unequal


def _read_flat(cut: GraphCut) -> tuple[dict[str, int], list[Any], list[str]]:
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
    return producer, raw_reads, other_reads


def _read_nodes(cut: GraphCut) -> tuple[dict[str, int], list[Any], list[str]]:
    """Each node's outputs (into the producer map), what each group reads (its nodes' inputs, in node order)
    and every other node's unit and reads, in one pass in graph order."""
    nodes = cut.graph.node
    unit_of_node, units, functions = cut.unit_of_node, cut.units, cut.functions
    producer: dict[str, int] = {}
    cut.producer = producer
    nested, plain, subgraph_ops = cut.nested, STANDARD_DOMAINS, SUBGRAPH_OPS
    raw_reads: list[Any] = [None] * cut.n_calls
    other_reads: list[str] = []  # what the other nodes read
    for i, node in enumerate(nodes):
        outputs = list(node.output)
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
    return producer, raw_reads, other_reads


def _callee(node: onnx.NodeProto, functions: Mapping[FunctionKey, onnx.FunctionProto]) -> FunctionKey | None:
    """The local function ``node`` calls, if any."""
    key = key_of(node)
    return key if key in functions else None


def small_constants(graph: onnx.GraphProto, input_pos: dict[str, int],
                    described: list[onnx.ValueInfoProto]) -> dict[str, TensorProto]:
    """Small initializers that are neither parameters/buffers nor graph inputs: baked-in constants. ``described``:
    the graph inputs and value infos with metadata (``GraphCut.described_values``)."""
    inits = graph.initializer
    # (an initializer with external data is never small: most of a large export's, passed over in C without reading
    # their names, 0.017 -> 0.004 s a side at 100k nodes)
    inline = compress(inits, map(ne, map(_DATA_LOCATION, inits), repeat(TensorProto.EXTERNAL)))
    small = {t.name: t for t in inline if is_small_constant(t) and t.name not in input_pos}
    if small:
        for v in described:
            if v.name in small:
                for p in v.metadata_props:
                    if p.key == INPUT_KIND and p.value in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                        del small[v.name]
                        break
    return small


def agree_small(a: GraphCut, b: GraphCut) -> None:
    """What the two cuts of a diff may bake in, judged alike on both sides: an initializer that one side holds too
    large to bake (or as a parameter), and the other small, is read on both where it is the same value (below). Each
    side alone bakes what is small in it, so a value whose size crossed
    the bound between two exports made a body gain or lose a constant: Swin's relative position bias (512 elements
    with windows of 4, 32 with windows of 2) and Phi3's rotary tables with half the head rotated (64 -> 32) read as
    their adds' and muls' bodies changed, where the summary and the app show one body each; they now read as the
    initializers they are, reshaped. The same value: the same name, element type and rank, read by the calls of the
    same FX names, by nodes of the same operators at the same places. A name alone is no evidence: exporters number
    their constants; ``pair_scale``'s custom transformers hold ``val_75`` as a Reshape's shape in one export and as a
    weight in the other, and two exports' SDPA calls read ``val_49``, one as its FLOAT[1] scale, the other as its
    [8, 8] mask.
    The calls of both cuts must be cut (``_cut_calls``); their reads need not be resolved (a pass over the nodes
    finds the readers, only where some value is small on one side alone)."""
    small_a, small_b = a.small, b.small
    names = {n for n in small_a if n in b.init_pos and n not in small_b}
    names.update(n for n in small_b if n in a.init_pos and n not in small_a)
    if not names:
        return
    readers_a, readers_b = a.call_readers(names), b.call_readers(names)
    inits_a, inits_b = a.graph.initializer, b.graph.initializer
    for name in names:
        ta, tb = inits_a[a.init_pos[name]], inits_b[b.init_pos[name]]
        if ta.data_type == tb.data_type and len(ta.dims) == len(tb.dims) \
                and readers_a.get(name) and readers_a.get(name) == readers_b.get(name):
            small_a.pop(name, None)
            small_b.pop(name, None)


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
