"""Where a change of a diff lives in one of its two models: the aten call or local function whose body holds it,
or, for a changed initializer or graph input, the first aten call that reads it.

Why here: the compare window shows that body's graph beside the change, and the compare window and the report with
a diff both say what the model's reviews said of it (``core.reviewed_changes``); one lookup serves both. A changed
weight is shown in its first reader: Swin's relative position bias reshaped showed the whole main graph, which does
not show it. Names come from the model (untrusted): they are only looked up, never evaluated.
"""

from __future__ import annotations

from typing import Literal

from inspector.core.diff.model import Change
from inspector.core.model.calls import FX_NODE, AtenCall, Scope
from inspector.core.model.fx import fx_head
from inspector.core.model.graph import GraphMaps
from inspector.core.model.index import ModelIndex
from inspector.core.model.keys import MAIN

__all__ = ["READ", "calls_by_name", "scope_for"]

READ = ("initializer", "input")  # changes of a value that calls read: shown, and reviewed, where the first one reads it


def calls_by_name(index: ModelIndex) -> dict[str, AtenCall]:
    """Aten calls by FX name, a main-graph call before one of that name inside a function body."""
    out: dict[str, AtenCall] = {}
    for c in index.provenance.calls:
        held = out.get(c.name)
        if held is None or (held.scope != MAIN and c.scope == MAIN):
            out[c.name] = c
    return out


_ADDED = frozenset({"call_added", "overload_added", "family_added"})
_REMOVED = frozenset({"call_removed", "overload_removed", "family_removed"})


def lacking_calls(side: Literal["a", "b"]) -> frozenset[str]:
    """The kinds of changes whose call (overload, family) ``side`` lacks: A an added one's, B a removed one's."""
    return _ADDED if side == "a" else _REMOVED


def scope_for(index: ModelIndex, change: Change, by_name: dict[str, AtenCall] | None = None,
              maps: GraphMaps | None = None, side: Literal["a", "b"] = "a") -> Scope:
    """The scope a change lives in, on one side: an aten call, a function, or the main graph. ``by_name``:
    ``calls_by_name(index)``, made once for many changes (80k calls at 100k nodes). An initializer or graph input
    that changed is in the first aten call that reads it (``maps``: the side's graph maps; without them, the main
    graph). A call the side lacks (``side``: which one ``index`` is) is shown by the call that stands in for it there
    (``Change.stand_in``), else by the first call of its family: not by a call of the side that has the name the
    other side's call has (a ReLU added in place of a GELU, named ``relu`` where A's ``relu`` is another module's)."""
    names = [change.where, *change.sites]
    if change.section in READ and maps is not None:
        if by_name is None:
            by_name = calls_by_name(index)
        reader = _first_reader(index, maps, by_name, names)
        if reader is not None:
            return reader
    if change.section == "aten_call":
        if by_name is None:
            by_name = calls_by_name(index)
        lacks = change.kind in lacking_calls(side)
        for name in [change.stand_in] if lacks and change.stand_in else names:
            if name in by_name:  # a call inside a function body (a module fold's layer): that function
                call = by_name[name]
                return call if call.scope == MAIN else call.scope
        for call in index.provenance.calls:  # renamed on this side: the first call of the family
            if f"{call.family[0]}::{call.family[1]}" == change.family and call.scope == MAIN:
                return call
    if change.section == "function":
        keys = {str(k): k for k in index.functions.functions}
        for name in names:
            if name in keys:
                return keys[name]
        for k in index.functions.functions:
            if f"{k.domain}.{k.name}" == change.family or k.name == change.family:
                return k
    return MAIN


def _first_reader(index: ModelIndex, maps: GraphMaps, by_name: dict[str, AtenCall],
                  names: list[str]) -> AtenCall | None:
    """The main-graph aten call of the first node reading one of ``names`` (by its fx metadata), if any."""
    nodes = index.proto.graph.node
    for name in names:
        for i in maps.consumers.get(name, ()):
            text = next((p.value for p in nodes[i].metadata_props if p.key == FX_NODE), None)
            head = fx_head(text) if isinstance(text, str) else None
            call = by_name.get(head[0]) if head is not None else None
            if call is not None and call.scope == MAIN:
                return call
    return None
