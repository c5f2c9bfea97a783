"""Iterative walks over nodes, through If/Loop/Scan bodies at any depth (no Python recursion).

A node is addressed by a *node path*: ``(i0,)`` is node ``i0`` of a scope's top graph (the main graph or
a function body); ``(i0, "then_branch", i1)`` is node ``i1`` inside node ``i0``'s ``then_branch``; a
``GRAPHS`` attribute adds ``"name[k]"``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import onnx
from onnx import AttributeProto

NodePath = tuple[int | str, ...]


def as_text(value: str | bytes) -> str:
    """protobuf hands back ``bytes`` for string fields that are not valid UTF-8 (damaged or hostile models)."""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")

# Standard operators that carry graph attributes; other standard ops are not scanned for subgraphs,
# which keeps a pass over a 100k-node export cheap.
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


def may_have_subgraphs(node: onnx.NodeProto) -> bool:
    return node.domain not in STANDARD_DOMAINS or node.op_type in SUBGRAPH_OPS


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """``(step, graph)`` for every graph-valued attribute of ``node``."""
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == AttributeProto.GRAPHS:
            for k, g in enumerate(attr.graphs):
                yield f"{attr.name}[{k}]", g


def iter_nodes(nodes: Sequence[onnx.NodeProto]) -> Iterator[tuple[NodePath, onnx.NodeProto, int]]:
    """Every node in ``nodes`` and in their subgraphs: ``(path, node, depth)``, parents before children."""
    stack: list[tuple[Sequence[onnx.NodeProto], NodePath, int]] = [(nodes, (), 0)]
    while stack:
        seq, prefix, depth = stack.pop()
        for i, node in enumerate(seq):
            path = (*prefix, i)
            yield path, node, depth
            if may_have_subgraphs(node):
                pending = [(g.node, (*path, step), depth + 1) for step, g in subgraphs(node)]
                stack.extend(reversed(pending))


def resolve_path(nodes: Sequence[onnx.NodeProto], path: NodePath) -> onnx.NodeProto:
    """The node at ``path`` below ``nodes``; ``KeyError`` when the path does not exist."""
    seq = nodes
    node: onnx.NodeProto | None = None
    i = 0
    while i < len(path):
        idx = path[i]
        if not isinstance(idx, int) or idx >= len(seq):
            raise KeyError(path)
        node = seq[idx]
        i += 1
        if i == len(path):
            break
        step = path[i]
        found = None
        for s, g in subgraphs(node):
            if s == step:
                found = g
                break
        if found is None:
            raise KeyError(path)
        seq = found.node
        i += 1
    if node is None:
        raise KeyError(path)
    return node


def path_text(nodes: Sequence[onnx.NodeProto], path: NodePath, root: str) -> str:
    """Readable form of a node path, e.g. ``main/If_0.then_branch/Add_3``."""
    parts = [root]
    seq = nodes
    i = 0
    while i < len(path):
        idx = path[i]
        if not isinstance(idx, int) or idx >= len(seq):  # a damaged model (e.g. two subgraphs of one name)
            parts.append(f"?{idx}")
            break
        node = seq[idx]
        label = as_text(node.name) or f"{as_text(node.op_type)}#{idx}"
        i += 1
        if i < len(path):
            step = str(path[i])
            parts.append(f"{label}.{step}")
            seq = next((g.node for s, g in subgraphs(node) if s == step), [])
            i += 1
        else:
            parts.append(label)
    return "/".join(parts)
