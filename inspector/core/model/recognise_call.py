"""The AtenCall of a call that the template matcher (``recognise``) recovered: the same fields, with what is cheap to
make again made when read instead of held by every call.

Why: a 100k-node export without fx metadata has some 80k recognised calls, made in one go, and each object they hold
is one more for the collector to walk while they are made. A protobuf node object held by each (the matcher alone:
its full collections 0.18 -> 0.06 s; the summary 2.13-2.16 -> 1.99-2.0 s of CPU, best of 3) is read from the graph
when asked; the FX name and text (the stripped 100k Llama replica's summary reads 20 names and 31k of 80k texts) are
made from the call's number; a one-node call's paths (read four times per call there) are made at each read from its
node's index, a list the reader drops, not one held per call: in the summary's process the matcher's full collections
3 -> 2, its CPU 0.76-0.77 -> 0.66-0.70 s, the stripped summary 1.71-1.79 -> 1.65-1.74 s (CPU, best of 5, alternated
processes). Nothing from the model is read here: the node is the graph's own object, as a scan's call holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import onnx

from inspector.core.aten.evidence import op_name
from inspector.core.model.calls import AtenCall
from inspector.core.model.fx import FxNode
from inspector.core.model.keys import MAIN, GraphScope
from inspector.core.model.recognise_names import named_op
from inspector.core.model.walk import NodePath

RECOGNISED_PREFIX = "recognised_"  # FX names of recognised calls: recognised_0, recognised_1, ...
_FIRST_NODE: Any = AtenCall.__dict__["first_node"]  # the field's own slot (``RecognisedCall`` reads and writes it)


class RecognisedCall(AtenCall):
    """A recognised call: every field an AtenCall's; ``first_node``, unless one is given, is the graph's node at the
    first path each time it is read (protobuf hands out one object per live node: an ``is`` test still holds); the
    matcher's calls (``recognised_call``) make ``name`` (``recognised_<number>``) and ``fx_text`` when read, and a
    one-node call's ``node_paths`` (a new list at each read: equal, never the same object). Made with AtenCall's
    fields (``dataclasses.replace``), it holds them as given."""

    __slots__ = ("_graph_nodes", "_name", "_node", "_number", "_paths", "_tail", "wiring")
    _graph_nodes: Sequence[onnx.NodeProto]  # the main graph's nodes
    _number: int | None  # the call's number (None: ``_name`` and ``_tail`` hold its name and FX text)
    _tail: str  # its FX text after its name
    _name: str
    _node: int | None  # a one-node call's node (None: ``_paths`` holds its paths)
    _paths: list[NodePath]
    # a multi-node call's template and the graph value of each of its outside tensors (``x`` operands), as the match
    # read them: what its signature binds (``signature.recognised_tensors``); None where it was not kept
    wiring: tuple[str, dict[int, str]] | None

    def __init__(self, fx_text: str, name: str, raw_target: str, target: str, scope: GraphScope,
                 node_paths: list[NodePath], first_node: onnx.NodeProto | None = None, rule_names: tuple[str, ...] = (),
                 scopes_text: str | bytes | None = None, _fx: FxNode | None = None, _parsed: bool = False,
                 _meta: dict[str, str] | None = None, _module_path: str | None = None, recognised: tuple[str, ...] = (),
                 candidates: tuple[str, ...] = (), ruled_out: tuple[str, ...] = ()) -> None:
        self._number, self._name, self._tail, self._graph_nodes = None, name, fx_text, ()
        self.raw_target, self.target, self.scope, self._node, self._paths = raw_target, target, scope, None, node_paths
        self.rule_names, self.scopes_text, self._fx, self._parsed = rule_names, scopes_text, _fx, _parsed
        self._meta, self._module_path, self.recognised, self.candidates = _meta, _module_path, recognised, candidates
        self.ruled_out, self.wiring = ruled_out, None
        _FIRST_NODE.__set__(self, first_node)

    @property
    def name(self) -> str:  # type: ignore[override]  # (read-only: nothing sets a recognised call's name)
        got = self._name
        if not got and self._number is not None:  # (a matcher's call: named at its first read, ``_fx_name``)
            got = self._name = _fx_name(self) or RECOGNISED_PREFIX + str(self._number)
        return got

    @property
    def fx_text(self) -> str:  # type: ignore[override]  # (nor its FX text)
        return "%" + self.name + self._tail if self._number is not None else self._tail

    @property
    def node_paths(self) -> list[NodePath]:  # type: ignore[override]  # (nor its paths)
        i = self._node
        return [(i,)] if i is not None else self._paths

    @property
    def first_node(self) -> onnx.NodeProto | None:
        node = _FIRST_NODE.__get__(self)
        if node is None and self._graph_nodes:
            i = self._node
            paths = self._paths if i is None else None
            if i is None and paths:
                i = paths[0][0]  # type: ignore[assignment]  # (a main-graph path)
            if i is not None:
                return self._graph_nodes[i]
        return node

    @first_node.setter
    def first_node(self, node: onnx.NodeProto | None) -> None:
        _FIRST_NODE.__set__(self, node)

    def in_graph(self, graph_nodes: Sequence[onnx.NodeProto]) -> RecognisedCall:
        """This call in another model whose nodes at its paths equal its own (the other side of a diff,
        ``scan_like``): the same fields, reading that model's nodes."""
        c = _new(RecognisedCall)
        if self._number is None:  # (made with AtenCall's fields: each slot that holds a value)
            for name in _STORED:
                value = getattr(self, name, _UNSET)
                if value is not _UNSET:
                    setattr(c, name, value)
        else:  # a matcher's call, as ``recognised_call`` makes it: each field set directly (80k of them at 100k nodes:
            # 0.15 s through the loop above, 0.033-0.044 s so, as an AtenCall made with its fields costs)
            c._number, c._tail, c._node, c._name = self._number, self._tail, self._node, ""
            if self._node is None:
                c._paths = self._paths
            c.raw_target, c.target, c.recognised, c.candidates = self.raw_target, self.target, self.recognised, \
                self.candidates
            c.ruled_out, c.wiring = self.ruled_out, self.wiring
            c.scope, c.rule_names, c.scopes_text = self.scope, self.rule_names, self.scopes_text
            c._fx, c._meta, c._module_path, c._parsed = self._fx, self._meta, self._module_path, self._parsed
        c._graph_nodes = graph_nodes
        _FIRST_NODE.__set__(c, None)
        return c

    def nodes(self) -> list[onnx.NodeProto] | None:
        """The call's nodes, in graph order (None for a call made with AtenCall's fields, which holds no graph)."""
        graph = self._graph_nodes
        if not graph:
            return None
        return [graph[p[0]] for p in self.node_paths]  # type: ignore[index]  # (main-graph paths: one index each)


_new = RecognisedCall.__new__


@lru_cache(maxsize=1024)
def _ops(candidates: tuple[str, ...]) -> frozenset[str]:
    """The names an FX node of one of ``candidates`` may have: its op's (``view``), or, for a node a graph pass made,
    its overload's too (``sym_size.int`` -> ``sym_size_int``, ``scalar_tensor_default``: ``recognise_names``)."""
    return frozenset([*map(op_name, candidates), *map(_overload_name, candidates)])


def _overload_name(target: str) -> str:
    """``aten::sym_size.int`` -> ``sym_size_int``; ``aten::relu`` -> ``relu_default``."""
    op, _dot, overload = target.split("::", 1)[-1].partition(".")
    return f"{op}_{overload or 'default'}"


def _fx_name(call: RecognisedCall) -> str:
    """The name torch's FX graph gave the call, as its output's name says (``recognise_names``: the exporter names a
    call's output after its FX node, which FX names after its op): the first value its nodes make, last node first,
    that is named after an op of its candidates; "" when none is (a graph renamed by another tool: the call is then
    ``recognised_<number>``). Such a name is an identifier (the op's, then digits): safe in FX text."""
    ops = _ops(call.candidates)
    nodes = call._graph_nodes
    at = (call._node,) if call._node is not None else tuple(int(p[0]) for p in reversed(call._paths))
    for i in at:
        for value in nodes[i].output:
            if named_op(value, ops) is not None:
                return value
    return ""
_UNSET: Any = object()
# what a recognised call holds: its own slots and AtenCall's fields that no property of it stands in for
_STORED = ("_number", "_tail", "_name", "_node", "_paths", "raw_target", "target", "scope", "rule_names",
           "scopes_text", "_fx", "_parsed", "_meta", "_module_path", "recognised", "candidates", "ruled_out", "wiring")


def recognised_call(number: int, nodes: tuple[int, ...], raw_target: str, target: str,
                    recognised: tuple[str, ...], candidates: tuple[str, ...], tail: str,
                    graph_nodes: Sequence[onnx.NodeProto], ruled_out: tuple[str, ...] = (),
                    rule_names: tuple[str, ...] = (),
                    wiring: tuple[str, dict[int, str]] | None = None) -> RecognisedCall:
    """The matcher's call numbered ``number`` (its FX name's), of the main-graph nodes ``nodes`` (in order) of
    ``graph_nodes``; ``tail``: its FX text after the name. Every field set here, none through a property, and no name,
    FX text or one-node path list made (the dataclass's ``__init__`` with every field, ``first_node`` through its
    setter, both strings and the paths made for each of the replica's 80k calls: 0.21-0.24 -> 0.08-0.09 s for making
    them, the collector's share included; CPU, best of 5)."""
    c = _new(RecognisedCall)
    c._number, c._tail, c._graph_nodes, c._name = number, tail, graph_nodes, ""
    if len(nodes) == 1:
        c._node = nodes[0]
    else:
        c._node, c._paths = None, list(zip(nodes))
    c.raw_target, c.target, c.recognised, c.candidates, c.ruled_out = raw_target, target, recognised, candidates, \
        ruled_out
    c.wiring = wiring
    c.scope, c.rule_names, c.scopes_text = MAIN, rule_names, ""  # (a fused template's rules: ``Template.rules``)
    c._fx = c._meta = c._module_path = None
    c._parsed = False
    _FIRST_NODE.__set__(c, None)
    return c
