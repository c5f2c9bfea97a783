"""How long a masked list attribute must be for a template's overload, read off the aten schema: ``conv2d`` takes
``stride: SymInt[2]``, so its Conv's ``strides``, ``dilations`` (``equal``) and ``pads`` (``pads``: begin and end of
each axis, twice as long) have two entries; ``conv1d`` one, ``conv3d`` three, and ``convolution`` (``SymInt[]``)
any number.

Why: a masked slot matches any value, and the one-op exports behind the templates cannot tell overloads that differ
only in the spatial rank apart by anything else (their bodies are one node alike). So a 2-D Conv fitted conv1d,
conv2d, conv3d and convolution, and a 2-D MaxPool max_pool1d, max_pool2d and max_pool3d; an overload whose schema
fixes a list's length is a candidate only where the node's attribute has that length. The lengths come from the
schema catalogue (generated from torch) and the relation the evidence learned between the argument and the slot,
never from a table of operators: a relation this does not know (``torch_pads``, ``dim``) constrains nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.templates import Template

_SIZED = re.compile(r"\w+\[(\d+)\]\??")  # ``SymInt[2]``, ``int[3]``, ``int[1]?``: a list of that many entries
# entries of the ONNX attribute per entry of the argument, by the relation the evidence learned between them
_PER_ENTRY = {"equal": 1, "stride_or_kernel": 1, "pads": 2}

Lengths = tuple[tuple[int, str, int], ...]  # (template node, attribute, entries it must have)


class ListLengths:
    """Each template's list lengths (``lengths``), worked out once per template."""

    def __init__(self) -> None:
        self._by_template: dict[str, Lengths] = {}

    def lengths(self, t: Template) -> Lengths:
        got = self._by_template.get(t.name)
        if got is None:
            schema = SchemaCatalogue.default().get(t.target)
            types = {p.name: p.type for p in schema.parameters} if schema is not None else {}
            out = []
            for j, node in enumerate(t.nodes):
                for name, slot in node.attributes:
                    per = _PER_ENTRY.get(slot.relation or "")
                    if per is None or len(slot.moves_with) != 1:
                        continue
                    sized = _SIZED.fullmatch(types.get(slot.moves_with[0], ""))
                    if sized is not None:
                        out.append((j, name, per * int(sized.group(1))))
            got = self._by_template[t.name] = tuple(out)
        return got

    def fit(self, t: Template, attributes: Mapping[tuple[int, str], Any]) -> bool:
        """Whether the masked attributes of a match (``(template node, name) -> value``) have the lengths ``t``'s
        schema asks for (a value that is no list, or a slot the match did not mask, asks nothing)."""
        for j, name, n in self.lengths(t):
            value = attributes.get((j, name))
            if isinstance(value, list) and len(value) != n:
                return False
        return True
