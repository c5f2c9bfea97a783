"""One graph's maps: which node produces each value, which read it and how often, its initializers, and the
torch.export names of its parameters. Built once per graph and shared by every body cut from it.

Each node's inputs and outputs are read from protobuf once and every later pass reads these lists instead. For the
main graph of an index they are read by the index's scan (``scan.MainReads``), which reaches every node anyway,
together with the fields a group key reads: three passes over the nodes (the scan's, these maps', the keys' in call
order) became one, and ``summary --json`` at 100k nodes took 0.995-1.039 s against 1.043-1.108 (six runs each,
alternating; benchmarks/README.md, "Twentieth session"). Taking the inputs and outputs alone in the scan, without the
keys' fields, had saved nothing (the same file, "One pass for scan and maps"): a node reached again in call order,
in a model larger than the CPU's caches, was what cost. Other graphs (branch and loop bodies) are read here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain, filterfalse
from operator import attrgetter
from typing import TypeVar

import onnx

from inspector.core.model.calls import AtenCall
from inspector.core.model.scan import MainReads, NodeFields
from inspector.core.model.walk import NodePath, may_have_subgraphs, subgraphs
from inspector.core.util.progress import Progress

SMALL_CONSTANT_ELEMENTS = 32
_STEP = 4096  # nodes (or declarations) per step of what is read with progress
_NAME = attrgetter("name")
T = TypeVar("T")
ORIGINAL_NODE_NAME = "pkg.torch.onnx.original_node_name"
INPUT_KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


class GraphMaps:
    """Producers, consumers and initializers of one graph, built once and shared by all its groups; each node's
    inputs and outputs are read from protobuf once, here (``inputs``, ``outputs``, ``reads``)."""

    def __init__(self, graph: onnx.GraphProto, outer: GraphMaps | None = None, prefix: NodePath = (),
                 flat: bool = False, progress: Progress | None = None, declarations: bool = False,
                 read: MainReads | None = None) -> None:
        """``outer``: the maps of the graph enclosing ``graph`` (a branch or loop body at node path ``prefix``),
        whose initializers and parameters it sees. ``flat``: no node of ``graph`` can hold a subgraph (known from
        the op histogram, ``ModelIndex.flat_main``), so none is looked at for one (110 ms of a 100k-node graph).
        ``progress``: a checkpoint (``core.util.progress``), in nodes: the nodes are then read ``_STEP`` at a time,
        with ``progress(done, total)`` after each step. ``declarations``: also keep the names ``declared``, for a
        caller that will look types or shapes up by name. ``read``: the main graph's nodes as the scan read them
        (``ScanResult.main``), taken over instead of read again."""
        self.graph, self.prefix = graph, prefix
        self._progress = progress  # also read by what is made on first use over every node (``unread``)
        self.initializers: dict[str, onnx.TensorProto] = dict(outer.initializers) if outer is not None else {}
        self.initializers.update((t.name, t) for t in graph.initializer)
        # as declared ("" = omitted); both in one pass over the nodes: 40 ms less than two at 100k (a node's first
        # field costs 0.034 s a pass there; its inputs 0.04 s more, its outputs 0.03 s: CPU, best of 7)
        self.inputs: list[list[str]] = []
        self.outputs: list[list[str]] = []
        # how many times each value is read (a node reading it twice counts twice), counted in C; consumers on demand
        self.read_count: Counter[str] = Counter()
        nodes = graph.node
        total = len(nodes)
        got = read if read is not None and len(read.inputs) == total else None  # (the scan read every one's)
        # each node's fields as a group key reads them (``MainReads.fields``), where the scan read them too
        self.fields: list[NodeFields] | None = got.fields if got is not None else None
        if got is not None:
            self.inputs, self.outputs = got.inputs, got.outputs
        add_inputs, add_outputs = self.inputs.append, self.outputs.append
        step = _STEP if progress is not None else max(total, 1)
        for start in range(0, total, step):
            if got is None:
                for node in (nodes[start:start + step] if step < total else nodes):
                    # (a slice is made in C; list() iterates in Python: 0.11 s instead of 0.19 at 100k, CPU)
                    add_inputs(node.input[:])
                    add_outputs(node.output[:])
            self.read_count.update(chain.from_iterable(self.inputs[start:start + step] if step < total else
                                                       self.inputs))
            if progress is not None:
                progress(min(start + step, total), total)
        # per node with subgraphs: the outer names they read
        self.captured: dict[int, list[str]] = {} if flat else {i: captured_names(node)
                                                               for i, node in enumerate(graph.node)
                                                               if may_have_subgraphs(node)}
        for inner in self.captured.values():
            self.read_count.update(inner)
        del self.read_count[""]
        self._consumers: dict[str, list[int]] | None = None
        self._producer: dict[str, int] | None = None
        self._fx_names: dict[str, list[str]] | None = None
        self._small: frozenset[str] | None = None
        self._bakeable: frozenset[str] | None = None
        self._unread: frozenset[str] | None = None
        self._mentions: dict[tuple[str, ...], tuple[str, ...]] = {}
        output_names = [v.name for v in graph.output]
        self.graph_outputs = set(output_names)
        # torch.export names parameters p_<path>; the ONNX graph keeps the state-dict name and records the
        # FX name as metadata on the value info. Parameters and buffers are weights, never baked constants.
        self.onnx_name: dict[str, str] = dict(outer.onnx_name) if outer is not None else {}
        self.parameters: set[str] = set(outer.parameters) if outer is not None else set()
        # (value, FX name) of this graph's inputs and value infos, in order: what fold's evidence reads, without
        # another pass over 100k value infos (0.03-0.045 s)
        self.original_names: list[tuple[str, str]] = []
        # the names of the graph's inputs, value infos and outputs, in that order (``declarations``), read in the pass
        # that reaches every value info anyway: a second pass for them cost 0.05-0.1 s at 100k nodes, this 0.01 s
        named: list[str] | None = [] if declarations else None
        self.declared = named
        for v in chain(graph.input, graph.value_info):  # (no tuple of 100k value infos is made first)
            if named is not None:
                named.append(v.name)
            props = v.metadata_props  # few values carry any: testing is cheaper than iterating an empty one
            if not props:
                continue
            for p in props:
                if p.key == ORIGINAL_NODE_NAME:
                    self.onnx_name[p.value] = v.name
                    self.original_names.append((v.name, p.value))
                elif p.key == INPUT_KIND and p.value in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                    self.parameters.add(v.name)
        if named is not None:
            named += output_names

    @property
    def small_constants(self) -> frozenset[str]:
        """Names of the initializers small enough to be baked-in values (``is_small_constant``), each tensor looked at
        once (a 100k-node export's calls read its 11k initializers 156k times)."""
        if self._small is None:
            self._small = frozenset(name for name, t in self.initializers.items() if is_small_constant(t))
        return self._small

    @property
    def bakeable(self) -> frozenset[str]:
        """The small constants that are not parameters or buffers: what a group's body may bake in."""
        if self._bakeable is None:
            self._bakeable = self.small_constants.difference(self.parameters)
        return self._bakeable

    @property
    def unread(self) -> frozenset[str]:
        """Values some node makes that nothing reads and that are not graph outputs, made in C on first use (0.013 s
        at 100k nodes): a group key tests a node's outputs against it once (0.2 us) instead of each output's read
        count (1.0 us a call; CPU, the 73k one-node calls of the Llama replica)."""
        if self._unread is None:
            # a pass over every node, so in the steps of the maps' checkpoint, as the maps were read: a caller's
            # checkpoint runs between two steps, never after one call over 100k outputs (15-30 ms in C). Only the
            # outputs nothing reads are kept: one pass, where every output taken and every read name taken out again
            # (a copy of the 111k read names, in steps too) cost 0.022 s at 100k, this 0.013 s (CPU, best of 9)
            made: set[str] = set()
            read = self.read_count.__contains__
            _in_steps(self.outputs, lambda piece: made.update(filterfalse(read, chain.from_iterable(piece))),
                      self._progress)
            made.difference_update(self.graph_outputs)
            made.discard("")
            self._unread = frozenset(made)
        return self._unread

    def mentions(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """What an FX text that references one of the values ``names`` holds: a name, or an FX name standing for one
        (``fx_names``); made once per tuple of names (a group key tests ``any(map(text.__contains__, ...))``, in C)."""
        found = self._mentions.get(names)
        if found is None:
            found = self._mentions[names] = tuple(chain.from_iterable((n, *self.fx_names(n)) for n in names))
        return found

    def fx_names(self, name: str) -> Sequence[str]:
        """The FX names that stand for the ONNX value ``name`` (``onnx_name`` read backwards; built on first use)."""
        if self._fx_names is None:
            back: dict[str, list[str]] = {}
            for fx, onnx_name in self.onnx_name.items():
                back.setdefault(onnx_name, []).append(fx)
            self._fx_names = back
        return self._fx_names.get(name, ())

    @property
    def producer(self) -> dict[str, int]:
        """Value name -> the node making it (the last, if several do); built on first use: only fold reads it, and
        making it cost every 100k-node summary and report 0.031 s (CPU, best of 5)."""
        if self._producer is None:
            producer = {name: i for i, outs in enumerate(self.outputs) for name in outs}
            producer.pop("", None)
            self._producer = producer
        return self._producer

    @property
    def consumers(self) -> dict[str, list[int]]:
        """Value name -> the nodes reading it, in node order (once per read); built on first use."""
        if self._consumers is None:
            consumers: dict[str, list[int]] = {}
            for i in range(len(self.inputs)):
                for name in self.reads(i):
                    consumers.setdefault(name, []).append(i)
            self._consumers = consumers
        return self._consumers

    def read_outside(self, name: str, reads_inside: int) -> bool:
        """True when ``name`` is read more often than the ``reads_inside`` reads of it by a group's nodes."""
        return self.read_count.get(name, 0) > reads_inside

    def reads(self, i: int) -> list[str]:
        """What node ``i`` reads: ``node_reads(graph.node[i])`` without reading protobuf again."""
        names = [x for x in self.inputs[i] if x]
        inner = self.captured.get(i)
        return names + inner if inner else names

    def tensor_args(self, call: AtenCall) -> list[str]:
        """The call's tensor arguments as ONNX value names."""
        return [self.onnx_name.get(n, n) for n in call.tensor_args()]


def declared_names(graph: onnx.GraphProto, progress: Progress | None = None, step: int = _STEP) -> list[str]:
    """The names of ``graph``'s inputs, value infos and outputs, in that order (``GraphMaps.declared``), read in C;
    with ``progress``, ``step`` at a time, calling ``progress(done, total)`` after each step."""
    names: list[str] = []
    total = len(graph.input) + len(graph.value_info) + len(graph.output)
    every = step
    for declared in (graph.input, graph.value_info, graph.output):
        n = len(declared)
        step = every if progress is not None else max(n, 1)
        for start in range(0, n, step):
            names += map(_NAME, declared[start:start + step] if step < n else declared)
            if progress is not None:
                progress(len(names), total)
    return names


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Values a node reads: its inputs and, for nodes with subgraphs, names the subgraphs capture from outside."""
    names = [n for n in node.input if n]
    if may_have_subgraphs(node):
        names.extend(captured_names(node))
    return names


def captured_names(node: onnx.NodeProto) -> list[str]:
    """Names used inside ``node``'s subgraphs (any depth) that none of them defines."""
    defined: set[str] = set()
    used: list[str] = []
    stack = [g for _s, g in subgraphs(node)]
    while stack:
        g = stack.pop()
        defined.update(v.name for v in g.input)
        defined.update(t.name for t in g.initializer)
        for n in g.node:
            used.extend(x for x in n.input if x)
            defined.update(n.output)
            stack.extend(sg for _s, sg in subgraphs(n))
        used.extend(v.name for v in g.output)
    seen: set[str] = set()
    out = []
    for name in used:
        if name not in defined and name not in seen:
            seen.add(name)
            out.append(name)
    return out


def is_small_constant(t: onnx.TensorProto) -> bool:
    """Small enough to be a value trace_only code baked in (and to show in full); never external data."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return False
    numel = 1
    for d in t.dims:
        numel *= d
    return numel <= SMALL_CONSTANT_ELEMENTS


def _in_steps(values: list[T], take: Callable[[list[T]], object], progress: Progress | None) -> None:
    """``take`` each ``_STEP`` values at a time, with ``progress`` after each step (all at once without one)."""
    step = _STEP if progress is not None else max(len(values), 1)
    for start in range(0, len(values), step):
        take(values[start:start + step] if step < len(values) else values)
        if progress is not None:
            progress(start, len(values))
