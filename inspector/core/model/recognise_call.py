"""The AtenCall of a call that the template matcher (``recognise``) recovered: the same fields, its first node read
from the graph when asked instead of held.

Why: a 100k-node export without fx metadata has some 73k recognised calls, and a protobuf node object held by each
kept 73k more objects alive for the collector to walk while the matcher made them (on the stripped 100k Llama
replica, the matcher alone: its full collections 0.18 -> 0.06 s; in the summary's process, the summary 2.13-2.16 ->
1.99-2.0 s of CPU, best of 3). Nothing from the model is read here: the node is the graph's own object, as a scan's
call holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx

from inspector.core.model.calls import AtenCall

_FIRST_NODE: Any = AtenCall.__dict__["first_node"]  # the field's own slot (``RecognisedCall`` reads and writes it)


class RecognisedCall(AtenCall):
    """A recognised call: every field an AtenCall's; ``first_node``, unless one is given, is the graph's node at the
    first path each time it is read (protobuf hands out one object per live node: an ``is`` test still holds)."""

    __slots__ = ("_graph_nodes",)
    _graph_nodes: Sequence[onnx.NodeProto]  # the main graph's nodes

    @property
    def first_node(self) -> onnx.NodeProto | None:
        node = _FIRST_NODE.__get__(self)
        if node is None and self.node_paths:
            return self._graph_nodes[self.node_paths[0][0]]  # type: ignore[index]  # (a main-graph path)
        return node

    @first_node.setter
    def first_node(self, node: onnx.NodeProto | None) -> None:
        _FIRST_NODE.__set__(self, node)
