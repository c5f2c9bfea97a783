"""Review keys that hold across ``fold``: a flat aten call's body and the aten function ``fold`` makes of it are one
body to a reviewer, so a review made on either applies to the other.

A review is keyed by its body's fingerprints and the literal's slot (``store.ReviewKey``); a flat group body and
its folded function differ in both (the group's small initializers are the function's leading Constant nodes, and
its nodes sit that many places later). So every body of an aten family also gets a *fold key*: the fingerprints
of the body in the form ``fold`` gives it (constants first as Constant nodes, inputs numbered by first use, as
``diff`` compares a flat call with its fold) and the literal's slot in that form. A flat body and its fold have
one fold key; a body whose baked values changed has another fingerprint, so a changed value is not covered by
the old review (its fold template is kept, so ``check`` still reports it as changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inspector.core.bodies.body import Body, function_form
from inspector.core.bodies.fingerprint import Fingerprints, fingerprint
from inspector.core.bodies.literals import Literal
from inspector.core.model.calls import AtenCall
from inspector.core.model.graph import node_reads

if TYPE_CHECKING:
    from inspector.core.specialise.specialiser import BodyAnalysis, FamilyAnalysis


def fold_form(body: Body, flat: bool) -> Body:
    """``body`` as ``fold`` writes it as a function: a flat group's constants become leading Constant nodes; the
    inputs are numbered by first use (a group's ``canonical_inputs``, a function's reads in body order)."""
    if flat:
        return function_form(body)
    formals = set(body.inputs)
    order: list[str] = []
    for node in body.nodes:
        for name in node_reads(node):
            if name in formals and name not in order:
                order.append(name)
    order += [x for x in body.inputs if x not in order]
    return Body(body.label, list(body.nodes), list(body.inputs), list(body.outputs), {}, canonical_inputs=order)


def folds(analysis: FamilyAnalysis) -> bool:
    """Whether the family's bodies are aten calls or aten functions: the bodies ``fold`` turns into each other."""
    return analysis.family.kind == "aten_call" or analysis.family.aten_family is not None


def fold_fingerprints(body: BodyAnalysis) -> Fingerprints:
    """The fingerprints of ``body`` in fold form, computed once per body."""
    if body.fold_fingerprints is None:
        flat = bool(body.members) and isinstance(body.members[0], AtenCall)
        body.fold_fingerprints = fingerprint(fold_form(body.body, flat))
    return body.fold_fingerprints


def fold_slot(body: BodyAnalysis, lit: Literal, texts: dict[int, str]) -> str:
    """The literal's slot in fold form: a flat body's initializer is the Constant node at its place among the
    constants, and every node sits after them; a function body is in fold form already (``texts``: its slots)."""
    flat = bool(body.members) and isinstance(body.members[0], AtenCall)
    if not flat:
        return texts.get(id(lit), "")
    names: Sequence[str] = list(body.body.constants)
    if lit.kind == "initializer":
        return f"{names.index(lit.name)}|constant|value" if lit.name in names else ""
    first = lit.path[0] if lit.path else None
    if not isinstance(first, int):
        return ""
    shifted = "/".join(map(str, (first + len(names), *lit.path[1:])))
    return f"{shifted}|{lit.kind}|{lit.name}"
