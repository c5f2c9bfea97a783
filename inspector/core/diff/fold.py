"""A flat export and its fold (``inspector.core.fold.aten_fold``): recognised, so that the whole difference is one
``folded`` change (``equivalent``) instead of every aten call reported as replaced."""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from inspector.core.diff.bodies import order_fingerprint
from inspector.core.diff.cut import Unit
from inspector.core.diff.model import FoldRelation
from inspector.core.diff.units import Side
from inspector.core.model.keys import FunctionKey


def detect_fold(A: Side, B: Side, umap: dict[int, int]) -> FoldRelation | None:
    """Whether one side is the other folded: matched aten calls that are flat on one side and function calls on
    the other, all in one direction."""
    if not A.functions and not B.functions:
        return None  # no unit calls a function (no look at each matched pair)
    directions: dict[Literal["a", "b"], list[tuple[Unit, Unit]]] = {"a": [], "b": []}
    units_a, units_b = A.units, B.units
    for ka, kb in umap.items():
        if units_a[ka] is None and units_b[kb] is None:
            continue  # two plain nodes (made on access, never a call)
        ua, ub = A.unit(ka), B.unit(kb)
        if ua.callee is None and ub.callee is not None:
            directions["b"].append((ua, ub))
        elif ua.callee is not None and ub.callee is None:
            directions["a"].append((ua, ub))
    if bool(directions["a"]) == bool(directions["b"]):
        return None  # none, or both ways: compare call by call without a fold summary
    folded: Literal["a", "b"] = "b" if directions["b"] else "a"
    pairs = directions[folded]
    side = B if folded == "b" else A
    callees = {(ub if folded == "b" else ua).callee for ua, ub in pairs}
    identical = 0
    for ua, ub in pairs:
        flat, call = (ua, ub) if folded == "b" else (ub, ua)
        assert call.callee is not None
        other = A if folded == "b" else B
        if order_fingerprint(other.fold_form(flat)).full == side.function_fp_by_use(call.callee).full:
            identical += 1
    domains = sorted({k.domain for k in callees if k is not None})
    return FoldRelation(folded, len(pairs), len(callees), domains, identical)


def explained_functions(A: Side, B: Side, fold: FoldRelation | None, umap: dict[int, int]) -> set[FunctionKey]:
    """Functions of the folded side that exist only because of the fold (called only by folded aten calls)."""
    if fold is None:
        return set()
    side = B if fold.folded == "b" else A
    other = A if fold.folded == "b" else B
    fold_calls: dict[FunctionKey, int] = defaultdict(int)
    pairs = umap.items() if fold.folded == "b" else ((ub, ua) for ua, ub in umap.items())
    for u_flat, u_call in pairs:
        flat = other.unit(u_flat)
        unit = side.unit(u_call)
        if unit.kind == "aten_call" and unit.callee is not None and flat.kind == "aten_call" and flat.callee is None:
            fold_calls[unit.callee] += 1
    return {k for k, n in fold_calls.items()
            if n == side.index.functions.call_count(k) and k not in other.functions}
