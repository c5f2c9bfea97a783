"""Arguments of a recognised call, read back from the literals its template masks: each masked slot names the
parameters that moved it and, where the evidence catalogue explains it, the relation from argument to literal
(``Transpose.perm`` by ``swap`` -> ``dim0, dim1``; the SDPA scale by ``sqrt``; ``eps`` by ``scalar``); inverting the
relation gives the argument, in the form of the schema's type. A string or enum comes back as FX writes one, a bare
word (``approximate: tanh``, ``dtype: torch.int64``, a learned table's key: ``mode: replicate`` for ``edge``), so
that it reads as the one of a call with its metadata does. The threat is a hostile model: a literal that no relation
inverts cleanly (a non-finite scale, a perm that moves three axes for two parameters, a string that is no plain word),
or places one argument moved that read two values (a crafted stack whose Unsqueezes differ), gives no argument rather
than a guess, and values reach the synthesised FX text only through ``repr``
(``recognise.recognised_calls``): a bare word's is itself, and only a dotted identifier is one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from inspector.core.aten.dtypes import torch_dtype
from inspector.core.aten.schemas import SchemaCatalogue
from inspector.core.aten.templates import Slot, Template
from inspector.core.util.floats import float32


def template_arguments(t: Template, constants: dict[int, Any], attributes: dict[tuple[int, str], Any],
                       types: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The arguments the template's masked slots give back, by inverting their relations: ``constants`` are the
    matched constant operands' values by slot (those the model holds), ``attributes`` the masked attributes' values;
    ``types`` caches each target's parameter types."""
    out: dict[str, Any] = {}
    places: list[tuple[Slot, Any]] = []
    for k, slot in enumerate(t.constants):
        if slot.masked and k in constants:
            c = constants[k]
            if isinstance(c, dict) and "v" in c:
                values = c["v"]
                places.append((slot, values[0] if not c.get("s") and len(values) == 1 else values))
    for (j, name), value in attributes.items():
        places.append((dict(t.nodes[j].attributes)[name], value))
    kinds = types.get(t.target)
    if kinds is None:
        schema = SchemaCatalogue.default().get(t.target)
        kinds = types[t.target] = {q.name: q.type for q in schema.parameters} if schema is not None else {}
    disagree: set[str] = set()
    for slot, value in places:
        params = [p for p in slot.moves_with if not p.startswith("#")]
        if not params or slot.relation is None:
            continue
        got = invert(slot.relation, value, len(params))
        if got is None:
            continue
        for p, v in zip(params, got if len(params) > 1 else (got[0],)):
            known = out.setdefault(p, v)
            if known is not v and _fit(kinds.get(p, ""), known) != _fit(kinds.get(p, ""), v):
                disagree.add(p)  # (two places one argument moved read two values, as its type holds it: none given)
    fitted = {p: _fit(kinds.get(p, ""), v) for p, v in out.items() if p not in disagree}
    return {p: v for p, v in fitted.items() if v is not None}


def _fit(kind: str, value: Any) -> Any:
    """``value`` in the form of the schema's type: a list for ``int[]``, one number for ``int`` (None if it does not
    fit: an axes list of two for one ``dim``)."""
    listed = "[" in kind
    if isinstance(value, list) and not listed and kind:
        return value[0] if len(value) == 1 else None
    if listed and not isinstance(value, list):
        return [value]
    return value


def _number(v: Any) -> float | None:
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v


def _written(got: float, literal: float, forward: Callable[[float], float] | None = None) -> float:
    """The argument as a user writes it: the fewest significant digits whose lowering gives back the float32
    ``literal`` (``1e-05`` for float32(1e-5), not 9.99999974738e-06), and as many as that takes (up to 17). Cut to 7
    digits it could lower to another float32: a Swin attention's scale 0.35355338 came back as 0.3535534,
    ``finfo(float32).min`` as -3.402823e+38, each another constant when baked again (28 of the 248 float arguments of
    the stripped zoo and held-out exports). ``got``: the relation's inverse of ``literal``; ``forward``: the relation
    (None: the literal is the argument)."""
    target = float32(literal)
    for digits in range(1, 18):
        d = float(f"{got:.{digits}g}")
        try:
            lowered = float32(forward(d) if forward is not None else d)
        except (ValueError, ZeroDivisionError):  # (a shortened argument out of the relation's domain)
            continue
        if lowered == target:
            return d
    return got


_FORWARD: dict[str, tuple[Callable[[float], float], Callable[[float], float]]] = {  # relation: (inverse, forward)
    "sqrt": (lambda x: x * x, math.sqrt),
    "reciprocal": (lambda x: 1.0 / x, lambda a: 1.0 / a),
    "rsqrt": (lambda x: 1.0 / (x * x) if x > 0 else math.nan, lambda a: 1.0 / math.sqrt(a)),
    "neg": (lambda x: -x, lambda a: -a),
}


_INT = re.compile(r"-?[0-9]{1,18}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class Bare(str):
    """A string argument as FX writes it: unquoted (``approximate: tanh``), read back as a ``Symbol``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)


def _bare(text: object) -> tuple[Any, ...] | None:
    return (Bare(text),) if isinstance(text, str) and len(text) <= 64 and _WORD.fullmatch(text) else None


def _unmapped(table: str, value: Any) -> tuple[Any, ...] | None:
    """The key of a learned table (``map:false=half_pixel;true=align_corners``) that maps to ``value``, if one."""
    keys = [a for a, eq, b in (p.partition("=") for p in table.split(";")) if eq and b == str(value)]
    if len(keys) != 1:
        return None
    if keys[0] in ("true", "false"):
        return (keys[0] == "true",)
    # (an int argument's key, as the generator writes it: grid_sampler's ``interpolation_mode`` 1 is ``nearest``)
    return (int(keys[0]),) if _INT.fullmatch(keys[0]) else _bare(keys[0])


def invert(relation: str, value: Any, n_params: int) -> tuple[Any, ...] | None:
    """The argument(s) that ``relation`` maps to ``value``; None when it cannot be read back."""
    if relation == "string":
        return _bare(value)
    if relation == "dtype":
        return _bare(torch_dtype(value))
    if relation.startswith("map:"):
        return _unmapped(relation[4:], value)
    x = _number(value)
    if relation in ("equal", "stride_or_kernel"):
        if isinstance(value, (int, str, list)):
            return (value,)
        return (_written(value, value),) if isinstance(value, float) else None
    if relation == "scalar" and x is not None:
        return (_written(x, x) if isinstance(x, float) else x,)
    if relation == "dim":  # as the slot holds it: non-negative where the exporter normalised it, else as written
        if isinstance(value, list) and all(isinstance(v, int) for v in value):
            return (value,)
        return (value,) if isinstance(value, int) and not isinstance(value, bool) else None
    if relation == "bool" and isinstance(value, int):
        return (bool(value),)
    if relation == "swap" and isinstance(value, list) and n_params == 2:
        moved = [k for k, v in enumerate(value) if v != k]
        return (moved[0], moved[1]) if len(moved) == 2 else None
    if relation == "permute" and isinstance(value, list):
        return (value,)
    if relation == "pads" and isinstance(value, list) and len(value) % 2 == 0:
        half = len(value) // 2
        return (value[:half],) if value[:half] == value[half:] else None
    if x is None or x == 0:
        return None
    pair = _FORWARD.get(relation)
    if pair is None:
        return None
    got = pair[0](x)
    return (_written(got, x, pair[1]),) if math.isfinite(got) else None
