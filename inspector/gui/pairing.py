"""Two bodies side by side: which boxes pair up and which are coloured, from the diff engine's node alignment
(``core.diff.align_nodes``). The compare window (one body in each of two models) and the overload comparison
(two members of one family) both draw their pair of graphs from this."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import onnx

from inspector.core.bodies.body import Body, walk_body
from inspector.core.bodies.literals import attribute_value, tensor_value
from inspector.core.diff import Change, align_nodes, show_value
from inspector.core.model.walk import NodePath
from inspector.gui.graph_panel import scene_id

ADDED, REMOVED, CHANGED = "#6aa84f", "#cc0000", "#e69138"
Marks = dict[str, tuple[str, str]]  # scene id -> (colour, note)
Slot = tuple[NodePath, str]  # (node path in the body, attribute name), or ((), constant name)


@dataclass(slots=True)
class BodyPairing:
    """``pairs``: scene id in A -> the aligned scene id in B (nodes, constants, inputs and outputs); marks for both
    graphs; ``changed``: the literal slots whose values differ, A's slot beside B's, in body order."""

    pairs: dict[str, str] = field(default_factory=dict)
    marks_a: Marks = field(default_factory=dict)
    marks_b: Marks = field(default_factory=dict)
    changed: list[tuple[Slot, Slot]] = field(default_factory=list)

    def partner(self, node_id: str, from_a: bool) -> str | None:
        """The box aligned with ``node_id`` on the other side (None when it has none)."""
        if from_a:
            return self.pairs.get(node_id)
        return next((a for a, b in self.pairs.items() if b == node_id), None)


def pair_bodies(body_a: Body, body_b: Body) -> BodyPairing:
    """Align two bodies node by node: aligned nodes pair up (and are coloured when a literal attribute differs),
    unaligned ones are coloured as only in A or only in B; baked constants pair through the aligned nodes that read
    them (coloured when their values differ), inputs and weights through the aligned nodes that read them, then
    by position, and outputs by position."""
    wa, wb = list(walk_body(body_a.nodes)), list(walk_body(body_b.nodes))
    out = BodyPairing()
    removed: set[int] = set()
    added: set[int] = set()
    for op, i, j in align_nodes([n for _p, n in wa], [n for _p, n in wb]):
        if op == "changed":
            assert i is not None and j is not None
            names = _differing_attributes(wa[i][1], wb[j][1])
            note = "; ".join(f"{wa[i][1].op_type}.{k}: {show_value(va)} -> {show_value(vb)}"
                             for k, va, vb in names) or f"{wa[i][1].op_type}: attributes differ"
            out.marks_a[scene_id(body_a, wa[i][0])] = (CHANGED, note)
            out.marks_b[scene_id(body_b, wb[j][0])] = (CHANGED, note)
            out.changed.extend(((wa[i][0], k), (wb[j][0], k)) for k, _va, _vb in names)
        elif op == "removed":
            assert i is not None
            removed.add(i)
            out.marks_a[scene_id(body_a, wa[i][0])] = (REMOVED, f"only in A: {wa[i][1].op_type}")
        else:
            assert j is not None
            added.add(j)
            out.marks_b[scene_id(body_b, wb[j][0])] = (ADDED, f"only in B: {wb[j][1].op_type}")
    # the alignment is monotone: what is neither removed nor added pairs up in order
    kept_a = [n for k, n in enumerate(wa) if k not in removed]
    kept_b = [n for k, n in enumerate(wb) if k not in added]
    for (pa, na), (pb, nb) in zip(kept_a, kept_b):
        out.pairs[scene_id(body_a, pa)] = scene_id(body_b, pb)
        for xa, xb in zip(na.input, nb.input):  # what two aligned nodes read pairs up, input by input
            if xa in body_a.constants and xb in body_b.constants:
                if f"const:{xa}" not in out.pairs:
                    out.pairs[f"const:{xa}"] = f"const:{xb}"
                    _compare_constants(out, xa, body_a.constants[xa], xb, body_b.constants[xb])
            elif xa and xb:  # a graph input, or a weight (drawn as a constant box when small)
                out.pairs.setdefault(f"in:{xa}", f"in:{xb}")
                out.pairs.setdefault(f"const:{xa}", f"const:{xb}")
    paired_b = set(out.pairs.values())
    for name in body_a.constants:
        if f"const:{name}" not in out.pairs:
            out.marks_a[f"const:{name}"] = (REMOVED, "only in A: constant")
    for name in body_b.constants:
        if f"const:{name}" not in paired_b:
            out.marks_b[f"const:{name}"] = (ADDED, "only in B: constant")
    for prefix, names_a, names_b in (("in", body_a.inputs, body_b.inputs), ("out", body_a.outputs, body_b.outputs)):
        for xa, xb in zip(names_a, names_b):
            out.pairs.setdefault(f"{prefix}:{xa}", f"{prefix}:{xb}")
    return out


def _compare_constants(out: BodyPairing, na: str, ta: onnx.TensorProto, nb: str, tb: onnx.TensorProto) -> None:
    va, ka = tensor_value(ta)
    vb, kb = tensor_value(tb)
    if ka != kb:
        note = f"constant: {show_value(va)} -> {show_value(vb)}"
        out.marks_a[f"const:{na}"] = (CHANGED, note)
        out.marks_b[f"const:{nb}"] = (CHANGED, note)
        out.changed.append((((), na), ((), nb)))


def _literal_attrs(node: onnx.NodeProto) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for x in node.attribute:
        if x.ref_attr_name:
            out[x.name] = (f"@{x.ref_attr_name}", f"@{x.ref_attr_name}")
        elif x.type not in (x.GRAPH, x.GRAPHS):
            out[x.name] = attribute_value(x)
    return out


def _differing_attributes(a: onnx.NodeProto, b: onnx.NodeProto) -> list[tuple[str, Any, Any]]:
    """``(attribute, value in a, value in b)`` for the literal attributes of two aligned nodes that differ."""
    va, vb = _literal_attrs(a), _literal_attrs(b)
    none = (None, "")
    return [(k, va.get(k, none)[0], vb.get(k, none)[0]) for k in sorted(set(va) | set(vb))
            if va.get(k, none)[1] != vb.get(k, none)[1]]


def changed_box(marks: Marks, c: Change) -> str | None:
    """The box a change row is about: the one whose mark names the changed value (``Mul.B: 0.5 -> 0.59460354``
    for ``scale (Mul.B): 0.5 -> 0.59460354``, or the constant holding it: ``constant: [0.5] -> 0.59460354``), else
    the first changed box, else the first marked one."""
    named = re.match(r"[^(]*\((\S+)\): (.*)$", (c.detail or "").split("; ")[0])  # the first value it names
    tests: list[Callable[[str, str], bool]] = []
    if named:
        new = named[2].rsplit(" -> ", 1)[-1]
        tests += [lambda note, _colour: f"{named[1]}: {named[2]}" in note, lambda note, _colour: f"-> {new}" in note]
    tests += [lambda _note, colour: colour == CHANGED, lambda _note, _colour: True]
    for wanted in tests:
        found = next((i for i, (colour, note) in marks.items() if wanted(note, colour)), None)
        if found is not None:
            return found
    return None
