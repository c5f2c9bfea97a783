"""Node attributes as the template matcher (``recognise.Matcher``) compares them: in the catalogue's canonical form,
with those a node leaves out at their schema default filled in (``recognise_templates.attribute_defaults``: an
attribute at its default is the same as the attribute left out), and which attributes a node writes, a trace of the
function that wrote it (``as_written``). Read from protobuf once per node that a match looks at. The threat is a
hostile model: attribute values are only compared, never evaluated.
"""

from __future__ import annotations

from typing import Any

import onnx

from inspector.core.aten.templates import Template, canonical_attribute
from inspector.core.model.recognise_constants import CONSTANT
from inspector.core.model.recognise_templates import Key, attribute_defaults
from inspector.core.model.tensor_sizes import dtype_name
from inspector.core.model.values import ValueTypes


class NodeAttributes:
    """The attributes of the nodes of one graph whose ONNX opset is ``opset`` (None: no default is filled in)."""

    def __init__(self, graph: onnx.GraphProto, opset: int | None, full: list[int] | None = None,
                 keys: list[Key] | None = None) -> None:
        """``full`` and ``keys``: each node's number of (domain, op type, arity, attribute bytes) and its key
        (``recognise_nodes.node_keys``): the nodes of one number have one set of attributes, read once per number
        (the 6.3k nodes that multi-node matches read in the 100k Llama replica), but for Constant nodes, whose
        number holds their attributes' names alone (each one's value is read from it)."""
        self.graph, self.opset, self._full = graph, opset, full
        numbered = dict(zip(full, keys)) if full is not None and keys is not None else {}  # (in C: a key per number)
        self._constants = frozenset(f for f, k in numbered.items() if k[1] == CONSTANT)
        self._of: dict[int, dict[str, Any]] = {}
        self._by_number: dict[int, dict[str, Any]] = {}
        self._written: dict[int, frozenset[str]] = {}
        self._types: ValueTypes | None = None  # (read on first use: only a match of a chain of calls needs them)

    def of(self, g: int) -> dict[str, Any]:
        """Node ``g``'s attributes by name in the catalogue's form, those it leaves out at their default filled in."""
        got = self._of.get(g)
        if got is None:
            number = self._full[g] if self._full is not None else -1
            got = self._by_number.get(number) if number not in self._constants else None
            if got is None:
                node = self.graph.node[g]
                got = {**dict(attribute_defaults(node.domain, node.op_type, self.opset)),
                       **{a.name: canonical_attribute(a) for a in node.attribute}}
                if number >= 0 and number not in self._constants:
                    self._by_number[number] = got  # (one dict for the nodes of one number: read, never written)
            self._of[g] = got
        return got

    def written(self, g: int) -> frozenset[str]:
        """The names of the attributes node ``g`` writes (its defaults left out are not)."""
        got = self._written.get(g)
        if got is None:
            got = self._written[g] = frozenset(a.name for a in self.graph.node[g].attribute)
        return got

    def casts_to_its_own_type(self, g: int) -> bool:
        """Whether node ``g`` is a Cast to the element type its operand already has, as the graph's value infos say
        (False where they do not). No lone call lowers to one: torch's ``.to`` of a tensor to its own dtype returns
        it and the FX graph holds no call, so such a Cast is part of the call that made it (gather casts its index to
        int64, whatever it was)."""
        node = self.graph.node[g]
        if node.op_type != "Cast" or node.domain not in ("", "ai.onnx") or not node.input:
            return False
        to = self.of(g).get("to")
        if not isinstance(to, int):
            return False
        if self._types is None:
            self._types = ValueTypes(self.graph)
        text = self._types.get(node.input[0])
        return text is not None and text.split("[", 1)[0] == dtype_name(to)

    def fixed_fit(self, t: Template, g: int, j: int = -1) -> bool:
        """Whether node ``g`` holds the fixed attributes of node ``j`` of ``t`` (its last): a function of its
        signature (its attributes' bytes), so the matcher drops a group that fails here once per signature instead of
        trying it at each node of it (the 100k Llama replica's Reshapes and Transposes: 4.7k of 31k tries of
        multi-node templates, none of which could fit)."""
        fixed = [(name, slot.value) for name, slot in t.nodes[j].attributes if not slot.masked]
        if not fixed:
            return True
        attrs = self.of(g)
        return all(attrs.get(name) == value for name, value in fixed)


def as_written(templates: list[Template], base: Template, nodes: dict[int, int],
               written: dict[str, list[frozenset[str]]], keys: dict[str, list[Key]],
               attributes: NodeAttributes) -> list[Template]:
    """Of the templates that fit one body (``nodes``: template node -> graph node, the match of ``base``), those that
    write the attributes its nodes write, defaults included (``written``: each template's nodes' attribute names as
    the catalogue has them, before defaults were filled in). An attribute written at its default is a trace of the
    torchlib function that wrote it: t5_noopt's Shape with ``start=0`` is full_like's, which writes it, not
    fill.Scalar's, which leaves it out. Where none writes them all, those that write them at most nodes; where a
    template is of another structure than ``base`` (its other nodes folded, other operands), all are compared at the
    last node alone."""
    last = len(base.nodes) - 1
    alike = all([n.inputs for n in t.nodes] == [n.inputs for n in base.nodes] and keys[t.name] == keys[base.name]
                for t in templates)
    compared = list(nodes.items()) if alike else [(last, nodes[last])]

    def agree(t: Template) -> int:
        mine = written[t.name]
        return sum(1 for j, g in compared if mine[j - last - 1] == attributes.written(g))

    scores = [agree(t) for t in templates]
    return [t for t, score in zip(templates, scores) if score == max(scores)]
