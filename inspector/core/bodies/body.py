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

from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import GraphMaps, node_reads
from inspector.core.model.keys import FunctionKey
from inspector.core.model.walk import NodePath, subgraphs


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


def function_form(body: Body) -> Body:
    """A group body as ``fold`` writes it as a function: its constants become leading Constant nodes; the inputs
    keep the aten argument order, and are numbered by first use as the group's (``canonical_inputs``). The diff
    compares a flat call with a folded one in this form, and a review made on either applies to both."""
    consts = [onnx.NodeProto(op_type="Constant", output=[name], attribute=[
        onnx.AttributeProto(name="value", type=onnx.AttributeProto.TENSOR, t=t)]) for name, t in body.constants.items()]
    return Body(body.label, consts + list(body.nodes), list(body.inputs), list(body.outputs), {},
                canonical_inputs=body.canonical_inputs)


def _args_first(inputs: list[str], args: list[str]) -> list[str]:
    """Order inputs as the aten call's tensor arguments, then whatever else the group reads."""
    order = {name: k for k, name in enumerate(args)}
    return [n for _k, _p, n in sorted((order.get(n, len(order)), p, n) for p, n in enumerate(inputs))]


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
