"""The overload names of the local functions a fold makes (``view:reshape_1x8xm1x16``, ``_to_copy:to_float``).

A reviewer reads an overload name as a claim about its body, and ONNX IR v10 knows a local function only by
``(domain, name, overload)``. The threats: a name that claims a value its body does not hold; two bodies under
one key (the checker and onnxruntime reject such a model); a name the ONNX text parser rejects (it takes only
identifiers as overloads, so the printed model would not read back). So a name says only what sets its body
apart from the other bodies of its target, is made an identifier, is unique per ``(op, overload)``, and carries
a hash of the body only to break ties.

Kept apart from ``fold`` (which plans and rewrites the graph): naming reads only each body's literals, and is
the part a reviewer argues about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import onnx

from inspector.core.bodies.body import Body
from inspector.core.bodies.literals import Literal, body_literals
from inspector.core.model.calls import split_target
from inspector.core.model.keys import FunctionKey
from inspector.core.util.digest import blake2b


class Unnamed(NamedTuple):
    """One local function to name: its aten target, the body of its first call, and what tells it apart from a
    function of the same target and words (hashed only to break such ties)."""

    target: str
    body: Body
    identity: str


def overload_keys(functions: Sequence[Unnamed], domain: str) -> list[FunctionKey]:
    """Identifier-safe overload names in a reviewer's words, one per function in order: the aten overload alone
    when the target has one body; else what sets this body apart from the target's other bodies
    (``view:reshape_1x8xm1x16``, ``_to_copy:to_float``, ``transpose:int_perm_0x2x1x3``; ``m`` is a minus sign,
    ``p`` a decimal point); a short hash of the body only to break ties."""
    by_target: dict[str, list[int]] = {}
    for k, f in enumerate(functions):
        by_target.setdefault(f.target, []).append(k)
    keys: list[FunctionKey | None] = [None] * len(functions)
    taken: set[tuple[str, str]] = set()
    for target, group in by_target.items():
        _ns, op, aten_overload = split_target(target)
        op_name, base = identifier(op), identifier(aten_overload)
        literals = [body_literals(functions[k].body) for k in group]
        wanted: list[str] = []
        for k in range(len(group)):
            words = _describe(k, literals) if len(group) > 1 else ""
            if not words:
                wanted.append(base)
            elif base == "default" and not words[0].isdigit():
                wanted.append(identifier(words))
            else:
                wanted.append(identifier(f"{base}_{words}"))
        for k, at in enumerate(group):
            name = wanted[k] if len(wanted[k]) <= 48 else base
            if len(group) > 1 and (wanted.count(wanted[k]) > 1 or name != wanted[k] or name == base):
                digest = blake2b(f"{target}|{functions[at].identity}".encode(), digest_size=3)
                name = f"{name}_{digest.hexdigest()}"
            while (op_name, name) in taken:
                name += "_"
            taken.add((op_name, name))
            keys[at] = FunctionKey(domain, op_name, name)
    return [key for key in keys if key is not None]


def _describe(k: int, all_literals: list[list[Literal]]) -> str:
    """Words for the literal values that set body ``k`` apart from the other bodies of its target: values in the
    same slot that differ when the bodies share a shape, else values no other body has."""
    mine = all_literals[k]
    others = [o for j, o in enumerate(all_literals) if j != k]
    aligned = [o for o in others if [x.slot for x in o] == [x.slot for x in mine]]
    if aligned:
        picked = [lit for pos, lit in enumerate(mine) if any(o[pos].key != lit.key for o in aligned)]
    else:
        elsewhere = {x.key for o in others for x in o}
        picked = [lit for lit in mine if lit.key not in elsewhere]
    return "_".join(_words(lit) for lit in picked[:2])


def _words(lit: Literal) -> str:
    """``reshape_1x8x2x8``, ``perm_0x2x1x3``, ``to_float``, ``eps_1em05``; a Constant's value needs no label."""
    if lit.op_type == "Cast" and lit.name == "to" and isinstance(lit.value, int):
        try:
            return "to_" + onnx.TensorProto.DataType.Name(lit.value).lower()
        except ValueError:
            pass
    if lit.kind == "initializer":
        label = lit.op_type.lower() or "const"
    elif lit.op_type == "Constant":
        label = ""
    else:
        label = lit.name
    return f"{label}_{_token(lit.value)}" if label else _token(lit.value)


def _token(value: Any) -> str:
    if isinstance(value, list):
        flat = [v for v in value if not isinstance(v, list)]
        return "x".join(_token(v) for v in flat[:8])
    if isinstance(value, float):
        return f"{value:.4g}".replace("-", "m").replace(".", "p").replace("+", "")
    if isinstance(value, int):
        return str(value).replace("-", "m")
    return re.sub(r"\W", "", str(value))[:12]


def identifier(text: str) -> str:
    """``text`` with every non-word character made ``_``, and ``_`` before a leading digit: an ONNX identifier."""
    s = re.sub(r"\W", "_", text)
    return s if s and not s[0].isdigit() else f"_{s}"
