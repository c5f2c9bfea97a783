"""Bodies: the nodes of a function, or of one aten call group, with what flows in and out.

A body is what fingerprints, specialisation and fold work on. For an aten call group, small initializers that
the group reads and that are not tensor arguments of the call (the SDPA scale, a Reshape's target shape) are
*constants* of the body: trace_only code baked them in at export time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

import onnx

from inspector.core.keys import FunctionKey
from inspector.core.provenance import AtenCall
from inspector.core.slices import in_slices
from inspector.core.walk import NodePath, may_have_subgraphs, subgraphs

SMALL_CONSTANT_ELEMENTS = 32
ORIGINAL_NODE_NAME = "pkg.torch.onnx.original_node_name"
INPUT_KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


@dataclass(slots=True)
class Body:
    """Nodes in order, with formal inputs/outputs; ``constants`` are small initializers baked into the body."""

    label: str
    nodes: list[onnx.NodeProto]
    inputs: list[str]
    outputs: list[str]
    constants: dict[str, onnx.TensorProto] = field(default_factory=dict)
    node_paths: list[NodePath] = field(default_factory=list)  # where each node sits in its graph
    # Inputs in the order a fingerprint numbers them: declared order for functions (it is their interface),
    # first use for groups (their declared order depends on matching FX names, which a rename breaks).
    canonical_inputs: list[str] | None = None

    def graph_path(self, path: NodePath) -> NodePath:
        """Where the node at ``path`` in this body sits in its graph (the main graph or the function body)."""
        first = path[0]
        assert isinstance(first, int)
        return self.node_paths[first] + path[1:]


def function_body(key: FunctionKey, f: onnx.FunctionProto) -> Body:
    return Body(str(key), list(f.node), list(f.input), list(f.output), {}, [(i,) for i in range(len(f.node))])


def function_body_by_use(key: FunctionKey, f: onnx.FunctionProto) -> Body:
    """A function's body with its inputs numbered by first use, as a group body numbers what it reads: how a
    folded function is compared with the flat group it came from (the declared order is the call's business)."""
    body = function_body(key, f)
    formals = set(f.input)
    seen: set[str] = set()
    order: list[str] = []
    for n in f.node:
        for name in node_reads(n):
            if name in formals and name not in seen:
                seen.add(name)
                order.append(name)
    body.canonical_inputs = order + [x for x in f.input if x not in seen]
    return body


class GraphMaps:
    """Producers, consumers and initializers of one graph, built once and shared by all its groups; each node's
    inputs and outputs are read from protobuf once, here (``inputs``, ``outputs``, ``reads``)."""

    def __init__(self, graph: onnx.GraphProto, outer: GraphMaps | None = None, prefix: NodePath = (),
                 flat: bool = False) -> None:
        """``outer``: the maps of the graph enclosing ``graph`` (a branch or loop body at node path ``prefix``),
        whose initializers and parameters it sees. ``flat``: no node of ``graph`` can hold a subgraph (known from
        the op histogram, ``ModelIndex.flat_main``), so none is looked at for one (110 ms of a 100k-node graph)."""
        self.graph = graph
        self.prefix = prefix
        self.initializers: dict[str, onnx.TensorProto] = dict(outer.initializers) if outer is not None else {}
        self.initializers.update((t.name, t) for t in graph.initializer)
        # as declared ("" = omitted); both in one pass over the nodes: 40 ms less than two at 100k, where reaching
        # a node costs more than reading its fields
        self.inputs: list[list[str]] = []
        self.outputs: list[list[str]] = []
        add_inputs, add_outputs = self.inputs.append, self.outputs.append
        for node in graph.node:
            add_inputs(list(node.input))
            add_outputs(list(node.output))
        # per node with subgraphs: the outer names they read
        self.captured: dict[int, list[str]] = {} if flat else {i: captured_names(node)
                                                               for i, node in enumerate(graph.node)
                                                               if may_have_subgraphs(node)}
        self.producer: dict[str, int] = {name: i for i, outs in enumerate(self.outputs) for name in outs}
        self.producer.pop("", None)
        # how many times each value is read (a node reading it twice counts twice); consumers on demand. Counted
        # a slice of nodes at a time: one count over 100k nodes holds the GIL for 35-50 ms (a GUI thread waits)
        self.read_count: Counter[str] = Counter()
        for piece in in_slices(self.inputs):
            self.read_count.update(chain.from_iterable(piece))
        for inner in self.captured.values():
            self.read_count.update(inner)
        del self.read_count[""]
        self._consumers: dict[str, list[int]] | None = None
        self._fx_names: dict[str, list[str]] | None = None
        self._small: frozenset[str] | None = None
        self.graph_outputs = {v.name for v in graph.output}
        # torch.export names parameters p_<path>; the ONNX graph keeps the state-dict name and records the
        # FX name as metadata on the value info. Parameters and buffers are weights, never baked constants.
        self.onnx_name: dict[str, str] = dict(outer.onnx_name) if outer is not None else {}
        self.parameters: set[str] = set(outer.parameters) if outer is not None else set()
        for v in chain(graph.input, graph.value_info):  # not (*a, *b): one C call, 34 ms holding the GIL at 100k
            props = v.metadata_props  # few values carry any: testing is cheaper than iterating an empty one
            if not props:
                continue
            for p in props:
                if p.key == ORIGINAL_NODE_NAME:
                    self.onnx_name[p.value] = v.name
                elif p.key == INPUT_KIND and p.value in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                    self.parameters.add(v.name)

    @property
    def small_constants(self) -> frozenset[str]:
        """Names of the initializers small enough to be baked-in values (``is_small_constant``), each tensor looked at
        once (a 100k-node export's calls read its 11k initializers 156k times)."""
        if self._small is None:
            self._small = frozenset(name for name, t in self.initializers.items() if is_small_constant(t))
        return self._small

    def fx_names(self, name: str) -> Sequence[str]:
        """The FX names that stand for the ONNX value ``name`` (``onnx_name`` read backwards; built on first use)."""
        if self._fx_names is None:
            back: dict[str, list[str]] = {}
            for fx, onnx_name in self.onnx_name.items():
                back.setdefault(onnx_name, []).append(fx)
            self._fx_names = back
        return self._fx_names.get(name, ())

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


def group_body(call: AtenCall, maps: GraphMaps) -> Body:
    """The body of an aten call group in the graph of ``maps`` (the main graph, or the branch or loop body at
    ``maps.prefix``), with baked-in small initializers as constants."""
    prefix, depth = maps.prefix, len(maps.prefix)
    indices = sorted(p[-1] for p in call.node_paths
                     if len(p) == depth + 1 and isinstance(p[-1], int) and p[:-1] == prefix)
    nodes = [maps.graph.node[i] for i in indices]
    produced: set[str] = set()
    for n in nodes:
        produced.update(x for x in n.output if x)
    args = maps.tensor_args(call)
    tensor_args = set(args)
    inputs: list[str] = []
    constants: dict[str, onnx.TensorProto] = {}
    seen: set[str] = set()
    for n in nodes:
        for name in node_reads(n):
            if name in produced or name in seen:
                continue
            seen.add(name)
            if name in maps.small_constants and name not in tensor_args and name not in maps.parameters:
                constants[name] = maps.initializers[name]
            else:
                inputs.append(name)
    first_use = list(inputs)
    inputs = _args_first(inputs, args)
    read_inside = Counter(chain.from_iterable(node_reads(n) for n in nodes))
    outputs = [name for n in nodes for name in n.output
               if name and (name in maps.graph_outputs or maps.read_outside(name, read_inside[name]))]
    return Body(call.name, nodes, inputs, outputs, constants, [(*prefix, i) for i in indices], first_use)


def _args_first(inputs: list[str], args: list[str]) -> list[str]:
    """Order inputs as the aten call's tensor arguments, then whatever else the group reads."""
    order = {name: k for k, name in enumerate(args)}
    return [n for _k, _p, n in sorted((order.get(n, len(order)), p, n) for p, n in enumerate(inputs))]


def is_small_constant(t: onnx.TensorProto) -> bool:
    """Small enough to be a value trace_only code baked in (and to show in full); never external data."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return False
    numel = 1
    for d in t.dims:
        numel *= d
    return numel <= SMALL_CONSTANT_ELEMENTS


def walk_body(nodes: Sequence[onnx.NodeProto]) -> Iterator[tuple[tuple[int | str, ...], onnx.NodeProto]]:
    """Nodes of a body and of their subgraphs in a fixed order (parent, then its subgraphs), iteratively."""
    stack: list[tuple[Sequence[onnx.NodeProto], tuple[int | str, ...], int]] = [(nodes, (), 0)]
    while stack:
        seq, prefix, start = stack.pop()
        for i in range(start, len(seq)):
            node = seq[i]
            path = (*prefix, i)
            yield path, node
            subs = list(subgraphs(node))
            if subs:
                stack.append((seq, prefix, i + 1))  # resume after this node's subgraphs
                for step, g in reversed(subs):
                    stack.append((g.node, (*path, step), 0))
                break
