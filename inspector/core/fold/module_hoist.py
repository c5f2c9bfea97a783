"""``fold --modules --hoist``: literals that differ between instances of one class become function attributes.

Without it, layers that differ only in a hyperparameter (a per-layer eps, a window size, a head count baked into a
Reshape) get one overload each, and a backend compiles each. With it, instances whose bodies share a *template*
(``core/bodies/fingerprint.py``: the fingerprint with literal values masked) share one function: each literal slot
whose value differs between them becomes an attribute of the function, referenced inside the body through
``ref_attr_name`` and passed at each call site, as TorchScript's ``export_modules_as_functions`` passes each
instance's eps. ``summary`` then shows those slots as parametric with their per-call-site values.

The threat is a merge that changes what a call computes: only literal *values* are parametrised (the template
already proved the wiring, ops and attribute names equal), and a group whose varying slot sits inside an If/Loop
body is not merged (its instances keep one overload per body). Nested instances are parametrised inside out: an
inner call's passed values are literals of the outer body, so an outer class with different inner values becomes
one function too, passing its own attributes down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import onnx
from onnx import AttributeProto

from inspector.core.bodies.body import Body
from inspector.core.bodies.fingerprint import fingerprint
from inspector.core.bodies.literals import Literal, body_literals
from inspector.core.fold.messages import attribute
from inspector.core.fold.names import identifier


@dataclass(slots=True)
class Hoisted:
    """The slots of a body made function attributes: per constant position or (node index, attribute name), the
    function attribute's name."""

    constants: dict[int, str] = field(default_factory=dict)
    attributes: dict[tuple[int, str], str] = field(default_factory=dict)
    types: dict[str, AttributeProto.AttributeType] = field(default_factory=dict)  # function attribute -> its type

    def names(self) -> list[str]:
        return list(self.types)


class Member(Protocol):
    """What hoisting needs of one folded instance: its class, body and call node; it sets ``identity`` (the key
    of the function the instance calls, until named) and ``hoisted``."""

    body: Body
    identity: str
    hoisted: Hoisted | None

    @property
    def class_name(self) -> str: ...

    @property
    def call_node(self) -> onnx.NodeProto: ...


def hoist(levels: Sequence[Sequence[Member]]) -> None:
    """Regroup ``levels`` (instances by nesting depth, deepest first) by template: per group, the slots whose
    values differ become function attributes, each call passes its values, and all members share an identity
    (set on the call node as its provisional overload). Inner levels first: their calls are in outer bodies."""
    for level in levels:
        groups: dict[tuple[str, str], list[tuple[Member, str]]] = {}
        for m in level:
            fp = fingerprint(m.body)
            groups.setdefault((m.class_name, fp.template), []).append((m, fp.full))
        for (_cls, template), members in groups.items():
            _group(members, template)


def _group(members: list[tuple[Member, str]], template: str) -> None:
    lits = [body_literals(m.body) for m, _fp in members]
    varying = [k for k in range(len(lits[0])) if len({x[k].key for x in lits}) > 1] \
        if all(len(x) == len(lits[0]) for x in lits) else None
    if not varying or any(len(lits[0][k].path) > 1 or lits[0][k].kind == "parametric" for k in varying):
        for m, full in members:  # equal bodies, or not safely parametrised: one identity per body
            m.identity, m.hoisted = full, None
            m.call_node.overload = full
        return
    first = members[0][0]
    hoisted = _slots(first, [lits[0][k] for k in varying])
    identity = f"h{template}"
    for (m, _full), mine in zip(members, lits, strict=True):
        m.identity, m.hoisted = identity, hoisted
        m.call_node.overload = identity
        for k, name in zip(varying, hoisted.names(), strict=True):
            m.call_node.attribute.append(_value(m, mine[k], name))


def _slots(first: Member, varying: list[Literal]) -> Hoisted:
    """Function attribute names for the varying slots (``LayerNormalization_epsilon``, ``Reshape_value``)."""
    h = Hoisted()
    positions = {name: k for k, name in enumerate(first.body.constants)}
    for lit in varying:
        base = identifier(f"{lit.op_type or 'Constant'}_{'value' if lit.kind == 'initializer' else lit.name}")
        name, n = base, 1
        while name in h.types:
            n += 1
            name = f"{base}_{n}"
        if lit.kind == "initializer":
            h.constants[positions[lit.name]] = name
            h.types[name] = AttributeProto.TENSOR
        else:
            index = lit.path[0]
            assert isinstance(index, int)
            h.attributes[(index, lit.name)] = name
            node = first.body.nodes[index]
            h.types[name] = next(a.type for a in node.attribute if a.name == lit.name)
    return h


def _value(m: Member, lit: Literal, name: str) -> AttributeProto:
    """The attribute a call passes for one varying slot: this instance's value under the function's name."""
    if lit.kind == "initializer":
        return attribute(name, m.body.constants[lit.name])
    index = lit.path[0]
    assert isinstance(index, int)
    attr = AttributeProto()
    attr.CopyFrom(next(a for a in m.body.nodes[index].attribute if a.name == lit.name))
    attr.name = name
    return attr


def parametrise(fn: onnx.FunctionProto, hoisted: Hoisted, constants: int) -> None:
    """Make the hoisted slots of ``fn`` (made from the first member: ``constants`` Constant nodes, then the body's
    nodes) references to function attributes, and declare those attributes."""
    for position, name in hoisted.constants.items():
        node = fn.node[position]
        kind = hoisted.types[name]
        del node.attribute[:]
        node.attribute.append(_reference("value", name, kind))
    for (index, attr_name), name in hoisted.attributes.items():
        node = fn.node[constants + index]
        for k, a in enumerate(node.attribute):
            if a.name == attr_name:
                node.attribute[k].CopyFrom(_reference(attr_name, name, a.type))
    fn.attribute.extend(hoisted.names())


def _reference(attr_name: str, ref: str, kind: AttributeProto.AttributeType) -> AttributeProto:
    a = AttributeProto()
    a.name, a.ref_attr_name, a.type = attr_name, ref, kind
    return a
